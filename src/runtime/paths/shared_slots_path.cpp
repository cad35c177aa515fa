// The shared slots' path: no plan, every rank reads its peers'
// contributions in the node's shared slots (runtime/slot_call.hpp). Its
// calls progress in the caller's calls; a blocking one runs without a
// request, and its shape is kept so that the same call again skips the
// checks and the selection (Communicator::repeat_slots).
#include "runtime/communicator.hpp"
#include "runtime/path_runner.hpp"

namespace loom {

class SharedSlotsPath final : public PathRunner {
  public:
    Status start(Communicator &comm, Request &req, const CollArgs &args, const CallData &call, const CachedPlan &plan,
                 bool blocking) const override;
    Status run(Communicator &comm, const CollArgs &args, const CallData &call, const CachedPlan &plan) const override;
    Status advance(Request &req) const override;
    void withdraw(Request &) const override {}  // a slot publishes in place: nothing is posted to withdraw
    void reserve(Request &, const CollArgs &, const CachedPlan &) const override {}
    void slots_waited(const Request &req, std::vector<int> *local) const override {
        if (const SlotCall *slot = req.path_state_if<SlotCall>()) slot->unpublished(local);
    }
    const Execution *running_plan(const Request &) const override { return nullptr; }
    bool polls_shared_memory() const override { return true; }
};

Status SharedSlotsPath::start(Communicator &comm, Request &req, const CollArgs &args, const CallData &call,
                              const CachedPlan &, bool) const {
    LOOM_RETURN_IF_ERROR(comm.check_slots(args));
    req.arm(&comm, this);
    if (&req.args_ != &args) req.args_ = args;  // the call outlives the caller's args
    req.traced_ = false;
    if (comm.tracing())
        comm.trace_begin(req, args, comm.last_algorithm(args.collective), 0,
                         req.persistent_ ? "persistent" : "nonblocking", nullptr);
    SlotCall &slot = req.path_state<SlotCall>();
    slot.begin(comm.slots_.get(), comm.slots_ ? ++comm.slots_started_ : 0, req.args_, call.sendbuf, call.recvbuf,
               Communicator::slot_reduction(args.collective, call), SlotCall::call_signature(args, call.type, call.op));
    comm.active_.push_back(&req);
    // Published now when no earlier call is pending: the peers can then
    // finish without waiting for this rank's next test. The request stays
    // active until the caller's test or wait sees it done, as MPI's do.
    if (comm.active_.size() == 1) slot.advance(&comm.slots_finished_);
    return LOOM_SUCCESS;
}

Status SharedSlotsPath::run(Communicator &comm, const CollArgs &args, const CallData &call,
                            const CachedPlan &plan) const {
    comm.last_algorithm_[static_cast<int>(args.collective)] = plan.algorithm->name;
    const ReduceFn reduce = Communicator::slot_reduction(args.collective, call);
    // Not Loom's own element types (a reproducible sum's): the fast repeat
    // runs before a user's type is checked.
    const bool repeatable = comm.config_.integer(kParamVerbose) < 2 && !comm.threaded_ && comm.deferred_.empty() &&
                            comm.periodic_.empty() && static_cast<unsigned>(call.type) < LOOM_DATATYPE_COUNT;
    Communicator::SlotShape &shape = comm.slot_shape_;
    shape.valid = false;  // until this call has run
    const uint64_t signature = SlotCall::call_signature(args, call.type, call.op);
    if (comm.tracing()) {  // no request: the blocking request's record serves
        comm.trace_begin(*comm.blocking_, args, plan.algorithm->name, plan.id, "blocking", nullptr);
        const Status st = comm.run_slots(args, call, reduce, signature);
        comm.trace_end(*comm.blocking_);
        return st;
    }
    // Read now: a nonblocking call planned while this one waits may evict `plan` from the cache.
    const char *const name = plan.algorithm->name;
    const Status st = comm.run_slots(args, call, reduce, signature);
    if (st == LOOM_SUCCESS && repeatable) {
        shape.args = args;
        shape.type = call.type;
        shape.op = call.op;
        shape.reduce = reduce;
        shape.generation = comm.config_.generation();
        shape.signature = signature;
        shape.has_input = args.input_count() > 0;
        shape.name = name;
        shape.valid = true;
    }
    return st;
}

Status SharedSlotsPath::advance(Request &req) const {
    SlotCall *const started = req.started_state<SlotCall>();
    if (!started) return req.error_;
    SlotCall &slot = *started;
    if (!slot.advance(&req.comm_->slots_finished_)) return LOOM_SUCCESS;
    req.finish();
    if (!slot.failed()) return LOOM_SUCCESS;
    req.error_ = LOOM_ERR_MISMATCH;
    req.error_message_ = req.comm_->slot_mismatch(req.args_, slot.mismatched_rank());
    req.mismatched();
    return req.error_;
}

const PathRunner &shared_slots_path_runner() {
    static const SharedSlotsPath runner;
    return runner;
}

}  // namespace loom
