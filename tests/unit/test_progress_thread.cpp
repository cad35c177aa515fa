// The progress thread: ranks as threads over the in-process transport start
// nonblocking and persistent collectives and then make no call that
// progresses them; only the progress thread can finish them.
#include <gtest/gtest.h>

#include <chrono>
#include <numeric>
#include <set>
#include <random>
#include <thread>

#include "algorithms/algorithm.hpp"
#include "call_args.hpp"
#include "runtime/communicator.hpp"
#include "runtime/progress_thread.hpp"
#include "transport/inprocess/inprocess.hpp"

namespace loom {
namespace {

// Runs body(rank, comm) on p threads, each with a communicator whose progress thread is on.
template <typename Body>
void on_threads_with_progress(int p, Body body, const std::function<void(Config &)> &configure = [](Config &) {}) {
    InProcessFabric fabric(p, InProcessProtocol::rendezvous);
    std::vector<std::thread> threads;
    for (int r = 0; r < p; ++r)
        threads.emplace_back([&, r] {
            Config config;
            ASSERT_EQ(config.set("progress_thread", "on"), LOOM_SUCCESS);
            configure(config);
            Communicator comm(fabric.endpoint(r), config);
            body(r, comm);
        });
    for (auto &t : threads) t.join();
    EXPECT_EQ(fabric.undelivered(), 0u);
}

// Waits, without progressing it, until the thread has finished `req`.
::testing::AssertionResult finished_by_the_thread(Request &req) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (req.running()) {
        if (std::chrono::steady_clock::now() > deadline)
            return ::testing::AssertionFailure() << "the progress thread did not finish the request in 30 s";
        std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    return ::testing::AssertionSuccess();
}

// A nonblocking allreduce (sum) of `in` into `out`.
template <typename T>
Status start_allreduce(Communicator &comm, const std::vector<T> &in, std::vector<T> &out, loom_datatype_t type,
                       std::unique_ptr<Request> *req) {
    CollArgs a;
    a.collective = Collective::allreduce;
    a.count = in.size();
    CallData call;
    call.sendbuf = in.data();
    call.recvbuf = out.data();
    call.type = type;
    return comm.start(a, call, req);
}

// Rank r's element i of its input: distinct per rank and position.
int32_t input_value(int rank, size_t i) { return rank * 1000 + static_cast<int32_t>(i); }

// What rank `rank` must hold at output element i.
int32_t expected(const CollArgs &a, int rank, size_t i) {
    const int p = a.nranks;
    const int32_t rank_sum = 1000 * p * (p - 1) / 2;
    switch (a.collective) {
        case Collective::allreduce: return rank_sum + p * static_cast<int32_t>(i);
        case Collective::reduce_scatter_block:
            return rank_sum + p * static_cast<int32_t>(static_cast<size_t>(rank) * a.count + i);
        case Collective::reduce_scatter: {
            size_t offset = 0;
            for (int r = 0; r < rank; ++r) offset += a.recv_counts[r];
            return rank_sum + p * static_cast<int32_t>(offset + i);
        }
        // The vector collectives run here with even blocks in rank order (call_args).
        case Collective::allgather:
        case Collective::allgatherv: return input_value(static_cast<int>(i / a.count), i % a.count);
        case Collective::alltoall:
            return input_value(static_cast<int>(i / a.count), static_cast<size_t>(rank) * a.count + i % a.count);
        case Collective::alltoallv: {
            const size_t block = a.recv_counts[0];
            return input_value(static_cast<int>(i / block), static_cast<size_t>(rank) * block + i % block);
        }
    }
    return 0;
}

CollArgs call_args(Collective c, int p, size_t count, bool in_place) {
    CollArgs a;
    a.collective = c;
    a.nranks = p;
    a.count = count;
    a.elem_size = 4;
    a.in_place = in_place;
    if (c == Collective::reduce_scatter)
        for (int r = 0; r < p; ++r) a.recv_counts.push_back(r % 4 == 3 ? 0 : count + r % 2);
    if (is_vector_collective(c)) set_uniform_blocks(a, count);
    return a;
}

const char *algorithm_param(Collective c) {
    switch (c) {
        case Collective::allreduce: return "allreduce_algorithm";
        case Collective::reduce_scatter: return "reduce_scatter_algorithm";
        case Collective::reduce_scatter_block: return "reduce_scatter_block_algorithm";
        case Collective::allgather: return "allgather_algorithm";
        case Collective::alltoall: return "alltoall_algorithm";
        case Collective::alltoallv: return "alltoallv_algorithm";
        case Collective::allgatherv: return "allgatherv_algorithm";
    }
    return "";
}

// One call started, left to the thread, then checked; "" when right.
std::string run_checked(Communicator &comm, const CollArgs &shape, bool persistent) {
    const int rank = comm.rank();
    CollArgs a = shape;
    std::vector<int32_t> in(a.input_count());
    for (size_t i = 0; i < in.size(); ++i) in[i] = input_value(rank, i);
    const size_t out_count = a.output_count(rank);
    const size_t room = a.in_place ? std::max(out_count, a.in_place_input_offset(rank) + in.size()) : out_count;
    std::vector<int32_t> out(room + 1, -7);  // one guard element past the end
    if (a.in_place) std::copy(in.begin(), in.end(), out.begin() + static_cast<std::ptrdiff_t>(a.in_place_input_offset(rank)));
    CallData call;
    call.sendbuf = a.in_place ? nullptr : in.data();
    call.in_place = a.in_place;
    call.recvbuf = out.data();
    call.type = LOOM_INT32;
    std::unique_ptr<Request> req;
    Status st = persistent ? comm.init(a, call, &req) : comm.start(a, call, &req);
    if (st == LOOM_SUCCESS && persistent) st = req->start();
    if (st != LOOM_SUCCESS) return std::string("start failed: ") + last_error_message();
    ::testing::AssertionResult by_thread = finished_by_the_thread(*req);
    // Waited for even when the thread failed: the other ranks stay in step.
    if (req->wait() != LOOM_SUCCESS) return std::string("failed: ") + last_error_message();
    if (!by_thread) return by_thread.message();
    // In place, a reduce-scatter's result is the start of the buffer.
    const size_t result_count = a.collective == Collective::reduce_scatter         ? a.recv_counts[rank]
                                : a.collective == Collective::reduce_scatter_block ? a.count
                                                                                   : out_count;
    for (size_t i = 0; i < result_count; ++i)
        if (out[i] != expected(a, rank, i))
            return "rank " + std::to_string(rank) + " element " + std::to_string(i) + " is " + std::to_string(out[i]) +
                   ", expected " + std::to_string(expected(a, rank, i));
    if (out[room] != -7) return "rank " + std::to_string(rank) + " wrote past its receive buffer";
    return {};
}

class ProgressThreadMatrix : public ::testing::TestWithParam<const AlgorithmInfo *> {};

// Every algorithm, 1 to 17 ranks, counts 0, 1, p-1, p, p+1 and a large odd
// one, in place and not, nonblocking and persistent: finished by the thread
// alone and right. Node-aware algorithms run on two emulated nodes.
TEST_P(ProgressThreadMatrix, FinishesEveryCallWithoutTheCaller) {
    const AlgorithmInfo &algo = *GetParam();
    int cases = 0;
    for (int p = 1; p <= 17; ++p) {
        NodeMap two_nodes;
        ASSERT_EQ(NodeMap::parse(p >= 2 ? "nodes=2" : "nodes=1", p, &two_nodes), LOOM_SUCCESS);
        std::atomic<int> ran{0};
        on_threads_with_progress(
            p,
            [&](int rank, Communicator &comm) {
                ASSERT_EQ(comm.set_nodes(two_nodes), LOOM_SUCCESS);
                std::set<size_t> counts = {0, 1, static_cast<size_t>(p - 1), static_cast<size_t>(p),
                                           static_cast<size_t>(p + 1), 1001};
                int k = 0;
                for (size_t count : counts)
                    for (bool in_place : {false, true}) {
                        CollArgs a = call_args(algo.collective, p, count, in_place);
                        a.nodes = &comm.nodes();
                        a.single_node = false;
                        if (!algo.not_applicable(a).empty()) continue;  // the same on every rank
                        // Every rank makes every call, failed or not: none is left waiting.
                        const std::string err = run_checked(comm, a, ++k % 3 == 0);
                        EXPECT_TRUE(err.empty()) << algo.name << " " << a.describe() << ": " << err;
                        if (rank == 0) ++ran;
                    }
                const std::string state = comm.progress_state();
                if (k > 0) {
                    EXPECT_EQ(state, "on: " + std::to_string(k) + " calls driven by the thread, 0 by the caller");
                }
            },
            [&](Config &c) { ASSERT_EQ(c.set(algorithm_param(algo.collective), algo.name), LOOM_SUCCESS); });
        cases += ran;
    }
    EXPECT_GT(cases, 0) << algo.name << " never ran";
}

std::string algorithm_name(const ::testing::TestParamInfo<const AlgorithmInfo *> &info) {
    return std::string(collective_name(info.param->collective)) + "_" + info.param->name;
}

INSTANTIATE_TEST_SUITE_P(AllAlgorithms, ProgressThreadMatrix, ::testing::ValuesIn(plan_algorithms()), algorithm_name);

TEST(ProgressThread, ManyRequestsOnSeveralCommunicatorsFinishInRandomOrder) {
    const int p = 4, comms = 3, per_comm = 8;
    std::vector<std::unique_ptr<InProcessFabric>> fabrics;
    for (int c = 0; c < comms; ++c) fabrics.push_back(std::make_unique<InProcessFabric>(p));
    std::vector<std::thread> threads;
    for (int r = 0; r < p; ++r)
        threads.emplace_back([&, r] {
            Config config;
            ASSERT_EQ(config.set("progress_thread", "on"), LOOM_SUCCESS);
            std::vector<std::unique_ptr<Communicator>> mine;
            for (int c = 0; c < comms; ++c) mine.push_back(std::make_unique<Communicator>(fabrics[c]->endpoint(r), config));
            const int n = comms * per_comm;
            std::vector<std::vector<int32_t>> in(n), out(n);
            std::vector<std::unique_ptr<Request>> reqs(n);
            for (int k = 0; k < n; ++k) {
                const size_t count = 1 + static_cast<size_t>(k) * 301;
                in[k].assign(count, r + k);
                out[k].assign(count * (k % 2 ? p : 1), -1);
                CollArgs a;
                a.collective = k % 2 ? Collective::allgather : Collective::allreduce;
                a.count = count;
                CallData call;
                call.sendbuf = in[k].data();
                call.recvbuf = out[k].data();
                call.type = LOOM_INT32;
                ASSERT_EQ(mine[k % comms]->start(a, call, &reqs[k]), LOOM_SUCCESS) << last_error_message();
            }
            std::vector<int> order(n);
            std::iota(order.begin(), order.end(), 0);
            std::shuffle(order.begin(), order.end(), std::mt19937(static_cast<unsigned>(r) + 11));
            for (int k : order) {
                ASSERT_TRUE(finished_by_the_thread(*reqs[k]));
                ASSERT_EQ(reqs[k]->wait(), LOOM_SUCCESS);
            }
            for (int k = 0; k < n; ++k) {
                if (k % 2) {
                    for (int q = 0; q < p; ++q) ASSERT_EQ(out[k][q * in[k].size()], q + k);
                } else {
                    ASSERT_EQ(out[k].back(), p * k + p * (p - 1) / 2);
                }
            }
        });
    for (auto &t : threads) t.join();
    EXPECT_FALSE(ProgressThread::instance().running()) << "the thread outlived its last communicator";
}

TEST(ProgressThread, RequestFreedWhileRunningIsFinishedFirst) {
    const int p = 3;
    on_threads_with_progress(p, [&](int rank, Communicator &comm) {
        for (int round = 0; round < 20; ++round) {
            std::vector<double> in(50000, rank + round), out(50000, -1);
            std::unique_ptr<Request> req;
            ASSERT_EQ(start_allreduce(comm, in, out, LOOM_DOUBLE, &req), LOOM_SUCCESS);
            req.reset();  // freed at once, whatever the thread has done
            ASSERT_EQ(out.front(), 3.0 * round + 3) << "round " << round;
            ASSERT_EQ(out.back(), 3.0 * round + 3);
        }
    });
}

TEST(ProgressThread, CommunicatorFreedWithWorkPendingFinishesIt) {
    const int p = 4;
    std::vector<std::vector<int32_t>> in(p), out(p);  // outlive the communicators, which finish the calls
    std::vector<std::unique_ptr<Request>> left(p);
    on_threads_with_progress(p, [&](int rank, Communicator &comm) {
        in[rank].assign(4096, rank);
        out[rank].assign(4096, -1);
        ASSERT_EQ(start_allreduce(comm, in[rank], out[rank], LOOM_INT32, &left[rank]), LOOM_SUCCESS);
        // The communicator goes first, as with MPI_Finalize and a request never waited for.
    });
    for (int r = 0; r < p; ++r) {
        bool done = false;
        EXPECT_EQ(left[r]->test(&done), LOOM_SUCCESS) << last_error_message();
        EXPECT_TRUE(done);
        EXPECT_EQ(out[r][4095], 6);
    }
    left.clear();  // outliving its communicator is allowed
    EXPECT_FALSE(ProgressThread::instance().running());
}

TEST(ProgressThread, ParameterTakesOffOnAutoOnly) {
    Config c;
    EXPECT_EQ(c.integer(kParamProgressThread), kProgressThreadOff);
    EXPECT_EQ(c.set("progress_thread", "auto"), LOOM_SUCCESS);
    EXPECT_EQ(c.integer(kParamProgressThread), kProgressThreadAuto);
    EXPECT_EQ(c.set("progress_thread", "yes"), LOOM_ERR_INVALID_PARAMETER_VALUE);
    EXPECT_NE(std::string(last_error_message()).find("off,on,auto"), std::string::npos) << last_error_message();
}

TEST(ProgressThread, OffMeansNoThreadAndTheCallerProgresses) {
    InProcessFabric fabric(2);
    std::vector<std::thread> threads;
    for (int r = 0; r < 2; ++r)
        threads.emplace_back([&, r] {
            Communicator comm(fabric.endpoint(r), Config());
            std::vector<int32_t> in(1000, r + 1), out(1000);
            std::unique_ptr<Request> req;
            ASSERT_EQ(start_allreduce(comm, in, out, LOOM_INT32, &req), LOOM_SUCCESS);
            EXPECT_FALSE(ProgressThread::instance().running());
            ASSERT_EQ(req->wait(), LOOM_SUCCESS);
            EXPECT_EQ(out[0], 3);
            EXPECT_EQ(comm.progress_state(), "off");
        });
    for (auto &t : threads) t.join();
}

}  // namespace
}  // namespace loom
