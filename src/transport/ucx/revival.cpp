// Keeping the rails: the periodic agreement among the ranks that leaves a
// failed rail out, brings it back on a fresh worker once it works again, and
// reweighs the rails from the rates striped messages arrived at.
#include <cstdio>

#include "core/clock.hpp"
#include "transport/ucx/params.hpp"
#include "transport/ucx/rail_weights.hpp"
#include "transport/ucx/setup_steps.hpp"

namespace loom {
namespace {

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

}  // namespace

// The periodic agreement on the rails. (1) A rail that failed on any rank
// is left out of the calls that start from now on, and fails here too.
// (2) A rail left out comes back, on a fresh worker, once its interface is up
// on every rank and a handshake crosses it. (3) With every rail in and the
// weights not pinned, each rail's rate since the last agreement (the bytes
// of its striped pieces over their seconds, summed over the ranks) is a
// reading that may move the weights (RailReweighing). Each change retires
// the cached plans.
void check_rails(SetupContext &c, void *transport) {
    UcxTransport &t = *static_cast<UcxTransport *>(transport);
    const size_t rails = t.rails();
    // Every agreement takes its reading from the calls since the last one.
    std::vector<double> bytes, seconds;
    t.take_samples(&bytes, &seconds);
    std::vector<int64_t> sums(4 * rails, 0);
    for (size_t r = 0; r < rails; ++r) {
        sums[r] = static_cast<int64_t>(bytes[r] / 1024);           // KiB
        sums[rails + r] = static_cast<int64_t>(seconds[r] * 1e6);  // microseconds
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
            int64_t ok =
                revive_rail(c, t, *t.workers(), rail, c.config().integer(kParamRailTimeoutMs), &w, &endpoints, &why)
                    ? 1
                    : 0;
            if (c.allreduce_int64(&ok, 1, LOOM_MIN) != LOOM_SUCCESS) return;
            if (!ok) {
                if (verbose || !why.empty())
                    std::fprintf(stderr, "loom: rank %d: rail %s not back yet: %s\n", c.rank(),
                                 t.rail_name(rail).c_str(),
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
        t.reweighing().forget();
        t.add_weights(c.retire_plans(), next);
        return;
    }
    if (rails < 2 || !c.config().raw(kParamRailWeights).empty()) return;
    std::vector<double> rates(rails);
    for (size_t r = 0; r < rails; ++r) {
        if (t.rail_left_out(static_cast<int>(r))) return;
        if (sums[rails + r] <= 0 || sums[r] <= 0) return;  // a rail without samples in this reading
        rates[r] = static_cast<double>(sums[r]) / static_cast<double>(sums[rails + r]);
    }
    if (!t.reweighing().read(t.weights(), rates, &next)) return;
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

}  // namespace loom
