// Executor overhead: a 1-element int32 Allreduce among 4 thread-ranks through
// a Loom Communicator (plan cache, selector, executor), against the same
// recursive-doubling exchange written by hand over the same in-process
// transport. Interleaved repetitions, medians, per call.
// usage: bench_executor [calls-per-repetition]   (default 20000)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include <sched.h>

#include "runtime/communicator.hpp"
#include "transport/inprocess/inprocess.hpp"

using namespace loom;
using Clock = std::chrono::steady_clock;

namespace {

constexpr int kRanks = 4;

// Recursive doubling by hand: swap with rank ^ mask, add.
void hand_written(Transport &t, int32_t *value, uint32_t tag) {
    for (int mask = 1; mask < kRanks; mask <<= 1) {
        const int peer = t.rank() ^ mask;
        int32_t incoming = 0;
        TransportHandle s, r;
        t.post_send(value, sizeof *value, peer, tag, Route{}, &s);
        t.post_recv(&incoming, sizeof incoming, peer, tag, Route{}, &r);
        bool sd = false, rd = false;
        while (!(sd && rd)) {
            if (!sd) t.test(&s, &sd);
            if (!rd) t.test(&r, &rd);
            if (!(sd && rd)) sched_yield();  // same waiting policy as Request::wait
        }
        *value += incoming;
    }
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

}  // namespace

int main(int argc, char **argv) {
    const int calls = argc > 1 ? std::atoi(argv[1]) : 20000;
    if (calls <= 0) {
        std::fprintf(stderr, "bench_executor: calls must be positive\n");
        return 2;
    }
    const int reps = 7;
    std::vector<double> loom_us, hand_us;
    InProcessFabric fabric(kRanks);
    std::vector<std::unique_ptr<Communicator>> comms;
    std::vector<std::unique_ptr<Transport>> raw;
    for (int r = 0; r < kRanks; ++r) {
        Config c;
        if (c.set("allreduce_algorithm", "recursive_doubling") != LOOM_SUCCESS) return 1;
        comms.push_back(std::make_unique<Communicator>(fabric.endpoint(r), c));
        raw.push_back(fabric.endpoint(r));
    }
    bool wrong = false;
    for (int rep = 0; rep < reps; ++rep) {
        for (int variant = 0; variant < 2; ++variant) {  // interleaved: Loom, hand, Loom, hand ...
            std::vector<std::thread> threads;
            auto t0 = Clock::now();
            for (int r = 0; r < kRanks; ++r)
                threads.emplace_back([&, r] {
                    for (int i = 0; i < calls; ++i) {
                        int32_t in = r + 1, out = 0;
                        if (variant == 0) {
                            CollArgs a;
                            a.collective = Collective::allreduce;
                            a.count = 1;
                            CallData d;
                            d.sendbuf = &in;
                            d.recvbuf = &out;
                            d.type = LOOM_INT32;
                            d.op = LOOM_SUM;
                            comms[r]->run(a, d);
                        } else {
                            out = in;
                            hand_written(*raw[r], &out, 1u << 20 | (i & 0xffff));
                        }
                        if (out != kRanks * (kRanks + 1) / 2) wrong = true;
                    }
                });
            for (auto &t : threads) t.join();
            const double us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / calls;
            (variant == 0 ? loom_us : hand_us).push_back(us);
        }
    }
    double load = -1;
    if (FILE *f = std::fopen("/proc/loadavg", "r")) {
        if (std::fscanf(f, "%lf", &load) != 1) load = -1;
        std::fclose(f);
    }
    std::printf("# 1-element int32 allreduce, %d thread-ranks, %d calls x %d interleaved repetitions\n", kRanks, calls,
                reps);
    std::printf("# load average (1 min): %.2f\n", load);
    std::printf("%-28s %10s\n", "variant", "us/call");
    std::printf("%-28s %10.3f\n", "loom communicator", median(loom_us));
    std::printf("%-28s %10.3f\n", "hand-written exchange", median(hand_us));
    std::printf("%-28s %10.2f\n", "ratio loom/hand", median(loom_us) / median(hand_us));
    if (wrong) {
        std::printf("DATA VALIDATION ERROR\n");
        return 1;
    }
    return 0;
}
