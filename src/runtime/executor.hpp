// The executor runs one rank's Program nonblockingly over a Transport: a step
// becomes ready when its dependencies have completed; local steps (copy,
// reduce) go to the buffers' engine, sends and receives to the transport,
// and both are polled until they complete.
#pragma once
#include <memory>
#include <vector>

#include "core/datatype.hpp"
#include "core/plan.hpp"
#include "engine/engine.hpp"
#include "runtime/trace.hpp"
#include "transport/transport.hpp"

namespace loom {

struct ExecutionBuffers {
    const void *input = nullptr;  // already resolved for in-place calls
    void *output = nullptr;
    void *scratch = nullptr;  // at least program.scratch_count * elem_size bytes
    size_t elem_size = 1;
    ReduceFn reduce = nullptr;       // null for collectives without reduction
    Engine *engine = nullptr;        // null: host memory, run by the host engine's kernels inline
    uint32_t plan = Route::kNoPlan;  // the communicator's id of the program, for the transports
    StepTimes *trace = nullptr;      // the step timeline's record of this run, armed for the program; null: off
};

class Execution {
  public:
    // `program` must outlive the execution (the Request owns it).
    Execution(const Program *program, Transport &transport, uint32_t tag, const ExecutionBuffers &buffers);
    // Re-arms for another run, keeping the vectors' capacity (no allocation
    // on the small-message path).
    void reset(const Program *program, uint32_t tag, const ExecutionBuffers &buffers);
    // Sizes the vectors a run of the program can need (a persistent request's
    // starts then allocate nothing).
    void reserve();
    // Posts/runs everything that is ready. Call once, then progress() until done.
    Status start();
    // Advances; sets *done when every step has completed.
    Status progress(bool *done);
    bool done() const { return completed_ == program_->size(); }
    size_t completed_steps() const { return completed_; }
    const Program &program() const { return *program_; }
    // What an unfinished run waits for (a hang report): the peers of its
    // posted receives and sends, each once, in rank order.
    void pending_peers(std::vector<int> *receives_from, std::vector<int> *sends_to) const;
    // The call was abandoned (hang_abort): takes back every posted send and
    // receive the transports can withdraw; those they cannot (already
    // moving) finish by themselves, untested.
    void withdraw();

  private:
    Status run_ready();
    Status test_local(bool *any);  // polls the engine's pending local steps
    void complete(StepId id);
    void release(StepId id);
    unsigned char *address(const Slice &s) const;

    const Program *program_;
    Transport &transport_;
    size_t transport_ranks_;  // asked once: no virtual call per start
    uint32_t tag_;
    ExecutionBuffers buffers_;
    std::vector<uint32_t> unmet_;
    std::vector<StepId> ready_;
    struct Active {
        StepId id;
        TransportHandle handle;
    };
    std::vector<Active> active_;
    struct ActiveLocal {
        StepId id;
        EngineHandle handle;
    };
    std::vector<ActiveLocal> active_local_;   // local steps an engine has not completed yet
    std::vector<TransportHandle *> handles_;  // scratch for test_many
    std::vector<unsigned char> done_flags_;   // bool per active operation
    size_t completed_ = 0;
    // At most kPeerWindow sends (and receives) per peer are posted at once;
    // the rest wait here in program order. Bounds the requests each poll
    // tests, as posting thousands of segments ahead buys nothing.
    static constexpr uint32_t kPeerWindow = 16;
    // The posting-order gate lets at most one step per (peer, direction) wait.
    std::vector<uint32_t> in_flight_;  // per (peer, direction)
    std::vector<StepId> held_;         // per (peer, direction), or Program::kNoStep
    bool windows_clean_ = false;
};

}  // namespace loom
