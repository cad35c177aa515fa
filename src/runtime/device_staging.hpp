// Collectives on device buffers, run by Loom's host algorithms through
// pinned host copies: copy the input to the host, run the call there, copy
// the output back. Large blocking allreduces are pipelined: the copy of
// chunk k+1 to the host runs while chunk k is reduced across ranks and
// chunk k-1 is copied back. Nothing here touches device memory from the CPU.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/params.hpp"
#include "core/status.hpp"
#include "engine/cuda/driver.hpp"
#include "runtime/communicator.hpp"

namespace loom {

extern const ParamId kParamCudaStagingChunkBytes;

// Page-locked host memory, grown on demand and kept.
class PinnedBuffer {
  public:
    PinnedBuffer() = default;
    ~PinnedBuffer() { (void)pinned_free(data_); }
    PinnedBuffer(const PinnedBuffer &) = delete;
    PinnedBuffer &operator=(const PinnedBuffer &) = delete;
    Status reserve(size_t bytes);
    unsigned char *data() const { return data_; }

  private:
    unsigned char *data_ = nullptr;
    size_t capacity_ = 0;
};

// The bytes of a call's input buffer it reads, and of recvbuf it reads or
// writes, on `rank`. In place both are the larger of input and output: the
// input may sit anywhere in recvbuf (allgather: at the rank's block).
struct CallBytes {
    size_t in = 0, recv = 0;
};
CallBytes call_bytes(const CollArgs &args, int rank, bool in_place);

// Where a call's buffers live, and what staging them takes.
struct StagingNeed {
    bool send_on_device = false;  // the input buffer (sendbuf, or recvbuf in place)
    bool recv_on_device = false;
    // Buffers of no bytes on this rank are neither host nor device: what
    // counts is where the others are (ranks must agree on the path).
    bool send_used = false, recv_used = false;
    bool any() const { return send_on_device || recv_on_device; }
    // Every buffer the call touches here is device memory.
    bool all_device(bool in_place) const {
        return (recv_on_device || !recv_used) && (in_place || send_on_device || !send_used);
    }
};
// Looks at the buffers a call reads and writes (the caller checks
// cuda_driver_loaded() first: without a driver there are none).
StagingNeed staging_need(const CollArgs &args, int rank, const CallData &call);

// One staged call: the host buffers it runs on and the copies around it.
class StagedCall {
  public:
    // Sets up host stand-ins for the call's device buffers: the call to run
    // is host_call(). Copies nothing yet.
    Status prepare(const CollArgs &args, int rank, const CallData &user, StagingNeed need);
    const CallData &host_call() const { return host_; }
    Status copy_in();   // the device input to the host
    Status copy_out();  // the host output to the device

  private:
    CallData user_, host_;
    StagingNeed need_;
    CallBytes bytes_;
    size_t out_bytes_ = 0;     // the output, copied back
    // The output has gaps the call must not touch (the vector collectives'
    // displacements): the host copy starts as the device buffer, so copying
    // the whole span back returns the gaps unchanged.
    bool output_has_gaps_ = false;
    void *context_ = nullptr;  // the buffers' CUDA context, for copies in other threads
    PinnedBuffer send_, recv_;
};

// The chunks of a pipelined staged allreduce, in the order every rank
// starts them; each takes a slot of the pinned ring (kSlots chunks long).
struct StagingChunk {
    size_t first = 0, count = 0;  // elements
};
std::vector<StagingChunk> staging_chunks(size_t count, size_t elem_size, size_t chunk_bytes);
// The chunk of a pipelined staged allreduce of `args` (the whole call): the
// cuda_staging_chunk_bytes parameter when set; else the cost model's, the
// power of two from 64 KiB to 16 MiB, at most half the message, with the
// least predicted time (staged_pipeline_time, each chunk's allreduce priced
// by predict_time); where the model cannot price the chunks, a quarter of
// the message, 256 KiB to 4 MiB. 0 when the message is under two chunks of
// 64 KiB and no chunk is set: not worth a pipeline.
size_t model_chunk_bytes(const Communicator &comm, const CollArgs &args, loom_datatype_t type);

// A blocking allreduce of device buffers (both on the device), pipelined.
// `ring` and `stream` are the communicator's, reused across calls.
Status run_pipelined_allreduce(Communicator &comm, const CollArgs &args, const CallData &user, size_t chunk_bytes,
                               PinnedBuffer &ring, DeviceStream &stream);
constexpr int kStagingSlots = 3;

}  // namespace loom
