// CUDA IPC reduce-scatter + allgather allreduce: rank r adds block r of all
// p inputs (read through CUDA IPC) into its own output, then copies every
// other block from its owner's output. Each rank reads about 2x the vector
// instead of p x: for large vectors. Runs in runtime/cuda_ipc_call.cpp.
#include "algorithms/algorithm.hpp"

namespace loom {

extern const AlgorithmInfo kAllreduceCudaIpcReduceScatterAllgather = cuda_ipc_algorithm(
    Collective::allreduce, "cuda_ipc_reduce_scatter_allgather",
    "through CUDA IPC, each rank reduces its block of all p device vectors, then copies the other blocks from "
    "their owners");

}  // namespace loom
