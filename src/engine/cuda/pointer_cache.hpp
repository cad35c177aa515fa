// What the driver said about device allocations, by address range, so that a
// pointer into a known allocation costs one buffer-id query instead of a full
// attribute query. Each hit is checked against the allocation's buffer id: a
// freed range reused by another allocation is found and re-queried, never
// trusted. Needs no driver: the queries are the caller's.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>

#include "core/memory.hpp"

namespace loom {

struct PointerInfo {
    MemoryType memory = MemoryType::host;
    int device = -1;
    uint64_t buffer_id = 0;  // the driver's id of the allocation; 0 for host memory
    uintptr_t base = 0;      // the allocation's range (device memory only)
    size_t size = 0;
};

class PointerCache {
  public:
    // The full query (memory type, device, buffer id, range) and the cheap
    // one (buffer id alone; 0 when `ptr` is no allocation now).
    struct Queries {
        void *context = nullptr;
        PointerInfo (*full)(void *context, const void *ptr) = nullptr;
        uint64_t (*buffer_id)(void *context, const void *ptr) = nullptr;
    };
    struct Counters {
        uint64_t hits = 0, misses = 0, invalidations = 0, entries = 0;
    };
    explicit PointerCache(Queries q) : q_(q) {}
    PointerInfo lookup(const void *ptr);
    Counters counters() const;

  private:
    Queries q_;
    mutable std::mutex mutex_;
    std::map<uintptr_t, PointerInfo> ranges_;  // by base; ranges never overlap
    Counters counters_;
    void erase_overlapping(uintptr_t base, size_t size);
};

}  // namespace loom
