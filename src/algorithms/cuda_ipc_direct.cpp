// CUDA IPC direct reads, for the collectives other than allreduce: each rank
// maps its peers' device buffers and reads exactly what it needs: its block
// of every input (reduce_scatter, added in rank order), every rank's block
// (allgather), its block of every send buffer (alltoall). Runs in
// runtime/cuda_ipc_call.cpp.
#include "algorithms/algorithm.hpp"

namespace loom {
namespace {
constexpr const char *kRestrictions =
    "device memory; one node with Loom's shared memory (or one rank); buffers CUDA IPC can share";
}  // namespace

extern const AlgorithmInfo kReduceScatterCudaIpcDirect = {
    Collective::reduce_scatter,
    "cuda_ipc_direct",
    "each rank adds its block of all p device inputs, read through CUDA IPC, in rank order",
    kRestrictions,
    cuda_ipc_not_applicable,
    nullptr,
    true,
    true,
    false,
    true};
extern const AlgorithmInfo kReduceScatterBlockCudaIpcDirect = {
    Collective::reduce_scatter_block,
    "cuda_ipc_direct",
    "each rank adds its block of all p device inputs, read through CUDA IPC, in rank order",
    kRestrictions,
    cuda_ipc_not_applicable,
    nullptr,
    true,
    true,
    false,
    true};
extern const AlgorithmInfo kAllgatherCudaIpcDirect = {Collective::allgather,
                                                      "cuda_ipc_direct",
                                                      "each rank copies every rank's device block through CUDA IPC",
                                                      kRestrictions,
                                                      cuda_ipc_not_applicable,
                                                      nullptr,
                                                      true,
                                                      true,
                                                      false,
                                                      true};
extern const AlgorithmInfo kAlltoallCudaIpcDirect = {
    Collective::alltoall,
    "cuda_ipc_direct",
    "each rank copies its block of every device send buffer through CUDA IPC",
    kRestrictions,
    cuda_ipc_not_applicable,
    nullptr,
    true,
    true,
    false,
    true};

}  // namespace loom
