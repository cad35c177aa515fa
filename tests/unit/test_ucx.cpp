// The UCX rails transport over loopback, two ranks in one process, each
// with workers of its own on two rails: the transport contract (matching
// order, zero-byte and large messages, truncation, many outstanding), the
// cut of large messages by weight, lanes on their rails, and the rail
// parameters' parsing.
#include <gtest/gtest.h>
#include <poll.h>

#include <atomic>
#include <thread>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/plan.hpp"
#include "transport/inprocess/inprocess.hpp"
#include "transport/ucx/rail_weights.hpp"
#include "transport/ucx/setup.hpp"
#include "transport/ucx/ucx.hpp"

namespace loom {
namespace {

struct Pair {
    std::unique_ptr<InProcessFabric> fabric;
    std::unique_ptr<Transport> below[2];  // what failover goes through
    std::unique_ptr<UcxTransport> t[2];
};

// Two ranks on "different nodes", each seeing the other through both rails;
// with `stall_ms` > 0 they fail over through an in-process transport.
Pair make_pair(std::vector<double> weights = {1, 1}, size_t stripe_min = 64 << 10, uint32_t first_plan = 0,
               size_t min_bytes = 0, long stall_ms = 0) {
    Pair p;
    std::shared_ptr<RailWorkers> w[2];
    for (int r = 0; r < 2; ++r) {
        const Status st = RailWorkers::get({"lo", "lo"}, "tcp", &w[r], /*shared=*/false);
        EXPECT_EQ(st, LOOM_SUCCESS) << last_error_message();
    }
    for (int r = 0; r < 2; ++r) {
        UcxPeers peers;
        peers.remote = {r == 1 ? char(1) : char(0), r == 0 ? char(1) : char(0)};
        peers.endpoints.assign(2, std::vector<ucp_ep_h>(2, nullptr));
        for (size_t rail = 0; rail < 2; ++rail)
            EXPECT_EQ(w[r]->endpoint(rail, *w[r]->current(rail), w[1 - r]->current(rail)->address,
                                     &peers.endpoints[1 - r][rail]),
                      LOOM_SUCCESS);
        UcxOptions o;
        o.comm_id = 7;
        o.weights = weights;
        o.stripe_min_bytes = stripe_min;
        o.first_plan = first_plan;
        o.min_bytes = min_bytes;
        EXPECT_EQ(make_ucx_transport(w[r], r, 2, std::move(peers), o, &p.t[r]), LOOM_SUCCESS);
    }
    if (stall_ms > 0) {
        p.fabric = std::make_unique<InProcessFabric>(2);
        for (int r = 0; r < 2; ++r) {
            p.below[r] = p.fabric->endpoint(r);
            EXPECT_EQ(p.t[r]->fail_over_through(p.below[r].get(), static_cast<uint64_t>(stall_ms) * 1000000u),
                      LOOM_SUCCESS);
        }
    }
    return p;
}

// Tests every handle until all are done (both ranks progressed); fails after 20 s.
Status wait_all(Pair &p, std::vector<std::pair<int, TransportHandle *>> ops) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (!ops.empty()) {
        for (size_t i = 0; i < ops.size();) {
            unsigned char done = 0;
            TransportHandle *h = ops[i].second;
            LOOM_RETURN_IF_ERROR(p.t[ops[i].first]->test_many(&h, 1, &done, nullptr));
            if (done) ops.erase(ops.begin() + static_cast<long>(i));
            else ++i;
        }
        for (auto &t : p.t) {
            unsigned char none;
            LOOM_RETURN_IF_ERROR(t->test_many(nullptr, 0, &none, nullptr));
        }
        if (std::chrono::steady_clock::now() > deadline) return fail(LOOM_ERR_TRANSPORT, "timed out");
    }
    return LOOM_SUCCESS;
}

uint64_t counter(const UcxTransport &t, const std::string &name) {
    std::vector<std::pair<std::string, uint64_t>> c;
    t.extra_counters(&c);
    for (auto &e : c)
        if (e.first == name) return e.second;
    return ~uint64_t{0};
}

TEST(UcxTransport, CarriesOnlyRanksOnOtherNodesAndCallsStartedAfterTheRailsCameUp) {
    Pair p = make_pair({1, 1}, 64 << 10, /*first_plan=*/5);
    Route before, after;
    before.plan = 4;
    after.plan = 5;
    EXPECT_EQ(p.t[0]->carries(1, 100, after), 0);
    EXPECT_EQ(p.t[0]->carries(1, 100, before), -1);
    EXPECT_EQ(p.t[0]->carries(0, 100, after), -1);  // itself: same node
    EXPECT_EQ(p.t[0]->carries(1, 100, Route{}), 0);  // outside cached plans
    Pair q = make_pair({1, 1}, 64 << 10, 0, /*min_bytes=*/16384);
    EXPECT_EQ(q.t[0]->carries(1, 16383, after), -1);  // small: left to the PML
    EXPECT_EQ(q.t[0]->carries(1, 16384, after), 0);
}

TEST(UcxTransport, MatchesInPostingOrderPerTag) {
    Pair p = make_pair();
    std::vector<int> out = {1, 2, 3}, in(3, 0);
    TransportHandle hs[6];
    std::vector<std::pair<int, TransportHandle *>> ops;
    for (int i = 0; i < 3; ++i) {
        ASSERT_EQ(p.t[1]->post_recv(&in[i], sizeof(int), 0, 9, Route{}, &hs[i]), LOOM_SUCCESS);
        ops.push_back({1, &hs[i]});
    }
    for (int i = 0; i < 3; ++i) {
        ASSERT_EQ(p.t[0]->post_send(&out[i], sizeof(int), 1, 9, Route{}, &hs[3 + i]), LOOM_SUCCESS);
        ops.push_back({0, &hs[3 + i]});
    }
    ASSERT_EQ(wait_all(p, ops), LOOM_SUCCESS) << last_error_message();
    EXPECT_EQ(in, out);
}

TEST(UcxTransport, ZeroByteSmallAndStripedMessagesArriveWhole) {
    Pair p = make_pair({2, 1});
    for (size_t bytes : {size_t{0}, size_t{1}, size_t{65535}, size_t{65536}, size_t{3} << 20 | 7}) {
        std::vector<unsigned char> out(bytes), in(bytes + 1, 0xee);
        for (size_t i = 0; i < bytes; ++i) out[i] = static_cast<unsigned char>(i * 7 + 1);
        TransportHandle s, r;
        ASSERT_EQ(p.t[1]->post_recv(in.data(), bytes, 0, 3, Route{}, &r), LOOM_SUCCESS);
        ASSERT_EQ(p.t[0]->post_send(out.data(), bytes, 1, 3, Route{}, &s), LOOM_SUCCESS);
        ASSERT_EQ(wait_all(p, {{0, &s}, {1, &r}}), LOOM_SUCCESS) << bytes << ": " << last_error_message();
        EXPECT_TRUE(bytes == 0 || std::memcmp(in.data(), out.data(), bytes) == 0) << bytes;  // out.data(): null at 0
        EXPECT_EQ(in[bytes], 0xee) << "wrote past the end at " << bytes;
    }
    // The striped messages (64 KiB and up) went two thirds on rail 0, one
    // third on rail 1; the smaller ones on lane 0's rail, rail 0.
    const double r1 = static_cast<double>(counter(*p.t[0], "rail1_sent_bytes"));
    EXPECT_NEAR(r1, (65536 + (3 << 20 | 7)) / 3.0, 2.0);
    EXPECT_EQ(counter(*p.t[0], "rail0_sent_bytes") + counter(*p.t[0], "rail1_sent_bytes"),
              size_t{1} + 65535 + 65536 + (3 << 20 | 7));
    EXPECT_EQ(counter(*p.t[1], "rail1_received_bytes"), counter(*p.t[0], "rail1_sent_bytes"));
}

TEST(UcxTransport, SmallMessagesRideTheirLanesRail) {
    Pair p = make_pair();
    char out[100] = "lane one", in[100] = {};
    Route lane1;
    lane1.lane = 3;  // lane 3 of 2 rails: rail 1
    TransportHandle s, r;
    ASSERT_EQ(p.t[1]->post_recv(in, sizeof in, 0, 4, lane1, &r), LOOM_SUCCESS);
    ASSERT_EQ(p.t[0]->post_send(out, sizeof out, 1, 4, lane1, &s), LOOM_SUCCESS);
    ASSERT_EQ(wait_all(p, {{0, &s}, {1, &r}}), LOOM_SUCCESS) << last_error_message();
    EXPECT_STREQ(in, "lane one");
    EXPECT_EQ(counter(*p.t[0], "rail1_sent_bytes"), 100u);
    EXPECT_EQ(counter(*p.t[0], "rail0_sent_bytes"), 0u);
}

// The set-up probe weighs each rail with a message of its own: with
// striping off, a message of any size rides its lane's rail alone (striped,
// every rail carried half of every probe and the rails read alike).
TEST(UcxTransport, WithStripingOffEveryMessageRidesItsLanesRail) {
    Pair p = make_pair({1, 1}, 64 << 10);
    const size_t bytes = 1 << 20;
    std::vector<std::pair<int, size_t>> pieces;
    p.t[0]->cut(bytes, 1, &pieces);
    EXPECT_EQ(pieces.size(), 2u);
    for (auto &t : p.t) t->set_striping(false);
    p.t[0]->cut(bytes, 1, &pieces);
    ASSERT_EQ(pieces.size(), 1u);
    EXPECT_EQ(pieces[0], std::make_pair(1, bytes));
    std::vector<unsigned char> out(bytes, 0x3c), in(bytes, 0);
    Route lane1;
    lane1.lane = 1;
    TransportHandle s, r;
    ASSERT_EQ(p.t[1]->post_recv(in.data(), bytes, 0, 4, lane1, &r), LOOM_SUCCESS);
    ASSERT_EQ(p.t[0]->post_send(out.data(), bytes, 1, 4, lane1, &s), LOOM_SUCCESS);
    ASSERT_EQ(wait_all(p, {{0, &s}, {1, &r}}), LOOM_SUCCESS) << last_error_message();
    EXPECT_EQ(in, out);
    EXPECT_EQ(counter(*p.t[0], "rail1_sent_bytes"), bytes);
    EXPECT_EQ(counter(*p.t[0], "rail0_sent_bytes"), 0u);
    for (auto &t : p.t) t->set_striping(true);
    p.t[0]->cut(bytes, 1, &pieces);
    EXPECT_EQ(pieces.size(), 2u);
}

// What UCX chose for a message from one rail worker to another:
// ucp_ep_print_info's protocol table, as text.
std::string endpoint_protocols(const std::string &tcp_tx_seg_env) {
    if (!tcp_tx_seg_env.empty()) setenv("UCX_TCP_TX_SEG_SIZE", tcp_tx_seg_env.c_str(), 1);
    std::shared_ptr<RailWorkers> w[2];
    for (auto &x : w) EXPECT_EQ(RailWorkers::get({"lo"}, "tcp", &x, /*shared=*/false), LOOM_SUCCESS);
    unsetenv("UCX_TCP_TX_SEG_SIZE");
    ucp_ep_h ep = nullptr;
    EXPECT_EQ(w[0]->endpoint(0, *w[0]->current(0), w[1]->current(0)->address, &ep), LOOM_SUCCESS);
    if (!ep) return {};
    char *text = nullptr;
    size_t length = 0;
    FILE *f = open_memstream(&text, &length);
    ucp_ep_print_info(ep, f);
    std::fclose(f);
    std::string out(text, length);
    std::free(text);
    return out;
}

// The rails' UCX contexts move TCP data in 64 KiB segments (UCX's default
// is 8 KiB): messages up to about 64 KiB go eagerly in one segment. A
// user's UCX_TCP_TX_SEG_SIZE wins.
TEST(RailWorkersUcx, TcpSegmentsAre64KiBUnlessTheUserSetsThem) {
    const std::string ours = endpoint_protocols("");
    EXPECT_NE(ours.find("<egr/short>..65529.."), std::string::npos) << ours;
    const std::string theirs = endpoint_protocols("8k");
    EXPECT_NE(theirs.find("<egr/short>..8185.."), std::string::npos) << theirs;
}

TEST(UcxTransport, CountsBytesPerCollectiveAndRail) {
    Pair p = make_pair({1, 1}, 1000);
    CollArgs alltoall;
    alltoall.collective = Collective::alltoall;
    p.t[0]->plan_added(5, 0, alltoall, false);
    std::vector<char> out(3000, 1), in(3000, 0);
    Route route;
    route.plan = 5;
    TransportHandle s, r;
    ASSERT_EQ(p.t[1]->post_recv(in.data(), in.size(), 0, 4, route, &r), LOOM_SUCCESS);
    ASSERT_EQ(p.t[0]->post_send(out.data(), out.size(), 1, 4, route, &s), LOOM_SUCCESS);
    ASSERT_EQ(wait_all(p, {{0, &s}, {1, &r}}), LOOM_SUCCESS) << last_error_message();
    EXPECT_EQ(counter(*p.t[0], "alltoall_rail0_sent_bytes"), 1500u);
    EXPECT_EQ(counter(*p.t[0], "alltoall_rail1_sent_bytes"), 1500u);
    EXPECT_EQ(counter(*p.t[0], "allreduce_rail0_sent_bytes"), ~uint64_t{0});  // none: not listed
    p.t[0]->plan_removed(5);
}

TEST(UcxTransport, CutsByWeightExactlyAndAlike) {
    Pair p = make_pair({3, 1}, 1000);
    std::vector<std::pair<int, size_t>> pieces;
    p.t[0]->cut(999, 1, &pieces);  // below the threshold: whole, on the lane's rail
    ASSERT_EQ(pieces.size(), 1u);
    EXPECT_EQ(pieces[0], std::make_pair(1, size_t{999}));
    p.t[0]->cut(4001, 0, &pieces);
    ASSERT_EQ(pieces.size(), 2u);
    EXPECT_EQ(pieces[0].second + pieces[1].second, 4001u);
    EXPECT_NEAR(static_cast<double>(pieces[0].second), 3000.75, 1.0);
    std::vector<std::pair<int, size_t>> theirs;
    p.t[1]->cut(4001, 0, &theirs);
    EXPECT_EQ(pieces, theirs);
}

TEST(UcxTransport, NewWeightsApplyToLaterPlansOnly) {
    Pair p = make_pair({1, 1}, 1000);
    p.t[0]->add_weights(10, {3, 1});  // agreed at the call whose plan id is 10
    std::vector<std::pair<int, size_t>> before, after;
    p.t[0]->cut(4000, 0, &before, 9);
    p.t[0]->cut(4000, 0, &after, 10);
    ASSERT_EQ(before.size(), 2u);
    ASSERT_EQ(after.size(), 2u);
    EXPECT_EQ(before[0].second, 2000u);  // a call started earlier keeps the equal cut
    EXPECT_EQ(after[0].second, 3000u);
    EXPECT_NEAR(p.t[0]->weights()[0], 0.75, 1e-9);
}

TEST(UcxTransport, StripedPiecesAreSampledUntilTaken) {
    Pair p = make_pair({3, 1}, 1000);
    std::vector<unsigned char> out(4000, 5), in(4000, 0);
    TransportHandle s, r;
    ASSERT_EQ(p.t[1]->post_recv(in.data(), in.size(), 0, 3, Route{}, &r), LOOM_SUCCESS);
    ASSERT_EQ(p.t[0]->post_send(out.data(), out.size(), 1, 3, Route{}, &s), LOOM_SUCCESS);
    ASSERT_EQ(wait_all(p, {{0, &s}, {1, &r}}), LOOM_SUCCESS) << last_error_message();
    std::vector<double> bytes, seconds;
    p.t[1]->take_samples(&bytes, &seconds);
    EXPECT_EQ(bytes, (std::vector<double>{3000, 1000}));
    ASSERT_EQ(seconds.size(), 2u);
    EXPECT_GT(seconds[0], 0);
    EXPECT_GT(seconds[1], 0);
    p.t[0]->take_samples(&bytes, &seconds);
    EXPECT_EQ(bytes, (std::vector<double>{0, 0}));  // a sender samples nothing
    p.t[1]->take_samples(&bytes, &seconds);         // the next reading starts empty
    EXPECT_EQ(bytes, (std::vector<double>{0, 0}));
    EXPECT_EQ(seconds, (std::vector<double>{0, 0}));
}

// A reading as the receivers take it: every rail's piece timed from the
// posted receive, which a late sender's wait lengthens on every rail alike.
std::vector<double> reading(const std::vector<double> &weights, const std::vector<double> &rail_rates, double wait_s,
                            double bytes = 16e6) {
    std::vector<double> rates;
    for (size_t r = 0; r < weights.size(); ++r) {
        const double piece = weights[r] * bytes;
        rates.push_back(piece / (wait_s + piece / rail_rates[r]));
    }
    return rates;
}

TEST(RailWeights, AReadingMovesTheWeightsPartWayAndNeverPastEachOther) {
    const std::vector<double> even = {0.5, 0.5};
    EXPECT_EQ(damped_rail_weights(even, {20e6, 20e6}), even);
    // A reading that says rail 1 is five times faster (stop 48: equal rails
    // read 0.16/0.84 under load) moves rail 0 from half to no less than 0.39.
    const std::vector<double> next = damped_rail_weights(even, {4e6, 21e6});
    EXPECT_NEAR(next[0] + next[1], 1.0, 1e-12);
    EXPECT_LT(next[0], 0.5);
    EXPECT_GT(next[0], 0.5 / kRailWeightStep / 1.03);
    // A rail without a sample in this reading leaves the weights as they are.
    EXPECT_EQ(damped_rail_weights({0.7, 0.3}, {0, 10e6}), (std::vector<double>{0.7, 0.3}));
    EXPECT_EQ(damped_rail_weights({0.7, 0.3}, {10e6}), (std::vector<double>{0.7, 0.3}));
}

TEST(RailWeights, RailsTwoToOneReachTheirSharesDespiteALateSender) {
    std::vector<double> w = {0.5, 0.5};
    for (int agreement = 0; agreement < 12; ++agreement) w = damped_rail_weights(w, reading(w, {25e6, 12.5e6}, 0.1));
    EXPECT_NEAR(w[0], 2.0 / 3.0, 0.03);
    // Weights that had swung to one side come back on equal rails.
    w = {0.84, 0.16};
    for (int agreement = 0; agreement < 12; ++agreement) w = damped_rail_weights(w, reading(w, {25e6, 25e6}, 0.1));
    EXPECT_NEAR(w[0], 0.5, 0.03);
}

TEST(RailWeights, ReadingsThatSwingEveryTimeKeepTheWeightsNearTheMiddle) {
    // Each reading says the rail with the smaller share is five times faster
    // (its pieces passed within a shaper's burst): the weights stay bounded
    // instead of following the readings from one side to the other.
    std::vector<double> w = {0.5, 0.5};
    for (int agreement = 0; agreement < 50; ++agreement) {
        const bool zero_lighter = w[0] <= w[1];
        w = damped_rail_weights(w, zero_lighter ? std::vector<double>{50e6, 10e6} : std::vector<double>{10e6, 50e6});
        EXPECT_GT(w[0], 0.3) << agreement;
        EXPECT_LT(w[0], 0.7) << agreement;
    }
}

// Feeds `agreements` readings from `read_at` (the weights in force -> the
// rates the ranks measured) through the agreement; returns the adoptions.
template <class Reading>
int agree(RailReweighing &agreement, std::vector<double> &w, int agreements, Reading read_at) {
    int adopted = 0;
    std::vector<double> next;
    for (int a = 0; a < agreements; ++a)
        if (agreement.read(w, read_at(w), &next)) {
            w = next;
            ++adopted;
        }
    return adopted;
}

TEST(RailReweighing, AMoveNeedsTwoReadingsInARow) {
    RailReweighing agreement;
    std::vector<double> w = {0.5, 0.5}, next;
    EXPECT_FALSE(agreement.read(w, {30e6, 10e6}, &next));  // proposes about 0.6/0.4
    EXPECT_FALSE(agreement.read(w, {20e6, 20e6}, &next));  // not again: forgotten
    EXPECT_FALSE(agreement.read(w, {30e6, 10e6}, &next));
    ASSERT_TRUE(agreement.read(w, {30e6, 10e6}, &next));
    EXPECT_GT(next[0], 0.55);
    EXPECT_LT(next[0], 0.5 * kRailWeightStep);
    agreement.forget();
    EXPECT_FALSE(agreement.read(next, {40e6, 10e6}, &w));  // a fresh start after the rails changed
}

TEST(RailReweighing, EqualRailsThatFavourTheLighterOneSettleInsteadOfSwinging) {
    // Stop 48's testbed: on equal rails the readings favour whichever rail
    // carries less, enough to propose 0.45 <-> 0.55 at every second
    // agreement. A move back to where the last one started is dropped: after
    // the first move the weights stay, and no plans are retired for them.
    RailReweighing agreement;
    std::vector<double> w = {0.5, 0.5};
    auto favour_lighter = [](const std::vector<double> &now) {
        return now[0] <= now[1] ? std::vector<double>{36e6, 20e6} : std::vector<double>{20e6, 36e6};
    };
    EXPECT_LE(agree(agreement, w, 100, favour_lighter), 2);
    EXPECT_GT(w[0], 0.4);
    EXPECT_LT(w[0], 0.6);
}

TEST(RailReweighing, TwoToOneRailsReachTheirSharesAndAFreshSlowdownIsFollowed) {
    RailReweighing agreement;
    std::vector<double> w = {0.5, 0.5};
    agree(agreement, w, 20, [](const std::vector<double> &now) { return reading(now, {25e6, 12.5e6}, 0.1); });
    EXPECT_NEAR(w[0], 2.0 / 3.0, 0.04);
    // Rail 0 drops to a quarter of rail 1: the weights follow although that
    // reverses their last move.
    agree(agreement, w, 30, [](const std::vector<double> &now) { return reading(now, {6.25e6, 25e6}, 0.1); });
    EXPECT_LT(w[0], 0.3);
}

TEST(UcxTransport, ReportsATruncatedAndAShortReceive) {
    Pair p = make_pair();
    char out[100] = {}, in[100] = {};
    TransportHandle s, r;
    ASSERT_EQ(p.t[1]->post_recv(in, 50, 0, 5, Route{}, &r), LOOM_SUCCESS);
    ASSERT_EQ(p.t[0]->post_send(out, 100, 1, 5, Route{}, &s), LOOM_SUCCESS);
    EXPECT_NE(wait_all(p, {{0, &s}, {1, &r}}), LOOM_SUCCESS);
    Pair q = make_pair();
    ASSERT_EQ(q.t[1]->post_recv(in, 100, 0, 6, Route{}, &r), LOOM_SUCCESS);
    ASSERT_EQ(q.t[0]->post_send(out, 60, 1, 6, Route{}, &s), LOOM_SUCCESS);
    EXPECT_NE(wait_all(q, {{0, &s}, {1, &r}}), LOOM_SUCCESS);
    EXPECT_NE(std::string(last_error_message()).find("60 bytes where 100 were expected"), std::string::npos)
        << last_error_message();
}

TEST(UcxTransport, ManyOutstandingBothWaysCompleteInAnyOrder) {
  for (long stall_ms : {0L, 60000L}) {
    SCOPED_TRACE(stall_ms ? "with failover" : "without failover");
    Pair p = make_pair({1, 2}, 4096, 0, 0, stall_ms);
    std::mt19937 rng(11);
    const int n = 200;
    std::vector<std::vector<unsigned char>> out(2 * n), in(2 * n);
    std::vector<TransportHandle> hs(4 * n);
    std::vector<std::pair<int, TransportHandle *>> ops;
    for (int i = 0; i < 2 * n; ++i) {
        const int from = i % 2, to = 1 - from;
        const size_t bytes = rng() % 20000;
        out[i].resize(bytes);
        for (auto &b : out[i]) b = static_cast<unsigned char>(rng());
        in[i].assign(bytes, 0);
        Route route;
        route.lane = static_cast<int>(rng() % 4);
        const uint32_t tag = static_cast<uint32_t>(i);
        ASSERT_EQ(p.t[to]->post_recv(in[i].data(), bytes, from, tag, route, &hs[2 * i]), LOOM_SUCCESS);
        ASSERT_EQ(p.t[from]->post_send(out[i].data(), bytes, to, tag, route, &hs[2 * i + 1]), LOOM_SUCCESS);
        ops.push_back({to, &hs[2 * i]});
        ops.push_back({from, &hs[2 * i + 1]});
    }
    std::shuffle(ops.begin(), ops.end(), rng);
    ASSERT_EQ(wait_all(p, ops), LOOM_SUCCESS) << last_error_message();
    for (int i = 0; i < 2 * n; ++i) EXPECT_EQ(in[i], out[i]) << i;
    if (stall_ms) {
        EXPECT_EQ(counter(*p.t[0], "rail0_pieces_sent_below") + counter(*p.t[0], "rail1_pieces_sent_below"), 0u);
        EXPECT_EQ(p.fabric->undelivered(), 0u);  // every answer was received
    }
  }
}

// Sleeping waits: a receiver that sleeps on its rails' event descriptors
// between polls (arm, then poll without a timeout that matters) is woken by
// every message, eager or rendezvous, striped or not, and both ways: a
// wake-up lost between the poll that found nothing and the arm would leave
// it asleep for the 30 s timeout, which fails the test. The sender runs on
// another thread and starts late, so the receiver is asleep when data comes.
TEST(UcxTransport, ASleepingReceiverIsWokenByEveryMessage) {
    Pair p = make_pair({1, 1}, 64 << 10);
    const std::vector<size_t> sizes = {8, 20000, 65536, 1 << 20, 3, 300000};
    std::vector<std::vector<unsigned char>> out(sizes.size()), in(sizes.size());
    for (size_t i = 0; i < sizes.size(); ++i) {
        out[i].assign(sizes[i], static_cast<unsigned char>(i + 1));
        in[i].assign(sizes[i], 0);
    }
    std::atomic<bool> sender_failed{false};
    int timeouts = 0, sleeps = 0;
    for (size_t i = 0; i < sizes.size(); ++i) {
        TransportHandle recv;
        ASSERT_EQ(p.t[1]->post_recv(in[i].data(), sizes[i], 0, static_cast<uint32_t>(i), Route{}, &recv),
                  LOOM_SUCCESS);
        std::thread sender([&, i] {
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
            TransportHandle send;
            if (p.t[0]->post_send(out[i].data(), sizes[i], 1, static_cast<uint32_t>(i), Route{}, &send) !=
                LOOM_SUCCESS) {
                sender_failed = true;
                return;
            }
            for (unsigned char done = 0; !done;) {
                TransportHandle *h = &send;
                if (p.t[0]->test_many(&h, 1, &done, nullptr) != LOOM_SUCCESS) {
                    sender_failed = true;
                    return;
                }
                std::this_thread::yield();
            }
        });
        for (unsigned char done = 0; !done && !sender_failed;) {
            TransportHandle *h = &recv;
            ASSERT_EQ(p.t[1]->test_many(&h, 1, &done, nullptr), LOOM_SUCCESS);
            if (done) break;
            std::vector<int> fds;
            const int armed = p.t[1]->arm_wakeup(&fds);
            ASSERT_NE(armed, -1) << "the rails have no event descriptors";
            if (armed == 0) continue;  // news already: poll again
            std::vector<pollfd> pfds;
            for (int fd : fds) pfds.push_back(pollfd{fd, POLLIN, 0});
            ++sleeps;
            if (poll(pfds.data(), pfds.size(), 30000) == 0) ++timeouts;
        }
        sender.join();
        EXPECT_EQ(in[i], out[i]) << sizes[i] << " bytes";
    }
    EXPECT_FALSE(sender_failed);
    EXPECT_GT(sleeps, 0);
    EXPECT_EQ(timeouts, 0) << "a sleeping receiver missed its wake-up";
}

// A striped message whose receiver's rail 1 failed before it was posted:
// rail 0's piece comes on rail 0, rail 1's below; the sender, whose send on
// rail 1 may still hold the buffer, stops driving that rail.
TEST(UcxFailover, AReceiversFailedRailsPieceComesBelow) {
    Pair p = make_pair({1, 1}, 64 << 10, 0, 0, /*stall_ms=*/60000);
    const size_t bytes = (1 << 20) + 3;
    std::vector<unsigned char> out(bytes), in(bytes, 0);
    for (size_t i = 0; i < bytes; ++i) out[i] = static_cast<unsigned char>(i * 13 + 5);
    p.t[1]->rail_failed(1, "test");
    EXPECT_TRUE(p.t[1]->rail_down(1));
    TransportHandle s, r;
    ASSERT_EQ(p.t[1]->post_recv(in.data(), bytes, 0, 8, Route{}, &r), LOOM_SUCCESS);
    ASSERT_EQ(p.t[0]->post_send(out.data(), bytes, 1, 8, Route{}, &s), LOOM_SUCCESS);
    ASSERT_EQ(wait_all(p, {{0, &s}, {1, &r}}), LOOM_SUCCESS) << last_error_message();
    EXPECT_EQ(in, out);
    EXPECT_EQ(counter(*p.t[1], "rail1_pieces_received_below"), 1u);
    EXPECT_EQ(counter(*p.t[0], "rail1_pieces_sent_below"), 1u);
    EXPECT_EQ(counter(*p.t[0], "rail0_pieces_sent_below"), 0u);
    EXPECT_EQ(counter(*p.t[1], "rail1_failures"), 1u);
    ASSERT_EQ(p.t[1]->rail_events().size(), 1u);
    EXPECT_FALSE(p.t[1]->rail_events()[0].up);
    // Later messages on the failed rail's lane go below at once, rail 0's on rail 0.
    Route lane1;
    lane1.lane = 1;
    char small_out[100] = "lane one", small_in[100] = {};
    ASSERT_EQ(p.t[1]->post_recv(small_in, sizeof small_in, 0, 9, lane1, &r), LOOM_SUCCESS);
    ASSERT_EQ(p.t[0]->post_send(small_out, sizeof small_out, 1, 9, lane1, &s), LOOM_SUCCESS);
    ASSERT_EQ(wait_all(p, {{0, &s}, {1, &r}}), LOOM_SUCCESS) << last_error_message();
    EXPECT_STREQ(small_in, "lane one");
    EXPECT_EQ(counter(*p.t[1], "rail1_pieces_received_below"), 2u);
    EXPECT_EQ(p.fabric->undelivered(), 0u);
}

// The sender's rail failed: its piece never leaves on it, the receiver hears
// nothing on rail 1 for rail_stall_ms beyond the piece's time, fails the
// rail too, and asks for the piece below.
TEST(UcxFailover, ASilentRailFailsAtTheReceiverAfterTheStallTime) {
    Pair p = make_pair({1, 1}, 64 << 10, 0, 0, /*stall_ms=*/200);
    const size_t bytes = 256 << 10;
    std::vector<unsigned char> out(bytes), in(bytes, 0);
    for (size_t i = 0; i < bytes; ++i) out[i] = static_cast<unsigned char>(i * 3 + 1);
    p.t[0]->rail_failed(1, "test");
    TransportHandle s, r;
    const auto start = std::chrono::steady_clock::now();
    ASSERT_EQ(p.t[1]->post_recv(in.data(), bytes, 0, 8, Route{}, &r), LOOM_SUCCESS);
    ASSERT_EQ(p.t[0]->post_send(out.data(), bytes, 1, 8, Route{}, &s), LOOM_SUCCESS);
    ASSERT_EQ(wait_all(p, {{0, &s}, {1, &r}}), LOOM_SUCCESS) << last_error_message();
    EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(200));
    EXPECT_EQ(in, out);
    EXPECT_TRUE(p.t[1]->rail_down(1));
    EXPECT_FALSE(p.t[1]->rail_down(0));
    EXPECT_EQ(counter(*p.t[1], "rail1_pieces_received_below"), 1u);
    EXPECT_EQ(counter(*p.t[1], "rail0_pieces_received_below"), 0u);
}

// A sender silent on every rail (stuck behind another stall, say) is not a
// failed rail until kSilentSenderStalls stall times have passed; then it is,
// so that one rail of one rail set cannot hang a call either.
TEST(UcxFailover, ASenderSilentOnEveryRailIsGivenLongerButNotForever) {
    Pair p = make_pair({1, 1}, 64 << 10, 0, 0, /*stall_ms=*/60);
    const size_t bytes = 256 << 10;
    std::vector<unsigned char> out(bytes, 0x17), in(bytes, 0);
    TransportHandle s, r;
    ASSERT_EQ(p.t[1]->post_recv(in.data(), bytes, 0, 8, Route{}, &r), LOOM_SUCCESS);
    const auto start = std::chrono::steady_clock::now();
    while (std::chrono::steady_clock::now() - start < std::chrono::milliseconds(180)) {
        unsigned char done = 0;
        TransportHandle *h = &r;
        ASSERT_EQ(p.t[1]->test_many(&h, 1, &done, nullptr), LOOM_SUCCESS);
        ASSERT_EQ(done, 0);
    }
    EXPECT_FALSE(p.t[1]->rail_down(0));  // three stall times of silence: still trusted
    EXPECT_FALSE(p.t[1]->rail_down(1));
    p.t[0]->rail_failed(0, "test");
    p.t[0]->rail_failed(1, "test");
    ASSERT_EQ(p.t[0]->post_send(out.data(), bytes, 1, 8, Route{}, &s), LOOM_SUCCESS);
    ASSERT_EQ(wait_all(p, {{0, &s}, {1, &r}}), LOOM_SUCCESS) << last_error_message();
    EXPECT_GE(std::chrono::steady_clock::now() - start,
              std::chrono::milliseconds(UcxTransport::kSilentSenderStalls * 60));
    EXPECT_EQ(in, out);
    EXPECT_TRUE(p.t[1]->rail_down(0));
    EXPECT_TRUE(p.t[1]->rail_down(1));
}

// A receiver that gives up on a rail while the sender is merely late: the
// sender, answered before its piece left, sends it below too and stops
// driving its rail (its send may still read the buffer). Nothing is lost.
TEST(UcxFailover, ALateSenderIsAnsweredAndSendsBelow) {
    Pair p = make_pair({1, 1}, 64 << 10, 0, 0, /*stall_ms=*/60000);
    const size_t bytes = 300000;
    std::vector<unsigned char> out(bytes, 0x42), in(bytes, 0);
    TransportHandle s, r;
    ASSERT_EQ(p.t[1]->post_recv(in.data(), bytes, 0, 8, Route{}, &r), LOOM_SUCCESS);
    p.t[1]->rail_failed(0, "test");
    p.t[1]->rail_failed(1, "test");
    {
        unsigned char done = 0;
        TransportHandle *h = &r;
        ASSERT_EQ(p.t[1]->test_many(&h, 1, &done, nullptr), LOOM_SUCCESS);  // answers: both pieces below
        ASSERT_EQ(done, 0);
    }
    ASSERT_EQ(p.t[0]->post_send(out.data(), bytes, 1, 8, Route{}, &s), LOOM_SUCCESS);
    ASSERT_EQ(wait_all(p, {{0, &s}, {1, &r}}), LOOM_SUCCESS) << last_error_message();
    EXPECT_EQ(in, out);
    EXPECT_EQ(counter(*p.t[0], "rail0_pieces_sent_below") + counter(*p.t[0], "rail1_pieces_sent_below"), 2u);
}

// What failover sends below, watched: counts the calls made from a thread
// that says it is the progress thread (which may not enter the PML).
class WatchedBelow final : public Transport {
  public:
    explicit WatchedBelow(std::unique_ptr<Transport> inner) : inner_(std::move(inner)) {}
    int rank() const override { return inner_->rank(); }
    int size() const override { return inner_->size(); }
    const char *name() const override { return "watched"; }
    uint32_t max_tag() const override { return inner_->max_tag(); }
    Status post_send(const void *buf, size_t bytes, int peer, uint32_t tag, const Route &route,
                     TransportHandle *h) override {
        watch();
        return inner_->post_send(buf, bytes, peer, tag, route, h);
    }
    Status post_recv(void *buf, size_t bytes, int peer, uint32_t tag, const Route &route,
                     TransportHandle *h) override {
        watch();
        return inner_->post_recv(buf, bytes, peer, tag, route, h);
    }
    Status test_many(TransportHandle *const *hs, size_t n, unsigned char *done, bool *moved) override {
        watch();
        return inner_->test_many(hs, n, done, moved);
    }
    Status idle() override {
        watch();
        return inner_->idle();
    }
    std::atomic<int> from_thread{0};
    std::atomic<int> from_caller{0};

  private:
    void watch() { (t_on_progress_thread ? from_thread : from_caller).fetch_add(1); }
    std::unique_ptr<Transport> inner_;
};

// The progress thread drives the rails with failover on: it completes a
// striped message on both ranks (the receiver's answer owed, the send
// detached with a copy) without a single call below; the caller's next
// turn posts what is owed and the sender hears its answer. A piece whose
// rail failed is left to the caller, who receives it below.
TEST(UcxFailover, TheProgressThreadLeavesWhatGoesBelowToTheCaller) {
    Pair p = make_pair({1, 1}, 64 << 10, 0, 0, /*stall_ms=*/0);
    InProcessFabric fabric(2);
    WatchedBelow *watched[2];
    std::unique_ptr<Transport> below[2];
    for (int r = 0; r < 2; ++r) {
        auto w = std::make_unique<WatchedBelow>(fabric.endpoint(r));
        watched[r] = w.get();
        below[r] = std::move(w);
        ASSERT_EQ(p.t[r]->fail_over_through(below[r].get(), 60000ull * 1000000u), LOOM_SUCCESS);
        EXPECT_TRUE(p.t[r]->progress_thread_safe());
    }
    const size_t bytes = (1 << 20) + 5;
    std::vector<unsigned char> out(bytes), in(bytes, 0);
    for (size_t i = 0; i < bytes; ++i) out[i] = static_cast<unsigned char>(i * 7 + 3);
    TransportHandle s, r;
    Status thread_status = LOOM_SUCCESS;
    // Both ranks' steps are the thread's, as in a thread-driven plan.
    std::thread thread([&] {
        t_on_progress_thread = true;
        thread_status = p.t[1]->post_recv(in.data(), bytes, 0, 8, Route{}, &r);
        if (thread_status == LOOM_SUCCESS) thread_status = p.t[0]->post_send(out.data(), bytes, 1, 8, Route{}, &s);
        bool sent = false, received = false;
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
        while (thread_status == LOOM_SUCCESS && !(sent && received) && std::chrono::steady_clock::now() < deadline) {
            unsigned char done = 0;
            TransportHandle *h = &s;
            if (!sent && (thread_status = p.t[0]->test_many(&h, 1, &done, nullptr)) == LOOM_SUCCESS) sent = done;
            h = &r;
            done = 0;
            if (!received && (thread_status = p.t[1]->test_many(&h, 1, &done, nullptr)) == LOOM_SUCCESS)
                received = done;
        }
        if (thread_status == LOOM_SUCCESS && !(sent && received)) thread_status = LOOM_ERR_TRANSPORT;
    });
    thread.join();
    ASSERT_EQ(thread_status, LOOM_SUCCESS) << "the thread did not finish the message: " << last_error_message();
    EXPECT_EQ(in, out);
    EXPECT_EQ(watched[0]->from_thread + watched[1]->from_thread, 0) << "the progress thread went below";
    EXPECT_EQ(watched[0]->from_caller + watched[1]->from_caller, 0);
    // The caller's turns: the receiver's answer goes out, the sender's receive for it is posted and met.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (std::chrono::steady_clock::now() < deadline && (watched[0]->from_caller == 0 || fabric.undelivered() > 0)) {
        for (auto &t : p.t) {
            unsigned char none;
            ASSERT_EQ(t->test_many(nullptr, 0, &none, nullptr), LOOM_SUCCESS) << last_error_message();
        }
    }
    EXPECT_GT(watched[0]->from_caller, 0);
    EXPECT_GT(watched[1]->from_caller, 0);
    EXPECT_EQ(fabric.undelivered(), 0u);

    // Rail 1 failed at the receiver: the thread completes the send (detached)
    // but not the receive, whose missing piece comes below in the caller's test.
    std::fill(in.begin(), in.end(), 0);
    p.t[1]->rail_failed(1, "test");
    std::thread second([&] {
        t_on_progress_thread = true;
        thread_status = p.t[1]->post_recv(in.data(), bytes, 0, 9, Route{}, &r);
        if (thread_status == LOOM_SUCCESS) thread_status = p.t[0]->post_send(out.data(), bytes, 1, 9, Route{}, &s);
        for (int i = 0; i < 2000 && thread_status == LOOM_SUCCESS; ++i) {
            unsigned char done = 0;
            TransportHandle *h = &r;
            thread_status = p.t[1]->test_many(&h, 1, &done, nullptr);
            if (done) thread_status = LOOM_ERR_INTERNAL;  // it cannot have arrived whole
        }
    });
    second.join();
    ASSERT_EQ(thread_status, LOOM_SUCCESS) << last_error_message();
    EXPECT_EQ(watched[0]->from_thread + watched[1]->from_thread, 0) << "the progress thread went below";
    ASSERT_EQ(wait_all(p, {{0, &s}, {1, &r}}), LOOM_SUCCESS) << last_error_message();
    EXPECT_EQ(in, out);
    EXPECT_EQ(counter(*p.t[1], "rail1_pieces_received_below"), 1u);
    EXPECT_EQ(counter(*p.t[0], "rail1_pieces_sent_below"), 1u);
}

TEST(UcxFailover, RailsLeftOutTakeNothingFromLaterPlans) {
    Pair p = make_pair({1, 1}, 1000);
    p.t[0]->add_weights(10, {1, 0});
    std::vector<std::pair<int, size_t>> pieces;
    p.t[0]->cut(4000, 0, &pieces, 10);
    ASSERT_EQ(pieces.size(), 1u);
    EXPECT_EQ(pieces[0], std::make_pair(0, size_t{4000}));
    p.t[0]->cut(100, 1, &pieces, 10);  // lane 1's rail is out: rail 0
    EXPECT_EQ(pieces[0].first, 0);
    p.t[0]->cut(4000, 0, &pieces, 9);  // a call started before keeps both
    EXPECT_EQ(pieces.size(), 2u);
    EXPECT_TRUE(p.t[0]->rail_left_out(1));
    EXPECT_FALSE(p.t[0]->rail_left_out(0));
    Route later;
    later.plan = 11;
    EXPECT_EQ(p.t[0]->carries(1, 4000, later), 0);
    p.t[0]->add_weights(12, {0, 0});  // every rail out: the PML or MPI carries all
    later.plan = 12;
    EXPECT_EQ(p.t[0]->carries(1, 4000, later), -1);
    p.t[0]->add_weights(13, {1, 1});
    later.plan = 13;
    EXPECT_EQ(p.t[0]->carries(1, 4000, later), 0);
}

TEST(RailParameters, NamesAndWeightsParseOrSayWhatIsWrong) {
    std::vector<std::string> names;
    EXPECT_EQ(parse_rail_names("rail0,rail1", &names), LOOM_SUCCESS);
    EXPECT_EQ(names, (std::vector<std::string>{"rail0", "rail1"}));
    EXPECT_NE(parse_rail_names("rail0,,rail1", &names), LOOM_SUCCESS);
    EXPECT_NE(std::string(last_error_message()).find("rails = 'rail0,,rail1'"), std::string::npos);
    std::vector<double> w;
    EXPECT_EQ(parse_rail_weights("2,1", 2, &w), LOOM_SUCCESS);
    EXPECT_EQ(w, (std::vector<double>{2, 1}));
    EXPECT_NE(parse_rail_weights("2,-1", 2, &w), LOOM_SUCCESS);
    EXPECT_NE(parse_rail_weights("2", 2, &w), LOOM_SUCCESS);
    EXPECT_NE(std::string(last_error_message()).find("rail_weights = '2' gives 1 weights for 2 rails"),
              std::string::npos);
    std::string ip;
    EXPECT_TRUE(interface_address("lo", &ip));
    EXPECT_EQ(ip, "127.0.0.1");
    EXPECT_FALSE(interface_address("no_such_if0", &ip));
    std::string source;
    ASSERT_EQ(route_source("127.0.0.1", &source), LOOM_SUCCESS);
    EXPECT_EQ(source, "127.0.0.1");
}

}  // namespace
}  // namespace loom
