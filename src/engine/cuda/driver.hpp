// libcuda, loaded at run time: Loom links no CUDA library, so one libloom
// serves machines with and without GPUs. Without the driver, or before the
// application made a CUDA context current, every pointer is host memory and
// the only cost is one check per call.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/memory.hpp"
#include "core/status.hpp"
#include "engine/cuda/pointer_cache.hpp"

namespace loom {

namespace detail {
// 0 not tried yet, 1 loaded, 2 not there.
extern std::atomic<int> cuda_driver_status;
bool try_cuda_driver();
}  // namespace detail
// True once libcuda.so.1 loaded and every symbol Loom uses resolved (tried
// once, on the first call); false in builds without cuda.h. Inline: every
// collective asks, and without a driver this is all a call pays.
inline bool cuda_driver_loaded() {
    const int s = detail::cuda_driver_status.load(std::memory_order_relaxed);
    return s ? s == 1 : detail::try_cuda_driver();
}
// One line for loom-info and errors: "libcuda.so.1, driver 13.0" or why not.
std::string cuda_driver_state();

// Where `ptr` lives. Host unless the driver is loaded, this thread has a
// current context and the driver says device (or managed) memory.
MemoryType memory_type_of(const void *ptr);
// The same, with the allocation's range, device and buffer id (cached per
// allocation range, checked against the buffer id on every hit).
PointerInfo pointer_info(const void *ptr);

// dst = src (`bytes`), any memory on either side; returns when done.
// `context` (from current_context()) is made current for the copy when this
// thread has none: a request may complete in a thread that never used CUDA.
Status memory_copy(void *dst, const void *src, size_t bytes, void *context = nullptr);
// This thread's current CUDA context, or null.
void *current_context();
// Returns once the work enqueued on `stream` (a CUstream; null: the legacy
// default stream) is done. A non-null stream without a driver is an error.
Status stream_synchronize(void *stream);

// Device memory on the current context's device (made current here when
// none is: the first device's primary context); for tests and loom-bench.
Status device_alloc(size_t bytes, void **out);
Status device_free(void *ptr);
// Page-locked host memory the device copies to and from at full speed.
Status pinned_alloc(size_t bytes, void **out);
Status pinned_free(void *ptr);

// CUDA IPC: a handle another process opens to read and write the
// allocation at `base` (cuIpcGetMemHandle), and the opening side.
struct IpcHandle {
    unsigned char bytes[64];
};
Status ipc_get_handle(uintptr_t base, IpcHandle *out);
// Maps a peer's allocation here (lazy peer access between devices).
Status ipc_open(const IpcHandle &handle, void **base);
Status ipc_close(void *base);

// True when this build carries the CUDA kernels (configure found nvcc).
bool cuda_kernels_built();
// True when a kernel reduces `op` on `type` (libloom's names): every pair
// but long double, the complex types and long_double_int.
bool device_reduction_available(const char *type, const char *op);

// Loom's CUDA engine: an ordered queue of copies and reductions on Loom's
// own stream, with completion points (events) the caller polls. The
// staging pipeline's device side, and the IPC algorithms' kernels.
class DeviceStream {
  public:
    DeviceStream() = default;
    ~DeviceStream();
    DeviceStream(const DeviceStream &) = delete;
    DeviceStream &operator=(const DeviceStream &) = delete;
    // Enqueues dst = src; *mark is the point after it, for reached().
    Status copy(void *dst, const void *src, size_t bytes, uint64_t *mark);
    // Enqueues dst = (accumulate ? dst : sources[0]) op sources[...] (n
    // elements of libloom's `type` and `op` names, any number of sources,
    // taken in order); *mark as for copy().
    Status reduce(void *dst, const void *const *sources, int nsources, size_t n, size_t elem_size, const char *type,
                  const char *op, bool accumulate, uint64_t *mark);
    // True once the copies up to `mark` completed.
    Status reached(uint64_t mark, bool *yes);
    Status synchronize();

  private:
    Status ensure();
    Status mark_point(uint64_t *mark);
    Status free_event_slot();
    void *stream_ = nullptr;
    static constexpr int kEvents = 8;  // marks in flight
    void *events_[kEvents] = {};
    uint64_t next_mark_ = 1;  // the mark the next copy gets
    uint64_t done_ = 0;       // every mark <= done_ reached
};

}  // namespace loom
