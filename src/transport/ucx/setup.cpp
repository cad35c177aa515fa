#include "transport/ucx/setup.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "transport/ucx/params.hpp"
#include "transport/ucx/setup_steps.hpp"
#include "transport/ucx/ucx.hpp"

namespace loom {
namespace {

std::string host_name() {
    char name[256] = {};
    gethostname(name, sizeof name - 1);
    return name;
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
    LOOM_RETURN_IF_ERROR(allgather_strings(c, encode_card(mine), &blobs));
    std::vector<RankCard> cards(static_cast<size_t>(p));
    uint32_t comm_id = 0;
    for (int q = 0; q < p; ++q) {
        const std::string &blob = blobs[static_cast<size_t>(q)];
        if (!decode_card(blob.data(), blob.size(), rails, &cards[static_cast<size_t>(q)]))
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
