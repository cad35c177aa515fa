#include "runtime/device_call.hpp"

#include <cstdio>

#include "algorithms/algorithm.hpp"

namespace loom {
namespace {

// The pipelined allreduce's chunk for `args` (0: no pipeline), priced by
// the model once per message size while the parameters stay as they are.
size_t pipeline_chunk(DeviceCalls &device, const Communicator &c, const CollArgs &args, loom_datatype_t type) {
    if (device.chunks_generation != c.config().generation() || device.chunks.size() > 1024) {
        device.chunks.clear();
        device.chunks_generation = c.config().generation();
    }
    const size_t bytes = args.count * args.elem_size;
    auto known = device.chunks.find(bytes);
    if (known != device.chunks.end()) return known->second;
    return device.chunks[bytes] = model_chunk_bytes(c, args, type);
}

}  // namespace

Status start_device_call(Communicator &c, DeviceCalls &device, CollArgs full, const CallData &call, StagingNeed need,
                         Started *req, Launch launch) {
    const size_t bytes = full.input_count() * full.elem_size;
    // Blocking: CUDA IPC where every rank can. A rank with any device buffer
    // takes part in the exchange (run_cuda_ipc), so all ranks agree even when
    // a buffer of no bytes leaves one of them nothing to look at.
    if (launch == Launch::blocking && c.config().integer(kParamCudaIpc)) {
        CollArgs dev = full;
        dev.memory = MemoryType::cuda;
        const char *name = nullptr;
        if (c.prepare(dev, call.type, call.in_place, &name) == LOOM_SUCCESS) {
            if (!device.ipc) device.ipc = std::make_unique<CudaIpcState>();
            bool staged = false;
            std::string why;
            const AlgorithmInfo *algo = find_algorithm(full.collective, name);
            const char *cannot =
                need.all_device(call.in_place) ? nullptr : "one buffer on the host, the other on the device";
            const Status st = run_cuda_ipc(c, *device.ipc, *algo, full, call, cannot, &staged, &why);
            if (!staged) {
                ++device.device_calls;
                c.set_last_algorithm(full.collective, algo->name);
                return st;
            }
            device.reason = why;
        } else {
            device.reason = last_error_message();
        }
    } else {
        device.reason = launch != Launch::blocking ? "nonblocking and persistent calls on device buffers are staged"
                                                   : "cuda_ipc=0: device buffers are staged";
    }
    if (c.config().integer(kParamVerbose) >= 2)
        std::fprintf(stderr, "loom[%d]: %s staged: %s\n", c.rank(), full.describe().c_str(), device.reason.c_str());
    ++device.calls;
    if (launch == Launch::blocking) {
        device.bytes += bytes;
        if (full.collective == Collective::allreduce && need.send_on_device && need.recv_on_device) {
            const size_t chunk = pipeline_chunk(device, c, full, call.type);
            if (chunk && bytes >= 2 * chunk) {
                ++device.pipelined;
                return run_pipelined_allreduce(c, full, call, chunk, device.ring, device.stream);
            }
        }
        StagedCall &s = device.blocking;
        LOOM_RETURN_IF_ERROR(s.prepare(full, c.rank(), call, need));
        LOOM_RETURN_IF_ERROR(s.copy_in());
        LOOM_RETURN_IF_ERROR(c.run(full, s.host_call()));
        return s.copy_out();
    }
    auto s = std::make_unique<StagedCall>();
    LOOM_RETURN_IF_ERROR(s->prepare(full, c.rank(), call, need));
    if (launch == Launch::nonblocking) {
        device.bytes += bytes;
        LOOM_RETURN_IF_ERROR(s->copy_in());
        LOOM_RETURN_IF_ERROR(c.start(std::move(full), s->host_call(), &req->request));
    } else {
        LOOM_RETURN_IF_ERROR(c.init(std::move(full), s->host_call(), &req->request));
    }
    req->staged = std::move(s);
    return LOOM_SUCCESS;
}

}  // namespace loom
