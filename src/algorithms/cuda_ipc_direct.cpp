// CUDA IPC direct reads, for the collectives other than allreduce: each rank
// maps its peers' device buffers and reads exactly what it needs: its block
// of every input (reduce_scatter, added in rank order), every rank's block
// (allgather), its block of every send buffer (alltoall). Runs in
// runtime/cuda_ipc_call.cpp.
#include "algorithms/algorithm.hpp"

namespace loom {

extern const AlgorithmInfo kReduceScatterCudaIpcDirect =
    cuda_ipc_algorithm(Collective::reduce_scatter, "cuda_ipc_direct",
                       "each rank adds its block of all p device inputs, read through CUDA IPC, in rank order");
extern const AlgorithmInfo kReduceScatterBlockCudaIpcDirect =
    cuda_ipc_algorithm(Collective::reduce_scatter_block, "cuda_ipc_direct",
                       "each rank adds its block of all p device inputs, read through CUDA IPC, in rank order");
extern const AlgorithmInfo kAllgatherCudaIpcDirect = cuda_ipc_algorithm(
    Collective::allgather, "cuda_ipc_direct", "each rank copies every rank's device block through CUDA IPC");
extern const AlgorithmInfo kAlltoallCudaIpcDirect = cuda_ipc_algorithm(
    Collective::alltoall, "cuda_ipc_direct", "each rank copies its block of every device send buffer through CUDA IPC");

}  // namespace loom
