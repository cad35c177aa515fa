// A nonblocking alltoallv's first stage (Communicator::start_after_counts):
// the internal calls that learn the other ranks' counts run; when they have
// finished, the alltoallv is planned from what they learnt and goes on on
// the plan path, on the tag it took at its start. The progress thread
// drives both stages where it is on.
#include "runtime/communicator.hpp"
#include "runtime/path_runner.hpp"

namespace loom {

class CountsFirstPath final : public PathRunner {
  public:
    Status start(Communicator &, Request &, const CollArgs &args, const CallData &, const CachedPlan &,
                 bool) const override {
        return fail(LOOM_ERR_INTERNAL, "a call that learns its counts first (" + args.describe() +
                                           ") starts through Communicator::start_after_counts");
    }
    Status advance(Request &req) const override;
    void withdraw(Request &req) const override {
        const CountsFirstState *state = req.path_state_if<CountsFirstState>();
        if (!state) return;
        for (const std::unique_ptr<Request> &call : state->calls)
            if (!call->finished_) call->end_with(req.error_, req.error_message_);
    }
    void reserve(Request &, const CollArgs &, const CachedPlan &) const override {}
    void slots_waited(const Request &req, std::vector<int> *local) const override {
        if (const Request *call = unfinished(req)) call->path_->slots_waited(*call, local);
    }
    const Execution *running_plan(const Request &req) const override {
        const Request *call = unfinished(req);
        return call ? call->path_->running_plan(*call) : nullptr;
    }
    bool polls_shared_memory() const override { return false; }

  private:
    // The first of the exchange's calls still running, if any.
    static const Request *unfinished(const Request &req) {
        const CountsFirstState *state = req.path_state_if<CountsFirstState>();
        if (state)
            for (const std::unique_ptr<Request> &call : state->calls)
                if (!call->finished_ && call->path_) return call.get();
        return nullptr;
    }
};

Status CountsFirstPath::advance(Request &req) const {
    CountsFirstState *const state = req.started_state<CountsFirstState>();
    if (!state) return req.error_;
    bool running = false;
    for (const std::unique_ptr<Request> &call : state->calls) {
        // Also in the communicator's active list: advancing it here too
        // lets the alltoallv start as soon as the exchange is done.
        if (call->advance() != LOOM_SUCCESS) {
            req.end_with(call->error_, "learning the other ranks' alltoallv counts: " + call->error_message_);
            return req.error_;
        }
        running = running || !call->finished_;
    }
    if (running) return LOOM_SUCCESS;
    req.args_.node_counts = state->exchange.result();
    const Status st = req.comm_->start_planned(req, state->tag);
    if (st != LOOM_SUCCESS && !req.finished_) req.end_with(st, last_error_message());
    return req.error_;
}

const PathRunner &counts_first_path_runner() {
    static const CountsFirstPath runner;
    return runner;
}

}  // namespace loom
