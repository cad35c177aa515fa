// The ways a call can run. Every algorithm names one; the runtime runs each
// through its own runner (runtime/path_runner.hpp), the cost model prices each
// its own way, and selection and the API read a path's traits here instead
// of asking what kind of algorithm they hold.
#pragma once
#include <cstdint>

#include "core/memory.hpp"

namespace loom {

enum class CallPath : uint8_t {
    plan,          // the algorithm's program, run by the executor over the transports
    shared_slots,  // no plan: every rank reads its peers' contributions in the node's shared slots
    node_slots,    // the node's phases on the shared slots around the node leaders' plan
    cuda_ipc,      // no plan: device buffers of one node, peers' buffers read through CUDA IPC
};
constexpr int kCallPathCount = 4;

struct CallPathTraits {
    const char *name;
    MemoryType memory;  // the buffers its calls run on
    // Its algorithms build a program that runs over the transports (the
    // node slots': the leaders' exchange); the transports are told of it.
    bool builds_plan;
    // The progress thread may drive its nonblocking calls (messages only);
    // otherwise the caller's calls progress them.
    bool thread_drivable;
    // Chosen only by rules and parameters, whose reach was measured, never
    // by the cost model's search for the fastest.
    bool rules_only;
};

constexpr CallPathTraits kCallPathTraits[kCallPathCount] = {
    {"plan", MemoryType::host, true, true, false},
    {"shared slots", MemoryType::host, false, false, true},
    {"node slots", MemoryType::host, true, false, true},
    {"CUDA IPC", MemoryType::cuda, false, false, true},
};

constexpr const CallPathTraits &traits_of(CallPath path) { return kCallPathTraits[static_cast<int>(path)]; }

}  // namespace loom
