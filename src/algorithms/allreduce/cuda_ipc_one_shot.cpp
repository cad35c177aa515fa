// CUDA IPC one-shot allreduce: every rank maps its peers' input vectors and
// one kernel adds all p in rank order into its output (every rank gets the
// same bits). One pass over p inputs per rank: for small vectors, where a
// launch and a barrier are what a call pays. Runs in runtime/cuda_ipc_call.cpp.
#include "algorithms/algorithm.hpp"

namespace loom {

extern const AlgorithmInfo kAllreduceCudaIpcOneShot = cuda_ipc_algorithm(
    Collective::allreduce, "cuda_ipc_one_shot",
    "every rank reads all p device vectors through CUDA IPC and adds them in rank order in one kernel");

}  // namespace loom
