// The router and the caller-supplied transport: each message goes to the
// first transport that carries it, lanes reach both sides, counts are per
// transport and lane, and a loom_transport_t of another version is refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "core/plan.hpp"
#include "loom.h"
#include "transport/external/external.hpp"
#include "transport/router.hpp"

namespace loom {
namespace {

// Records what it is given; completes everything at the first test.
class Recorder final : public Transport {
  public:
    Recorder(const char *name, size_t max_bytes, bool follows)
        : name_(name), max_bytes_(max_bytes), follows_(follows) {}
    int rank() const override { return 0; }
    int size() const override { return 4; }
    const char *name() const override { return name_; }
    uint32_t max_tag() const override { return 1000; }
    int carries(int peer, size_t bytes, const Route &) const override { return peer != 3 && bytes <= max_bytes_ ? 0 : -1; }
    Status post_send(const void *, size_t bytes, int peer, uint32_t, const Route &r, TransportHandle *) override {
        posts.push_back("send " + std::to_string(bytes) + " to " + std::to_string(peer) + " lane " +
                        std::to_string(r.lane));
        return LOOM_SUCCESS;
    }
    Status post_recv(void *, size_t bytes, int peer, uint32_t, const Route &r, TransportHandle *) override {
        posts.push_back("recv " + std::to_string(bytes) + " from " + std::to_string(peer) + " lane " +
                        std::to_string(r.lane));
        return LOOM_SUCCESS;
    }
    Status test_many(TransportHandle *const *, size_t n, unsigned char *done, bool *moved) override {
        for (size_t i = 0; i < n; ++i) done[i] = 1;
        if (moved) *moved = n > 0;
        return LOOM_SUCCESS;
    }
    bool follows_plans() const override { return follows_; }
    void plan_added(uint32_t id, uint32_t, const CollArgs &, bool) override { plans.push_back(id); }
    bool call_starts(uint32_t, bool blocking) override { return blocking; }
    std::vector<std::string> posts;
    std::vector<uint32_t> plans;

  private:
    const char *name_;
    size_t max_bytes_;
    bool follows_;
};

TEST(Router, SendsEachMessageThroughTheFirstTransportThatCarriesIt) {
    auto fallback = std::make_unique<Recorder>("everything", SIZE_MAX, false);
    auto near = std::make_unique<Recorder>("near", 100, true);
    Recorder *f = fallback.get(), *n = near.get();
    Router router(std::move(fallback));
    EXPECT_FALSE(router.call_starts(0, true));  // no transport follows plans yet
    router.add_preferred(std::move(near));
    TransportHandle h[4];
    char buf[200];
    ASSERT_EQ(router.post_send(buf, 50, 1, 7, Route{Route::kNoPlan, 1}, &h[0]), LOOM_SUCCESS);   // near
    ASSERT_EQ(router.post_send(buf, 150, 1, 7, Route{Route::kNoPlan, 0}, &h[1]), LOOM_SUCCESS);  // too large
    ASSERT_EQ(router.post_recv(buf, 50, 3, 7, Route{Route::kNoPlan, 2}, &h[2]), LOOM_SUCCESS);   // peer 3: far
    ASSERT_EQ(router.post_recv(buf, 10, 2, 7, Route{Route::kNoPlan, 2}, &h[3]), LOOM_SUCCESS);   // near
    EXPECT_EQ(n->posts, (std::vector<std::string>{"send 50 to 1 lane 1", "recv 10 from 2 lane 2"}));
    EXPECT_EQ(f->posts, (std::vector<std::string>{"send 150 to 1 lane 0", "recv 50 from 3 lane 2"}));
    TransportHandle *hs[4] = {&h[0], &h[1], &h[2], &h[3]};
    unsigned char done[4] = {0, 0, 0, 0};
    ASSERT_EQ(router.test_many(hs, 4, done, nullptr), LOOM_SUCCESS);
    for (unsigned char d : done) EXPECT_EQ(d, 1);
    std::vector<TransportCounters> report;
    router.report(&report);
    ASSERT_EQ(report.size(), 2u);
    EXPECT_EQ(report[0].name, "near");
    ASSERT_EQ(report[0].lanes.size(), 3u);
    EXPECT_EQ(report[0].lanes[1].sent_messages, 1u);
    EXPECT_EQ(report[0].lanes[1].sent_bytes, 50u);
    EXPECT_EQ(report[0].lanes[2].received_bytes, 10u);
    EXPECT_EQ(report[1].name, "everything");
    EXPECT_EQ(report[1].lanes[0].sent_bytes, 150u);
    EXPECT_EQ(report[1].lanes[2].received_messages, 1u);
    // Plan events reach only the transports that follow plans.
    CollArgs args;
    router.plan_added(5, 55, args, false);
    EXPECT_EQ(n->plans, std::vector<uint32_t>{5});
    EXPECT_TRUE(f->plans.empty());
    EXPECT_TRUE(router.call_starts(5, true));
    EXPECT_FALSE(router.call_starts(5, false));
}

// The caller's operations (how coll/loom reaches the PML) see the lane on
// both sides; a struct without the current version is refused with the reason.
struct Calls {
    std::vector<std::string> log;
};
int fake_isend(void *context, const void *, size_t bytes, int peer, uint32_t, int lane, void **handle) {
    static_cast<Calls *>(context)->log.push_back("isend " + std::to_string(bytes) + " " + std::to_string(peer) +
                                                 " lane " + std::to_string(lane));
    *handle = context;
    return 0;
}
int fake_irecv(void *context, void *, size_t bytes, int peer, uint32_t, int lane, void **handle) {
    static_cast<Calls *>(context)->log.push_back("irecv " + std::to_string(bytes) + " " + std::to_string(peer) +
                                                 " lane " + std::to_string(lane));
    *handle = context;
    return 0;
}
int fake_test_many(void *, void *const *, size_t n, unsigned char *done) {
    for (size_t i = 0; i < n; ++i) done[i] = 1;
    return 0;
}

// Two ranks' worth of a caller's transport that logs into `calls`; version 0.
loom_transport_t fake_ops(Calls *calls) {
    loom_transport_t ops{};
    ops.context = calls;
    ops.rank = 0;
    ops.size = 2;
    ops.max_tag = 100;
    ops.isend = fake_isend;
    ops.irecv = fake_irecv;
    ops.test_many = fake_test_many;
    return ops;
}

TEST(ExternalTransport, PassesLanesBothWaysAndChecksTheVersion) {
    Calls calls;
    loom_transport_t ops = fake_ops(&calls);
    std::unique_ptr<Transport> t;
    EXPECT_EQ(make_external_transport(ops, &t), LOOM_ERR_INVALID_ARGUMENT);  // version 0: the first layout
    EXPECT_NE(std::string(last_error_message()).find("set it to LOOM_TRANSPORT_VERSION (4)"), std::string::npos)
        << last_error_message();
    ops.version = LOOM_TRANSPORT_VERSION;
    ASSERT_EQ(make_external_transport(ops, &t), LOOM_SUCCESS) << last_error_message();
    TransportHandle s, r;
    char buf[8];
    ASSERT_EQ(t->post_send(buf, 8, 1, 3, Route{Route::kNoPlan, 1}, &s), LOOM_SUCCESS);
    ASSERT_EQ(t->post_recv(buf, 4, 1, 3, Route{Route::kNoPlan, 1}, &r), LOOM_SUCCESS);
    EXPECT_EQ(calls.log, (std::vector<std::string>{"isend 8 1 lane 1", "irecv 4 1 lane 1"}));
    bool done = false;
    ASSERT_EQ(t->test(&r, &done), LOOM_SUCCESS);
    EXPECT_TRUE(done);
}

int fake_withdraw(void *context, void *, int receive) {
    static_cast<Calls *>(context)->log.push_back(receive ? "withdraw receive" : "withdraw send");
    return receive;
}

// Version 3's withdraw reaches the caller's transport (and version 4's);
// version 2 (no such field) is still accepted and withdraws nothing.
TEST(ExternalTransport, WithdrawsThroughVersionThreeOnly) {
    Calls calls;
    loom_transport_t ops = fake_ops(&calls);
    ops.withdraw = fake_withdraw;
    char buf[8];
    for (int version : {2, LOOM_TRANSPORT_VERSION}) {
        calls.log.clear();
        ops.version = version;
        std::unique_ptr<Transport> t;
        ASSERT_EQ(make_external_transport(ops, &t), LOOM_SUCCESS) << last_error_message();
        TransportHandle s, r;
        ASSERT_EQ(t->post_send(buf, 8, 1, 3, Route{}, &s), LOOM_SUCCESS);
        ASSERT_EQ(t->post_recv(buf, 8, 1, 3, Route{}, &r), LOOM_SUCCESS);
        const bool sent_back = t->withdraw(&s, false), received_back = t->withdraw(&r, true);
        EXPECT_FALSE(sent_back);
        EXPECT_EQ(received_back, version >= 3);
        if (version >= 3)
            EXPECT_EQ(calls.log, (std::vector<std::string>{"isend 8 1 lane 0", "irecv 8 1 lane 0", "withdraw send",
                                                          "withdraw receive"}));
        else
            EXPECT_EQ(calls.log.size(), 2u);
    }
}

int fake_notify(void *context, int peer, uint64_t value) {
    static_cast<Calls *>(context)->log.push_back("notify " + std::to_string(peer) + " " + std::to_string(value));
    return 0;
}
// One notice waits: call 5 from rank 1.
int fake_probe(void *context, int *peer, uint64_t *value) {
    Calls *calls = static_cast<Calls *>(context);
    if (std::find(calls->log.begin(), calls->log.end(), "probed") != calls->log.end()) return 0;
    calls->log.push_back("probed");
    *peer = 1;
    *value = 5;
    return 1;
}

// Revoke notices (version 4) go to every other rank through notify, and a
// waiting rank takes its peers' through probe; before version 4 neither is
// called.
TEST(ExternalTransport, RevokeNoticesGoThroughVersionFourOnly) {
    for (int version : {3, 4}) {
        Calls calls;
        loom_transport_t ops = fake_ops(&calls);
        ops.notify = fake_notify;
        ops.probe = fake_probe;
        ops.version = version;
        std::unique_ptr<Transport> t;
        ASSERT_EQ(make_external_transport(ops, &t), LOOM_SUCCESS) << last_error_message();
        t->revoke(7);
        uint64_t call = 0;
        int peer = -1;
        const bool revoked = t->revoked_by_peer(&call, &peer);
        if (version == 3) {
            EXPECT_FALSE(revoked);
            EXPECT_TRUE(calls.log.empty());
        } else {
            ASSERT_TRUE(revoked);
            EXPECT_EQ(call, 5u);
            EXPECT_EQ(peer, 1);
            EXPECT_EQ(calls.log, (std::vector<std::string>{"notify 1 7", "probed"}));
            EXPECT_TRUE(t->revoked_by_peer(&call, &peer)) << "a notice once taken is remembered";
        }
    }
}

}  // namespace
}  // namespace loom
