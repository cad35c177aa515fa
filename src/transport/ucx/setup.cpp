#include "transport/ucx/setup.hpp"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "core/clock.hpp"
#include "machine.hpp"
#include "transport/ucx/params.hpp"
#include "transport/ucx/ucx.hpp"

namespace loom {
namespace {

// Tags of the set-up's own messages: the rails carry nothing else until
// the set-up has ended.
constexpr uint32_t kHandshakeTag = UcxTransport::kMaxTag;
constexpr uint32_t kProbeTag = UcxTransport::kMaxTag - 1;
constexpr uint32_t kRevivalTag = UcxTransport::kMaxTag - 2;

std::string host_name() {
    char name[256] = {};
    gethostname(name, sizeof name - 1);
    return name;
}

// What one rank tells the others: per rail its IPv4 address and worker address.
struct RankCard {
    uint32_t comm_id = 0;
    std::vector<std::string> ipv4, worker;
};

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

std::string encode(const RankCard &c) {
    std::string out(reinterpret_cast<const char *>(&c.comm_id), sizeof c.comm_id);
    for (size_t r = 0; r < c.ipv4.size(); ++r) {
        put(out, c.ipv4[r]);
        put(out, c.worker[r]);
    }
    return out;
}

bool decode(const char *at, size_t bytes, size_t rails, RankCard *c) {
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

bool is_loopback(const std::string &ipv4) { return ipv4.rfind("127.", 0) == 0; }

// Rails from the parameter, or the NICs hwloc finds (auto; not between
// emulated nodes, which share the machine's NICs). Empty: none.
Status choose_rails(const std::string &param, bool emulated, std::vector<std::string> *names) {
    names->clear();
    if (param == "none" || param.empty()) return LOOM_SUCCESS;
    if (param != "auto") return parse_rail_names(param, names);
    if (emulated) return LOOM_SUCCESS;
    MachineView view;
    if (discover_machine(&view) != LOOM_SUCCESS) return LOOM_SUCCESS;
    for (const MachineDevice &d : view.nics) {
        std::string ip;
        if (d.kind == "network" && interface_address(d.name, &ip) && !ip.empty() && !is_loopback(ip))
            names->push_back(d.name);
    }
    return LOOM_SUCCESS;
}

// The peer each rank greets on every rail: the next rank, in rank order,
// on another node. Every rank computes everyone's, so it knows whom to expect.
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

// Whether interface `name` is up with its carrier (a cable, a veth peer).
bool interface_up(const std::string &name) {
    const int fd = socket(AF_INET, SOCK_DGRAM, 0);
    if (fd < 0) return false;
    ifreq req = {};
    std::strncpy(req.ifr_name, name.c_str(), IFNAMSIZ - 1);
    const bool ok = ioctl(fd, SIOCGIFFLAGS, &req) == 0 && (req.ifr_flags & IFF_UP) && (req.ifr_flags & IFF_RUNNING);
    close(fd);
    return ok;
}

// Rail r on a fresh worker: addresses exchanged over the communicator's
// other transports, endpoints made, a handshake to the greeted rank and from
// those that greet this one within `timeout_ms`. True on this rank when all
// that worked; the worker is left behind (never progressed again) otherwise.
bool revive_rail(SetupContext &c, UcxTransport &t, RailWorkers &workers, int r, long long timeout_ms,
                 std::shared_ptr<RailWorker> *made, std::vector<ucp_ep_h> *endpoints, std::string *why) {
    const NodeMap &map = c.nodes();
    const int p = c.size(), me = c.rank();
    std::shared_ptr<RailWorker> w;
    bool ok = workers.renew(static_cast<size_t>(r), &w) == LOOM_SUCCESS;
    if (!ok) *why = last_error_message();
    std::vector<std::string> addresses;  // empty: that rank has no fresh worker
    if (allgather_strings(c, ok ? w->address : std::string(), &addresses) != LOOM_SUCCESS) return false;
    endpoints->assign(static_cast<size_t>(p), nullptr);
    for (int q = 0; q < p && ok; ++q) {
        if (map.node_of[q] == map.node_of[me]) continue;
        const std::string &theirs = addresses[static_cast<size_t>(q)];
        if (theirs.empty()) {
            ok = false;
            *why = "rank " + std::to_string(q) + " has no worker on it";
        } else if (workers.endpoint(static_cast<size_t>(r), *w, theirs, &(*endpoints)[q]) != LOOM_SUCCESS) {
            ok = false;
            *why = last_error_message();
        }
    }
    if (ok) {
        const int to = greeted_by(map, me);
        std::vector<int> from;
        for (int q = 0; q < p; ++q)
            if (q != me && greeted_by(map, q) == me) from.push_back(q);
        std::vector<uint64_t> in(from.size()), out(1, 0x1005e);
        std::vector<void *> requests;
        ucp_request_param_t param = {};
        RailsLock lock(rails_mutex());  // UCX calls only, up to the end of the handshake
        for (size_t k = 0; k < from.size(); ++k)
            requests.push_back(ucp_tag_recv_nbx(w->handle, &in[k], sizeof in[k],
                                                UcxTransport::tag_of(t.comm_id(), from[k], kRevivalTag), ~uint64_t{0},
                                                &param));
        if (to >= 0)
            requests.push_back(ucp_tag_send_nbx((*endpoints)[to], out.data(), sizeof out[0],
                                                UcxTransport::tag_of(t.comm_id(), me, kRevivalTag), &param));
        const uint64_t start = now_ns();
        for (;;) {
            ucp_worker_progress(w->handle);
            bool pending = false;
            for (void *&req : requests) {
                if (!req) continue;
                if (UCS_PTR_IS_ERR(req)) {
                    ok = false;
                    *why = ucs_status_string(UCS_PTR_STATUS(req));
                    req = nullptr;
                    continue;
                }
                const ucs_status_t s = ucp_request_check_status(req);
                if (s == UCS_INPROGRESS) {
                    pending = true;
                    continue;
                }
                if (s != UCS_OK) {
                    ok = false;
                    *why = ucs_status_string(s);
                }
                ucp_request_free(req);
                req = nullptr;
            }
            if (!pending) break;
            if (now_ns() - start > static_cast<uint64_t>(timeout_ms) * 1000000u) {
                ok = false;
                *why = "no handshake within rail_timeout_ms = " + std::to_string(timeout_ms);
                break;
            }
        }
        for (void *req : requests)
            if (req && !UCS_PTR_IS_ERR(req)) ucp_request_free(req);  // left behind with the worker
    }
    if (!ok && w) w->down = true;
    *made = w;
    return ok;
}

// A rail left out or back: in the rails' state with its time and, from rank 0, in the log.
void announce(SetupContext &c, UcxTransport &t, int rail, bool back) {
    const std::string when = format_wall_ms(wall_ms());
    c.rails_changed(t.rail_name(rail) + (back ? " back at " : " left out at ") + when);
    if (c.rank() == 0)
        std::fprintf(stderr, "loom: rail %s %s the calls that start from now on (%s)\n", t.rail_name(rail).c_str(),
                     back ? "back in" : "left out of", when.c_str());
}

// The periodic agreement on the rails. (1) A rail that failed on any rank
// is left out of the calls that start from now on, and fails here too.
// (2) A rail left out comes back, on a fresh worker, once its interface is up
// on every rank and a handshake crosses it. (3) With every rail in and the
// weights not pinned, the ranks' moving estimates of each rail's rate,
// summed, become new weights when a rail's share moved by more than a tenth
// of itself. Each change retires the cached plans.
void check_rails(SetupContext &c, void *context) {
    UcxTransport &t = *static_cast<UcxTransport *>(context);
    const size_t rails = t.rails();
    const std::vector<double> rates = t.observed_rates();
    std::vector<int64_t> sums(4 * rails, 0);
    for (size_t r = 0; r < rails; ++r) {
        sums[r] = static_cast<int64_t>(rates[r] / 1024);  // KiB/s
        sums[rails + r] = rates[r] > 0 ? 1 : 0;
        sums[2 * rails + r] = t.rail_down(static_cast<int>(r)) ? 1 : 0;
        sums[3 * rails + r] = interface_up(t.rail_name(static_cast<int>(r))) ? 0 : 1;
    }
    if (c.allreduce_int64(sums.data(), sums.size(), LOOM_SUM) != LOOM_SUCCESS) return;
    const bool verbose = c.config().integer(kParamVerbose) >= 1 && c.rank() == 0;
    std::vector<double> next = t.weights();
    bool changed = false;
    for (size_t r = 0; r < rails; ++r) {
        const int rail = static_cast<int>(r);
        const int64_t failed_on = sums[2 * rails + r];
        if (failed_on > 0 && !t.rail_left_out(rail)) {
            t.rail_failed(rail, "it failed on " + std::to_string(failed_on) + " rank(s)");
            next[r] = 0;
            changed = true;
            announce(c, t, rail, false);
        } else if (t.rail_left_out(rail) && t.fails_over() && sums[3 * rails + r] == 0) {
            std::shared_ptr<RailWorker> w;
            std::vector<ucp_ep_h> endpoints;
            std::string why;
            int64_t ok = revive_rail(c, t, *t.workers(), rail, c.config().integer(kParamRailTimeoutMs), &w,
                                     &endpoints, &why)
                             ? 1
                             : 0;
            if (c.allreduce_int64(&ok, 1, LOOM_MIN) != LOOM_SUCCESS) return;
            if (!ok) {
                if (verbose || !why.empty())
                    std::fprintf(stderr, "loom: rank %d: rail %s not back yet: %s\n", c.rank(), t.rail_name(rail).c_str(),
                                 why.empty() ? "another rank's handshake failed" : why.c_str());
                continue;
            }
            t.rail_renewed(rail, w, endpoints);
            t.rail_came_back(rail, "its interfaces are up and a handshake crossed it on a fresh worker");
            next[r] = t.given_weight(rail);
            changed = true;
            announce(c, t, rail, true);
        }
    }
    if (changed) {
        t.add_weights(c.retire_plans(), next);
        return;
    }
    if (rails < 2 || !c.config().raw(kParamRailWeights).empty()) return;
    double total = 0;
    for (size_t r = 0; r < rails; ++r) {
        if (t.rail_left_out(static_cast<int>(r))) return;
        if (sums[rails + r] == 0 || sums[r] <= 0) return;  // a rail without samples yet
        next[r] = static_cast<double>(sums[r]) / static_cast<double>(sums[rails + r]);
        total += next[r];
    }
    bool moved = false;
    for (size_t r = 0; r < rails; ++r) {
        next[r] /= total;
        moved |= std::fabs(next[r] - t.weights()[r]) > 0.1 * t.weights()[r];
    }
    // A move must be seen twice in a row, alike within a tenth: the rates
    // are measured from the posted receive, so a wait for a late sender
    // weighs on every rail alike and single readings wander (docs/design.md,
    // "The rails"); a rail that is really slower reads so every time. Every
    // rank sees the same sums.
    std::vector<double> &pending = t.pending_weights();
    bool confirmed = moved && pending.size() == rails;
    for (size_t r = 0; confirmed && r < rails; ++r) confirmed = std::fabs(next[r] - pending[r]) <= 0.1 * pending[r];
    pending = moved ? next : std::vector<double>();
    if (!confirmed) return;
    pending.clear();
    if (verbose) {
        std::string text;
        char w[32];
        for (size_t r = 0; r < rails; ++r) {
            std::snprintf(w, sizeof w, " %s %.2f", t.rail_name(static_cast<int>(r)).c_str(), next[r]);
            text += w;
        }
        std::fprintf(stderr, "loom: rail weights now%s (from the rates striped messages arrived at)\n", text.c_str());
    }
    t.add_weights(c.retire_plans(), next);
}

// This rank's part: the rails, their workers, its card. Errors say what to fix.
Status prepare(SetupContext &c, const std::vector<std::string> &names, std::shared_ptr<RailWorkers> *workers,
               std::vector<double> *weights, RankCard *card) {
    const Config &cfg = c.config();
    if (names.size() > static_cast<size_t>(UcxTransport::kMaxRails))
        return fail(LOOM_ERR_INVALID_PARAMETER_VALUE, "rails: at most " + std::to_string(UcxTransport::kMaxRails) +
                                                          " rails, " + std::to_string(names.size()) + " named");
    if (!cfg.raw(kParamRailWeights).empty())
        LOOM_RETURN_IF_ERROR(parse_rail_weights(cfg.raw(kParamRailWeights), names.size(), weights));
    for (const std::string &n : names) {
        std::string ip;
        if (!interface_address(n, &ip))
            return fail(LOOM_ERR_INVALID_PARAMETER_VALUE,
                        "rails: host " + host_name() + " has no network interface '" + n + "'");
        if (ip.empty())
            return fail(LOOM_ERR_INVALID_PARAMETER_VALUE,
                        "rails: interface '" + n + "' on host " + host_name() + " has no IPv4 address");
        card->ipv4.push_back(ip);
    }
    LOOM_RETURN_IF_ERROR(RailWorkers::get(names, cfg.raw(kParamUcxTls), workers));
    for (size_t r = 0; r < names.size(); ++r) card->worker.push_back((*workers)->current(r)->address);
    card->comm_id = RailWorkers::next_comm_id();
    return LOOM_SUCCESS;
}

// Every remote node's rail r must be reached through this rank's rail r:
// TCP's connect lets the routing table pick the source interface.
Status check_routes(const std::vector<RankCard> &cards, const NodeMap &map, int me,
                    const std::vector<std::string> &names) {
    for (size_t r = 0; r < names.size(); ++r) {
        const std::string &mine = cards[static_cast<size_t>(me)].ipv4[r];
        for (int node = 0; node < map.nodes(); ++node) {
            if (node == map.node_of[me]) continue;
            const std::string &theirs = cards[static_cast<size_t>(map.members[node][0])].ipv4[r];
            if (is_loopback(theirs) && is_loopback(mine)) continue;
            std::string source;
            LOOM_RETURN_IF_ERROR(route_source(theirs, &source));
            if (source != mine)
                return fail(LOOM_ERR_INVALID_PARAMETER_VALUE,
                            "rails: traffic to " + theirs + " (rail " + names[r] + " of node " + std::to_string(node) +
                                ") would leave through " + source + ", not " + names[r] + " (" + mine +
                                "): give every rail a subnet of its own");
        }
    }
    return LOOM_SUCCESS;
}

std::string describe(const std::vector<std::string> &names, const std::vector<double> &weights, bool probed) {
    std::string s = std::to_string(names.size()) + " rail" + (names.size() == 1 ? "" : "s") + " over UCX:";
    char w[32];
    for (size_t r = 0; r < names.size(); ++r) {
        std::snprintf(w, sizeof w, "%.2f", weights[r]);
        s += " " + names[r] + " (weight " + w + ")";
    }
    return s + (probed ? ", weights measured" : ", weights given");
}

// The collective part, after every rank prepared successfully.
Status connect(SetupContext &c, const std::vector<std::string> &names, std::shared_ptr<RailWorkers> workers,
               std::vector<double> weights, const RankCard &mine, std::unique_ptr<UcxTransport> *made,
               std::string *state) {
    const int p = c.size(), me = c.rank();
    const NodeMap &map = c.nodes();
    const size_t rails = names.size();
    std::vector<std::string> blobs;
    LOOM_RETURN_IF_ERROR(allgather_strings(c, encode(mine), &blobs));
    std::vector<RankCard> cards(static_cast<size_t>(p));
    uint32_t comm_id = 0;
    for (int q = 0; q < p; ++q) {
        const std::string &blob = blobs[static_cast<size_t>(q)];
        if (!decode(blob.data(), blob.size(), rails, &cards[static_cast<size_t>(q)]))
            return fail(LOOM_ERR_TRANSPORT, "rails: rank " + std::to_string(q) + " sent an unreadable address card");
        comm_id = std::max(comm_id, cards[static_cast<size_t>(q)].comm_id);
    }
    RailWorkers::reserve_comm_id(comm_id);
    LOOM_RETURN_IF_ERROR(check_routes(cards, map, me, names));

    UcxPeers peers;
    peers.remote.assign(static_cast<size_t>(p), 0);
    peers.endpoints.assign(static_cast<size_t>(p), std::vector<ucp_ep_h>(rails, nullptr));
    for (int q = 0; q < p; ++q) {
        if (map.node_of[q] == map.node_of[me]) continue;
        peers.remote[static_cast<size_t>(q)] = 1;
        for (size_t r = 0; r < rails; ++r)
            LOOM_RETURN_IF_ERROR(workers->endpoint(r, *workers->current(r), cards[static_cast<size_t>(q)].worker[r],
                                                   &peers.endpoints[static_cast<size_t>(q)][r]));
    }
    const Config &cfg = c.config();
    UcxOptions options;
    options.comm_id = comm_id;
    const bool probe = weights.empty() && rails > 1 && cfg.integer(kParamRailProbeBytes) > 0;
    options.weights = weights.empty() ? std::vector<double>(rails, 1.0) : weights;
    options.stripe_min_bytes = static_cast<size_t>(cfg.integer(kParamRailStripeMinBytes));
    options.min_bytes = static_cast<size_t>(cfg.integer(kParamRailMinBytes));
    std::unique_ptr<UcxTransport> t;
    LOOM_RETURN_IF_ERROR(make_ucx_transport(workers, me, p, std::move(peers), options, &t));
    const long long timeout = cfg.integer(kParamRailTimeoutMs);
    std::vector<uint64_t> ns;
    LOOM_RETURN_IF_ERROR(exchange_on_every_rail(*t, map, me, kHandshakeTag, 8, timeout, &ns));
    if (probe) {
        // Every rail at once, as striping will use them, started together
        // (an allreduce as a barrier) so that a rank starting late does not
        // read as a slow rail. Every rank's times per rail are summed, so
        // every rank weighs alike (set_weights normalises).
        const size_t bytes = static_cast<size_t>(cfg.integer(kParamRailProbeBytes));
        int64_t barrier = 0;
        LOOM_RETURN_IF_ERROR(c.allreduce_int64(&barrier, 1, LOOM_MAX));
        // Each rail's message on that rail alone: striped, every rail would
        // carry a share of every message and read alike.
        t->set_striping(false);
        const Status probed = exchange_on_every_rail(*t, map, me, kProbeTag, bytes, timeout, &ns);
        t->set_striping(true);
        LOOM_RETURN_IF_ERROR(probed);
        std::vector<int64_t> summed(ns.begin(), ns.end());
        LOOM_RETURN_IF_ERROR(c.allreduce_int64(summed.data(), rails, LOOM_SUM));
        if (cfg.integer(kParamVerbose) >= 2)
            for (size_t r = 0; r < rails; ++r)
                std::fprintf(stderr,
                             "loom[%d]: probe of %zu bytes on rail %s: %.3f ms here, %.3f ms summed over the ranks\n",
                             me, bytes, names[r].c_str(), ns[r] / 1e6, summed[r] / 1e6);
        for (size_t r = 0; r < rails; ++r)
            options.weights[r] = 1.0 / static_cast<double>(std::max<int64_t>(summed[r], 1));
        t->set_weights(options.weights);
    }
    *state = describe(names, t->weights(), probe);
    *made = std::move(t);
    return LOOM_SUCCESS;
}

}  // namespace

bool interface_address(const std::string &name, std::string *ipv4) {
    ipv4->clear();
    if (if_nametoindex(name.c_str()) == 0) return false;
    ifaddrs *list = nullptr;
    if (getifaddrs(&list) != 0) return true;
    for (ifaddrs *i = list; i; i = i->ifa_next) {
        if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET || name != i->ifa_name) continue;
        char text[INET_ADDRSTRLEN];
        inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in *>(i->ifa_addr)->sin_addr, text, sizeof text);
        *ipv4 = text;
        break;
    }
    freeifaddrs(list);
    return true;
}

Status route_source(const std::string &ipv4, std::string *source) {
    // A connected UDP socket sends nothing but asks the routing table.
    sockaddr_in to = {};
    to.sin_family = AF_INET;
    to.sin_port = htons(9);
    if (inet_pton(AF_INET, ipv4.c_str(), &to.sin_addr) != 1)
        return fail(LOOM_ERR_TRANSPORT, "rails: '" + ipv4 + "' is not an IPv4 address");
    const int fd = socket(AF_INET, SOCK_DGRAM, 0);
    if (fd < 0) return fail(LOOM_ERR_TRANSPORT, "rails: cannot open a socket to ask for routes");
    sockaddr_in from = {};
    socklen_t len = sizeof from;
    const bool ok = connect(fd, reinterpret_cast<sockaddr *>(&to), sizeof to) == 0 &&
                    getsockname(fd, reinterpret_cast<sockaddr *>(&from), &len) == 0;
    close(fd);
    if (!ok) return fail(LOOM_ERR_TRANSPORT, "rails: no route to " + ipv4);
    char text[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &from.sin_addr, text, sizeof text);
    *source = text;
    return LOOM_SUCCESS;
}

namespace {

// The items of a comma list, empty ones kept (so that the callers refuse them).
std::vector<std::string> comma_items(const std::string &text) {
    std::vector<std::string> items;
    size_t start = 0;
    for (;;) {
        const size_t comma = text.find(',', start);
        items.push_back(text.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
        if (comma == std::string::npos) return items;
        start = comma + 1;
    }
}

}  // namespace

Status parse_rail_names(const std::string &text, std::vector<std::string> *out) {
    out->clear();
    for (const std::string &name : comma_items(text)) {
        if (name.empty() || name.size() >= IF_NAMESIZE || name.find_first_of(" /") != std::string::npos)
            return fail(LOOM_ERR_INVALID_PARAMETER_VALUE,
                        "rails = '" + text + "': expected auto, none, or interface names separated by commas");
        out->push_back(name);
    }
    return LOOM_SUCCESS;
}

Status parse_rail_weights(const std::string &text, size_t rails, std::vector<double> *out) {
    out->clear();
    for (const std::string &item : comma_items(text)) {
        char *end = nullptr;
        const double w = std::strtod(item.c_str(), &end);
        if (item.empty() || !end || *end || !(w > 0) || !std::isfinite(w))
            return fail(LOOM_ERR_INVALID_PARAMETER_VALUE,
                        "rail_weights = '" + text + "': expected positive numbers separated by commas, one per rail");
        out->push_back(w);
    }
    if (out->size() != rails)
        return fail(LOOM_ERR_INVALID_PARAMETER_VALUE, "rail_weights = '" + text + "' gives " +
                                                          std::to_string(out->size()) + " weights for " +
                                                          std::to_string(rails) + " rails");
    return LOOM_SUCCESS;
}

void set_up_rails(SetupContext &c) {
    if (c.nodes().nodes() < 2) return;
    std::vector<std::string> names;
    std::shared_ptr<RailWorkers> workers;
    std::vector<double> weights;
    RankCard card;
    Status st = choose_rails(c.config().raw(kParamRails), c.nodes().emulated, &names);
    std::string why = st == LOOM_SUCCESS ? "" : last_error_message();
    // Every rank must take the same path: agree on the rail count first.
    int64_t agree[2] = {st == LOOM_SUCCESS ? static_cast<int64_t>(names.size()) : -1, 0};
    agree[1] = -agree[0];
    if (c.allreduce_int64(agree, 2, LOOM_MIN) != LOOM_SUCCESS) return;
    if (agree[0] == 0 && agree[1] == 0) return;  // no rails anywhere: nothing asked for
    if (agree[0] != -agree[1] && why.empty()) why = "ranks found different numbers of rails";
    if (why.empty()) {
        st = prepare(c, names, &workers, &weights, &card);
        if (st != LOOM_SUCCESS) why = last_error_message();
    }
    int64_t ok = why.empty() ? 1 : 0;
    if (c.allreduce_int64(&ok, 1, LOOM_MIN) != LOOM_SUCCESS) return;
    std::string state;
    if (ok) {
        std::unique_ptr<UcxTransport> t;
        st = connect(c, names, workers, weights, card, &t, &state);
        if (st != LOOM_SUCCESS) why = last_error_message();
        ok = st == LOOM_SUCCESS ? 1 : 0;
        // A failure anywhere (a route, a handshake) leaves the rails out
        // everywhere; agreed before any rank attaches them. So is failover,
        // which every rank must do alike.
        const long long stall_ms = c.config().integer(kParamRailStallMs);
        std::string no_failover = stall_ms == 0 ? "rail_stall_ms = 0" : "";
        if (ok && stall_ms > 0 && c.transport().fallback().max_tag() < UcxTransport::kBelowTagEnd - 1)
            no_failover = std::string("the ") + c.transport().fallback().name() + " transport has too few tags";
        int64_t agreed[2] = {ok, no_failover.empty() ? 1 : 0};
        if (c.allreduce_int64(agreed, 2, LOOM_MIN) != LOOM_SUCCESS) return;
        ok = agreed[0];
        if (ok) {
            if (agreed[1]) {
                if (t->fail_over_through(&c.transport().fallback(), static_cast<uint64_t>(stall_ms) * 1000000u) !=
                    LOOM_SUCCESS)
                    return;  // cannot happen: the tags were checked on every rank
                state += ", failover through the " + std::string(c.transport().fallback().name());
            } else {
                state += ", no failover (" + (no_failover.empty() ? "another rank cannot" : no_failover) + ")";
            }
            t->set_first_plan(c.retire_plans());
            UcxTransport *rails = t.get();
            if (c.attach_rails(std::move(t), static_cast<int>(names.size()), state) != LOOM_SUCCESS) return;
            const long long every = c.config().integer(kParamRailRefreshCalls);
            if (every > 0 && (agreed[1] || (names.size() > 1 && c.config().raw(kParamRailWeights).empty())))
                c.every_blocking_call(static_cast<uint64_t>(every),
                                      static_cast<size_t>(c.config().integer(kParamRailStripeMinBytes)), check_rails,
                                      rails);
            if (c.config().integer(kParamVerbose) >= 1 && c.rank() == 0)
                std::fprintf(stderr, "loom: %s\n", state.c_str());
            return;
        }
        if (why.empty()) why = "another rank could not bring its rails up";
    } else if (why.empty()) {
        why = "another rank could not set its rails up";
    }
    c.rails_left_out(why);
    if (c.rank() == 0 || why.find("another rank") == std::string::npos)
        std::fprintf(stderr,
                     "loom: rank %d: rails left out, the point-to-point transport carries messages between nodes: %s\n",
                     c.rank(), why.c_str());
}

}  // namespace loom
