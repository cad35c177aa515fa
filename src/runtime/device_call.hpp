// Calls on device buffers: which way each runs. A blocking call goes
// through CUDA IPC where every rank can take part (cuda_ipc_call.hpp); a
// large blocking allreduce with both buffers on the device is pipelined
// through pinned host memory; every other call is staged: its buffers are
// copied to host stand-ins and the call runs on a host path
// (device_staging.hpp). The C API checks a call, finds device buffers and
// hands it here.
#pragma once
#include <map>
#include <memory>
#include <string>

#include "runtime/communicator.hpp"
#include "runtime/cuda_ipc_call.hpp"
#include "runtime/device_staging.hpp"
#include "runtime/reproducible_call.hpp"

namespace loom {

// How a call runs: now to completion, started (a request), or persistent
// (a request started later, as often as wanted).
enum class Launch { blocking, nonblocking, persistent };

// What a nonblocking or persistent call hands back: its request and, for
// device buffers, their staging.
struct Started {
    std::unique_ptr<Request> request;
    std::unique_ptr<StagedCall> staged;
    // A reproducible sum: the exact sums it runs on (runtime/reproducible_call.hpp).
    std::unique_ptr<ReproducibleCall> exact;
};

// One communicator's device calls: the blocking calls' reused host
// stand-ins, the pipeline's pinned ring and stream, the CUDA IPC state and
// what was counted.
struct DeviceCalls {
    StagedCall blocking;
    PinnedBuffer ring;  // the pipelined allreduce's chunks
    DeviceStream stream;
    uint64_t calls = 0, pipelined = 0, bytes = 0, device_calls = 0;
    // The model's chunk per message size, for the parameters of `chunks_generation`.
    std::map<size_t, size_t> chunks;
    uint64_t chunks_generation = 0;
    std::string reason;  // why the last device call was staged ("": none was)
    std::unique_ptr<CudaIpcState> ipc;
    // reason, or what staging means where no call said more.
    const char *staging_reason() const {
        return reason.empty() ? "device buffers: Loom's algorithms run on host memory, through pinned copies"
                              : reason.c_str();
    }
};

// Runs, starts or makes persistent the call on device buffers (`need`
// says which), on communicator `comm`. `req`: where a nonblocking or
// persistent call's request and staging go.
Status start_device_call(Communicator &comm, DeviceCalls &device, CollArgs full, const CallData &call, StagingNeed need,
                         Started *req, Launch launch);

}  // namespace loom
