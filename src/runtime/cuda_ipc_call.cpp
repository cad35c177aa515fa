#include "runtime/cuda_ipc_call.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "runtime/device_staging.hpp"
#include "runtime/slot_call.hpp"

namespace loom {

const ParamId kParamCudaIpc = declare_param(
    ParamSection::device,
    {"cuda_ipc", ParamType::integer, "1", 5,
     "Blocking collectives whose buffers are all on the device, among the ranks of one node: 1 run them on the "
     "device, each rank reading its peers' buffers through CUDA IPC (the cuda_ipc_* algorithms); 0 stage them "
     "through pinned host memory like every other call on device buffers. Every rank must set the same value",
     0, 1, Collective::allreduce});

CudaIpcState::~CudaIpcState() {
    if (scratch) (void)device_free(scratch);
}

namespace {

struct BufferDesc {
    IpcHandle handle;
    uint64_t base = 0, offset = 0, buffer_id = 0;
};
struct CallDesc {
    uint64_t signature = 0;
    int32_t pid = 0;
    int32_t ready = 0;  // 1: this rank can take part
    BufferDesc in, out;
};

// This rank's description of the buffer at `ptr` (`bytes` long; none when
// empty: no peer reads it); false when it cannot be shared.
bool describe(CudaIpcState &st, const void *ptr, size_t bytes, BufferDesc *d, std::string *why) {
    if (bytes == 0) return true;
    const PointerInfo info = pointer_info(ptr);
    if (info.memory != MemoryType::cuda || info.size == 0) {
        *why = "a buffer is not device memory from cuMemAlloc/cudaMalloc";
        return false;
    }
    auto it = st.own.find(info.buffer_id);
    if (it == st.own.end()) {
        IpcHandle h;
        if (ipc_get_handle(info.base, &h) != LOOM_SUCCESS) {
            *why = last_error_message();
            return false;
        }
        it = st.own.emplace(info.buffer_id, h).first;
    }
    d->handle = it->second;
    d->base = info.base;
    d->buffer_id = info.buffer_id;
    d->offset = reinterpret_cast<uintptr_t>(ptr) - info.base;
    return true;
}

// Every rank's flag, maxed: the phases' barrier, carrying failures.
Status agree(Communicator &comm, int64_t *flag) { return comm.allreduce_int64(flag, 1, LOOM_MAX); }

Status ensure_scratch(CudaIpcState &st, size_t bytes) {
    if (bytes <= st.scratch_bytes) return LOOM_SUCCESS;
    if (st.scratch) LOOM_RETURN_IF_ERROR(device_free(st.scratch));
    st.scratch = nullptr;
    st.scratch_bytes = 0;
    LOOM_RETURN_IF_ERROR(device_alloc(bytes, &st.scratch));
    st.scratch_bytes = bytes;
    return LOOM_SUCCESS;
}

// One call's buffers: this rank's own, and every peer's as mapped here.
struct Buffers {
    int me = 0, p = 1;
    std::vector<const unsigned char *> in;  // input buffer of each rank (recvbuf in place)
    std::vector<unsigned char *> out;       // output buffer of each rank
};

class Phases {
  public:
    Phases(Communicator &comm, CudaIpcState &st, const CollArgs &args, const CallData &call)
        : comm_(comm), st_(st), a_(args), es_(args.elem_size) {
        type_ = datatype_info(call.type)->name;
        op_ = op_name(call.op) ? op_name(call.op) : "sum";
    }
    // Enqueues work; errors are kept and reported at the next barrier.
    void reduce(void *dst, const std::vector<const void *> &sources, size_t n) {
        if (err_ == LOOM_SUCCESS && n > 0)
            err_ = st_.stream.reduce(dst, sources.data(), static_cast<int>(sources.size()), n, es_, type_, op_, false,
                                     &mark_);
    }
    void copy(void *dst, const void *src, size_t n) {
        if (err_ == LOOM_SUCCESS && n > 0) err_ = st_.stream.copy(dst, src, n * es_, &mark_);
    }
    // Waits for this rank's work, then for every rank's: afterwards no rank
    // reads what the phase read. A failure anywhere fails every rank.
    Status barrier() {
        if (err_ == LOOM_SUCCESS) err_ = st_.stream.synchronize();
        int64_t failed = err_ != LOOM_SUCCESS ? 1 : 0;
        const std::string message = failed ? last_error_message() : std::string();
        LOOM_RETURN_IF_ERROR(agree(comm_, &failed));
        if (err_ != LOOM_SUCCESS) return fail(err_, message);
        if (failed) return fail(LOOM_ERR_INTERNAL, "CUDA IPC " + a_.describe() + ": a peer's device work failed");
        return LOOM_SUCCESS;
    }
    // This rank's own trailing work (a copy within its buffers): no peer waits on it.
    Status finish() {
        if (err_ == LOOM_SUCCESS) err_ = st_.stream.synchronize();
        return err_;
    }
    unsigned char *scratch() const { return static_cast<unsigned char *>(st_.scratch); }

  private:
    Communicator &comm_;
    CudaIpcState &st_;
    const CollArgs &a_;
    size_t es_;
    const char *type_;
    const char *op_;
    uint64_t mark_ = 0;
    Status err_ = LOOM_SUCCESS;
};

size_t block_first(size_t count, int r, int p) { return count * static_cast<size_t>(r) / static_cast<size_t>(p); }

// allreduce, one kernel: every rank adds all p vectors in rank order.
Status one_shot(Phases &ph, const CollArgs &a, const CallData &call, const Buffers &b) {
    std::vector<const void *> sources(b.in.begin(), b.in.end());
    unsigned char *dst = call.in_place ? ph.scratch() : b.out[b.me];
    ph.reduce(dst, sources, a.count);
    LOOM_RETURN_IF_ERROR(ph.barrier());
    if (!call.in_place) return LOOM_SUCCESS;
    // Peers are done reading this rank's input: the result may replace it.
    ph.copy(b.out[b.me], dst, a.count);
    return ph.finish();
}

// allreduce: rank r reduces block r of every input into its output, then
// copies every other block from its owner's output.
Status reduce_scatter_allgather(Phases &ph, const CollArgs &a, const Buffers &b) {
    const size_t es = a.elem_size;
    const size_t first = block_first(a.count, b.me, b.p), n = block_first(a.count, b.me + 1, b.p) - first;
    std::vector<const void *> sources;
    for (int k = 0; k < b.p; ++k) sources.push_back(b.in[k] + first * es);
    // In place, block r of this rank's buffer is read by no peer.
    ph.reduce(b.out[b.me] + first * es, sources, n);
    LOOM_RETURN_IF_ERROR(ph.barrier());
    for (int j = 0; j < b.p; ++j) {
        if (j == b.me) continue;
        const size_t f = block_first(a.count, j, b.p);
        ph.copy(b.out[b.me] + f * es, b.out[j] + f * es, block_first(a.count, j + 1, b.p) - f);
    }
    return ph.barrier();
}

// reduce_scatter(_block), allgather, alltoall: each rank reads what it needs
// from every peer's input.
Status direct(Phases &ph, const CollArgs &a, const CallData &call, const Buffers &b) {
    const size_t es = a.elem_size;
    unsigned char *mine = b.out[b.me];
    switch (a.collective) {
        case Collective::reduce_scatter:
        case Collective::reduce_scatter_block: {
            const CollArgs::Part part = a.reduced_part(b.me);
            std::vector<const void *> sources;
            for (int k = 0; k < b.p; ++k) sources.push_back(b.in[k] + part.offset * es);
            unsigned char *dst = call.in_place ? ph.scratch() : mine;
            ph.reduce(dst, sources, part.count);
            LOOM_RETURN_IF_ERROR(ph.barrier());
            if (!call.in_place) return LOOM_SUCCESS;
            ph.copy(mine, dst, part.count);
            return ph.finish();
        }
        case Collective::allgather: {
            // In place, each rank's block already sits at its place in its output.
            for (int j = 0; j < b.p; ++j) {
                if (call.in_place && j == b.me) continue;
                const unsigned char *src = call.in_place ? b.out[j] + j * a.count * es : b.in[j];
                ph.copy(mine + j * a.count * es, src, a.count);
            }
            return ph.barrier();
        }
        case Collective::alltoall: {
            unsigned char *dst = call.in_place ? ph.scratch() : mine;
            for (int j = 0; j < b.p; ++j) ph.copy(dst + j * a.count * es, b.in[j] + b.me * a.count * es, a.count);
            LOOM_RETURN_IF_ERROR(ph.barrier());
            if (!call.in_place) return LOOM_SUCCESS;
            ph.copy(mine, dst, a.count * b.p);
            return ph.finish();
        }
        default: break;
    }
    return fail(LOOM_ERR_INTERNAL, "cuda_ipc_direct has no " + a.describe());
}

bool reduces(Collective c) {
    return c == Collective::allreduce || c == Collective::reduce_scatter || c == Collective::reduce_scatter_block;
}

}  // namespace

Status run_cuda_ipc(Communicator &comm, CudaIpcState &st, const AlgorithmInfo &algo, const CollArgs &args,
                    const CallData &call, const char *cannot, bool *staged_instead, std::string *why) {
    *staged_instead = false;
    const int me = comm.rank(), p = comm.size();
    const void *input = call.in_place ? call.recvbuf : call.sendbuf;
    CallDesc mine;
    mine.signature = SlotCall::call_signature(args, call.type, call.op);
    mine.pid = static_cast<int32_t>(getpid());
    std::string local_why;
    bool ready = !st.disabled && !cannot;
    if (!ready) local_why = cannot ? cannot : st.disabled_reason;
    if (ready && !cuda_kernels_built()) ready = false, local_why = "this libloom was built without the CUDA kernels";
    if (ready && reduces(args.collective) &&
        !device_reduction_available(datatype_info(call.type)->name, op_name(call.op))) {
        ready = false;
        local_why = std::string("no CUDA kernel for ") + op_name(call.op) + " on " + datatype_info(call.type)->name;
    }
    const CallBytes bytes = call_bytes(args, me, call.in_place);
    if (ready)
        ready = describe(st, input, bytes.in, &mine.in, &local_why) &&
                describe(st, call.recvbuf, bytes.recv, &mine.out, &local_why);
    mine.ready = ready ? 1 : 0;

    std::vector<CallDesc> all(static_cast<size_t>(p));
    LOOM_RETURN_IF_ERROR(comm.allgather_bytes(&mine, sizeof mine, all.data()));
    for (int r = 0; r < p; ++r)
        if (all[static_cast<size_t>(r)].signature != mine.signature)
            return fail(LOOM_ERR_INVALID_ARGUMENT, "CUDA IPC " + args.describe() + ": rank " + std::to_string(r) +
                                                       " made another call (count, datatype, op or collective)");
    for (int r = 0; r < p; ++r)
        if (!all[static_cast<size_t>(r)].ready) {
            *staged_instead = true;
            *why = r == me ? local_why : "rank " + std::to_string(r) + " cannot take part in CUDA IPC";
            return LOOM_SUCCESS;
        }

    // Every rank maps every peer's buffers, then all say whether that worked.
    Buffers b;
    b.me = me;
    b.p = p;
    b.in.resize(static_cast<size_t>(p));
    b.out.resize(static_cast<size_t>(p));
    int64_t failed = 0;
    std::string map_error;
    for (int r = 0; r < p && !failed; ++r) {
        const CallDesc &d = all[static_cast<size_t>(r)];
        if (r == me) {
            b.in[static_cast<size_t>(r)] = static_cast<const unsigned char *>(input);
            b.out[static_cast<size_t>(r)] = static_cast<unsigned char *>(call.recvbuf);
            continue;
        }
        // A peer's empty buffer (base 0) is read by nobody.
        void *in_base = nullptr, *out_base = nullptr;
        if ((d.in.base && st.peers.map(d.pid, d.in.base, d.in.buffer_id, d.in.handle, &in_base) != LOOM_SUCCESS) ||
            (d.out.base && st.peers.map(d.pid, d.out.base, d.out.buffer_id, d.out.handle, &out_base) != LOOM_SUCCESS)) {
            failed = 1;
            map_error = last_error_message();
            break;
        }
        b.in[static_cast<size_t>(r)] = static_cast<const unsigned char *>(in_base) + d.in.offset;
        b.out[static_cast<size_t>(r)] = static_cast<unsigned char *>(out_base) + d.out.offset;
    }
    // In-place calls that write where peers read need a device scratch buffer.
    if (!failed && call.in_place && std::strcmp(algo.name, "cuda_ipc_reduce_scatter_allgather") != 0 &&
        args.collective != Collective::allgather && ensure_scratch(st, bytes.recv) != LOOM_SUCCESS) {
        failed = 1;
        map_error = last_error_message();
    }
    LOOM_RETURN_IF_ERROR(agree(comm, &failed));
    if (failed) {
        st.disabled = true;
        st.disabled_reason = map_error.empty() ? "a peer could not map this rank's device buffers through CUDA IPC"
                                               : "mapping peers' device buffers failed: " + map_error;
        *staged_instead = true;
        *why = st.disabled_reason;
        return LOOM_SUCCESS;
    }
    ++st.calls;
    Phases ph(comm, st, args, call);
    if (!std::strcmp(algo.name, "cuda_ipc_one_shot")) return one_shot(ph, args, call, b);
    if (!std::strcmp(algo.name, "cuda_ipc_reduce_scatter_allgather")) return reduce_scatter_allgather(ph, args, b);
    return direct(ph, args, call, b);
}

}  // namespace loom
