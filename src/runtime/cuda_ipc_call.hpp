// Collectives on device buffers among the ranks of one node, through CUDA
// IPC: every rank maps its peers' buffers and Loom's kernels read them
// directly (algorithms cuda_ipc_one_shot, cuda_ipc_reduce_scatter_allgather,
// cuda_ipc_direct). A call goes:
//   1. each rank describes its buffers (IPC handle, allocation base and id,
//      offset) and its call; the descriptions are allgathered over host memory;
//   2. a different call on some rank is an error on every rank; a rank that
//      cannot take part (no handle, a type without a kernel) sends every rank
//      to the staging path, so all ranks always agree;
//   3. peers' buffers are mapped (IpcPeerCache) and every rank says whether
//      that worked; on any failure every rank stages, and stops trying IPC;
//   4. the algorithm's phases run on Loom's stream, each ended by a stream
//      synchronisation and a host barrier, so no rank returns while a peer
//      still reads its buffers.
// Blocking calls only; nonblocking and persistent ones are staged.
#pragma once
#include <map>
#include <string>

#include "algorithms/algorithm.hpp"
#include "core/params.hpp"
#include "engine/cuda/driver.hpp"
#include "engine/cuda/ipc_cache.hpp"
#include "runtime/communicator.hpp"

namespace loom {

extern const ParamId kParamCudaIpc;

// One communicator's CUDA IPC state, kept across calls.
struct CudaIpcState {
    CudaIpcState() : peers(driver_ipc_ops()) {}
    ~CudaIpcState();
    CudaIpcState(const CudaIpcState &) = delete;
    CudaIpcState &operator=(const CudaIpcState &) = delete;
    DeviceStream stream;
    IpcPeerCache peers;
    std::map<uint64_t, IpcHandle> own;  // this rank's handles, by buffer id
    void *scratch = nullptr;            // device memory for in-place calls
    size_t scratch_bytes = 0;
    bool disabled = false;  // a rank failed to map a peer: staging from then on
    std::string disabled_reason;
    uint64_t calls = 0;
};

// Runs the cuda_ipc algorithm `algo`. `cannot`: why this rank cannot take
// part, or null. *staged_instead is set (with success) when some rank could
// not: every rank then stages the call, and *why says why.
Status run_cuda_ipc(Communicator &comm, CudaIpcState &state, const AlgorithmInfo &algo, const CollArgs &args,
                    const CallData &call, const char *cannot, bool *staged_instead, std::string *why);

}  // namespace loom
