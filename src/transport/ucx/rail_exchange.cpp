// What the ranks tell each other when the rails come up (a card per rank:
// its rails' IPv4 and worker addresses), and the message exchanged on every
// rail for the handshake and the probe.
#include <algorithm>
#include <cstring>

#include "core/clock.hpp"
#include "transport/ucx/setup_steps.hpp"

namespace loom {
namespace {

void put(std::string &out, const std::string &s) {
    const uint32_t n = static_cast<uint32_t>(s.size());
    out.append(reinterpret_cast<const char *>(&n), sizeof n);
    out += s;
}

bool get(const char *&at, const char *end, std::string *s) {
    uint32_t n;
    if (end - at < static_cast<long>(sizeof n)) return false;
    std::memcpy(&n, at, sizeof n);
    at += sizeof n;
    if (end - at < static_cast<long>(n)) return false;
    s->assign(at, n);
    at += n;
    return true;
}

}  // namespace

std::string encode_card(const RankCard &c) {
    std::string out(reinterpret_cast<const char *>(&c.comm_id), sizeof c.comm_id);
    for (size_t r = 0; r < c.ipv4.size(); ++r) {
        put(out, c.ipv4[r]);
        put(out, c.worker[r]);
    }
    return out;
}

bool decode_card(const char *at, size_t bytes, size_t rails, RankCard *c) {
    const char *end = at + bytes;
    if (bytes < sizeof c->comm_id) return false;
    std::memcpy(&c->comm_id, at, sizeof c->comm_id);
    at += sizeof c->comm_id;
    c->ipv4.resize(rails);
    c->worker.resize(rails);
    for (size_t r = 0; r < rails; ++r)
        if (!get(at, end, &c->ipv4[r]) || !get(at, end, &c->worker[r])) return false;
    return true;
}

// Every rank's string, in rank order: the ranks agree on the longest, and
// each sends its own padded to that with its length after it.
Status allgather_strings(SetupContext &c, const std::string &mine, std::vector<std::string> *all) {
    int64_t longest = static_cast<int64_t>(mine.size());
    LOOM_RETURN_IF_ERROR(c.allreduce_int64(&longest, 1, LOOM_MAX));
    const size_t slot = static_cast<size_t>(longest) + sizeof(uint32_t);
    std::string padded = mine;
    padded.resize(slot, '\0');
    const uint32_t length = static_cast<uint32_t>(mine.size());
    std::memcpy(&padded[static_cast<size_t>(longest)], &length, sizeof length);
    std::vector<char> gathered(slot * static_cast<size_t>(c.size()));
    LOOM_RETURN_IF_ERROR(c.allgather_bytes(padded.data(), padded.size(), gathered.data()));
    all->clear();
    for (int q = 0; q < c.size(); ++q) {
        const char *at = gathered.data() + static_cast<size_t>(q) * slot;
        uint32_t n;
        std::memcpy(&n, at + longest, sizeof n);
        all->emplace_back(at, std::min<size_t>(n, static_cast<size_t>(longest)));
    }
    return LOOM_SUCCESS;
}

int greeted_by(const NodeMap &map, int rank) {
    const int p = map.nranks();
    for (int s = 1; s < p; ++s) {
        const int q = (rank + s) % p;
        if (map.node_of[q] != map.node_of[rank]) return q;
    }
    return -1;
}

// Posts one message per rail to the greeted peer and a receive per rail
// from each rank that greets this one; waits for all of them, at most
// `timeout_ms`. Returns per rail the nanoseconds until its receives finished.
Status exchange_on_every_rail(UcxTransport &t, const NodeMap &map, int me, uint32_t tag, size_t bytes,
                              long long timeout_ms, std::vector<uint64_t> *rail_ns) {
    const size_t rails = t.rails();
    const int to = greeted_by(map, me);
    std::vector<int> from;
    for (int q = 0; q < map.nranks(); ++q)
        if (q != me && greeted_by(map, q) == me) from.push_back(q);
    std::vector<unsigned char> out(bytes, 0x5a), in(bytes * from.size() * rails);
    struct Posted {
        TransportHandle h;
        int rail;
        bool recv, done;
    };
    std::vector<Posted> ops;
    const uint64_t start = now_ns();
    // Lane r: on rail r alone (below the stripe threshold, or with striping off).
    for (size_t r = 0; r < rails; ++r) {
        Route route;
        route.lane = static_cast<int>(r);
        for (size_t k = 0; k < from.size(); ++k) {
            ops.push_back({{}, static_cast<int>(r), true, false});
            LOOM_RETURN_IF_ERROR(
                t.post_recv(in.data() + (r * from.size() + k) * bytes, bytes, from[k], tag, route, &ops.back().h));
        }
        if (to >= 0) {
            ops.push_back({{}, static_cast<int>(r), false, false});
            LOOM_RETURN_IF_ERROR(t.post_send(out.data(), bytes, to, tag, route, &ops.back().h));
        }
    }
    rail_ns->assign(rails, 0);
    size_t left = ops.size();
    while (left) {
        for (Posted &o : ops) {
            if (o.done) continue;
            unsigned char d = 0;
            TransportHandle *hp = &o.h;
            LOOM_RETURN_IF_ERROR(t.test_many(&hp, 1, &d, nullptr));
            if (!d) continue;
            o.done = true;
            --left;
            if (o.recv) (*rail_ns)[static_cast<size_t>(o.rail)] = now_ns() - start;
        }
        if (left && now_ns() - start > static_cast<uint64_t>(timeout_ms) * 1000000u) {
            std::string which;
            for (const Posted &o : ops)
                if (!o.done) which += " " + t.rail_name(o.rail);
            return fail(LOOM_ERR_TRANSPORT,
                        "no answer within rail_timeout_ms = " + std::to_string(timeout_ms) + " on rail(s)" + which);
        }
    }
    return LOOM_SUCCESS;
}

}  // namespace loom
