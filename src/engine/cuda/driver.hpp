// libcuda, loaded at run time: Loom links no CUDA library, so one libloom
// serves machines with and without GPUs. Without the driver, or before the
// application made a CUDA context current, every pointer is host memory and
// the only cost is one check per call.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/memory.hpp"
#include "core/status.hpp"
#include "engine/cuda/pointer_cache.hpp"

namespace loom {

// True once libcuda.so.1 loaded and every symbol Loom uses resolved (tried
// once, on the first call); false in builds without cuda.h.
bool cuda_driver_loaded();
// One line for loom-info and errors: "libcuda.so.1, driver 13.0" or why not.
std::string cuda_driver_state();

// Where `ptr` lives. Host unless the driver is loaded, this thread has a
// current context and the driver says device (or managed) memory.
MemoryType memory_type_of(const void *ptr);
// The same, with the allocation's range, device and buffer id (cached per
// allocation range, checked against the buffer id on every hit).
PointerInfo pointer_info(const void *ptr);
// Counters of the pointer cache, for loom-info and the tests.
PointerCache::Counters pointer_cache_counters();

// dst = src (`bytes`), any memory on either side; returns when done.
// `context` (from current_context()) is made current for the copy when this
// thread has none: a request may complete in a thread that never used CUDA.
Status memory_copy(void *dst, const void *src, size_t bytes, void *context = nullptr);
// This thread's current CUDA context, or null.
void *current_context();

// Device memory on the current context's device (made current here when
// none is: the first device's primary context); for tests and loom-bench.
Status device_alloc(size_t bytes, void **out);
Status device_free(void *ptr);
// Page-locked host memory the device copies to and from at full speed.
Status pinned_alloc(size_t bytes, void **out);
Status pinned_free(void *ptr);

// An ordered queue of copies on Loom's own stream, with completion points
// the caller polls: the staging pipeline's device side.
class CopyStream {
  public:
    CopyStream() = default;
    ~CopyStream();
    CopyStream(const CopyStream &) = delete;
    CopyStream &operator=(const CopyStream &) = delete;
    // Enqueues dst = src; *mark is the point after it, for reached().
    Status copy(void *dst, const void *src, size_t bytes, uint64_t *mark);
    // True once the copies up to `mark` completed.
    Status reached(uint64_t mark, bool *yes);
    Status synchronize();

  private:
    Status ensure();
    void *stream_ = nullptr;
    static constexpr int kEvents = 8;  // marks in flight
    void *events_[kEvents] = {};
    uint64_t next_mark_ = 1;  // the mark the next copy gets
    uint64_t done_ = 0;       // every mark <= done_ reached
};

}  // namespace loom
