// Loom's CUDA reduction kernels for the runtime API (cuda/reduce_kernels.cuh):
// the same grid-stride loop libloom's engine kernels run (reduce_sources.cuh)
// over the element-wise operations the CPU kernels share
// (core/elementwise.hpp). Where every pointer is 16-byte aligned, each thread
// moves 16 bytes per load and store.
#include <cstdint>
#include <cstring>

#include "reduce_kernels.cuh"
#include "reduce_sources.cuh"
#include "reductions.hpp"

namespace loom {
namespace {

template <typename T, typename Op>
__global__ void reduce_kernel(void *dst, LoomSources s, int nsources, size_t packs, size_t n, int accumulate) {
    reduce_sources<T, Op>(dst, s, nsources, packs, n, accumulate);
}

unsigned blocks_for(size_t items) {
    const size_t b = (items + kKernelThreads - 1) / kKernelThreads;
    return static_cast<unsigned>(b < 1 ? 1 : b > kKernelMaxBlocks ? kKernelMaxBlocks : b);
}

// The launch libloom's engine makes (src/engine/cuda/driver.cpp), through the runtime.
template <typename T, typename Op>
cudaError_t launch_sources(void *dst, const void *const *sources, int nsources, size_t n, int accumulate,
                           cudaStream_t stream) {
    if (n == 0) return cudaSuccess;
    LoomSources s{};
    bool aligned = reinterpret_cast<uintptr_t>(dst) % 16 == 0;
    for (int k = 0; k < nsources; ++k) {
        s.p[k] = sources[k];
        aligned = aligned && reinterpret_cast<uintptr_t>(sources[k]) % 16 == 0;
    }
    const size_t packs = kLanes<T> > 1 && aligned ? n / kLanes<T> : 0;
    const size_t items = packs + (n - packs * kLanes<T>);
    reduce_kernel<T, Op><<<blocks_for(items), kKernelThreads, 0, stream>>>(dst, s, nsources, packs, n, accumulate);
    return cudaGetLastError();
}

template <typename T, typename Op>
cudaError_t launch(void *dst, const void *src, size_t n, cudaStream_t stream) {
    return launch_sources<T, Op>(dst, &src, 1, n, 1, stream);
}

template <typename T, typename Op>
void host(void *dst_v, const void *src_v, size_t n) {
    T *dst = static_cast<T *>(dst_v);
    const T *src = static_cast<const T *>(src_v);
    for (size_t i = 0; i < n; ++i) dst[i] = Op::apply(dst[i], src[i]);
}

using namespace device_list;
#define LOOM_DEVICE_ENTRY(tname, oname, T, Op) \
    {#tname, #oname, sizeof(T), launch<T, Op>, launch_sources<T, Op>, host<T, Op>},
const DeviceReduction kReductions[] = {LOOM_DEVICE_REDUCTIONS(LOOM_DEVICE_ENTRY)};
#undef LOOM_DEVICE_ENTRY

}  // namespace

const DeviceReduction *device_reductions(size_t *count) {
    *count = sizeof(kReductions) / sizeof(kReductions[0]);
    return kReductions;
}

const DeviceReduction *find_device_reduction(const char *type, const char *op) {
    for (const DeviceReduction &r : kReductions)
        if (!std::strcmp(r.type, type) && !std::strcmp(r.op, op)) return &r;
    return nullptr;
}

}  // namespace loom
