// The node slots' path: the node's phases on the shared slots
// (runtime/node_slot_call.hpp) around the node leaders' plan, which runs
// once the leader has its node's contribution. Its calls progress in the
// caller's calls.
#include "runtime/communicator.hpp"
#include "runtime/path_runner.hpp"

namespace loom {

class NodeSlotsPath final : public PathRunner {
  public:
    Status start(Communicator &comm, Request &req, const CollArgs &args, const CallData &call, const CachedPlan &plan,
                 bool blocking) const override;
    Status advance(Request &req) const override;
    void withdraw(Request &req) const override {
        if (req.execution_) req.execution_->withdraw();
    }
    void reserve(Request &req, const CollArgs &args, const CachedPlan &) const override {
        req.snapshot_.reserve(NodeSlotCall::buffer_bytes(args));
    }
    void slots_waited(const Request &req, std::vector<int> *local) const override {
        const NodeSlotsState *s = req.path_state_if<NodeSlotsState>();
        if (s && !s->exchanging) s->slots.waiting_for(local);
    }
    const Execution *running_plan(const Request &req) const override {
        const NodeSlotsState *s = req.path_state_if<NodeSlotsState>();
        return s && s->exchanging ? req.execution_.get() : nullptr;
    }
    bool polls_shared_memory() const override { return true; }
};

Status NodeSlotsPath::start(Communicator &comm, Request &req, const CollArgs &args, const CallData &call,
                            const CachedPlan &plan, bool) const {
    const NodeMap &nodes = comm.nodes();
    const bool alone = nodes.ranks_on(nodes.node_of[comm.rank()]) == 1;
    if (!alone && !comm.slots_)
        return fail(LOOM_ERR_INTERNAL, "node slots chosen for " + args.describe() + " without shared memory");
    req.arm(&comm, this);
    NodeSlotsState &state = req.path_state<NodeSlotsState>();
    state.exchanging = false;
    req.thread_driven_ = false;                 // its slot phases progress in the caller's calls
    comm.timed_plan_ = Route::kNoPlan;          // no transport times it
    if (&req.args_ != &args) req.args_ = args;  // the call outlives the caller's args
    if (req.program_ != plan.program) req.program_ = plan.program;
    state.plan_id = plan.id;
    state.reduce = Communicator::slot_reduction(args.collective, call);
    req.traced_ = false;
    if (comm.tracing())
        comm.trace_begin(req, args, plan.algorithm->name, plan.id, req.persistent_ ? "persistent" : "nonblocking",
                         plan.program.get());
    // Every rank takes the tag, so that tags stay equal everywhere; only
    // the leaders' plan uses it.
    state.tag = comm.take_tag();
    const size_t buffer = NodeSlotCall::buffer_bytes(req.args_);
    comm.spare_buffers_.take(req.snapshot_, buffer);
    req.snapshot_.resize(buffer);
    const size_t scratch = plan.program->scratch_count * args.elem_size;
    comm.spare_buffers_.take(req.scratch_, scratch);
    req.scratch_.resize(scratch);
    const uint64_t generation = alone ? 0 : comm.slots_started_ + 1;
    if (!alone) comm.slots_started_ += 2;  // the node's inputs, then the leader's result
    state.slots.begin(alone ? nullptr : comm.slots_.get(), generation, req.args_, comm.rank(), call.sendbuf,
                      call.recvbuf, state.reduce, req.snapshot_.data());
    comm.active_.push_back(&req);
    // Published now when no earlier call is pending, as the shared slots'
    // path does; a leader starts its plan at the request's next advance.
    if (comm.active_.size() == 1) state.slots.advance(&comm.slots_finished_);
    return LOOM_SUCCESS;
}

Status NodeSlotsPath::advance(Request &req) const {
    Communicator &comm = *req.comm_;
    uint64_t &finished = comm.slots_finished_;
    NodeSlotsState *const started = req.started_state<NodeSlotsState>();
    if (!started) return req.error_;
    NodeSlotsState &state = *started;
    if (!state.exchanging) {
        const NodeSlotCall::Stage stage = state.slots.advance(&finished);
        if (stage == NodeSlotCall::Stage::waiting) return LOOM_SUCCESS;
        if (stage == NodeSlotCall::Stage::exchange) {
            ExecutionBuffers eb;
            eb.plan = state.plan_id;
            eb.input = state.slots.combined();
            eb.output = state.slots.result();
            eb.scratch = req.scratch_.data();
            eb.elem_size = req.args_.elem_size;
            eb.reduce = state.reduce;
            if (req.traced_) eb.trace = &req.trace_times_;
            if (req.execution_) req.execution_->reset(req.program_.get(), state.tag, eb);
            else req.execution_ = std::make_unique<Execution>(req.program_.get(), comm.transport(), state.tag, eb);
            state.exchanging = true;
            req.error_ = req.execution_->start();
        }
    }
    if (state.exchanging) {
        bool complete = false;
        if (req.error_ == LOOM_SUCCESS) req.error_ = req.execution_->progress(&complete);
        if (req.error_ != LOOM_SUCCESS) {
            req.error_message_ = last_error_message();
            req.execution_->withdraw();
            if (req.error_ == LOOM_ERR_MISMATCH) req.mismatched();  // before the node's ranks read the outcome
        } else if (!complete) {
            return LOOM_SUCCESS;
        }
        // The node's other ranks learn the outcome from the leader's slot.
        state.slots.finish_exchange(req.error_ == LOOM_SUCCESS, &finished);
        state.exchanging = false;
        if (state.slots.advance(&finished) == NodeSlotCall::Stage::waiting) return LOOM_SUCCESS;
    } else if (state.slots.failed() && req.error_ == LOOM_SUCCESS) {
        // result() reports it to the caller; a leader's revoke is published before the outcome.
        if (comm.revoked_by_peer(req.call_number_)) {
            req.error_ = LOOM_ERR_MISMATCH;
            req.error_message_ = comm.revoked_;
        } else {
            req.error_ = LOOM_ERR_TRANSPORT;
            req.error_message_ = "the node leader's exchange with the other nodes failed (the leader reports why)";
        }
    }
    req.finish();
    return req.error_;
}

const PathRunner &node_slots_path_runner() {
    static const NodeSlotsPath runner;
    return runner;
}

}  // namespace loom
