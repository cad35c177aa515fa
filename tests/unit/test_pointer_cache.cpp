// The pointer cache (engine/cuda/pointer_cache.hpp) over a scripted driver:
// what it answers, when it asks the driver, and that a freed and reused
// range is never trusted.
#include <gtest/gtest.h>

#include <map>

#include "engine/cuda/pointer_cache.hpp"

namespace loom {
namespace {

// Allocations by base; counts the queries.
struct ScriptedDriver {
    std::map<uintptr_t, PointerInfo> live;
    int full_queries = 0, id_queries = 0;
    const PointerInfo *find(uintptr_t p) const {
        auto it = live.upper_bound(p);
        if (it == live.begin()) return nullptr;
        --it;
        return p - it->first < it->second.size ? &it->second : nullptr;
    }
    void alloc(uintptr_t base, size_t size, uint64_t id, MemoryType m = MemoryType::cuda) {
        PointerInfo info;
        info.memory = m;
        info.device = 0;
        info.buffer_id = id;
        info.base = base;
        info.size = size;
        live[base] = info;
    }
    PointerCache::Queries queries() {
        PointerCache::Queries q;
        q.context = this;
        q.full = [](void *c, const void *ptr) {
            auto *d = static_cast<ScriptedDriver *>(c);
            ++d->full_queries;
            const PointerInfo *i = d->find(reinterpret_cast<uintptr_t>(ptr));
            return i ? *i : PointerInfo{};
        };
        q.buffer_id = [](void *c, const void *ptr) -> uint64_t {
            auto *d = static_cast<ScriptedDriver *>(c);
            ++d->id_queries;
            const PointerInfo *i = d->find(reinterpret_cast<uintptr_t>(ptr));
            return i ? i->buffer_id : 0;
        };
        return q;
    }
};

const void *at(uintptr_t p) { return reinterpret_cast<const void *>(p); }

TEST(PointerCache, AKnownAllocationCostsOneBufferIdQuery) {
    ScriptedDriver d;
    d.alloc(0x10000, 4096, 7);
    PointerCache cache(d.queries());
    PointerInfo first = cache.lookup(at(0x10000));
    EXPECT_EQ(first.memory, MemoryType::cuda);
    EXPECT_EQ(first.buffer_id, 7u);
    EXPECT_EQ(d.full_queries, 1);
    PointerInfo inside = cache.lookup(at(0x10000 + 4095));
    EXPECT_EQ(inside.memory, MemoryType::cuda);
    EXPECT_EQ(d.full_queries, 1);
    EXPECT_EQ(d.id_queries, 1);
    EXPECT_EQ(cache.counters().hits, 1u);
    EXPECT_EQ(cache.counters().entries, 1u);
    // Just past the end is not the allocation.
    EXPECT_EQ(cache.lookup(at(0x10000 + 4096)).memory, MemoryType::host);
    EXPECT_EQ(d.full_queries, 2);
}

TEST(PointerCache, HostMemoryIsNotCached) {
    ScriptedDriver d;
    PointerCache cache(d.queries());
    int x = 0;
    EXPECT_EQ(cache.lookup(&x).memory, MemoryType::host);
    EXPECT_EQ(cache.lookup(&x).memory, MemoryType::host);
    EXPECT_EQ(d.full_queries, 2);
    EXPECT_EQ(cache.counters().entries, 0u);
}

TEST(PointerCache, AFreedRangeIsRequeriedNotTrusted) {
    ScriptedDriver d;
    d.alloc(0x20000, 8192, 1);
    PointerCache cache(d.queries());
    EXPECT_EQ(cache.lookup(at(0x20000)).memory, MemoryType::cuda);
    // Freed: the range now reads as host memory.
    d.live.clear();
    EXPECT_EQ(cache.lookup(at(0x20000 + 100)).memory, MemoryType::host);
    EXPECT_EQ(cache.counters().invalidations, 1u);
    EXPECT_EQ(cache.counters().entries, 0u);
    // Reused by a smaller allocation with another id: the new range answers.
    d.alloc(0x20000, 1024, 2);
    PointerInfo again = cache.lookup(at(0x20000 + 100));
    EXPECT_EQ(again.buffer_id, 2u);
    EXPECT_EQ(again.size, 1024u);
    EXPECT_EQ(cache.lookup(at(0x20000 + 2000)).memory, MemoryType::host);
}

TEST(PointerCache, AnOverlappingNewRangeReplacesTheOldOnes) {
    ScriptedDriver d;
    d.alloc(0x30000, 4096, 1);
    d.alloc(0x31000, 4096, 2);
    PointerCache cache(d.queries());
    cache.lookup(at(0x30000));
    cache.lookup(at(0x31000));
    EXPECT_EQ(cache.counters().entries, 2u);
    // Both freed, one allocation now covers them (the driver reused the range).
    d.live.clear();
    d.alloc(0x30000, 8192, 3);
    // A pointer in the second old range: its id differs, so it is re-queried,
    // and the new range displaces the first old entry as well.
    EXPECT_EQ(cache.lookup(at(0x31800)).buffer_id, 3u);
    EXPECT_EQ(cache.counters().entries, 1u);
    EXPECT_EQ(cache.lookup(at(0x30010)).buffer_id, 3u);
}

TEST(PointerCache, ManagedMemoryKeepsItsType) {
    ScriptedDriver d;
    d.alloc(0x40000, 64, 9, MemoryType::cuda_managed);
    PointerCache cache(d.queries());
    EXPECT_EQ(cache.lookup(at(0x40010)).memory, MemoryType::cuda_managed);
    EXPECT_EQ(cache.lookup(at(0x40020)).memory, MemoryType::cuda_managed);
    EXPECT_EQ(d.full_queries, 1);
}

}  // namespace
}  // namespace loom
