// The shared slots (algorithm shared_slots) with ranks as threads: each
// thread's Communicator attaches shared memory over memfd inboxes, mapped
// once per rank as processes map them, and runs the collectives through the
// slots against a reference: every communicator size 1-17, counts 0, 1,
// p-1, p, p+1 and a large odd one, in place and not; every (type, op) pair;
// back-to-back calls, two communicators interleaved, nonblocking and
// persistent calls completed in random order; and a mutation check that a
// reader which ignores the generation is caught. The same for the node slots
// (algorithm node_slots) on emulated nodes, each with its own inboxes, the
// leaders' exchange over the in-process fabric: sizes 2-17 in two layouts.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <numeric>
#include <random>
#include <thread>

#include <unistd.h>

#include "algorithms/algorithm.hpp"
#include "reference.hpp"
#include "runtime/communicator.hpp"
#include "transport/inprocess/inprocess.hpp"
#include "transport/shm/slots.hpp"

namespace loom {
namespace {

using testing::all_combos;
using testing::all_type_cases;
using testing::Combo;
using testing::TypeCase;

constexpr Collective kCollectives[] = {Collective::allreduce, Collective::reduce_scatter,
                                       Collective::reduce_scatter_block, Collective::allgather, Collective::alltoall};

bool reduces(Collective c) {
    return c == Collective::allreduce || c == Collective::reduce_scatter || c == Collective::reduce_scatter_block;
}

// p ranks as threads: rank r's Communicator over the in-process fabric,
// with shared memory attached among the ranks of its node (none for a node
// of one rank). `labels` gives each rank's node (empty: one node, no node
// map); each collective is forced to `algorithm` where it has one (by
// default shared_slots), unless comm() is told not to force.
class Node {
  public:
    explicit Node(int p, std::vector<int> labels = {}, std::string algorithm = "shared_slots")
        : p_(p), labels_(std::move(labels)), algorithm_(std::move(algorithm)), fabric_(p) {
        geometry_.cells = 4;
        geometry_.cell_payload = 64;
        map_ = labels_.empty() ? NodeMap::single_node(p) : NodeMap::from_labels(labels_);
        inboxes_.resize(static_cast<size_t>(map_.nodes()));
        for (int n = 0; n < map_.nodes(); ++n) {
            const size_t k = map_.members[n].size();
            if (k < 2) continue;
            for (size_t j = 0; j < k; ++j) {
                inboxes_[n].push_back(SharedSegment::anonymous(shm_inbox_bytes(k, geometry_)));
                shm_inbox_init(inboxes_[n].back()->data(), k, geometry_, 42 + n);
            }
        }
    }
    std::unique_ptr<Communicator> comm(int rank, bool force = true) {
        Config config;
        for (Collective c : kCollectives) {
            if (!force || !find_algorithm(c, algorithm_)) continue;
            EXPECT_EQ(config.set(std::string(collective_name(c)) + "_algorithm", algorithm_), LOOM_SUCCESS);
        }
        // Every emulated node's threads share this machine's cores.
        if (!labels_.empty()) {
            EXPECT_EQ(config.set("slots_wait", "yield"), LOOM_SUCCESS);
        }
        auto comm = std::make_unique<Communicator>(fabric_.endpoint(rank), config);
        if (!labels_.empty()) {
            EXPECT_EQ(comm->set_nodes(map_), LOOM_SUCCESS) << last_error_message();
        }
        const int n = map_.node_of[rank];
        const auto &members = map_.members[n];
        if (members.size() < 2) return comm;
        SharedMemoryNode node;
        node.local_ranks = members;
        node.geometry = geometry_;
        node.identity = 42 + n;
        const int local = map_.local_index[rank];
        node.own = inboxes_[n][local]->another_mapping();
        node.peers.resize(members.size());
        for (size_t j = 0; j < members.size(); ++j)
            if (static_cast<int>(j) != local) node.peers[j] = inboxes_[n][j]->another_mapping();
        EXPECT_EQ(comm->attach_shared_memory(std::move(node)), LOOM_SUCCESS) << last_error_message();
        return comm;
    }
    // Runs body(rank) on p threads.
    template <typename Body>
    void run(Body body) {
        std::vector<std::thread> threads;
        for (int r = 0; r < p_; ++r) threads.emplace_back([&, r] { body(r); });
        for (auto &t : threads) t.join();
    }

  private:
    int p_;
    std::vector<int> labels_;
    std::string algorithm_;
    NodeMap map_;
    InProcessFabric fabric_;
    ShmGeometry geometry_;
    std::vector<std::vector<std::unique_ptr<SharedSegment>>> inboxes_;  // per node, by local index
};

// One call: its shape, every rank's input (from the type's generator) and
// what rank `rank` must get.
struct Case {
    Collective collective;
    int p;
    size_t count;
    bool in_place;
    Combo combo;
    uint64_t seed;

    CollArgs args() const {
        CollArgs a;
        a.collective = collective;
        a.count = count;
        // reduce_scatter: counts that differ by rank, some zero.
        if (collective == Collective::reduce_scatter)
            for (int i = 0; i < p; ++i) a.recv_counts.push_back((count + static_cast<size_t>(i)) % (count + 2));
        return a;
    }
    size_t elem() const { return combo.type->size; }
    size_t input_count() const {
        CollArgs a = args();
        a.nranks = p;
        return a.input_count();
    }
    std::vector<unsigned char> input(int rank) const {
        std::vector<unsigned char> in(std::max<size_t>(input_count(), 1) * elem());
        combo.type->fill(in.data(), input_count(), rank, seed, combo.op);
        return in;
    }
    // The expected output of `rank` (the reduction's part, or the whole output).
    std::vector<unsigned char> expected(int rank) const {
        const CollArgs a = args();
        const size_t e = elem();
        std::vector<unsigned char> all = input(0);
        switch (collective) {
            case Collective::allreduce:
            case Collective::reduce_scatter:
            case Collective::reduce_scatter_block: {
                for (int r = 1; r < p; ++r) combo.type->combine(all.data(), input(r).data(), input_count(), combo.op);
                size_t offset = 0, n = count;
                if (collective == Collective::reduce_scatter) {
                    for (int r = 0; r < rank; ++r) offset += a.recv_counts[r];
                    n = a.recv_counts[rank];
                } else if (collective == Collective::reduce_scatter_block) {
                    offset = count * rank;
                }
                return std::vector<unsigned char>(all.begin() + offset * e, all.begin() + (offset + n) * e);
            }
            case Collective::allgather: {
                std::vector<unsigned char> out;
                for (int r = 0; r < p; ++r) {
                    const auto in = input(r);
                    out.insert(out.end(), in.begin(), in.begin() + count * e);
                }
                return out;
            }
            case Collective::alltoall: {
                std::vector<unsigned char> out;
                for (int r = 0; r < p; ++r) {
                    const auto in = input(r);
                    out.insert(out.end(), in.begin() + rank * count * e, in.begin() + (rank + 1) * count * e);
                }
                return out;
            }
            case Collective::alltoallv:
            case Collective::allgatherv: break;  // the slots do not run them
        }
        return {};
    }
    std::string describe() const {
        return std::string(collective_name(collective)) + " p=" + std::to_string(p) + " count=" +
               std::to_string(count) + " " + combo.type->name + " op=" + std::to_string(combo.op) +
               (in_place ? " in place" : "");
    }
};

// The output buffer of `rank` for the case, filled as MPI asks of an
// in-place call (its input where the collective takes it from).
std::vector<unsigned char> output_buffer(const Case &c, int rank, std::vector<unsigned char> &input) {
    CollArgs a = c.args();
    a.nranks = c.p;
    a.in_place = c.in_place;
    std::vector<unsigned char> out(std::max<size_t>(a.output_count(rank), 1) * c.elem(), 0xEE);
    if (c.in_place) {
        const size_t at = a.in_place_input_offset(rank) * c.elem();
        const size_t bytes = (c.collective == Collective::allgather ? c.count : c.input_count()) * c.elem();
        std::copy(input.begin(), input.begin() + bytes, out.begin() + at);
    }
    return out;
}

// Starts the case on rank's communicator (blocking unless `req`); the output buffer is `out`.
Status start_case(Communicator &comm, const Case &c, int rank, std::vector<unsigned char> &in,
                  std::vector<unsigned char> &out, std::unique_ptr<Request> *req = nullptr) {
    CallData d;
    d.sendbuf = c.in_place ? nullptr : in.data();
    d.in_place = c.in_place;
    d.recvbuf = out.data();
    d.type = c.combo.type->type;
    d.op = c.combo.op;
    CollArgs args = c.args();
    return req ? comm.start(args, d, req) : comm.run(args, d);
}

// Empty when rank's output matches the reference.
std::string check_output(const Case &c, int rank, const std::vector<unsigned char> &out) {
    const auto want = c.expected(rank);
    size_t bad = 0;
    if (!c.combo.type->equal(out.data(), want.data(), want.size() / c.elem(), &bad))
        return c.describe() + ": rank " + std::to_string(rank) + " element " + std::to_string(bad) + " differs";
    return {};
}

// A call of `count` int64 elements (sum) from `in` into `out`: blocking,
// or started into *req.
Status run_int64(Communicator &comm, Collective c, size_t count, const std::vector<int64_t> &in,
                 std::vector<int64_t> &out, std::unique_ptr<Request> *req = nullptr) {
    CollArgs a;
    a.collective = c;
    a.count = count;
    CallData d;
    d.sendbuf = in.data();
    d.recvbuf = out.data();
    d.type = LOOM_INT64;
    return req ? comm.start(a, d, req) : comm.run(a, d);
}

// Counts 0, 1, p-1, p, p+1 and a large odd one that still fits the slots
// (`whole_output`: allgather's whole output must fit them, as node_slots' result).
std::vector<size_t> counts_for(Collective c, int p, size_t elem, bool whole_output = false) {
    const bool per_rank = c == Collective::reduce_scatter_block || c == Collective::alltoall ||
                          (whole_output && c == Collective::allgather);
    const size_t per_count = (per_rank ? p : 1) * elem;
    size_t large = kSharedSlotsCapacity / per_count;
    if (c == Collective::reduce_scatter) large = kSharedSlotsCapacity / (elem * p);  // counts of about `count` each
    if (large % 2 == 0) --large;
    std::vector<size_t> counts = {0, 1, static_cast<size_t>(p - 1), static_cast<size_t>(p), static_cast<size_t>(p + 1),
                                  large};
    std::sort(counts.begin(), counts.end());
    counts.erase(std::unique(counts.begin(), counts.end()), counts.end());
    return counts;
}

// Runs every case on p ranks (one node, or nodes by `labels` with
// `algorithm` forced), back to back, and returns the failures.
std::vector<std::string> run_cases(int p, const std::vector<Case> &cases, bool force = true,
                                   const std::vector<int> &labels = {}, const std::string &algorithm = "shared_slots") {
    Node node(p, labels, algorithm);
    std::mutex mu;
    std::vector<std::string> failures;
    node.run([&](int rank) {
        auto comm = node.comm(rank, force);
        for (const Case &c : cases) {
            auto in = c.input(rank);
            auto out = output_buffer(c, rank, in);
            std::string err;
            if (start_case(*comm, c, rank, in, out) != LOOM_SUCCESS) err = c.describe() + ": " + last_error_message();
            else err = check_output(c, rank, out);
            if (err.empty() && force && comm->last_algorithm(c.collective) != algorithm &&
                find_algorithm(c.collective, algorithm))
                err = c.describe() + ": ran " + comm->last_algorithm(c.collective);
            if (!err.empty()) {
                std::lock_guard<std::mutex> lock(mu);
                failures.push_back(err);
            }
        }
    });
    return failures;
}

// One (type, op) per element size: the path, not the arithmetic, over every size and count.
TEST(SharedSlots, EverySizeCountAndPlacementMatchesTheReference) {
    std::vector<Combo> per_size;
    for (const Combo &c : all_combos())
        if (std::none_of(per_size.begin(), per_size.end(), [&](const Combo &k) { return k.type->size == c.type->size; }))
            per_size.push_back(c);
    size_t cases_run = 0;
    for (int p = 1; p <= 17; ++p) {
        std::vector<Case> cases;
        uint64_t seed = 1;
        for (Collective coll : kCollectives)
            for (const Combo &combo : per_size)
                for (size_t count : counts_for(coll, p, combo.type->size))
                    for (bool in_place : {false, true}) {
                        if (!reduces(coll) && combo.op != per_size[0].op) continue;
                        cases.push_back({coll, p, count, in_place, combo, seed++});
                    }
        const auto failures = run_cases(p, cases);
        cases_run += cases.size();
        for (size_t i = 0; i < failures.size() && i < 10; ++i) ADD_FAILURE() << failures[i];
        ASSERT_TRUE(failures.empty()) << failures.size() << " failures at p=" << p;
    }
    RecordProperty("cases", static_cast<int>(cases_run));
}

// Every (type, op) pair MPI defines, for the three reductions.
TEST(SharedSlots, EveryTypeAndOpMatchesTheReference) {
    for (int p : {2, 5, 17}) {
        std::vector<Case> cases;
        uint64_t seed = 100;
        for (Collective coll : {Collective::allreduce, Collective::reduce_scatter, Collective::reduce_scatter_block})
            for (const Combo &combo : all_combos())
                for (bool in_place : {false, true}) cases.push_back({coll, p, static_cast<size_t>(p + 1), in_place, combo, seed++});
        const auto failures = run_cases(p, cases);
        for (size_t i = 0; i < failures.size() && i < 10; ++i) ADD_FAILURE() << failures[i];
        ASSERT_TRUE(failures.empty()) << failures.size() << " failures at p=" << p;
    }
}

// Without forcing: small inputs take the shared slots, larger ones a plan.
TEST(SharedSlots, ChosenUpToSlotsMaxBytesByDefault) {
    const int p = 4;
    Node node(p);
    node.run([&](int rank) {
        auto comm = node.comm(rank, /*force=*/false);
        const size_t limit = static_cast<size_t>(comm->config().integer(kParamSlotsMaxBytes));
        for (size_t count : {size_t{1}, limit / 8, limit / 8 + 1, size_t{20000}}) {
            std::vector<int64_t> in(count, rank + 1), out(count);
            ASSERT_EQ(run_int64(*comm, Collective::allreduce, count, in, out), LOOM_SUCCESS) << last_error_message();
            EXPECT_EQ(out[count - 1], p * (p + 1) / 2);
            const bool slots = std::string(comm->last_algorithm(Collective::allreduce)) == "shared_slots";
            EXPECT_EQ(slots, count * 8 <= limit) << count << " elements went to " << comm->last_algorithm(Collective::allreduce);
        }
    });
}

// A rank that lags (sleeps before some calls) never reads a slot of another
// generation: 400 back-to-back calls with fresh data each, no barrier.
std::vector<std::string> back_to_back(int p, int calls, const std::vector<int> &labels = {},
                                      const std::string &algorithm = "shared_slots") {
    Node node(p, labels, algorithm);
    std::mutex mu;
    std::vector<std::string> failures;
    node.run([&](int rank) {
        auto comm = node.comm(rank);
        std::mt19937 lag(static_cast<unsigned>(rank));
        for (int call = 0; call < calls; ++call) {
            if (rank == 1 && lag() % 4 == 0) std::this_thread::sleep_for(std::chrono::microseconds(200));
            const Combo combo{&all_type_cases()[6], LOOM_SUM};  // int64
            const Case c{kCollectives[call % 5], p, static_cast<size_t>(3 + call % 7), false, combo,
                         static_cast<uint64_t>(call)};
            auto in = c.input(rank);
            auto out = output_buffer(c, rank, in);
            std::string err = start_case(*comm, c, rank, in, out) == LOOM_SUCCESS ? check_output(c, rank, out)
                                                                                 : last_error_message();
            if (!err.empty()) {
                std::lock_guard<std::mutex> lock(mu);
                failures.push_back("call " + std::to_string(call) + ": " + err);
            }
        }
    });
    return failures;
}

TEST(SharedSlots, BackToBackCallsWithALaggingRank) {
    ASSERT_EQ(all_type_cases()[6].type, LOOM_INT64);
    for (int p : {2, 3, 5}) {
        const auto failures = back_to_back(p, 400);
        EXPECT_TRUE(failures.empty()) << failures.size() << " failures at p=" << p << ", first: " << failures[0];
    }
}

// The mutation: readers that take a peer's slot as soon as it published
// anything read the lagging rank's previous buffers; the check above sees it.
TEST(SharedSlots, AReaderIgnoringTheGenerationIsCaught) {
    SharedSlots::ignore_generation_for_test = true;
    const auto failures = back_to_back(3, 200);
    SharedSlots::ignore_generation_for_test = false;
    EXPECT_FALSE(failures.empty()) << "200 calls with a lagging rank read no stale slot";
}

// Two communicators of the same ranks, their calls interleaved (each has its own slots and generations).
TEST(SharedSlots, TwoCommunicatorsInterleaved) {
    const int p = 3;
    Node a(p), b(p);
    std::vector<std::unique_ptr<Communicator>> ca(p), cb(p);
    std::mutex mu;
    std::vector<std::string> failures;
    std::vector<std::thread> threads;
    for (int r = 0; r < p; ++r)
        threads.emplace_back([&, r] {
            ca[r] = a.comm(r);
            cb[r] = b.comm(r);
            for (int call = 0; call < 200; ++call) {
                const Combo combo{&all_type_cases()[4], LOOM_SUM};  // int32
                for (int which = 0; which < 2; ++which) {
                    const Case c{kCollectives[(call + which) % 5], p, static_cast<size_t>(1 + call % 5), call % 3 == 0,
                                 combo, static_cast<uint64_t>(call * 2 + which)};
                    auto in = c.input(r);
                    auto out = output_buffer(c, r, in);
                    Communicator &comm = which ? *cb[r] : *ca[r];
                    std::string err = start_case(comm, c, r, in, out) == LOOM_SUCCESS ? check_output(c, r, out)
                                                                                     : last_error_message();
                    if (!err.empty()) {
                        std::lock_guard<std::mutex> lock(mu);
                        failures.push_back(err);
                    }
                }
            }
            ca[r].reset();
            cb[r].reset();
        });
    for (auto &t : threads) t.join();
    EXPECT_TRUE(failures.empty()) << failures.size() << " failures, first: " << failures[0];
}

// Waits for every request in an order of `order`'s choosing and checks each
// output; the failures, prefixed with `label`, go to `failures`.
void wait_in_random_order(std::vector<std::unique_ptr<Request>> &reqs, const std::vector<Case> &cases, int rank,
                          const std::vector<std::vector<unsigned char>> &outs, std::mt19937 &order,
                          const std::string &label, std::mutex &mu, std::vector<std::string> &failures) {
    std::vector<size_t> idx(cases.size());
    std::iota(idx.begin(), idx.end(), 0);
    std::shuffle(idx.begin(), idx.end(), order);
    for (size_t k : idx) {
        std::string err =
            reqs[k]->wait() == LOOM_SUCCESS ? check_output(cases[k], rank, outs[k]) : last_error_message();
        if (!err.empty()) {
            std::lock_guard<std::mutex> lock(mu);
            failures.push_back(label + err);
        }
    }
}

// Eight nonblocking calls in flight (mixed collectives), each rank waiting
// for them in its own random order; then persistent requests restarted.
void nonblocking_and_persistent(int p, const std::vector<int> &labels = {},
                                const std::string &algorithm = "shared_slots") {
    {
        Node node(p, labels, algorithm);
        std::mutex mu;
        std::vector<std::string> failures;
        node.run([&](int rank) {
            auto comm = node.comm(rank);
            std::mt19937 order(static_cast<unsigned>(rank * 7 + p));
            const Combo combo{&all_type_cases()[25], LOOM_SUM};  // double
            EXPECT_EQ(combo.type->type, LOOM_DOUBLE);
            for (int round = 0; round < 20; ++round) {
                std::vector<Case> cases;
                for (int k = 0; k < 8; ++k)
                    cases.push_back({kCollectives[(k + round) % 5], p, static_cast<size_t>(1 + k), k % 2 == 1, combo,
                                     static_cast<uint64_t>(round * 8 + k)});
                std::vector<std::vector<unsigned char>> ins, outs;
                for (const Case &c : cases) {
                    ins.push_back(c.input(rank));
                    outs.push_back(output_buffer(c, rank, ins.back()));
                }
                std::vector<std::unique_ptr<Request>> reqs(cases.size());
                for (size_t k = 0; k < cases.size(); ++k)
                    ASSERT_EQ(start_case(*comm, cases[k], rank, ins[k], outs[k], &reqs[k]), LOOM_SUCCESS)
                        << last_error_message();
                wait_in_random_order(reqs, cases, rank, outs, order, "", mu, failures);
            }
            // Persistent: made once, restarted with new data, completed in random order.
            std::vector<Case> cases;
            for (int k = 0; k < 5; ++k) cases.push_back({kCollectives[k], p, 3, false, combo, static_cast<uint64_t>(k)});
            std::vector<std::vector<unsigned char>> ins, outs;
            for (const Case &c : cases) {
                ins.push_back(c.input(rank));
                outs.push_back(output_buffer(c, rank, ins.back()));
            }
            std::vector<std::unique_ptr<Request>> reqs(cases.size());
            for (size_t k = 0; k < cases.size(); ++k) {
                CallData d;
                d.sendbuf = ins[k].data();
                d.recvbuf = outs[k].data();
                d.type = LOOM_DOUBLE;
                ASSERT_EQ(comm->init(cases[k].args(), d, &reqs[k]), LOOM_SUCCESS) << last_error_message();
            }
            for (int round = 0; round < 10; ++round) {
                for (size_t k = 0; k < cases.size(); ++k) {
                    cases[k].seed = static_cast<uint64_t>(round * 10 + k);
                    const auto fresh = cases[k].input(rank);
                    std::copy(fresh.begin(), fresh.end(), ins[k].begin());  // the request keeps this buffer
                    ASSERT_EQ(reqs[k]->start(), LOOM_SUCCESS) << last_error_message();
                }
                wait_in_random_order(reqs, cases, rank, outs, order, "persistent: ", mu, failures);
            }
        });
        EXPECT_TRUE(failures.empty()) << failures.size() << " failures at p=" << p << ", first: " << failures[0];
    }
}

TEST(SharedSlots, NonblockingAndPersistentCallsCompleteInAnyOrder) {
    for (int p : {2, 4, 7}) nonblocking_and_persistent(p);
}

// Inboxes made by name and mapped by peers on first use, as coll/loom
// makes them: rank 2 starts its call first (it maps rank 0's inbox and
// waits for it), ranks 0 and 1 then finish theirs and free their
// communicators while rank 2 has not yet looked at rank 1's inbox. Rank 2
// must still finish, with the right sum: a rank that leaves takes nothing
// a peer has yet to read (issue 30's hang, where the freed inbox's name was
// gone before a peer mapped it).
TEST(SharedSlots, ARankThatFreesItsCommunicatorFirstLeavesWhatItsPeersStillRead) {
    const int p = 3;
    InProcessFabric fabric(p);
    const std::string key = "unit-" + std::to_string(getpid()) + "-leaves-first";
    std::mutex mu;
    std::condition_variable cv;
    bool rank2_started = false;
    int freed = 0;
    std::vector<std::string> failures;
    auto failure = [&](std::string what) {
        std::lock_guard<std::mutex> lock(mu);
        failures.push_back(std::move(what));
    };
    std::vector<std::thread> threads;
    for (int r = 0; r < p; ++r)
        threads.emplace_back([&, r] {
            Config config;
            EXPECT_EQ(config.set("allreduce_algorithm", "shared_slots"), LOOM_SUCCESS);
            auto comm = std::make_unique<Communicator>(fabric.endpoint(r), config);
            SharedMemoryNode node;
            node.local_ranks = {0, 1, 2};
            node.identity = 7;
            node.key = key;
            if (shm_create_inbox(key, r, &node) != LOOM_SUCCESS)
                return failure(std::string("inbox: ") + last_error_message());
            node.peers.resize(p);  // mapped on first use
            if (comm->attach_shared_memory(std::move(node)) != LOOM_SUCCESS) return failure(last_error_message());
            {
                std::unique_lock<std::mutex> lock(mu);
                if (r != 2) cv.wait(lock, [&] { return rank2_started; });
            }
            std::vector<int64_t> in(5, r + 1), out(5, -1);
            std::unique_ptr<Request> req;
            if (run_int64(*comm, Collective::allreduce, in.size(), in, out, &req) != LOOM_SUCCESS)
                return failure(last_error_message());
            if (r == 2) {
                std::unique_lock<std::mutex> lock(mu);
                rank2_started = true;
                cv.notify_all();
                // The others finish first, unless they wait for this rank (as they must).
                cv.wait_for(lock, std::chrono::milliseconds(300), [&] { return freed == 2; });
            }
            const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
            bool done = false;
            while (!done && std::chrono::steady_clock::now() < deadline) {
                if (req->test(&done) != LOOM_SUCCESS) return failure(last_error_message());
                if (!done) std::this_thread::yield();
            }
            if (!done) {
                comm.reset();  // abandons the call (after 10 s), so that the request can go
                return failure("rank " + std::to_string(r) + "'s allreduce did not finish within 20 s");
            }
            if (out != std::vector<int64_t>(5, 6)) failure("rank " + std::to_string(r) + " got a wrong sum");
            req.reset();
            comm.reset();
            std::lock_guard<std::mutex> lock(mu);
            if (r != 2) ++freed;
            cv.notify_all();
        });
    for (auto &t : threads) t.join();
    EXPECT_TRUE(failures.empty()) << failures.size() << " failures, first: " << failures[0];
}

// Forced where it cannot run, the error says why and names the alternatives.
TEST(SharedSlots, ForcedAboveTheirCapacityIsAClearError) {
    Node node(2);
    node.run([&](int rank) {
        auto comm = node.comm(rank);
        std::vector<int64_t> in(kSharedSlotsCapacity / 8 + 1), out(in.size());
        EXPECT_EQ(run_int64(*comm, Collective::allreduce, in.size(), in, out), LOOM_ERR_ALGORITHM_NOT_APPLICABLE);
        EXPECT_NE(std::string(last_error_message()).find("above the slots'"), std::string::npos) << last_error_message();
    });
}

// Ranks whose calls differ at the same generation (another collective,
// count or datatype) all get an error naming the other rank, their outputs
// untouched, blocking or not; the communicator is revoked, so the next call
// fails at once on every rank. Without
// the signature beside the generation they would compute from the
// mismatched slots and return success.
TEST(SharedSlots, RanksMakingDifferentCallsGetAClearError) {
    const int p = 3;
    for (int variant = 0; variant < 3; ++variant) {
        Node node(p);
        std::mutex mu;
        std::vector<std::string> failures;
        node.run([&](int rank) {
            auto comm = node.comm(rank);
            auto report = [&](const std::string &what) {
                std::lock_guard<std::mutex> lock(mu);
                failures.push_back("variant " + std::to_string(variant) + " rank " + std::to_string(rank) + ": " + what);
            };
            // Rank 2 makes the odd call: another count, another collective, or another datatype.
            CollArgs a;
            a.collective = rank == 2 && variant == 1 ? Collective::allgather : Collective::allreduce;
            a.count = rank == 2 && variant == 0 ? 6 : 5;
            std::vector<int64_t> in(6, rank + 1), out(6 * p, -7);
            CallData d;
            d.sendbuf = in.data();
            d.recvbuf = out.data();
            d.type = rank == 2 && variant == 2 ? LOOM_UINT64 : LOOM_INT64;
            Status st;
            if (variant == 1 && rank != 2) {  // nonblocking on the others here
                std::unique_ptr<Request> req;
                st = comm->start(a, d, &req);
                if (st == LOOM_SUCCESS) st = req->wait();
            } else {
                st = comm->run(a, d);
            }
            const std::string message = last_error_message();
            if (st != LOOM_ERR_MISMATCH) report("status " + std::to_string(st) + ": " + message);
            if (message.find("made another call") == std::string::npos || message.find("revoked") == std::string::npos)
                report("message: " + message);
            if (std::any_of(out.begin(), out.end(), [](int64_t v) { return v != -7; })) report("output was written");
            // The communicator is revoked: the next call fails on every rank, at once.
            std::vector<int64_t> sum(5);
            if (run_int64(*comm, Collective::allreduce, 5, in, sum) != LOOM_ERR_MISMATCH)
                report("the next call: " + std::string(last_error_message()));
        });
        for (const std::string &f : failures) ADD_FAILURE() << f;
    }
}

// The node slots (algorithm node_slots): nodes by label, each with its own
// inboxes; leaders exchange over the in-process fabric.

// Two nodes of consecutive ranks, and ranks dealt round-robin to three
// nodes (not consecutive; nodes of one rank at small p).
std::vector<std::vector<int>> node_layouts(int p) {
    std::vector<int> halves(p), dealt(p);
    for (int r = 0; r < p; ++r) {
        halves[r] = r < (p + 1) / 2 ? 0 : 1;
        dealt[r] = r % 3;
    }
    if (p == 2) return {halves};  // dealt is the same
    return {halves, dealt};
}

constexpr Collective kNodeSlotsCollectives[] = {Collective::allreduce, Collective::reduce_scatter,
                                                Collective::reduce_scatter_block, Collective::allgather};

TEST(NodeSlots, EverySizeCountLayoutAndPlacementMatchesTheReference) {
    std::vector<Combo> per_size;
    for (const Combo &c : all_combos())
        if (std::none_of(per_size.begin(), per_size.end(), [&](const Combo &k) { return k.type->size == c.type->size; }))
            per_size.push_back(c);
    size_t cases_run = 0;
    for (int p = 2; p <= 17; ++p)
        for (const auto &labels : node_layouts(p)) {
            std::vector<Case> cases;
            uint64_t seed = 1;
            for (Collective coll : kNodeSlotsCollectives)
                for (const Combo &combo : per_size)
                    for (size_t count : counts_for(coll, p, combo.type->size, /*whole_output=*/true))
                        for (bool in_place : {false, true}) {
                            if (!reduces(coll) && combo.op != per_size[0].op) continue;
                            cases.push_back({coll, p, count, in_place, combo, seed++});
                        }
            const auto failures = run_cases(p, cases, true, labels, "node_slots");
            cases_run += cases.size();
            for (size_t i = 0; i < failures.size() && i < 10; ++i) ADD_FAILURE() << failures[i];
            ASSERT_TRUE(failures.empty()) << failures.size() << " failures at p=" << p;
        }
    RecordProperty("cases", static_cast<int>(cases_run));
}

TEST(NodeSlots, EveryTypeAndOpMatchesTheReference) {
    const std::vector<std::pair<int, std::vector<int>>> layouts = {{5, {0, 1, 1, 0, 2}}, {6, {0, 0, 0, 1, 1, 1}}};
    for (const auto &layout : layouts) {
        const int p = layout.first;
        std::vector<Case> cases;
        uint64_t seed = 100;
        for (Collective coll : {Collective::allreduce, Collective::reduce_scatter, Collective::reduce_scatter_block})
            for (const Combo &combo : all_combos())
                for (bool in_place : {false, true}) cases.push_back({coll, p, static_cast<size_t>(p + 1), in_place, combo, seed++});
        const auto failures = run_cases(p, cases, true, layout.second, "node_slots");
        for (size_t i = 0; i < failures.size() && i < 10; ++i) ADD_FAILURE() << failures[i];
        ASSERT_TRUE(failures.empty()) << failures.size() << " failures at p=" << p;
    }
}

// Back to back with rank 1 (not a leader) lagging; alltoall, which has no
// node_slots, runs a plan between them: tags and generations stay in step.
TEST(NodeSlots, BackToBackCallsWithALaggingRank) {
    for (const auto &layout : std::vector<std::vector<int>>{{0, 0, 1, 1}, {0, 0, 1, 0, 2, 1}}) {
        const int p = static_cast<int>(layout.size());
        const auto failures = back_to_back(p, 400, layout, "node_slots");
        EXPECT_TRUE(failures.empty()) << failures.size() << " failures at p=" << p << ", first: " << failures[0];
    }
}

TEST(NodeSlots, AReaderIgnoringTheGenerationIsCaught) {
    for (const auto &layout : std::vector<std::vector<int>>{{0, 0, 1, 1}, {0, 0, 1, 1, 1}}) {
        SharedSlots::ignore_generation_for_test = true;
        const auto failures = back_to_back(static_cast<int>(layout.size()), 200, layout, "node_slots");
        SharedSlots::ignore_generation_for_test = false;
        EXPECT_FALSE(failures.empty()) << "200 calls with a lagging rank read no stale slot on "
                                       << layout.size() << " ranks";
    }
}

TEST(NodeSlots, NonblockingAndPersistentCallsCompleteInAnyOrder) {
    nonblocking_and_persistent(4, {0, 0, 1, 1}, "node_slots");
    nonblocking_and_persistent(7, {0, 1, 2, 0, 1, 2, 0}, "node_slots");
}

// Without forcing, the built-in rules: allreduce vectors up to 512 B and
// allgather blocks up to 256 B across nodes take the node slots, larger
// ones another algorithm; reduce_scatter never does.
TEST(NodeSlots, ChosenByTheBuiltInRulesAcrossNodes) {
    const int p = 4;
    Node node(p, {0, 0, 1, 1});
    node.run([&](int rank) {
        auto comm = node.comm(rank, /*force=*/false);
        const std::vector<std::pair<Collective, size_t>> calls = {
            {Collective::allreduce, 1},          {Collective::allreduce, 64},       {Collective::allreduce, 65},
            {Collective::allgather, 32},         {Collective::allgather, 33},       {Collective::reduce_scatter_block, 1}};
        for (const auto &call : calls) {
            const Collective c = call.first;
            const size_t count = call.second;  // int64 elements: per rank for allgather and reduce_scatter_block
            const size_t out_count = c == Collective::allgather ? count * p : count;
            std::vector<int64_t> in(c == Collective::reduce_scatter_block ? count * p : count, rank + 1), out(out_count);
            ASSERT_EQ(run_int64(*comm, c, count, in, out), LOOM_SUCCESS) << last_error_message();
            const int64_t want = c == Collective::allgather ? p : p * (p + 1) / 2;  // allgather: the last rank's value
            EXPECT_EQ(out[out_count - 1], want);
            const bool slots = std::string(comm->last_algorithm(c)) == "node_slots";
            const bool expected = (c == Collective::allreduce && count * 8 <= 512) ||
                                  (c == Collective::allgather && count * 8 <= 256);
            EXPECT_EQ(slots, expected) << collective_name(c) << " of " << count << " elements went to "
                                       << comm->last_algorithm(c);
        }
    });
}

// A node without the slots (its set-up failed, or said so) keeps every rank
// off the node slots: forced, they are a clear error; by default another
// algorithm runs.
TEST(NodeSlots, OffEverywhereWhenANodeLacksThem) {
    const int p = 4;
    Node node(p, {0, 0, 1, 1}, "node_slots");
    node.run([&](int rank) {
        auto comm = node.comm(rank);
        comm->forbid_node_slots();
        std::vector<int64_t> in(3, rank + 1), out(3);
        EXPECT_EQ(run_int64(*comm, Collective::allreduce, in.size(), in, out), LOOM_ERR_ALGORITHM_NOT_APPLICABLE);
        EXPECT_NE(std::string(last_error_message()).find("every node's ranks must share"), std::string::npos)
            << last_error_message();
        ASSERT_EQ(comm->config().set("allreduce_algorithm", "auto"), LOOM_SUCCESS);
        ASSERT_EQ(run_int64(*comm, Collective::allreduce, in.size(), in, out), LOOM_SUCCESS) << last_error_message();
        EXPECT_EQ(out[2], p * (p + 1) / 2);
        EXPECT_STRNE(comm->last_algorithm(Collective::allreduce), "node_slots");
    });
}

}  // namespace
}  // namespace loom
