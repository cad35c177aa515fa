// The CUDA IPC peer cache (engine/cuda/ipc_cache.hpp) over scripted open
// and close: a peer's allocation is opened once, reopened when the peer's
// buffer id at that base changes, and closed when evicted or at the end.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "engine/cuda/ipc_cache.hpp"

namespace loom {
namespace {

struct ScriptedIpc {
    int opens = 0, closes = 0;
    std::set<uintptr_t> open_now;
    uintptr_t next = 0x1000;
    bool refuse = false;
    IpcPeerCache::Ops ops() {
        IpcPeerCache::Ops o;
        o.context = this;
        o.open = [](void *c, const IpcHandle &, void **base) -> Status {
            auto *s = static_cast<ScriptedIpc *>(c);
            if (s->refuse) return fail(LOOM_ERR_INTERNAL, "scripted refusal");
            ++s->opens;
            s->open_now.insert(s->next);
            *base = reinterpret_cast<void *>(s->next);
            s->next += 0x1000;
            return LOOM_SUCCESS;
        };
        o.close = [](void *c, void *base) -> Status {
            auto *s = static_cast<ScriptedIpc *>(c);
            ++s->closes;
            EXPECT_EQ(s->open_now.erase(reinterpret_cast<uintptr_t>(base)), 1u) << "closed twice or never opened";
            return LOOM_SUCCESS;
        };
        return o;
    }
};

TEST(IpcPeerCache, OpensOncePerAllocationAndReopensWhenTheBufferIdChanges) {
    ScriptedIpc ipc;
    {
        IpcPeerCache cache(ipc.ops());
        IpcHandle h{};
        void *a = nullptr, *b = nullptr, *c = nullptr;
        ASSERT_EQ(cache.map(100, 0xa0000, 1, h, &a), LOOM_SUCCESS);
        ASSERT_EQ(cache.map(100, 0xa0000, 1, h, &b), LOOM_SUCCESS);
        EXPECT_EQ(a, b);
        EXPECT_EQ(ipc.opens, 1);
        // Another process with the same base is another allocation.
        ASSERT_EQ(cache.map(101, 0xa0000, 1, h, &c), LOOM_SUCCESS);
        EXPECT_NE(a, c);
        EXPECT_EQ(ipc.opens, 2);
        // The peer freed it and allocated again at the same base: closed and reopened.
        ASSERT_EQ(cache.map(100, 0xa0000, 2, h, &b), LOOM_SUCCESS);
        EXPECT_EQ(ipc.closes, 1);
        EXPECT_EQ(ipc.opens, 3);
        EXPECT_EQ(cache.counters().reopens, 1u);
        EXPECT_EQ(cache.counters().hits, 1u);
        EXPECT_EQ(cache.size(), 2u);
    }
    EXPECT_EQ(ipc.closes, ipc.opens);  // everything closed at the end
    EXPECT_TRUE(ipc.open_now.empty());
}

TEST(IpcPeerCache, ClosesTheLeastRecentlyUsedBeyondItsCapacity) {
    ScriptedIpc ipc;
    IpcPeerCache cache(ipc.ops(), 2);
    IpcHandle h{};
    void *p = nullptr;
    ASSERT_EQ(cache.map(1, 0x1000, 1, h, &p), LOOM_SUCCESS);
    ASSERT_EQ(cache.map(2, 0x1000, 1, h, &p), LOOM_SUCCESS);
    ASSERT_EQ(cache.map(1, 0x1000, 1, h, &p), LOOM_SUCCESS);  // 1 is now the most recent
    ASSERT_EQ(cache.map(3, 0x1000, 1, h, &p), LOOM_SUCCESS);  // evicts 2
    EXPECT_EQ(cache.counters().evictions, 1u);
    EXPECT_EQ(cache.size(), 2u);
    ASSERT_EQ(cache.map(1, 0x1000, 1, h, &p), LOOM_SUCCESS);
    EXPECT_EQ(ipc.opens, 3);  // 1 still cached
    ASSERT_EQ(cache.map(2, 0x1000, 1, h, &p), LOOM_SUCCESS);
    EXPECT_EQ(ipc.opens, 4);  // 2 was closed
}

TEST(IpcPeerCache, AFailedOpenIsReportedAndNotCached) {
    ScriptedIpc ipc;
    IpcPeerCache cache(ipc.ops());
    IpcHandle h{};
    void *p = nullptr;
    ipc.refuse = true;
    EXPECT_EQ(cache.map(7, 0x5000, 1, h, &p), LOOM_ERR_INTERNAL);
    EXPECT_EQ(cache.size(), 0u);
    ipc.refuse = false;
    EXPECT_EQ(cache.map(7, 0x5000, 1, h, &p), LOOM_SUCCESS);
    EXPECT_EQ(ipc.opens, 1);
}

}  // namespace
}  // namespace loom
