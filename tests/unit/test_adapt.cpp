// The learner behind parameter adapt, on made-up call times: it switches on
// a lasting difference and not on noise, keeps its exploration within its
// budget, forgets on a rail change, and every rank runs the same algorithm
// on every call whatever times each rank sees.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "select/adapt.hpp"

namespace loom {
namespace {

const AlgorithmInfo *algo(const char *name) {
    const AlgorithmInfo *a = find_algorithm(Collective::allreduce, name);
    EXPECT_NE(a, nullptr) << name;
    return a;
}

// Ranks that each hold a learner and make the same calls; `time_ns(rank,
// call, algorithm)` is what a rank measures. The summaries are combined by
// maximum, as the communicator's allreduce does.
struct Ranks {
    std::vector<AdaptiveChoice> learners;
    AdaptClass cls = AdaptClass::of(Collective::allreduce, false, 1 << 20);
    std::map<std::string, uint64_t> runs;  // calls per algorithm (rank 0)
    uint64_t calls = 0, explored = 0, agreements = 0;
    double total_ns = 0, ideal_ns = 0;  // for the cost of exploring
    int64_t rails_changes = 0;

    Ranks(int n, std::vector<const AlgorithmInfo *> candidates) : learners(static_cast<size_t>(n)) {
        for (AdaptiveChoice &l : learners) l.set_candidates(cls, candidates);
    }
    // One call on every rank; fails the test if the ranks disagree.
    void call(const std::function<double(int, uint64_t, const AlgorithmInfo *)> &time_ns, double best_ns = 0) {
        std::vector<AdaptiveChoice::Turn> turns;
        for (AdaptiveChoice &l : learners) turns.push_back(l.next(cls));
        for (const auto &t : turns) ASSERT_EQ(t.algorithm, turns[0].algorithm) << "call " << calls;
        ++runs[turns[0].algorithm->name];
        explored += turns[0].exploring;
        bool due = false;
        for (size_t r = 0; r < learners.size(); ++r) {
            const double ns = time_ns(static_cast<int>(r), calls, turns[r].algorithm);
            if (r == 0) total_ns += ns, ideal_ns += best_ns > 0 ? best_ns : ns;
            const bool d = learners[r].finished(turns[r], static_cast<uint64_t>(ns));
            ASSERT_TRUE(r == 0 || d == due) << "ranks disagree on the agreement point at call " << calls;
            due = d;
        }
        ++calls;
        if (!due) return;
        ++agreements;
        std::vector<int64_t> combined;
        for (AdaptiveChoice &l : learners) {
            std::vector<int64_t> s = l.summary(cls, rails_changes);
            if (combined.empty()) combined = s;
            for (size_t i = 0; i < s.size(); ++i) combined[i] = std::max(combined[i], s[i]);
        }
        for (AdaptiveChoice &l : learners) l.agree(cls, combined, /*rails_matter=*/true);
    }
    const AlgorithmInfo *current() const {
        const AlgorithmInfo *a = learners[0].current(cls);
        for (const AdaptiveChoice &l : learners) EXPECT_EQ(l.current(cls), a);
        return a;
    }
};

// Times around `base` per algorithm, with +-`noise` uniform jitter per rank and call.
std::function<double(int, uint64_t, const AlgorithmInfo *)> jittered(std::map<const AlgorithmInfo *, double> base,
                                                                     double noise, unsigned seed) {
    auto rng = std::make_shared<std::mt19937>(seed);
    return [base, noise, rng](int, uint64_t, const AlgorithmInfo *a) {
        std::uniform_real_distribution<double> u(-noise, noise);
        return base.at(a) * (1 + u(*rng));
    };
}

TEST(Adapt, SwitchesToAnAlgorithmThatIsLastinglyFaster) {
    const AlgorithmInfo *ring = algo("ring"), *rab = algo("rabenseifner"), *rd = algo("recursive_doubling");
    Ranks ranks(4, {ring, rab, rd});
    auto times = jittered({{ring, 1.0e6}, {rab, 0.7e6}, {rd, 2.0e6}}, 0.05, 1);
    for (int i = 0; i < 12; ++i) ranks.call(times);  // four rounds of three
    EXPECT_EQ(ranks.current(), rab);
    EXPECT_EQ(ranks.learners[0].switches(), 1u);
    EXPECT_NE(ranks.learners[0].describe().find("switched at call 12 from ring"), std::string::npos)
        << ranks.learners[0].describe();
    for (int i = 0; i < 5000; ++i) ranks.call(times);
    EXPECT_EQ(ranks.current(), rab);
    EXPECT_EQ(ranks.learners[0].switches(), 1u);
}

TEST(Adapt, ACallSlowedByTheOneBeforeItDoesNotMisleadTheFirstRounds) {
    const AlgorithmInfo *direct = algo("direct"), *rab = algo("rabenseifner"), *ring = algo("ring"),
                        *rd = algo("recursive_doubling");
    Ranks ranks(2, {direct, rab, ring, rd});
    // The call after a direct one starts while its messages drain: 1 ms more.
    const AlgorithmInfo *previous = nullptr;
    int seen = 0;
    auto times = [&](int, uint64_t, const AlgorithmInfo *a) {
        const double base = a == direct ? 5e6 : a == rab ? 0.9e6 : a == ring ? 1.0e6 : 1.2e6;
        const double t = base + (previous == direct ? 1e6 : 0);
        if (++seen % 2 == 0) previous = a;  // both ranks ran it
        return t;
    };
    for (int i = 0; i < 16; ++i) ranks.call(times);
    EXPECT_EQ(ranks.current(), rab) << ranks.learners[0].describe();
}

TEST(Adapt, NoiseAloneNeverSwitches) {
    const AlgorithmInfo *ring = algo("ring"), *rab = algo("rabenseifner");
    for (unsigned seed = 1; seed <= 5; ++seed) {
        Ranks ranks(3, {ring, rab});
        auto times = jittered({{ring, 1.0e6}, {rab, 1.0e6}}, 0.15, seed);
        for (int i = 0; i < 4000; ++i) ranks.call(times);
        EXPECT_EQ(ranks.current(), ring) << "seed " << seed;
        EXPECT_EQ(ranks.learners[0].switches(), 0u) << "seed " << seed << ": " << ranks.learners[0].describe();
    }
}

TEST(Adapt, ExplorationStaysWithinItsBudget) {
    const AlgorithmInfo *ring = algo("ring"), *rab = algo("rabenseifner"), *rd = algo("recursive_doubling");
    Ranks ranks(2, {ring, rab, rd});
    // One runner-up a little slower, one ten times slower.
    auto times = jittered({{ring, 1.0e6}, {rab, 1.3e6}, {rd, 10e6}}, 0.02, 7);
    for (int i = 0; i < 12; ++i) ranks.call(times);
    const uint64_t explored_before = ranks.explored;
    const double total_before = ranks.total_ns, ideal_before = ranks.ideal_ns;
    const int steady = 20000;
    for (int i = 0; i < steady; ++i) ranks.call(times, 1.0e6);
    const double share = double(ranks.explored - explored_before) / steady;
    const double cost = (ranks.total_ns - total_before) / (ranks.ideal_ns - ideal_before) - 1;
    EXPECT_LE(share, 0.03);
    EXPECT_GT(share, 0.0);  // it keeps looking
    EXPECT_LT(cost, 0.02 + 0.01) << "exploring cost " << cost * 100 << " % (jitter allowed 1 %)";
    EXPECT_GT(ranks.runs["recursive_doubling"], 4u) << "the slow one is still explored, rarely";
    EXPECT_EQ(ranks.current(), ring);
}

TEST(Adapt, FollowsAChangeThatLasts) {
    const AlgorithmInfo *ring = algo("ring"), *rab = algo("rabenseifner");
    Ranks ranks(4, {ring, rab});
    uint64_t change_at = 3000;
    auto times = [&](int, uint64_t call, const AlgorithmInfo *a) {
        const bool late = call >= change_at;
        return a == ring ? (late ? 2.0e6 : 1.0e6) : 1.4e6;
    };
    for (uint64_t i = 0; i < change_at; ++i) ranks.call(times);
    EXPECT_EQ(ranks.current(), ring);
    uint64_t switched_after = 0;
    for (uint64_t i = 0; i < 4096 && ranks.current() == ring; ++i, ++switched_after) ranks.call(times);
    EXPECT_EQ(ranks.current(), rab);
    EXPECT_LE(switched_after, 1100u) << "at most a window of the longest length";
}

TEST(Adapt, RanksThatSeeDifferentTimesStillRunTheSameAlgorithm) {
    const AlgorithmInfo *ring = algo("ring"), *rab = algo("rabenseifner"), *rd = algo("recursive_doubling");
    Ranks ranks(5, {ring, rab, rd});
    std::mt19937 rng(3);
    // Rank 2 sees rabenseifner fast, the others slow; every rank's own noise besides.
    auto times = [&](int rank, uint64_t, const AlgorithmInfo *a) {
        std::uniform_real_distribution<double> u(0.8, 1.2);
        double base = a == ring ? 1.0e6 : a == rab ? (rank == 2 ? 0.3e6 : 1.5e6) : 1.1e6;
        return base * u(rng);
    };
    for (int i = 0; i < 6000; ++i) ranks.call(times);  // call() asserts the same algorithm on every rank
    EXPECT_NE(ranks.current(), rab) << "the slowest rank's time decides";
}

TEST(Adapt, ARailChangeForgetsWhatWasLearnt) {
    const AlgorithmInfo *ring = algo("ring"), *rab = algo("rabenseifner");
    Ranks ranks(2, {ring, rab});
    bool rails_changed = false;
    auto times = [&](int, uint64_t, const AlgorithmInfo *a) {
        return a == rab ? (rails_changed ? 3.0e6 : 0.5e6) : 1.0e6;
    };
    for (int i = 0; i < 8; ++i) ranks.call(times);
    EXPECT_EQ(ranks.current(), rab);
    rails_changed = true;
    ranks.rails_changes = 1;  // one rank saw it is enough: the maximum carries it
    const uint64_t before = ranks.agreements;
    while (ranks.agreements == before) ranks.call(times);
    EXPECT_NE(ranks.learners[0].describe().find("a rail left or came back"), std::string::npos);
    for (int i = 0; i < 8; ++i) ranks.call(times);  // learning again from the selector's choice
    EXPECT_EQ(ranks.current(), ring) << ranks.learners[0].describe();
}

TEST(Adapt, CallsThatRanSomethingElseAreCountedButNotTimed) {
    const AlgorithmInfo *ring = algo("ring"), *rab = algo("rabenseifner");
    AdaptiveChoice learner;
    const AdaptClass cls = AdaptClass::of(Collective::allreduce, false, 4096);
    learner.set_candidates(cls, {ring, rab});
    int agreements = 0;
    for (int i = 0; i < 200; ++i) {
        const AdaptiveChoice::Turn t = learner.next(cls);
        // rabenseifner never fits this class's counts: the selector's choice ran instead, untimed.
        if (learner.finished(t, 1000000, t.algorithm == ring)) {
            learner.agree(cls, learner.summary(cls, 0), false);
            ++agreements;
        }
    }
    EXPECT_EQ(learner.current(cls), ring);
    EXPECT_GE(agreements, 3);  // the windows still end and agree
    EXPECT_NE(learner.describe().find("rabenseifner not yet timed"), std::string::npos) << learner.describe();
}

TEST(Adapt, ASummaryOfTheWrongShapeMovesTheClassOnUnchanged) {
    const AlgorithmInfo *ring = algo("ring"), *rab = algo("rabenseifner");
    AdaptiveChoice learner;
    const AdaptClass cls = AdaptClass::of(Collective::allreduce, false, 4096);
    learner.set_candidates(cls, {ring, rab});
    for (int i = 0; i < 8; ++i) {
        const AdaptiveChoice::Turn t = learner.next(cls);
        if (learner.finished(t, t.algorithm == rab ? 1000 : 2000)) learner.agree(cls, {0, 1}, false);
    }
    EXPECT_EQ(learner.current(cls), ring);
    // The next window's end comes 64 calls later, not on every call.
    int due = 0;
    for (int i = 0; i < 63; ++i) due += learner.finished(learner.next(cls), 1000);
    EXPECT_EQ(due, 0);
}

TEST(Adapt, OneCandidateNeverNeedsAgreement) {
    Ranks ranks(2, {algo("ring")});
    for (int i = 0; i < 3000; ++i) ranks.call([](int, uint64_t, const AlgorithmInfo *) { return 1e6; });
    EXPECT_EQ(ranks.agreements, 0u);
    EXPECT_EQ(ranks.explored, 0u);
}

TEST(Adapt, WritesWhatItLearntAsRules) {
    const AlgorithmInfo *ring = algo("ring"), *rab = algo("rabenseifner");
    Ranks ranks(2, {ring, rab});
    for (int i = 0; i < 8; ++i)
        ranks.call([&](int, uint64_t, const AlgorithmInfo *a) { return a == rab ? 0.5e6 : 1.0e6; });
    const std::string rules = ranks.learners[0].rules_json(8, 4, 2);
    EXPECT_NE(rules.find("\"algorithm\": \"rabenseifner\""), std::string::npos) << rules;
    EXPECT_NE(rules.find("\"bytes\": [\n        1048576,\n        2097151\n      ]"), std::string::npos) << rules;
}

TEST(Adapt, SizeClassesArePowersOfTwo) {
    EXPECT_EQ(AdaptClass::of(Collective::allreduce, false, 1).log2_bytes, 0);
    EXPECT_EQ(AdaptClass::of(Collective::allreduce, false, 1023).log2_bytes, 9);
    EXPECT_EQ(AdaptClass::of(Collective::allreduce, false, 1024).log2_bytes, 10);
    EXPECT_EQ(AdaptClass::of(Collective::allgather, true, 3 << 20).text(), "allgather 2 MiB-4 MiB (in place)");
}

}  // namespace
}  // namespace loom
