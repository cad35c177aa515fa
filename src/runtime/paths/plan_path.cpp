// The plan path: the algorithm's program, run by the executor over the
// transports; the progress thread may drive it.
#include "core/clock.hpp"
#include "runtime/communicator.hpp"
#include "runtime/path_runner.hpp"

namespace loom {

class PlanPath final : public PathRunner {
  public:
    Status start(Communicator &comm, Request &req, const CollArgs &args, const CallData &call, const CachedPlan &plan,
                 bool blocking) const override {
        return start_here(comm, req, args, call, plan, blocking);
    }
    // As the default, with the start inlined: one call level less for every
    // blocking call.
    Status run(Communicator &comm, const CollArgs &args, const CallData &call, const CachedPlan &plan) const override {
        Request &req = *comm.blocking_;
        LOOM_RETURN_IF_ERROR(comm.begin_call(req, args, plan));
        LOOM_RETURN_IF_ERROR(start_here(comm, req, args, call, plan, /*blocking=*/true));
        return comm.wait_blocking(req);
    }
    Status advance(Request &req) const override;
    void withdraw(Request &req) const override {
        if (req.execution_) req.execution_->withdraw();
    }
    void reserve(Request &req, const CollArgs &args, const CachedPlan &plan) const override {
        if (args.in_place && !plan.algorithm->in_place_aliasing_safe)
            req.snapshot_.reserve(args.input_count() * args.elem_size);
    }
    void slots_waited(const Request &, std::vector<int> *) const override {}
    const Execution *running_plan(const Request &req) const override { return req.execution_.get(); }
    bool polls_shared_memory() const override { return false; }

  private:
    [[gnu::always_inline]] inline Status start_here(Communicator &comm, Request &req, const CollArgs &args,
                                                    const CallData &call, const CachedPlan &plan, bool blocking) const;
};

inline Status PlanPath::start_here(Communicator &comm, Request &req, const CollArgs &args, const CallData &call,
                                   const CachedPlan &plan, bool blocking) const {
    req.arm(&comm, this);
    if (req.program_ != plan.program) req.program_ = plan.program;  // keeps it alive; no refcount churn in loops
    ExecutionBuffers eb;
    eb.plan = plan.id;
    eb.engine = plan.engine;
    eb.output = call.recvbuf;
    eb.elem_size = args.elem_size;
    if (args.collective == Collective::allreduce || args.collective == Collective::reduce_scatter ||
        args.collective == Collective::reduce_scatter_block)
        eb.reduce = reduction_kernel(call.type, call.op);
    if (!args.in_place) {
        eb.input = call.sendbuf;
    } else {
        const unsigned char *at =
            static_cast<const unsigned char *>(call.recvbuf) + args.in_place_input_offset(comm.rank()) * args.elem_size;
        if (plan.algorithm->in_place_aliasing_safe) {
            eb.input = at;
        } else {
            const size_t bytes = args.input_count() * args.elem_size;
            comm.spare_buffers_.take(req.snapshot_, bytes);
            req.snapshot_.assign(at, at + bytes);
            eb.input = req.snapshot_.data();
        }
    }
    const size_t scratch_bytes = plan.program->scratch_count * args.elem_size;
    comm.spare_buffers_.take(req.scratch_, scratch_bytes);
    req.scratch_.resize(scratch_bytes);
    eb.scratch = req.scratch_.data();
    const uint32_t tag = comm.take_tag();
    req.traced_ = false;
    if (comm.tracing()) {
        comm.trace_begin(req, args, plan.algorithm->name, plan.id,
                         blocking          ? "blocking"
                         : req.persistent_ ? "persistent"
                                           : "nonblocking",
                         plan.program.get());
        eb.trace = &req.trace_times_;
    }
    if (req.execution_) req.execution_->reset(req.program_.get(), tag, eb);
    else req.execution_ = std::make_unique<Execution>(req.program_.get(), *comm.router_, tag, eb);
    comm.timed_plan_ = Route::kNoPlan;
    if (comm.router_->call_starts(plan.id, blocking) && blocking) {
        comm.timed_plan_ = plan.id;
        comm.timed_start_ns_ = now_ns();
    }
    req.thread_driven_ = plan.for_progress_thread && plan.thread_drivable;
    req.trace_call_.thread_driven = req.thread_driven_;
    if (plan.for_progress_thread) {
        if (req.thread_driven_) {
            ++comm.thread_driven_calls_;
        } else {
            ++comm.caller_driven_calls_;
            comm.caller_driven_blocker_ = plan.thread_blocker;
        }
    }
    LOOM_RETURN_IF_ERROR(req.execution_->start());
    comm.active_.push_back(&req);
    if (req.thread_driven_) comm.wake_thread_ = true;  // once the caller lets go of the communicator (Guard)
    return LOOM_SUCCESS;
}

// A call whose steps are done completes once its transports owe nothing
// (a detached rail message's answer): after it returns, the sender may wait
// in MPI's own calls, where nothing would send the message again to a
// receiver whose rail died.
static bool owes_nothing(Communicator &comm, Status *error) {
    if (background_operations_anywhere().load(std::memory_order_relaxed) == 0) return true;
    Router &router = comm.transport();
    if (router.background_operations() == 0) return true;
    *error = router.progress_background();
    return *error != LOOM_SUCCESS || router.background_operations() == 0;
}

Status PlanPath::advance(Request &req) const {
    bool complete = false;
    req.error_ = req.execution_->progress(&complete);
    if (complete && req.error_ == LOOM_SUCCESS && req.comm_ && !owes_nothing(*req.comm_, &req.error_)) complete = false;
    if (req.error_ != LOOM_SUCCESS) {
        req.error_message_ = last_error_message();
        req.execution_->withdraw();
        if (req.error_ == LOOM_ERR_MISMATCH) req.mismatched();
    }
    if (complete || req.error_ != LOOM_SUCCESS) req.finish();
    return req.error_;
}

const PathRunner &plan_path_runner() {
    static const PlanPath runner;
    return runner;
}

}  // namespace loom
