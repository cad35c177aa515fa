// loom-kernel-check: every CUDA reduction kernel against the same operation
// on the CPU (bit for bit, aligned and unaligned, counts 0 to 1000003), then
// bandwidth: float and bf16 SUM at 256 MiB against cudaMemcpy device to
// device, and pinned host <-> device copies (the staging path's ceiling).
// Needs a GPU and the CUDA runtime, not MPI. Exit 0 all right, 1 a kernel
// wrong, 77 no GPU (with the reason).
//   loom-kernel-check [--mib N]     (bandwidth buffer, default 256)
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "reduce_kernels.cuh"

namespace {

#define CHECK_CUDA(call)                                                                    \
    do {                                                                                    \
        const cudaError_t e_ = (call);                                                      \
        if (e_ != cudaSuccess) {                                                            \
            std::fprintf(stderr, "loom-kernel-check: %s: %s\n", #call, cudaGetErrorString(e_)); \
            std::exit(1);                                                                   \
        }                                                                                   \
    } while (0)

// Random bytes whose floating-point readings are finite: every 2-, 4- and
// 8-byte word gets a clear bit below the top of its exponent (NaN payloads
// are not part of the promise; pairs' and integers' values stay random).
void fill(std::vector<unsigned char> &b, std::mt19937_64 &rng, size_t element_size) {
    for (auto &c : b) c = static_cast<unsigned char>(rng());
    if (element_size == 2 || element_size == 4 || element_size == 8 || element_size == 16)
        for (size_t i = 0; i + 1 < b.size(); i += 2) b[i + 1] &= 0xbb;  // fp16/bf16 exponents, and float's/double's
}

// Padding bytes of the value/index pairs (C layout on x86-64 and the GPU),
// which neither side promises to keep.
bool is_padding(const char *type, size_t byte_in_element) {
    if (!std::strcmp(type, "short_int")) return byte_in_element >= 2 && byte_in_element < 4;
    if (!std::strcmp(type, "double_int") || !std::strcmp(type, "long_int")) return byte_in_element >= 12;
    return false;
}

int check_kernels() {
    size_t count = 0;
    const loom::DeviceReduction *all = loom::device_reductions(&count);
    const size_t sizes[] = {0, 1, 7, 31, 4097, 1000003};
    size_t max_n = 1000003, max_bytes = max_n * 16 + 64;
    unsigned char *d_dst, *d_src;
    CHECK_CUDA(cudaMalloc(&d_dst, max_bytes));
    CHECK_CUDA(cudaMalloc(&d_src, max_bytes));
    std::mt19937_64 rng(2026);
    int wrong = 0;
    for (size_t k = 0; k < count; ++k) {
        const loom::DeviceReduction &r = all[k];
        for (size_t n : sizes) {
            for (size_t offset : {size_t{0}, r.element_size}) {  // aligned, and off the 16-byte packs
                const size_t bytes = n * r.element_size;
                std::vector<unsigned char> dst(bytes), src(bytes), got(bytes);
                fill(dst, rng, r.element_size);
                fill(src, rng, r.element_size);
                CHECK_CUDA(cudaMemcpy(d_dst + offset, dst.data(), bytes, cudaMemcpyHostToDevice));
                CHECK_CUDA(cudaMemcpy(d_src + offset, src.data(), bytes, cudaMemcpyHostToDevice));
                CHECK_CUDA(r.launch(d_dst + offset, d_src + offset, n, nullptr));
                CHECK_CUDA(cudaDeviceSynchronize());
                CHECK_CUDA(cudaMemcpy(got.data(), d_dst + offset, bytes, cudaMemcpyDeviceToHost));
                r.host(dst.data(), src.data(), n);
                size_t bad = bytes;
                for (size_t i = 0; i < bytes; ++i)
                    if (dst[i] != got[i] && !is_padding(r.type, i % r.element_size)) {
                        bad = i;
                        break;
                    }
                if (bad != bytes) {
                    std::printf("FAIL: %s %s n=%zu offset=%zu: element %zu differs from the CPU\n", r.type, r.op, n,
                                offset, bad / r.element_size);
                    ++wrong;
                    break;
                }
            }
        }
    }
    // Three sources at once, as libloom's one-shot allreduce runs them: dst = s0 op s1 op s2.
    unsigned char *d_third;
    CHECK_CUDA(cudaMalloc(&d_third, max_bytes));
    for (size_t k = 0; k < count; ++k) {
        const loom::DeviceReduction &r = all[k];
        for (size_t n : {size_t{1}, size_t{4097}}) {
            const size_t bytes = n * r.element_size;
            std::vector<unsigned char> a(bytes), b(bytes), c(bytes), got(bytes);
            fill(a, rng, r.element_size);
            fill(b, rng, r.element_size);
            fill(c, rng, r.element_size);
            CHECK_CUDA(cudaMemcpy(d_src, a.data(), bytes, cudaMemcpyHostToDevice));
            CHECK_CUDA(cudaMemcpy(d_third, b.data(), bytes, cudaMemcpyHostToDevice));
            CHECK_CUDA(cudaMemcpy(d_dst + max_bytes / 2, c.data(), bytes, cudaMemcpyHostToDevice));
            const void *sources[] = {d_src, d_third, d_dst + max_bytes / 2};
            CHECK_CUDA(r.launch_sources(d_dst, sources, 3, n, 0, nullptr));
            CHECK_CUDA(cudaDeviceSynchronize());
            CHECK_CUDA(cudaMemcpy(got.data(), d_dst, bytes, cudaMemcpyDeviceToHost));
            r.host(a.data(), b.data(), n);
            r.host(a.data(), c.data(), n);
            for (size_t i = 0; i < bytes; ++i)
                if (a[i] != got[i] && !is_padding(r.type, i % r.element_size)) {
                    std::printf("FAIL: %s %s n=%zu, three sources: element %zu differs from the CPU\n", r.type, r.op, n,
                                i / r.element_size);
                    ++wrong;
                    break;
                }
        }
    }
    CHECK_CUDA(cudaFree(d_third));
    CHECK_CUDA(cudaFree(d_dst));
    CHECK_CUDA(cudaFree(d_src));
    std::printf("kernels: %zu (type, op) pairs, two and three sources, %d wrong\n", count, wrong);
    return wrong;
}

// Milliseconds per call of fn, over `reps` after one warm-up, by events.
template <typename Fn>
float time_ms(Fn fn, int reps) {
    cudaEvent_t a, b;
    CHECK_CUDA(cudaEventCreate(&a));
    CHECK_CUDA(cudaEventCreate(&b));
    fn();
    CHECK_CUDA(cudaEventRecord(a));
    for (int i = 0; i < reps; ++i) fn();
    CHECK_CUDA(cudaEventRecord(b));
    CHECK_CUDA(cudaEventSynchronize(b));
    float ms = 0;
    CHECK_CUDA(cudaEventElapsedTime(&ms, a, b));
    CHECK_CUDA(cudaEventDestroy(a));
    CHECK_CUDA(cudaEventDestroy(b));
    return ms / reps;
}

void bandwidth(size_t mib) {
    const size_t bytes = mib << 20;
    void *d_a, *d_b, *h;
    CHECK_CUDA(cudaMalloc(&d_a, bytes));
    CHECK_CUDA(cudaMalloc(&d_b, bytes));
    CHECK_CUDA(cudaMallocHost(&h, bytes));
    CHECK_CUDA(cudaMemset(d_a, 0, bytes));
    CHECK_CUDA(cudaMemset(d_b, 0, bytes));
    const int reps = 20;
    // Bytes moved per second: a copy reads and writes the buffer (2x), a
    // reduction reads two and writes one (3x).
    const float copy_ms = time_ms([&] { CHECK_CUDA(cudaMemcpyAsync(d_a, d_b, bytes, cudaMemcpyDeviceToDevice)); }, reps);
    const double copy_gbs = 2.0 * bytes / (copy_ms * 1e6);
    std::printf("\n%-34s %10s %10s %12s\n", "bandwidth", "ms", "GB/s", "vs D2D copy");
    std::printf("%-34s %10.3f %10.1f %12s\n", "cudaMemcpy device to device", copy_ms, copy_gbs, "1.00");
    for (const char *type : {"float", "bfloat16"}) {
        const loom::DeviceReduction *r = loom::find_device_reduction(type, "sum");
        const size_t n = bytes / r->element_size;
        const float ms = time_ms([&] { CHECK_CUDA(r->launch(d_a, d_b, n, nullptr)); }, reps);
        const double gbs = 3.0 * bytes / (ms * 1e6);
        char name[64];
        std::snprintf(name, sizeof name, "reduce %s sum", type);
        std::printf("%-34s %10.3f %10.1f %11.0f%%\n", name, ms, gbs, 100.0 * gbs / copy_gbs);
    }
    const float h2d = time_ms([&] { CHECK_CUDA(cudaMemcpyAsync(d_a, h, bytes, cudaMemcpyHostToDevice)); }, 5);
    const float d2h = time_ms([&] { CHECK_CUDA(cudaMemcpyAsync(h, d_a, bytes, cudaMemcpyDeviceToHost)); }, 5);
    std::printf("%-34s %10.3f %10.1f\n", "cudaMemcpy pinned host to device", h2d, bytes / (h2d * 1e6));
    std::printf("%-34s %10.3f %10.1f\n", "cudaMemcpy device to pinned host", d2h, bytes / (d2h * 1e6));
    std::printf("(%zu MiB buffers; mean of %d calls after a warm-up, 5 for the host copies)\n", mib, reps);
    CHECK_CUDA(cudaFree(d_a));
    CHECK_CUDA(cudaFree(d_b));
    CHECK_CUDA(cudaFreeHost(h));
}

}  // namespace

int main(int argc, char **argv) {
    size_t mib = 256;
    for (int i = 1; i < argc; ++i) {
        if (!std::strcmp(argv[i], "--mib") && i + 1 < argc) {
            mib = std::strtoul(argv[++i], nullptr, 10);
        } else {
            std::fprintf(stderr, "usage: loom-kernel-check [--mib N]\n");
            return 2;
        }
    }
    int devices = 0;
    const cudaError_t e = cudaGetDeviceCount(&devices);
    if (e != cudaSuccess || devices == 0) {
        std::printf("SKIP: no CUDA device here (cudaGetDeviceCount: %s)\n",
                    e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
        return 77;
    }
    cudaDeviceProp prop;
    CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
    std::printf("device 0: %s, compute capability %d.%d\n", prop.name, prop.major, prop.minor);
    const int wrong = check_kernels();
    bandwidth(mib);
    return wrong ? 1 : 0;
}
