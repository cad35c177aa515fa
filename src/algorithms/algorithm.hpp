// Algorithms are plan builders, registered by name with their restrictions
// (the MPICH way: one list, each entry says where it applies).
#pragma once
#include <string>
#include <vector>

#include "algorithms/call_path.hpp"
#include "core/params.hpp"
#include "core/plan.hpp"

namespace loom {

extern const ParamId kParamSegmentSize;
extern const ParamId kParamKnomialRadix;
extern const ParamId kParamAlltoallMaxOutstanding;

struct AlgorithmInfo {
    Collective collective;
    const char *name;  // what users force it by: LOOM_ALLREDUCE_ALGORITHM=ring
    const char *description;
    const char *restrictions;  // in words, for loom-info; "none" when it runs anywhere
    // Empty when the algorithm can run `args`; otherwise why not.
    std::string (*not_applicable)(const CollArgs &args);
    // Appends `rank`'s steps for `args` to `program`.
    void (*build)(const CollArgs &args, int rank, ProgramBuilder &builder);
    // True when the algorithm reads its input only through a first copy into
    // the output, so an in-place call may alias input and output directly.
    bool in_place_aliasing_safe;
    // How its calls run (call_path.hpp); build is null where the path has
    // no plan. Only the CUDA IPC path runs on device memory.
    CallPath path = CallPath::plan;
};
// Why `algo` cannot run on the call's memory ("" when it can).
std::string memory_mismatch(const AlgorithmInfo &algo, const CollArgs &args);
// The applicability of `algo` to `args`, memory included.
inline std::string why_not_applicable(const AlgorithmInfo &algo, const CollArgs &args) {
    std::string why = memory_mismatch(algo, args);
    return why.empty() ? algo.not_applicable(args) : why;
}
// For the cuda_ipc algorithms.
std::string cuda_ipc_not_applicable(const CollArgs &args);
// The registry entry of a cuda_ipc algorithm: run without a plan by
// runtime/cuda_ipc_call.cpp, on device memory, where cuda_ipc_not_applicable allows.
constexpr AlgorithmInfo cuda_ipc_algorithm(Collective c, const char *name, const char *description) {
    AlgorithmInfo a{c,
                    name,
                    description,
                    "device memory; one node with Loom's shared memory (or one rank); buffers CUDA IPC can share",
                    cuda_ipc_not_applicable,
                    nullptr,
                    true};
    a.path = CallPath::cuda_ipc;
    return a;
}

const std::vector<const AlgorithmInfo *> &all_algorithms();
std::vector<const AlgorithmInfo *> algorithms_for(Collective c);
const AlgorithmInfo *find_algorithm(Collective c, const std::string &name);
std::string algorithm_names(Collective c);  // "ring, recursive_doubling, ..." for messages

// The most bytes a rank may contribute to a shared-slots call (the slots' capacity).
constexpr size_t kSharedSlotsCapacity = 32768;
// The shared slots' algorithm for `c` (shared_slots.cpp); null for the
// vector collectives, whose inputs differ in size from rank to rank.
const AlgorithmInfo *shared_slots_algorithm(Collective c);

// The node slots' algorithm for `c` (node_slots.cpp); null for alltoall,
// whose node result differs for every rank, and the vector collectives.
const AlgorithmInfo *node_slots_algorithm(Collective c);
// Elements a node leader publishes in a node_slots call: the whole reduced
// vector (every rank's block of a reduce_scatter among them) or the whole output.
size_t node_slots_result_count(const CollArgs &args);

// For algorithms without restrictions.
inline std::string always_applicable(const CollArgs &) { return {}; }

// The vector collectives' blocks: what this rank sends `peer` (alltoallv),
// and what it receives from `peer` (alltoallv; allgatherv: peer's shard).
inline Slice sent_block(const CollArgs &a, int peer) { return input_slice(a.send_displs[peer], a.send_counts[peer]); }
inline Slice received_block(const CollArgs &a, int peer) {
    return output_slice(a.recv_displs[peer], a.recv_counts[peer]);
}

// Builds rank `rank`'s finalized program. An in-place call whose algorithm is
// not aliasing safe reads its input from a snapshot the executor takes first;
// programs never know the difference. With a `step_limit`, a plan of more
// steps comes back truncated (Program::truncated), unfinalized.
Program build_program(const AlgorithmInfo &algo, const CollArgs &args, const PlanKnobs &knobs, int rank,
                      size_t step_limit = 0);

}  // namespace loom
