// Ranks as real threads: Communicators over the in-process transport, the
// selector's choices, and many nonblocking collectives in flight at once.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <thread>

#include "runtime/communicator.hpp"
#include "transport/inprocess/inprocess.hpp"

namespace loom {
namespace {

// Runs body(rank, comm) on p threads; configure(config) runs first on each.
template <typename Body>
void on_threads(
    int p, InProcessProtocol protocol, Body body, const std::function<void(Config &)> &configure = [](Config &) {}) {
    InProcessFabric fabric(p, protocol);
    std::vector<std::thread> threads;
    for (int r = 0; r < p; ++r)
        threads.emplace_back([&, r] {
            Config config;
            configure(config);
            Communicator comm(fabric.endpoint(r), config);
            body(r, comm);
        });
    for (auto &t : threads) t.join();
    EXPECT_EQ(fabric.undelivered(), 0u);
}

CallData data(const void *in, void *out, loom_datatype_t t, loom_op_t op = LOOM_SUM) {
    CallData d;
    d.sendbuf = in;
    d.recvbuf = out;
    d.type = t;
    d.op = op;
    return d;
}

TEST(Threads, DefaultSelectionAcrossSizesGivesCorrectAllreduce) {
    for (int p : {2, 3, 4, 7}) {
        for (auto proto : {InProcessProtocol::eager, InProcessProtocol::rendezvous}) {
            on_threads(p, proto, [p](int rank, Communicator &comm) {
                for (size_t count : {size_t{1}, size_t{3000}, size_t{200000}}) {  // small, medium, large
                    std::vector<int64_t> in(count), out(count);
                    for (size_t i = 0; i < count; ++i) in[i] = rank * 10 + static_cast<int64_t>(i);
                    CollArgs a;
                    a.collective = Collective::allreduce;
                    a.count = count;
                    ASSERT_EQ(comm.run(a, data(in.data(), out.data(), LOOM_INT64)), LOOM_SUCCESS)
                        << last_error_message();
                    for (size_t i = 0; i < count; i += 997)
                        ASSERT_EQ(out[i], 10LL * p * (p - 1) / 2 + p * static_cast<int64_t>(i));
                }
            });
        }
    }
}

TEST(Threads, AllFourCollectivesThroughTheCommunicator) {
    const int p = 5;
    on_threads(p, InProcessProtocol::rendezvous, [p](int rank, Communicator &comm) {
        const size_t n = 1000;
        std::vector<double> in(n * p), out(n * p);
        for (size_t i = 0; i < n * p; ++i) in[i] = rank + 0.5 * static_cast<double>(i % 7);
        CollArgs rs;
        rs.collective = Collective::reduce_scatter_block;
        rs.count = n;
        ASSERT_EQ(comm.run(rs, data(in.data(), out.data(), LOOM_DOUBLE, LOOM_MAX)), LOOM_SUCCESS);
        for (size_t i = 0; i < n; ++i) ASSERT_EQ(out[i], (p - 1) + 0.5 * static_cast<double>((rank * n + i) % 7));
        CollArgs ag;
        ag.collective = Collective::allgather;
        ag.count = n;
        ASSERT_EQ(comm.run(ag, data(in.data(), out.data(), LOOM_DOUBLE)), LOOM_SUCCESS);
        for (int r = 0; r < p; ++r) ASSERT_EQ(out[r * n + 3], r + 0.5 * 3);
        CollArgs aa;
        aa.collective = Collective::alltoall;
        aa.count = n;
        ASSERT_EQ(comm.run(aa, data(in.data(), out.data(), LOOM_DOUBLE)), LOOM_SUCCESS);
        for (int r = 0; r < p; ++r) ASSERT_EQ(out[r * n], r + 0.5 * static_cast<double>((rank * n) % 7));
        CollArgs v;
        v.collective = Collective::reduce_scatter;
        v.recv_counts = {1, 0, 2, 5, 1};
        std::vector<int> iin(9, rank + 1), iout(9);
        ASSERT_EQ(comm.run(v, data(iin.data(), iout.data(), LOOM_INT, LOOM_PROD)), LOOM_SUCCESS);
        for (size_t i = 0; i < v.recv_counts[rank]; ++i) ASSERT_EQ(iout[i], 120);
    });
}

TEST(Threads, ManyOutstandingNonblockingCollectivesCompleteInRandomOrder) {
    const int p = 4, outstanding = 24;
    on_threads(p, InProcessProtocol::rendezvous, [&](int rank, Communicator &comm) {
        std::vector<std::vector<int>> in(outstanding), out(outstanding);
        std::vector<std::unique_ptr<Request>> reqs(outstanding);
        for (int k = 0; k < outstanding; ++k) {
            const size_t count = 1 + k * 37;
            in[k].assign(count, rank + k);
            out[k].assign(count * (k % 2 ? p : 1), -1);
            CollArgs a;
            a.collective = k % 2 ? Collective::allgather : Collective::allreduce;
            a.count = count;
            ASSERT_EQ(comm.start(a, data(in[k].data(), out[k].data(), LOOM_INT), &reqs[k]), LOOM_SUCCESS);
        }
        std::vector<int> order(outstanding);
        std::iota(order.begin(), order.end(), 0);
        std::shuffle(order.begin(), order.end(), std::mt19937(rank + 1));  // each rank its own order
        for (int k : order) ASSERT_EQ(reqs[k]->wait(), LOOM_SUCCESS);
        for (int k = 0; k < outstanding; ++k) {
            if (k % 2) {
                for (int r = 0; r < p; ++r) ASSERT_EQ(out[k][r * in[k].size()], r + k);
            } else {
                ASSERT_EQ(out[k][0], p * k + p * (p - 1) / 2);
            }
        }
    });
}

TEST(Threads, ForcedAlgorithmIsUsedAndReported) {
    on_threads(
        3, InProcessProtocol::eager,
        [](int rank, Communicator &comm) {
            std::vector<float> in(10, 1.0f), out(10);
            CollArgs a;
            a.collective = Collective::allreduce;
            a.count = 10;
            ASSERT_EQ(comm.run(a, data(in.data(), out.data(), LOOM_FLOAT)), LOOM_SUCCESS);
            EXPECT_STREQ(comm.last_algorithm(Collective::allreduce), "rabenseifner");
            EXPECT_EQ(out[9], 3.0f);
        },
        [](Config &c) { ASSERT_EQ(c.set("allreduce_algorithm", "rabenseifner"), LOOM_SUCCESS); });
}

}  // namespace
}  // namespace loom
