#include "engine/cuda/pointer_cache.hpp"

namespace loom {

PointerInfo PointerCache::lookup(const void *ptr) {
    const uintptr_t p = reinterpret_cast<uintptr_t>(ptr);
    {
        std::lock_guard<std::mutex> lock(mutex_);
        auto it = ranges_.upper_bound(p);
        if (it != ranges_.begin()) {
            --it;
            const PointerInfo &known = it->second;
            if (p - known.base < known.size) {
                if (q_.buffer_id(q_.context, ptr) == known.buffer_id) {
                    ++counters_.hits;
                    return known;
                }
                ++counters_.invalidations;  // freed, and the range reused or gone
                ranges_.erase(it);
            }
        }
        ++counters_.misses;
    }
    // Queried unlocked: the driver may be slow, and two threads asking about
    // the same allocation insert the same answer.
    PointerInfo info = q_.full(q_.context, ptr);
    if (info.memory == MemoryType::host || info.size == 0) return info;
    std::lock_guard<std::mutex> lock(mutex_);
    erase_overlapping(info.base, info.size);
    ranges_[info.base] = info;
    counters_.entries = ranges_.size();
    return info;
}

void PointerCache::erase_overlapping(uintptr_t base, size_t size) {
    auto it = ranges_.upper_bound(base);
    if (it != ranges_.begin()) {
        auto before = std::prev(it);
        if (before->second.base + before->second.size > base) it = before;
    }
    while (it != ranges_.end() && it->second.base < base + size) {
        ++counters_.invalidations;
        it = ranges_.erase(it);
    }
}

PointerCache::Counters PointerCache::counters() const {
    std::lock_guard<std::mutex> lock(mutex_);
    Counters c = counters_;
    c.entries = ranges_.size();
    return c;
}

}  // namespace loom
