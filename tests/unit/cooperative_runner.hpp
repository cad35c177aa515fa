// Runs every rank of a plan in one thread, round-robin over the in-process
// transport (sends are eager, so any interleaving completes). Deterministic
// and cheap: the exhaustive algorithm matrix uses it.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "algorithm.hpp"
#include "executor.hpp"
#include "transport_inprocess.hpp"

namespace loom::testing {

struct RankBuffers {
    std::vector<unsigned char> input;   // the rank's send buffer (empty for in-place)
    std::vector<unsigned char> output;  // the rank's receive buffer
};

// Runs `algo` for `args` on all ranks. Returns an empty string on success,
// else what went wrong (validation failure, executor error, stuck plan).
inline std::string run_all_ranks(const AlgorithmInfo &algo, const CollArgs &args, ReduceFn reduce,
                                 std::vector<RankBuffers> &bufs) {
    const int p = args.nranks;
    InProcessFabric fabric(p);
    std::vector<std::unique_ptr<Transport>> transports;
    std::vector<std::unique_ptr<Execution>> execs;
    std::vector<std::vector<unsigned char>> scratch(p), snapshot(p);
    for (int r = 0; r < p; ++r) {
        auto program = std::make_shared<Program>(build_program(algo, args, r));
        const size_t in_count = args.input_count(), out_count = args.output_count(r);
        std::string bad = program->validate(in_count, out_count);
        if (!bad.empty()) return "rank " + std::to_string(r) + ": " + bad;
        transports.push_back(fabric.endpoint(r));
        scratch[r].resize(program->scratch_count * args.elem_size + 1);
        ExecutionBuffers eb;
        eb.output = bufs[r].output.data();
        eb.scratch = scratch[r].data();
        eb.elem_size = args.elem_size;
        eb.reduce = reduce;
        if (!args.in_place) {
            eb.input = bufs[r].input.data();
        } else if (algo.in_place_aliasing_safe) {
            eb.input = bufs[r].output.data() + args.in_place_input_offset(r) * args.elem_size;
        } else {
            const unsigned char *at = bufs[r].output.data() + args.in_place_input_offset(r) * args.elem_size;
            snapshot[r].assign(at, at + in_count * args.elem_size);
            eb.input = snapshot[r].data();
        }
        execs.push_back(std::make_unique<Execution>(program, *transports[r], 7, eb));
    }
    for (int r = 0; r < p; ++r)
        if (execs[r]->start() != LOOM_SUCCESS) return "start failed on rank " + std::to_string(r) + ": " + last_error_message();
    // Sends are eager, so a full round in which no rank completes a step means
    // no rank ever will: the plan deadlocks.
    for (;;) {
        bool all_done = true;
        size_t moved = 0;
        for (int r = 0; r < p; ++r) {
            if (execs[r]->done()) continue;
            const size_t before = execs[r]->completed_steps();
            bool done = false;
            if (execs[r]->progress(&done) != LOOM_SUCCESS)
                return "progress failed on rank " + std::to_string(r) + ": " + last_error_message();
            all_done &= done;
            moved += execs[r]->completed_steps() - before;
        }
        if (all_done) break;
        if (moved == 0) {
            std::string stuck;
            for (int r = 0; r < p; ++r)
                if (!execs[r]->done()) stuck += " " + std::to_string(r);
            return "plan deadlocked; ranks not done:" + stuck;
        }
    }
    if (fabric.undelivered() != 0) return std::to_string(fabric.undelivered()) + " messages left unmatched";
    return {};
}

}  // namespace loom::testing
