// The communicator's plan cache and spare-buffer pool on their own: what
// stays, what is evicted, and when an evicted plan's id is given up.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "runtime/buffer_pool.hpp"
#include "runtime/plan_cache.hpp"

namespace loom {
namespace {

CollArgs call_of(size_t count) {
    CollArgs a;
    a.collective = Collective::allreduce;
    a.count = count;
    a.elem_size = 4;
    return a;
}

CachedPlan plan_with(PlanCache &cache) {
    CachedPlan p;
    p.program = std::make_shared<const Program>();
    p.id = cache.take_id();
    return p;
}

TEST(PlanCache, KeepsTheMostRecentlyUsedAndEvictsTheLeast) {
    PlanCache cache;
    const uint64_t generation = 1;
    for (size_t count : {1, 2, 3}) cache.insert(PlanKey::of(call_of(count), generation), plan_with(cache), 3);
    // Using 1 makes 2 the least recently used.
    ASSERT_NE(cache.find(PlanKey::of(call_of(1), generation)), nullptr);
    cache.insert(PlanKey::of(call_of(4), generation), plan_with(cache), 3);
    EXPECT_EQ(cache.size(), 3u);
    EXPECT_NE(cache.find(PlanKey::of(call_of(1), generation)), nullptr);
    EXPECT_EQ(cache.find(PlanKey::of(call_of(2), generation)), nullptr);
    EXPECT_NE(cache.find(PlanKey::of(call_of(3), generation)), nullptr);
    EXPECT_NE(cache.find(PlanKey::of(call_of(4), generation)), nullptr);
}

TEST(PlanCache, AChangedParameterGenerationOrShapeMissesTheCache) {
    PlanCache cache;
    cache.insert(PlanKey::of(call_of(8), 1), plan_with(cache), 4);
    EXPECT_EQ(cache.find(PlanKey::of(call_of(8), 2)), nullptr);
    CollArgs in_place = call_of(8);
    in_place.in_place = true;
    EXPECT_EQ(cache.find(PlanKey::of(in_place, 1)), nullptr);
    EXPECT_EQ(cache.find(PlanKey::of(call_of(8), 1, /*progress_thread=*/true)), nullptr);
    EXPECT_NE(cache.find(PlanKey::of(call_of(8), 1)), nullptr);
}

TEST(PlanCache, TheLastCallShortcutMatchesOnlyTheSameCallAndForgetsAnEvictedPlan) {
    PlanCache cache;
    const CachedPlan *p = cache.insert(PlanKey::of(call_of(5), 1), plan_with(cache), 1);
    cache.remember_last(call_of(5), 1, p);
    EXPECT_EQ(cache.last(call_of(5), 1), p);
    EXPECT_EQ(cache.last(call_of(6), 1), nullptr);
    EXPECT_EQ(cache.last(call_of(5), 2), nullptr);
    cache.insert(PlanKey::of(call_of(6), 1), plan_with(cache), 1);  // evicts 5's plan
    EXPECT_EQ(cache.last(call_of(5), 1), nullptr);
}

TEST(PlanCache, AnEvictedPlansIdIsGivenUpOnlyWhenNoRequestRunsIt) {
    PlanCache cache;
    const CachedPlan *first = cache.insert(PlanKey::of(call_of(1), 1), plan_with(cache), 1);
    const uint32_t first_id = first->id;
    std::shared_ptr<const Program> running = first->program;  // a request still running it
    cache.insert(PlanKey::of(call_of(2), 1), plan_with(cache), 1);
    std::vector<uint32_t> removed;
    cache.forget_retired([&](uint32_t id) { removed.push_back(id); });
    EXPECT_TRUE(removed.empty());
    running.reset();
    cache.forget_retired([&](uint32_t id) { removed.push_back(id); });
    EXPECT_EQ(removed, std::vector<uint32_t>{first_id});
    cache.retire_all();
    EXPECT_EQ(cache.size(), 0u);
    cache.forget_retired([&](uint32_t id) { removed.push_back(id); });
    EXPECT_EQ(removed.size(), 2u);
    EXPECT_EQ(cache.next_id(), 2u);  // ids are never reused
}

TEST(BufferPool, GivesTheSmallestKeptBufferThatFitsAndDropsSmallOnes) {
    BufferPool pool;
    std::vector<unsigned char> small;
    small.reserve(BufferPool::kSmallest / 2);
    pool.keep(std::move(small));
    std::vector<unsigned char> a, b;
    a.reserve(1 << 20);
    b.reserve(4 << 20);
    const unsigned char *a_data = a.data();
    pool.keep(std::move(a));
    pool.keep(std::move(b));
    std::vector<unsigned char> into;
    pool.take(into, 512 << 10);
    EXPECT_EQ(into.data(), a_data);  // the 1 MiB one, not the 4 MiB one
    EXPECT_GE(into.capacity(), size_t{1} << 20);
    std::vector<unsigned char> big;
    pool.take(big, 8 << 20);  // none kept is large enough
    EXPECT_EQ(big.capacity(), 0u);
    std::vector<unsigned char> roomy;
    roomy.reserve(16 << 20);
    const unsigned char *roomy_data = roomy.data();
    pool.take(roomy, 1 << 20);  // room enough already: untouched
    EXPECT_EQ(roomy.data(), roomy_data);
}

TEST(BufferPool, KeepsAtMostItsCountDroppingTheSmallestFirst) {
    BufferPool pool;
    for (size_t i = 0; i < BufferPool::kMostBuffers + 2; ++i) {
        std::vector<unsigned char> v;
        v.reserve(BufferPool::kSmallest * (i + 1));
        pool.keep(std::move(v));
    }
    // The two smallest went; the smallest left is the third.
    std::vector<unsigned char> into;
    pool.take(into, 1);
    EXPECT_EQ(into.capacity(), BufferPool::kSmallest * 3);
}

}  // namespace
}  // namespace loom
