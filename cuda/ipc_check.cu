// loom-ipc-check: the CUDA IPC allreduce of libloom's cuda_ipc algorithms
// among 2-4 forked processes on one machine, without MPI: each process
// exports its buffers (cudaIpcGetMemHandle), opens its peers', and runs the
// one-shot (one kernel over all p inputs in rank order) and the
// reduce-scatter + allgather forms with the kernels libloom launches (the
// loop of reduce_sources.cuh), checked element by element against the host
// sum, then timed. Also the staging path's copies: a pipelined round trip
// through pinned host chunks against plain cudaMemcpy.
// Handles and barriers go through shared memory made before the fork (no
// CUDA call happens before it). Exit 0 right, 1 wrong, 77 no GPU.
//   loom-ipc-check [--ranks N] [--mib M]
#include <pthread.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "reduce_kernels.cuh"

namespace {

constexpr int kMaxRanks = 8;

struct Shared {
    pthread_barrier_t barrier;
    cudaIpcMemHandle_t in[kMaxRanks], out[kMaxRanks];
    int wrong[kMaxRanks];
    double one_shot_us[kMaxRanks], rs_ag_us[kMaxRanks];
    char error[kMaxRanks][160];
};

Shared *shared;
int me, p;

#define CHECK_CUDA(call)                                                                                         \
    do {                                                                                                         \
        const cudaError_t e_ = (call);                                                                           \
        if (e_ != cudaSuccess) {                                                                                 \
            std::snprintf(shared->error[me], sizeof shared->error[me], "%s: %s", #call, cudaGetErrorString(e_)); \
            std::exit(1);                                                                                        \
        }                                                                                                        \
    } while (0)

void barrier() { pthread_barrier_wait(&shared->barrier); }

float value(int r, size_t i) { return static_cast<float>(static_cast<int>((r * 7 + i * 3) % 101) - 50); }

size_t block_first(size_t count, int r) { return count * static_cast<size_t>(r) / static_cast<size_t>(p); }

int rank_main(size_t count, int reps) {
    int devices = 0;
    CHECK_CUDA(cudaGetDeviceCount(&devices));
    CHECK_CUDA(cudaSetDevice(me % devices));
    const size_t bytes = count * sizeof(float);
    float *in, *out;
    CHECK_CUDA(cudaMalloc(&in, bytes));
    CHECK_CUDA(cudaMalloc(&out, bytes));
    std::vector<float> host(count), want(count);
    for (size_t i = 0; i < count; ++i) {
        host[i] = value(me, i);
        float s = 0;
        for (int r = 0; r < p; ++r) s += value(r, i);
        want[i] = s;
    }
    CHECK_CUDA(cudaMemcpy(in, host.data(), bytes, cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaIpcGetMemHandle(&shared->in[me], in));
    CHECK_CUDA(cudaIpcGetMemHandle(&shared->out[me], out));
    barrier();
    std::vector<const float *> ins(p);
    std::vector<float *> outs(p);
    for (int r = 0; r < p; ++r) {
        if (r == me) {
            ins[r] = in;
            outs[r] = out;
            continue;
        }
        void *a, *b;
        CHECK_CUDA(cudaIpcOpenMemHandle(&a, shared->in[r], cudaIpcMemLazyEnablePeerAccess));
        CHECK_CUDA(cudaIpcOpenMemHandle(&b, shared->out[r], cudaIpcMemLazyEnablePeerAccess));
        ins[r] = static_cast<const float *>(a);
        outs[r] = static_cast<float *>(b);
    }
    const loom::DeviceReduction *sum = loom::find_device_reduction("float", "sum");
    cudaStream_t stream;
    CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));

    auto one_shot = [&] {
        std::vector<const void *> sources(ins.begin(), ins.end());
        CHECK_CUDA(sum->launch_sources(out, sources.data(), p, count, 0, stream));
        CHECK_CUDA(cudaStreamSynchronize(stream));
        barrier();
    };
    auto rs_ag = [&] {
        const size_t first = block_first(count, me), n = block_first(count, me + 1) - first;
        std::vector<const void *> sources;
        for (int k = 0; k < p; ++k) sources.push_back(ins[k] + first);
        CHECK_CUDA(sum->launch_sources(out + first, sources.data(), p, n, 0, stream));
        CHECK_CUDA(cudaStreamSynchronize(stream));
        barrier();
        for (int j = 0; j < p; ++j) {
            if (j == me) continue;
            const size_t f = block_first(count, j);
            CHECK_CUDA(cudaMemcpyAsync(out + f, outs[j] + f, (block_first(count, j + 1) - f) * sizeof(float),
                                       cudaMemcpyDefault, stream));
        }
        CHECK_CUDA(cudaStreamSynchronize(stream));
        barrier();
    };
    auto check = [&](const char *name) {
        std::vector<float> got(count);
        CHECK_CUDA(cudaMemcpy(got.data(), out, bytes, cudaMemcpyDeviceToHost));
        for (size_t i = 0; i < count; ++i)
            if (got[i] != want[i]) {
                std::snprintf(shared->error[me], sizeof shared->error[me], "%s: element %zu is %g, want %g", name, i,
                              got[i], want[i]);
                ++shared->wrong[me];
                return;
            }
    };
    auto time_us = [&](auto fn) {
        fn();  // warm-up
        barrier();
        const auto t0 = std::chrono::steady_clock::now();
        for (int i = 0; i < reps; ++i) fn();
        return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / reps;
    };
    CHECK_CUDA(cudaMemset(out, 0, bytes));
    barrier();
    one_shot();
    check("one-shot");
    CHECK_CUDA(cudaMemset(out, 0, bytes));
    barrier();
    rs_ag();
    check("reduce-scatter + allgather");
    shared->one_shot_us[me] = time_us(one_shot);
    shared->rs_ag_us[me] = time_us(rs_ag);
    barrier();
    for (int r = 0; r < p; ++r)
        if (r != me) {
            CHECK_CUDA(cudaIpcCloseMemHandle(const_cast<float *>(ins[r])));
            CHECK_CUDA(cudaIpcCloseMemHandle(outs[r]));
        }
    barrier();
    CHECK_CUDA(cudaFree(in));
    CHECK_CUDA(cudaFree(out));
    return shared->wrong[me] ? 1 : 0;
}

// The staging path's copies in one process: 256 MiB down to pinned host and
// back, plain, and pipelined in 4 MiB chunks on two streams (copy engines
// both ways at once), as libloom's staged allreduce moves a message.
void staging(size_t mib) {
    const size_t bytes = mib << 20, chunk = 4u << 20;
    void *d, *h;
    cudaStream_t down, up;
    cudaEvent_t landed[2];
    if (cudaMalloc(&d, bytes) != cudaSuccess || cudaMallocHost(&h, bytes) != cudaSuccess) return;
    cudaStreamCreateWithFlags(&down, cudaStreamNonBlocking);
    cudaStreamCreateWithFlags(&up, cudaStreamNonBlocking);
    cudaEventCreateWithFlags(&landed[0], cudaEventDisableTiming);
    cudaEventCreateWithFlags(&landed[1], cudaEventDisableTiming);
    auto seconds = [](auto fn) {
        fn();
        const auto t0 = std::chrono::steady_clock::now();
        for (int i = 0; i < 5; ++i) fn();
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / 5;
    };
    const double plain = seconds([&] {
        cudaMemcpy(h, d, bytes, cudaMemcpyDeviceToHost);
        cudaMemcpy(d, h, bytes, cudaMemcpyHostToDevice);
    });
    const double piped = seconds([&] {
        for (size_t off = 0, k = 0; off < bytes; off += chunk, ++k) {
            char *dc = static_cast<char *>(d) + off, *hc = static_cast<char *>(h) + off;
            cudaMemcpyAsync(hc, dc, chunk, cudaMemcpyDeviceToHost, down);
            cudaEventRecord(landed[k % 2], down);
            cudaStreamWaitEvent(up, landed[k % 2], 0);
            cudaMemcpyAsync(dc, hc, chunk, cudaMemcpyHostToDevice, up);
        }
        cudaStreamSynchronize(up);
    });
    std::printf("%-44s %10.3f %10.1f\n", "staging round trip, cudaMemcpy (ms, GB/s)", plain * 1e3,
                2.0 * bytes / plain / 1e9);
    std::printf("%-44s %10.3f %10.1f %7.2fx\n", "staging round trip, 4 MiB chunks pipelined", piped * 1e3,
                2.0 * bytes / piped / 1e9, plain / piped);
    cudaFree(d);
    cudaFreeHost(h);
}

}  // namespace

int main(int argc, char **argv) {
    p = 4;
    size_t mib = 64;
    for (int i = 1; i < argc; ++i) {
        if (!std::strcmp(argv[i], "--ranks") && i + 1 < argc) p = std::atoi(argv[++i]);
        else if (!std::strcmp(argv[i], "--mib") && i + 1 < argc) mib = std::strtoul(argv[++i], nullptr, 10);
        else {
            std::fprintf(stderr, "usage: loom-ipc-check [--ranks 2..%d] [--mib M]\n", kMaxRanks);
            return 2;
        }
    }
    if (p < 2 || p > kMaxRanks || mib == 0) {
        std::fprintf(stderr, "loom-ipc-check: --ranks must be 2..%d and --mib positive\n", kMaxRanks);
        return 2;
    }
    // No CUDA call before the fork: a child must initialise its own driver state.
    shared =
        static_cast<Shared *>(mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
    if (shared == MAP_FAILED) return 1;
    std::memset(shared, 0, sizeof *shared);
    pthread_barrierattr_t attr;
    pthread_barrierattr_init(&attr);
    pthread_barrierattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
    pthread_barrier_init(&shared->barrier, &attr, static_cast<unsigned>(p));
    int rc = 0;
    std::printf("%-44s %10s %10s %10s\n", "CUDA IPC allreduce, float sum", "ranks", "us/call", "busbw GB/s");
    for (size_t count : {size_t{1}, size_t{4099}, size_t{65536 + 3}, (mib << 20) / sizeof(float)}) {
        std::vector<pid_t> kids;
        std::fflush(stdout);  // or every child prints the parent's buffer again
        for (int r = 0; r < p; ++r) {
            const pid_t pid = fork();
            if (pid == 0) {
                me = r;
                std::exit(rank_main(count, count > 100000 ? 20 : 200));
            }
            kids.push_back(pid);
        }
        int failed = 0;
        for (pid_t k : kids) {
            int status = 0;
            waitpid(k, &status, 0);
            failed |= !WIFEXITED(status) || WEXITSTATUS(status) != 0;
        }
        const bool no_gpu = failed && std::strstr(shared->error[0], "cudaGetDeviceCount");
        for (int r = 0; r < p && !no_gpu; ++r)
            if (shared->error[r][0]) std::printf("rank %d: %s\n", r, shared->error[r]);
        if (failed) {
            if (std::strstr(shared->error[0], "cudaGetDeviceCount")) {
                std::printf("SKIP: no usable GPU here (%s)\n", shared->error[0]);
                return 77;
            }
            std::printf("FAIL: %zu floats on %d ranks\n", count, p);
            rc = 1;
            break;
        }
        const double bytes = static_cast<double>(count) * sizeof(float), bus = 2.0 * (p - 1) / p;
        char name[64];
        std::snprintf(name, sizeof name, "one-shot, %zu floats", count);
        std::printf("%-44s %10d %10.1f %10.1f\n", name, p, shared->one_shot_us[0],
                    bus * bytes / shared->one_shot_us[0] / 1e3);
        std::snprintf(name, sizeof name, "reduce-scatter + allgather, %zu floats", count);
        std::printf("%-44s %10d %10.1f %10.1f\n", name, p, shared->rs_ag_us[0],
                    bus * bytes / shared->rs_ag_us[0] / 1e3);
        std::memset(shared->error, 0, sizeof shared->error);
        std::memset(shared->wrong, 0, sizeof shared->wrong);
    }
    if (rc == 0) {
        // The parent's first CUDA call: every child has exited.
        int devices = 0;
        if (cudaGetDeviceCount(&devices) == cudaSuccess && devices > 0) staging(256);
        std::printf("PASS: CUDA IPC allreduce on %d processes, checked against the host sum\n", p);
    }
    return rc;
}
