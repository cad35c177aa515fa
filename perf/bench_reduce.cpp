// Reduction kernels against memcpy of the same bytes, on this machine.
// For every (datatype, op) pair: the median time of dst op= src over n bytes
// and of memcpy(dst, src, n), measured interleaved (A B A B ...), and their
// ratio. usage: bench_reduce [bytes ...]   (default 64KiB 1MiB 8MiB)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "core/datatype.hpp"
#include "core/params.hpp"

using namespace loom;
using Clock = std::chrono::steady_clock;

namespace {

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

void fill_valid(std::vector<unsigned char> &buf, loom_datatype_t type) {
    // Small values: no NaN, inf or denormal slow paths in floating kernels.
    const DatatypeInfo *info = datatype_info(type);
    for (size_t i = 0; i < buf.size(); ++i) buf[i] = 0;
    const size_t n = buf.size() / info->size;
    for (size_t i = 0; i < n; ++i) {
        unsigned char *e = buf.data() + i * info->size;
        switch (info->type_class) {
            case TypeClass::floating:
                if (info->size == 4) {
                    float f = 1.0f;
                    std::memcpy(e, &f, 4);
                } else if (info->size == 8) {
                    double d = 1.0;
                    std::memcpy(e, &d, 8);
                } else {
                    long double l = 1.0L;
                    std::memcpy(e, &l, sizeof l);
                }
                break;
            case TypeClass::reduced_float: {
                uint16_t one = type == LOOM_FLOAT16 ? 0x3c00 : 0x3f80;
                std::memcpy(e, &one, 2);
                break;
            }
            case TypeClass::complex:
                if (info->size == 8) {
                    float f[2] = {1, 0};
                    std::memcpy(e, f, 8);
                } else if (info->size == 16) {
                    double d[2] = {1, 0};
                    std::memcpy(e, d, 16);
                } else {
                    long double l[2] = {1, 0};
                    std::memcpy(e, l, sizeof l);
                }
                break;
            default: e[0] = 1; break;
        }
    }
}

}  // namespace

int main(int argc, char **argv) {
    std::vector<size_t> sizes;
    for (int i = 1; i < argc; ++i) {
        long long b = 0;
        if (!parse_size(argv[i], &b) || b <= 0) {
            std::fprintf(stderr, "bench_reduce: '%s' is not a size (e.g. 1MiB)\n", argv[i]);
            return 2;
        }
        sizes.push_back(static_cast<size_t>(b));
    }
    if (sizes.empty()) sizes = {64 << 10, 1 << 20, 8 << 20};
    double load[3] = {0, 0, 0};
    if (FILE *f = std::fopen("/proc/loadavg", "r")) {
        if (std::fscanf(f, "%lf %lf %lf", &load[0], &load[1], &load[2]) != 3) load[0] = -1;
        std::fclose(f);
    }
    std::printf("# Loom reduction kernels vs memcpy (same bytes), medians of interleaved repetitions\n");
    std::printf("# load average: %.2f %.2f %.2f\n", load[0], load[1], load[2]);
    std::printf("# %-20s %-7s %10s %12s %12s %10s\n", "datatype", "op", "bytes", "reduce GB/s", "memcpy GB/s", "ratio");
    for (size_t bytes : sizes) {
        for (int t = 0; t < LOOM_DATATYPE_COUNT; ++t) {
            const loom_datatype_t type = static_cast<loom_datatype_t>(t);
            const DatatypeInfo *info = datatype_info(type);
            const size_t n = bytes / info->size;
            std::vector<unsigned char> dst(n * info->size), src(n * info->size), cdst(n * info->size);
            for (int o = 0; o < LOOM_OP_COUNT; ++o) {
                ReduceFn fn = reduction_kernel(type, static_cast<loom_op_t>(o));
                if (!fn) continue;
                fill_valid(dst, type);
                fill_valid(src, type);
                // Enough inner iterations for ~2 ms per sample.
                const int inner = std::max<int>(1, static_cast<int>((4u << 20) / std::max<size_t>(bytes, 1)));
                std::vector<double> t_reduce, t_copy;
                fn(dst.data(), src.data(), n);  // warm caches and TLBs before timing
                std::memcpy(cdst.data(), src.data(), n * info->size);
                fill_valid(dst, type);
                for (int rep = 0; rep < 21; ++rep) {
                    auto t0 = Clock::now();
                    for (int i = 0; i < inner; ++i) fn(dst.data(), src.data(), n);
                    t_reduce.push_back(seconds_since(t0) / inner);
                    t0 = Clock::now();
                    for (int i = 0; i < inner; ++i) {
                        std::memcpy(cdst.data(), src.data(), n * info->size);
                        asm volatile("" : : "r"(cdst.data()) : "memory");  // keep the copy
                    }
                    t_copy.push_back(seconds_since(t0) / inner);
                    if (o == LOOM_SUM || o == LOOM_MIN) fill_valid(dst, type);  // keep values tame
                }
                const double r = median(t_reduce), c = median(t_copy);
                const double nb = static_cast<double>(n * info->size);
                std::printf("  %-20s %-7s %10zu %12.2f %12.2f %9.0f%%\n", info->name,
                            op_name(static_cast<loom_op_t>(o)), bytes, nb / r / 1e9, nb / c / 1e9, 100.0 * c / r);
            }
        }
    }
    return 0;
}
