// The shared-memory transport's own rules: MPI's matching order per tag,
// truncation reported, inboxes of another communicator refused, and inboxes
// of dead owners removed. (Every algorithm also runs over it in the matrix.)
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "core/plan.hpp"
#include "transport/inprocess/inprocess.hpp"
#include "transport/router.hpp"
#include "transport/shm/copy_path_chooser.hpp"
#include "transport/shm/shm.hpp"

namespace loom {
namespace {

// Two ranks over the in-process fabric, each a router with shared memory
// (small cells, so that messages take several) before the fabric.
struct Pair {
    InProcessFabric fabric{2};
    std::unique_ptr<Router> t[2];
    explicit Pair(size_t max_bytes = 1 << 20, uint32_t cells = 2, SingleCopyPolicy single_copy = {},
                  size_t alltoall_max_bytes = SIZE_MAX) {
        ShmGeometry g;
        g.cells = cells;
        g.cell_payload = 16;
        std::unique_ptr<SharedSegment> inbox[2];
        for (auto &i : inbox) {
            i = SharedSegment::anonymous(shm_inbox_bytes(2, g));
            shm_inbox_init(i->data(), 2, g, 9);
        }
        for (int r = 0; r < 2; ++r) {
            SharedMemoryNode node;
            node.local_ranks = {0, 1};
            node.geometry = g;
            node.identity = 9;
            node.own = inbox[r]->another_mapping();
            node.peers.resize(2);
            node.peers[1 - r] = inbox[1 - r]->another_mapping();
            ShmOptions options;
            options.max_bytes = max_bytes;
            options.alltoall_max_bytes = alltoall_max_bytes;
            options.single_copy = single_copy;
            std::unique_ptr<Transport> shm;
            EXPECT_EQ(make_shared_memory_transport(r, 2, std::move(node), options, &shm), LOOM_SUCCESS);
            t[r] = std::make_unique<Router>(fabric.endpoint(r));
            t[r]->add_preferred(std::move(shm));
        }
    }
    // The router's report for rank r: what each transport carried.
    TransportCounters counters(int r, const char *transport) const {
        std::vector<TransportCounters> report;
        t[r]->report(&report);
        const TransportCounters *c = find_counters(report, transport);
        return c ? *c : TransportCounters{};
    }
    uint64_t counter(int r, const char *name) const { return extra_counter(counters(r, "shared_memory"), name); }
    // Polls both ranks until every handle is done or something fails.
    Status drive(std::vector<TransportHandle *> hs0, std::vector<TransportHandle *> hs1) {
        for (int round = 0; round < 10000; ++round) {
            bool all = true;
            for (int r = 0; r < 2; ++r) {
                auto &hs = r == 0 ? hs0 : hs1;
                if (hs.empty()) continue;
                std::vector<unsigned char> done(hs.size());
                LOOM_RETURN_IF_ERROR(t[r]->test_many(hs.data(), hs.size(), done.data(), nullptr));
                std::vector<TransportHandle *> left;
                for (size_t i = 0; i < hs.size(); ++i)
                    if (!done[i]) left.push_back(hs[i]);
                hs = left;
                all &= hs.empty();
            }
            if (all) return LOOM_SUCCESS;
        }
        return fail(LOOM_ERR_INTERNAL, "not done after 10000 rounds");
    }
    // A small message from rank 0 to rank 1: after it, rank 1 has decided
    // whether it may read rank 0's memory (single copy).
    Status first_message() {
        std::string msg(4, 'p'), got(4, '.');
        TransportHandle s, r;
        LOOM_RETURN_IF_ERROR(t[0]->post_send(msg.data(), msg.size(), 1, 1, {}, &s));
        LOOM_RETURN_IF_ERROR(t[1]->post_recv(got.data(), got.size(), 0, 1, {}, &r));
        return drive({&s}, {&r});
    }
    // The same from rank 1 to rank 0.
    Status exchange_back() {
        std::string msg(4, 'q'), got(4, '.');
        TransportHandle s, r;
        LOOM_RETURN_IF_ERROR(t[1]->post_send(msg.data(), msg.size(), 0, 1, {}, &s));
        LOOM_RETURN_IF_ERROR(t[0]->post_recv(got.data(), got.size(), 1, 1, {}, &r));
        return drive({&r}, {&s});
    }
};

SingleCopyPolicy always_single_copy(size_t min_bytes) {
    SingleCopyPolicy p;
    p.mode = SingleCopyPolicy::always;
    p.min_bytes = min_bytes;
    return p;
}

TEST(SharedMemoryTransport, MatchesInPostingOrderPerTag) {
    Pair pair;
    // Rank 0 sends tag 5 ("A..."), tag 6 ("B..."), tag 5 ("C...") before rank
    // 1 posts anything: all three arrive unexpected or are still in the ring.
    std::string a(40, 'A'), b(7, 'B'), c(100, 'C');
    TransportHandle s[3], r[3];
    ASSERT_EQ(pair.t[0]->post_send(a.data(), a.size(), 1, 5, {}, &s[0]), LOOM_SUCCESS);
    ASSERT_EQ(pair.t[0]->post_send(b.data(), b.size(), 1, 6, {}, &s[1]), LOOM_SUCCESS);
    ASSERT_EQ(pair.t[0]->post_send(c.data(), c.size(), 1, 5, {}, &s[2]), LOOM_SUCCESS);
    std::string got_b(7, '.'), got_a(40, '.'), got_c(100, '.');
    // The receiver asks for tag 6 first, then the two tag-5 messages in order.
    ASSERT_EQ(pair.t[1]->post_recv(got_b.data(), got_b.size(), 0, 6, {}, &r[0]), LOOM_SUCCESS);
    ASSERT_EQ(pair.t[1]->post_recv(got_a.data(), got_a.size(), 0, 5, {}, &r[1]), LOOM_SUCCESS);
    ASSERT_EQ(pair.drive({&s[0], &s[1]}, {&r[0], &r[1]}), LOOM_SUCCESS) << last_error_message();
    // One poll each: the sender fills the ring with the start of the third
    // message, the receiver reads it into an unexpected buffer (7 cells do
    // not fit a ring of 2); the receive posted now claims it mid-way.
    unsigned char flag = 0;
    TransportHandle *third = &s[2];
    ASSERT_EQ(pair.t[0]->test_many(&third, 1, &flag, nullptr), LOOM_SUCCESS);
    ASSERT_EQ(pair.t[1]->test_many(nullptr, 0, nullptr, nullptr), LOOM_SUCCESS);
    ASSERT_EQ(flag, 0);
    ASSERT_EQ(pair.t[1]->post_recv(got_c.data(), got_c.size(), 0, 5, {}, &r[2]), LOOM_SUCCESS);
    ASSERT_EQ(pair.drive({&s[2]}, {&r[2]}), LOOM_SUCCESS) << last_error_message();
    EXPECT_GE(pair.counter(1, "unexpected_messages"), 1u);  // full rings are emptied
    EXPECT_EQ(got_a, a);
    EXPECT_EQ(got_b, b);
    EXPECT_EQ(got_c, c);
}

// A message sent before its receive stays in the ring while there is room:
// the receive posted later copies it once, straight from the cells.
TEST(SharedMemoryTransport, LeavesAnEarlyMessageInTheRingUntilItsReceive) {
    Pair pair(1 << 20, /*cells=*/8);
    std::string msg(40, 'e'), got(40, '.');
    TransportHandle s, r;
    ASSERT_EQ(pair.t[0]->post_send(msg.data(), msg.size(), 1, 4, {}, &s), LOOM_SUCCESS);
    ASSERT_EQ(pair.drive({&s}, {}), LOOM_SUCCESS) << last_error_message();  // 3 cells of 8: written whole
    for (int i = 0; i < 5; ++i) ASSERT_EQ(pair.t[1]->test_many(nullptr, 0, nullptr, nullptr), LOOM_SUCCESS);
    EXPECT_EQ(pair.counter(1, "unexpected_messages"), 0u);
    ASSERT_EQ(pair.t[1]->post_recv(got.data(), got.size(), 0, 4, {}, &r), LOOM_SUCCESS);
    ASSERT_EQ(pair.drive({}, {&r}), LOOM_SUCCESS) << last_error_message();
    EXPECT_EQ(got, msg);
    EXPECT_EQ(pair.counter(1, "unexpected_messages"), 0u);
}

// A receive waiting behind an unmatched message gets it out of the way.
TEST(SharedMemoryTransport, TakesOutAnUnmatchedMessageThatBlocksAPostedReceive) {
    Pair pair(1 << 20, /*cells=*/8);
    std::string first(20, '1'), second(20, '2'), got1(20, '.'), got2(20, '.');
    TransportHandle s[2], r[2];
    ASSERT_EQ(pair.t[0]->post_send(first.data(), first.size(), 1, 1, {}, &s[0]), LOOM_SUCCESS);
    ASSERT_EQ(pair.t[0]->post_send(second.data(), second.size(), 1, 2, {}, &s[1]), LOOM_SUCCESS);
    ASSERT_EQ(pair.t[1]->post_recv(got2.data(), got2.size(), 0, 2, {}, &r[1]), LOOM_SUCCESS);
    ASSERT_EQ(pair.drive({&s[0], &s[1]}, {&r[1]}), LOOM_SUCCESS) << last_error_message();
    EXPECT_EQ(pair.counter(1, "unexpected_messages"), 1u);
    ASSERT_EQ(pair.t[1]->post_recv(got1.data(), got1.size(), 0, 1, {}, &r[0]), LOOM_SUCCESS);
    ASSERT_EQ(pair.drive({}, {&r[0]}), LOOM_SUCCESS) << last_error_message();
    EXPECT_EQ(got1, first);
    EXPECT_EQ(got2, second);
}

// A call abandoned under hang_abort: a withdrawn receive is never written
// into, even when its message comes afterwards (a later receive of the tag
// gets it); a withdrawn send that has not started never goes; one whose
// message is arriving cannot be withdrawn and finishes.
TEST(SharedMemoryTransport, WithdrawnOperationsLeaveTheirBuffersAlone) {
    Pair pair(1 << 20, /*cells=*/8);
    std::string late(20, 'L'), withdrawn(20, '.'), later(20, '.');
    TransportHandle r, r2, s;
    ASSERT_EQ(pair.t[1]->post_recv(withdrawn.data(), withdrawn.size(), 0, 3, {}, &r), LOOM_SUCCESS);
    EXPECT_TRUE(pair.t[1]->withdraw(&r, true));
    ASSERT_EQ(pair.t[0]->post_send(late.data(), late.size(), 1, 3, {}, &s), LOOM_SUCCESS);
    ASSERT_EQ(pair.drive({&s}, {}), LOOM_SUCCESS) << last_error_message();
    for (int i = 0; i < 5; ++i) ASSERT_EQ(pair.t[1]->test_many(nullptr, 0, nullptr, nullptr), LOOM_SUCCESS);
    EXPECT_EQ(withdrawn, std::string(20, '.'));
    ASSERT_EQ(pair.t[1]->post_recv(later.data(), later.size(), 0, 3, {}, &r2), LOOM_SUCCESS);
    ASSERT_EQ(pair.drive({}, {&r2}), LOOM_SUCCESS) << last_error_message();
    EXPECT_EQ(later, late);

    // Rank 1 sends nothing yet on tag 4; rank 0's send of tag 5 sits behind
    // a send of tag 4 that fills the ring, so it has not started.
    std::string big(200, 'B'), small(8, 's'), got_big(200, '.'), got_small(8, '.');
    TransportHandle sb, ss, rb, rs;
    ASSERT_EQ(pair.t[0]->post_send(big.data(), big.size(), 1, 4, {}, &sb), LOOM_SUCCESS);
    ASSERT_EQ(pair.t[0]->post_send(small.data(), small.size(), 1, 5, {}, &ss), LOOM_SUCCESS);
    EXPECT_FALSE(pair.t[0]->withdraw(&sb, false));  // part of it is in the ring
    EXPECT_TRUE(pair.t[0]->withdraw(&ss, false));
    ASSERT_EQ(pair.t[1]->post_recv(got_big.data(), got_big.size(), 0, 4, {}, &rb), LOOM_SUCCESS);
    ASSERT_EQ(pair.drive({&sb}, {&rb}), LOOM_SUCCESS) << last_error_message();
    EXPECT_EQ(got_big, big);
    ASSERT_EQ(pair.t[1]->post_recv(got_small.data(), got_small.size(), 0, 5, {}, &rs), LOOM_SUCCESS);
    unsigned char flag = 0;
    TransportHandle *h = &rs;
    for (int i = 0; i < 50; ++i) {
        ASSERT_EQ(pair.t[0]->test_many(nullptr, 0, nullptr, nullptr), LOOM_SUCCESS);
        ASSERT_EQ(pair.t[1]->test_many(&h, 1, &flag, nullptr), LOOM_SUCCESS);
    }
    EXPECT_EQ(flag, 0) << "a withdrawn send arrived";
    EXPECT_TRUE(pair.t[1]->withdraw(&rs, true));
}

// An alltoall plan's own ring limit (alltoall_shm_max_bytes) sends its
// larger messages through the fallback transport, on both sides alike; the
// same message of another plan takes the rings. The router counts both,
// per transport and lane.
TEST(SharedMemoryTransport, HonoursThePlansRingLimit) {
    Pair pair(1 << 20, /*cells=*/8, {}, /*alltoall_max_bytes=*/16);
    CollArgs alltoall, allreduce;
    alltoall.collective = Collective::alltoall;
    alltoall.nranks = 2;
    allreduce.nranks = 2;
    for (int r = 0; r < 2; ++r) {
        pair.t[r]->plan_added(3, 33, alltoall, false);
        pair.t[r]->plan_added(4, 44, allreduce, false);
    }
    const Route in_alltoall{3, 1}, in_allreduce{4, 0};
    std::string small(10, 's'), large(40, 'l'), other(40, 'o');
    std::string got_small(10, '.'), got_large(40, '.'), got_other(40, '.');
    TransportHandle s[3], r[3];
    ASSERT_EQ(pair.t[0]->post_send(small.data(), small.size(), 1, 1, in_alltoall, &s[0]), LOOM_SUCCESS);
    ASSERT_EQ(pair.t[0]->post_send(large.data(), large.size(), 1, 1, in_alltoall, &s[1]), LOOM_SUCCESS);
    ASSERT_EQ(pair.t[0]->post_send(other.data(), other.size(), 1, 2, in_allreduce, &s[2]), LOOM_SUCCESS);
    ASSERT_EQ(pair.t[1]->post_recv(got_small.data(), got_small.size(), 0, 1, in_alltoall, &r[0]), LOOM_SUCCESS);
    ASSERT_EQ(pair.t[1]->post_recv(got_large.data(), got_large.size(), 0, 1, in_alltoall, &r[1]), LOOM_SUCCESS);
    ASSERT_EQ(pair.t[1]->post_recv(got_other.data(), got_other.size(), 0, 2, in_allreduce, &r[2]), LOOM_SUCCESS);
    ASSERT_EQ(pair.drive({&s[0], &s[1], &s[2]}, {&r[0], &r[1], &r[2]}), LOOM_SUCCESS) << last_error_message();
    EXPECT_EQ(got_small, small);
    EXPECT_EQ(got_large, large);
    EXPECT_EQ(got_other, other);
    const TransportCounters shm = pair.counters(0, "shared_memory"), fabric = pair.counters(0, "inprocess");
    ASSERT_EQ(shm.lanes.size(), 2u);
    EXPECT_EQ(shm.lanes[0].sent_messages, 1u);  // the allreduce's 40 bytes
    EXPECT_EQ(shm.lanes[0].sent_bytes, 40u);
    EXPECT_EQ(shm.lanes[1].sent_messages, 1u);  // the alltoall's 10 bytes, on lane 1
    ASSERT_EQ(fabric.lanes.size(), 2u);
    EXPECT_EQ(fabric.lanes[1].sent_messages, 1u);  // the alltoall's 40 bytes
    EXPECT_EQ(fabric.lanes[1].sent_bytes, 40u);
    EXPECT_EQ(pair.counters(1, "inprocess").lanes[1].received_bytes, 40u);
}

TEST(SharedMemoryTransport, ZeroByteAndLargerThanMaxMessagesArrive) {
    Pair pair(/*max_bytes=*/32);
    std::string big(100, 'x'), got(100, '.');
    TransportHandle s[2], r[2];
    ASSERT_EQ(pair.t[0]->post_send(nullptr, 0, 1, 1, {}, &s[0]), LOOM_SUCCESS);
    ASSERT_EQ(pair.t[0]->post_send(big.data(), big.size(), 1, 1, {}, &s[1]), LOOM_SUCCESS);  // base transport
    ASSERT_EQ(pair.t[1]->post_recv(nullptr, 0, 0, 1, {}, &r[0]), LOOM_SUCCESS);
    ASSERT_EQ(pair.t[1]->post_recv(got.data(), got.size(), 0, 1, {}, &r[1]), LOOM_SUCCESS);
    ASSERT_EQ(pair.drive({&s[0], &s[1]}, {&r[0], &r[1]}), LOOM_SUCCESS) << last_error_message();
    EXPECT_EQ(got, big);
}

TEST(SharedMemoryTransport, ReportsATruncatedReceive) {
    Pair pair;
    std::string msg(30, 'm'), small(20, '.');
    TransportHandle s, r;
    ASSERT_EQ(pair.t[0]->post_send(msg.data(), msg.size(), 1, 3, {}, &s), LOOM_SUCCESS);
    // Same size class on both sides is what plans guarantee; a receive of
    // 20 bytes for a 30-byte message must fail, not overrun.
    ASSERT_EQ(pair.t[1]->post_recv(small.data(), small.size(), 0, 3, {}, &r), LOOM_SUCCESS);
    Status st = pair.drive({&s}, {&r});
    EXPECT_EQ(st, LOOM_ERR_MISMATCH);
    EXPECT_NE(std::string(last_error_message()).find("of 30 bytes from rank 0 met a receive of 20"), std::string::npos)
        << last_error_message();
    EXPECT_EQ(small, std::string(20, 'm'));
}

// A message smaller than its receive means the ranks' calls differ too:
// both sides of a message run one plan.
TEST(SharedMemoryTransport, ReportsAMessageSmallerThanItsReceive) {
    Pair pair;
    std::string msg(10, 'm'), room(20, '.');
    TransportHandle s, r;
    ASSERT_EQ(pair.t[0]->post_send(msg.data(), msg.size(), 1, 3, {}, &s), LOOM_SUCCESS);
    ASSERT_EQ(pair.t[1]->post_recv(room.data(), room.size(), 0, 3, {}, &r), LOOM_SUCCESS);
    EXPECT_EQ(pair.drive({&s}, {&r}), LOOM_ERR_MISMATCH);
    EXPECT_NE(std::string(last_error_message()).find("of 10 bytes from rank 0 met a receive of 20"), std::string::npos)
        << last_error_message();
}

// Single copy (the two ranks of a Pair are threads of this process, which
// may always read its own memory): the first message goes through the cells
// and lets the receiver try reading its sender; then messages of at least
// min_bytes are read from the send buffer, small ones still go through the
// cells, and one taken out before its receive is read into a buffer.
TEST(SharedMemoryTransport, SingleCopyReadsTheSendBufferOnceTheReceiverMay) {
    Pair pair(1 << 20, /*cells=*/8, always_single_copy(64));
    std::string first(100, 'f'), got_first(100, '.');
    TransportHandle s0, r0;
    ASSERT_EQ(pair.t[0]->post_send(first.data(), first.size(), 1, 1, {}, &s0), LOOM_SUCCESS);
    ASSERT_EQ(pair.t[1]->post_recv(got_first.data(), got_first.size(), 0, 1, {}, &r0), LOOM_SUCCESS);
    ASSERT_EQ(pair.drive({&s0}, {&r0}), LOOM_SUCCESS) << last_error_message();
    EXPECT_EQ(got_first, first);
    EXPECT_EQ(pair.counter(0, "single_copy_sends"), 0u);  // sent before the receiver's verdict

    // Large (tag 2), small (tag 3), large (tag 4) with posted receives.
    std::string a(300, 'a'), b(10, 'b'), c(1000, 'c'), got_a(300, '.'), got_b(10, '.'), got_c(1000, '.');
    TransportHandle s[3], r[3];
    ASSERT_EQ(pair.t[1]->post_recv(got_a.data(), got_a.size(), 0, 2, {}, &r[0]), LOOM_SUCCESS);
    ASSERT_EQ(pair.t[1]->post_recv(got_b.data(), got_b.size(), 0, 3, {}, &r[1]), LOOM_SUCCESS);
    ASSERT_EQ(pair.t[1]->post_recv(got_c.data(), got_c.size(), 0, 4, {}, &r[2]), LOOM_SUCCESS);
    ASSERT_EQ(pair.t[0]->post_send(a.data(), a.size(), 1, 2, {}, &s[0]), LOOM_SUCCESS);
    ASSERT_EQ(pair.t[0]->post_send(b.data(), b.size(), 1, 3, {}, &s[1]), LOOM_SUCCESS);
    ASSERT_EQ(pair.t[0]->post_send(c.data(), c.size(), 1, 4, {}, &s[2]), LOOM_SUCCESS);
    // A single-copy send is not done before its receiver has read it.
    unsigned char flag = 1;
    TransportHandle *large = &s[0];
    ASSERT_EQ(pair.t[0]->test_many(&large, 1, &flag, nullptr), LOOM_SUCCESS);
    EXPECT_EQ(flag, 0);
    ASSERT_EQ(pair.drive({&s[0], &s[1], &s[2]}, {&r[0], &r[1], &r[2]}), LOOM_SUCCESS) << last_error_message();
    EXPECT_EQ(got_a, a);
    EXPECT_EQ(got_b, b);
    EXPECT_EQ(got_c, c);
    EXPECT_EQ(pair.counter(0, "single_copy_sends"), 2u);

    // Tag 5 has no receive yet, and the posted tag-6 receive waits behind
    // it: it is read out of the sender's memory into a buffer, and its send
    // completes before its receive is posted.
    std::string early(500, 'e'), later(200, 'l'), got_early(500, '.'), got_later(200, '.');
    TransportHandle s2[2], r2[2];
    ASSERT_EQ(pair.t[0]->post_send(early.data(), early.size(), 1, 5, {}, &s2[0]), LOOM_SUCCESS);
    ASSERT_EQ(pair.t[0]->post_send(later.data(), later.size(), 1, 6, {}, &s2[1]), LOOM_SUCCESS);
    ASSERT_EQ(pair.t[1]->post_recv(got_later.data(), got_later.size(), 0, 6, {}, &r2[1]), LOOM_SUCCESS);
    ASSERT_EQ(pair.drive({&s2[0], &s2[1]}, {&r2[1]}), LOOM_SUCCESS) << last_error_message();
    EXPECT_EQ(pair.counter(1, "unexpected_messages"), 1u);
    early.assign(500, 'X');  // the send is complete: its buffer is the user's again
    ASSERT_EQ(pair.t[1]->post_recv(got_early.data(), got_early.size(), 0, 5, {}, &r2[0]), LOOM_SUCCESS);
    ASSERT_EQ(pair.drive({}, {&r2[0]}), LOOM_SUCCESS) << last_error_message();
    EXPECT_EQ(got_early, std::string(500, 'e'));
    EXPECT_EQ(got_later, later);
    EXPECT_EQ(pair.counter(0, "single_copy_sends"), 4u);
}

// A receive smaller than a single-copy message keeps what fits and fails.
TEST(SharedMemoryTransport, ReportsATruncatedSingleCopyReceive) {
    Pair pair(1 << 20, /*cells=*/8, always_single_copy(1));
    ASSERT_EQ(pair.first_message(), LOOM_SUCCESS) << last_error_message();
    std::string msg(300, 'm'), small(200, '.');
    TransportHandle s, r;
    ASSERT_EQ(pair.t[0]->post_send(msg.data(), msg.size(), 1, 3, {}, &s), LOOM_SUCCESS);
    ASSERT_EQ(pair.t[1]->post_recv(small.data(), small.size(), 0, 3, {}, &r), LOOM_SUCCESS);
    EXPECT_EQ(pair.drive({&s}, {&r}), LOOM_ERR_MISMATCH);
    EXPECT_NE(std::string(last_error_message()).find("of 300 bytes from rank 0 met a receive of 200"), std::string::npos)
        << last_error_message();
    EXPECT_EQ(small, std::string(200, 'm'));
    EXPECT_EQ(pair.counter(0, "single_copy_sends"), 1u);
}

// A send buffer that is gone when the receiver reads it (a user error):
// both sides report the failed read, neither hangs.
TEST(SharedMemoryTransport, ReportsAFailedSingleCopyOnBothSides) {
    Pair pair(1 << 20, /*cells=*/8, always_single_copy(1));
    ASSERT_EQ(pair.first_message(), LOOM_SUCCESS) << last_error_message();
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    void *mem = mmap(nullptr, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(mem, MAP_FAILED);
    std::memset(mem, 'g', page);
    TransportHandle s, r;
    ASSERT_EQ(pair.t[0]->post_send(mem, 256, 1, 2, {}, &s), LOOM_SUCCESS);
    ASSERT_EQ(munmap(mem, page), 0);
    std::string got(256, '.');
    ASSERT_EQ(pair.t[1]->post_recv(got.data(), got.size(), 0, 2, {}, &r), LOOM_SUCCESS);
    unsigned char done = 0;
    Status st = LOOM_SUCCESS;
    TransportHandle *rh = &r, *sh = &s;
    for (int i = 0; i < 100 && !done && st == LOOM_SUCCESS; ++i) st = pair.t[1]->test_many(&rh, 1, &done, nullptr);
    EXPECT_EQ(st, LOOM_ERR_TRANSPORT);
    EXPECT_NE(std::string(last_error_message()).find("process_vm_readv: Bad address"), std::string::npos)
        << last_error_message();
    done = 0;
    st = LOOM_SUCCESS;
    for (int i = 0; i < 100 && !done && st == LOOM_SUCCESS; ++i) st = pair.t[0]->test_many(&sh, 1, &done, nullptr);
    EXPECT_EQ(st, LOOM_ERR_TRANSPORT);
    EXPECT_NE(std::string(last_error_message()).find("single-copy transfer between this rank and rank 1 failed"),
              std::string::npos)
        << last_error_message();
}

// Measured mode: each plan's calls choose between the rings and single copy
// from their timed blocking calls. Here single copy is made to look 50x
// faster on rank 0, the node's first rank, and the rings faster on rank 1:
// both end up sending by single copy, as rank 1 follows rank 0's choice.
// A plan of small messages has no choice to make, nor a plan in mode never.
TEST(SharedMemoryTransport, MeasuredModeChoosesPerPlanFromTimedCalls) {
    SingleCopyPolicy measured;
    measured.mode = SingleCopyPolicy::measured;
    measured.min_bytes = 64;
    Pair pair(1 << 20, /*cells=*/8, measured);
    ASSERT_EQ(pair.first_message(), LOOM_SUCCESS) << last_error_message();
    ASSERT_EQ(pair.exchange_back(), LOOM_SUCCESS) << last_error_message();
    CollArgs large, small;
    large.nranks = small.nranks = 2;
    large.count = 200;
    small.count = 10;
    for (int r = 0; r < 2; ++r) {
        pair.t[r]->plan_added(1, 77, large, false);
        pair.t[r]->plan_added(2, 78, small, false);
    }
    EXPECT_FALSE(pair.t[0]->call_starts(2, /*blocking=*/true));
    const Route route{1, 0};
    const int calls = 4 * static_cast<int>(CopyPathChooser::kExploreEvery);
    uint64_t single_late[2] = {0, 0};
    for (int call = 0; call < calls; ++call) {
        uint64_t before[2];
        for (int r = 0; r < 2; ++r) {
            EXPECT_TRUE(pair.t[r]->call_starts(1, /*blocking=*/true));
            before[r] = pair.counter(r, "single_copy_sends");
        }
        std::string m0(200, 'a'), m1(200, 'b'), g0(200, '.'), g1(200, '.');
        TransportHandle s0, s1, r0, r1;
        ASSERT_EQ(pair.t[0]->post_send(m0.data(), m0.size(), 1, 9, route, &s0), LOOM_SUCCESS);
        ASSERT_EQ(pair.t[1]->post_send(m1.data(), m1.size(), 0, 9, route, &s1), LOOM_SUCCESS);
        ASSERT_EQ(pair.t[1]->post_recv(g0.data(), g0.size(), 0, 9, route, &r1), LOOM_SUCCESS);
        ASSERT_EQ(pair.t[0]->post_recv(g1.data(), g1.size(), 1, 9, route, &r0), LOOM_SUCCESS);
        ASSERT_EQ(pair.drive({&s0, &r0}, {&s1, &r1}), LOOM_SUCCESS) << last_error_message();
        ASSERT_EQ(g0, m0);
        ASSERT_EQ(g1, m1);
        for (int r = 0; r < 2; ++r) {
            const bool single = pair.counter(r, "single_copy_sends") > before[r];
            const bool fast = r == 0 ? single : !single;
            pair.t[r]->call_ends(1, fast ? 1000 : 50000);
            if (call >= calls - static_cast<int>(CopyPathChooser::kExploreEvery)) single_late[r] += single;
        }
    }
    // In the last kExploreEvery calls, at most kExploreCalls tries of the rings.
    const uint64_t at_least = CopyPathChooser::kExploreEvery - 2 * CopyPathChooser::kExploreCalls;
    EXPECT_GE(single_late[0], at_least);
    EXPECT_GE(single_late[1], at_least);
    SingleCopyPolicy never;
    Pair off(1 << 20, 8, never);
    off.t[0]->plan_added(1, 77, large, false);
    EXPECT_FALSE(off.t[0]->call_starts(1, /*blocking=*/true));
}

// The choice between the rings and single copy for one plan's calls, fed
// made-up call times in ns (the communicator times its blocking calls).
TEST(CopyPathChooser, KeepsTheRingsWhileFasterAndTriesSingleCopyNowAndThen) {
    CopyPathChooser c;
    int single = 0;
    const int n = 10 * static_cast<int>(CopyPathChooser::kExploreEvery);
    for (int i = 0; i < n; ++i) {
        const CopyPathChooser::Path p = c.next();
        single += p == CopyPathChooser::single_copy;
        c.record(p, p == CopyPathChooser::ring ? 55000 : 90000);
    }
    EXPECT_EQ(c.best(), CopyPathChooser::ring);
    // kExploreCalls tries in every kExploreEvery calls (the first early).
    const int tries = static_cast<int>(CopyPathChooser::kExploreCalls);
    EXPECT_GE(single, tries * 10);
    EXPECT_LE(single, tries * 11);
}

TEST(CopyPathChooser, MovesToSingleCopyWhileTheRingsAreSlowerAndBack) {
    CopyPathChooser c;
    auto run = [&c](uint64_t ring_ns, uint64_t single_ns, int calls) {
        for (int i = 0; i < calls; ++i) {
            const CopyPathChooser::Path p = c.next();
            c.record(p, p == CopyPathChooser::ring ? ring_ns : single_ns);
        }
    };
    run(55000, 90000, 100);
    ASSERT_EQ(c.best(), CopyPathChooser::ring);
    EXPECT_EQ(c.estimate(CopyPathChooser::ring), 55000);
    EXPECT_EQ(c.estimate(CopyPathChooser::single_copy), 90000);
    // One call cut by a context switch counts as at most 8x, weighted 1/16:
    // no switch, and normal calls wear it off.
    c.record(CopyPathChooser::ring, 5000000000ull);
    EXPECT_EQ(c.best(), CopyPathChooser::ring);
    EXPECT_NEAR(c.estimate(CopyPathChooser::ring), 55000 + 7 * 55000 / 16.0, 1e-6);
    run(55000, 90000, 100);
    EXPECT_NEAR(c.estimate(CopyPathChooser::ring), 55000, 55000 * 0.05);
    // The rings' calls take 2.5x longer and stay so: single copy within
    // about twenty calls.
    int calls = 0;
    while (c.best() == CopyPathChooser::ring && calls < 100) {
        run(135000, 90000, 1);
        ++calls;
    }
    EXPECT_EQ(c.best(), CopyPathChooser::single_copy);
    EXPECT_LE(calls, 20);
    // Within the margin the choice stays put.
    run(95000, 90000, 200);
    EXPECT_EQ(c.best(), CopyPathChooser::single_copy);
    // A try of the rings finds them fast again: back to them.
    run(55000, 90000, CopyPathChooser::kExploreEvery + CopyPathChooser::kExploreCalls);
    EXPECT_EQ(c.best(), CopyPathChooser::ring);
}

// A rank that follows the node's first rank takes its choice, but not in
// the middle of a try (all ranks try on the same calls).
TEST(CopyPathChooser, AdoptsTheLeadersChoiceBetweenTries) {
    CopyPathChooser c;
    c.adopt(CopyPathChooser::single_copy);
    EXPECT_EQ(c.best(), CopyPathChooser::single_copy);
    EXPECT_EQ(c.next(), CopyPathChooser::single_copy);
    for (int i = 0; i < 6; ++i) c.record(c.next(), 90000);
    ASSERT_EQ(c.next(), CopyPathChooser::ring);  // the early try: 3 calls on the other path
    c.adopt(CopyPathChooser::ring);
    EXPECT_EQ(c.best(), CopyPathChooser::single_copy);  // unchanged during the try
    EXPECT_EQ(c.next(), CopyPathChooser::ring);
    EXPECT_EQ(c.next(), CopyPathChooser::ring);
    EXPECT_EQ(c.next(), CopyPathChooser::single_copy);
    c.adopt(CopyPathChooser::ring);
    EXPECT_EQ(c.best(), CopyPathChooser::ring);
}

// The first calls of a plan are slow (page faults): their minimum, not
// their mean, seeds the estimate.
TEST(CopyPathChooser, WarmUpCallsDoNotDecide) {
    CopyPathChooser c;
    c.record(c.next(), 50000000);  // the first call builds and touches everything
    for (int i = 0; i < 7; ++i) c.record(c.next(), 55000);
    EXPECT_EQ(c.estimate(CopyPathChooser::ring), 55000);
}

TEST(SharedMemoryInbox, RefusesAnotherCommunicatorsInbox) {
    const std::string key = "unit-" + std::to_string(getpid());
    SharedMemoryNode a, b;
    a.local_ranks = b.local_ranks = {0, 1};
    a.identity = 1;
    b.identity = 2;  // rank 1 thinks it belongs to another communicator
    ASSERT_EQ(shm_create_inbox(key, 0, &a), LOOM_SUCCESS) << last_error_message();
    ASSERT_EQ(shm_create_inbox(key, 1, &b), LOOM_SUCCESS) << last_error_message();
    EXPECT_EQ(shm_open_peers(key, 1, &b), LOOM_ERR_TRANSPORT);
    EXPECT_NE(std::string(last_error_message()).find("belongs to another communicator"), std::string::npos);
    // Destroying the creators removes the names.
    a.own.reset();
    b.own.reset();
    std::unique_ptr<SharedSegment> seg;
    EXPECT_NE(SharedSegment::open(shm_inbox_name(key, 0), &seg), LOOM_SUCCESS);
}

TEST(SharedMemoryInbox, RemovesInboxesWhoseOwnerDied) {
    // A child creates an inbox and exits without cleaning up, as a killed rank would.
    const std::string key = "unit-stale-" + std::to_string(getpid());
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        SharedMemoryNode n;
        n.local_ranks = {0, 1};
        if (shm_create_inbox(key, 0, &n) != LOOM_SUCCESS) _exit(1);
        _exit(0);  // no destructors: the name stays
    }
    int status = 0;
    waitpid(child, &status, 0);
    ASSERT_EQ(WEXITSTATUS(status), 0);
    std::unique_ptr<SharedSegment> seg;
    ASSERT_EQ(SharedSegment::open(shm_inbox_name(key, 0), &seg), LOOM_SUCCESS) << "the child's inbox should be there";
    seg.reset();
    // A live owner's inbox is kept.
    SharedMemoryNode mine;
    mine.local_ranks = {0, 1};
    ASSERT_EQ(shm_create_inbox(key, 1, &mine), LOOM_SUCCESS);
    // Not how many this call removed: any Loom process starting beside the
    // test (make check runs the MPI tests alongside) removes stale inboxes too.
    shm_remove_stale_inboxes();
    EXPECT_NE(SharedSegment::open(shm_inbox_name(key, 0), &seg), LOOM_SUCCESS);
    EXPECT_EQ(SharedSegment::open(shm_inbox_name(key, 1), &seg), LOOM_SUCCESS);
}

// Rings stay 256 KiB while an inbox fits in 4 MiB, then shrink by halves
// down to 8 cells; the ring path never takes more than half a ring.
TEST(SharedMemoryGeometry, RingsShrinkOnLargeNodesAndCarryAtMostHalfARing) {
    EXPECT_EQ(shm_geometry_for(2).cells, 64u);
    EXPECT_EQ(shm_geometry_for(16).cells, 64u);
    EXPECT_EQ(shm_geometry_for(17).cells, 32u);
    EXPECT_EQ(shm_geometry_for(64).cells, 16u);
    EXPECT_EQ(shm_geometry_for(1024).cells, 8u);
    for (size_t n : {2, 16, 17, 64, 1024})
        EXPECT_LE(n * shm_geometry_for(n).ring_bytes(), std::max<size_t>(4u << 20, n * 8 * 4096)) << n;
    EXPECT_EQ(shm_ring_message_limit(shm_geometry_for(4), 1u << 20), 128u << 10);
    EXPECT_EQ(shm_ring_message_limit(shm_geometry_for(64), 1u << 20), 32u << 10);
    EXPECT_EQ(shm_ring_message_limit(shm_geometry_for(4), 100), 100u);
}

}  // namespace
}  // namespace loom
