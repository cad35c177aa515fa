// Loom's CUDA reduction kernels (cuda/reduce_kernels.cuh): one grid-stride
// loop per (type, op) over the element-wise operations the CPU kernels
// share (core/elementwise.hpp). Where both pointers are 16-byte aligned,
// each thread moves 16 bytes per load and store.
#include <cstring>

#include "reduce_kernels.cuh"
#include "reductions.hpp"

namespace loom {
namespace {

template <typename T>
constexpr size_t kLanes = (sizeof(T) <= 16 && 16 % sizeof(T) == 0) ? 16 / sizeof(T) : 1;

template <typename T>
struct alignas(16) Pack {
    T lane[kLanes<T>];
};

template <typename T, typename Op>
__global__ void reduce_packed(Pack<T> *__restrict__ dst, const Pack<T> *__restrict__ src, size_t packs) {
    const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
    for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < packs; i += stride) {
        Pack<T> a = dst[i];
        const Pack<T> b = src[i];
#pragma unroll
        for (size_t k = 0; k < kLanes<T>; ++k) a.lane[k] = Op::apply(a.lane[k], b.lane[k]);
        dst[i] = a;
    }
}

template <typename T, typename Op>
__global__ void reduce_elements(T *__restrict__ dst, const T *__restrict__ src, size_t n) {
    const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
    for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
        dst[i] = Op::apply(dst[i], src[i]);
}

constexpr unsigned kThreads = 256;
// Enough blocks to fill any current GPU several times over; the loops stride.
constexpr size_t kMaxBlocks = 4096;

unsigned blocks_for(size_t items) {
    const size_t b = (items + kThreads - 1) / kThreads;
    return static_cast<unsigned>(b < 1 ? 1 : b > kMaxBlocks ? kMaxBlocks : b);
}

template <typename T, typename Op>
cudaError_t launch(void *dst_v, const void *src_v, size_t n, cudaStream_t stream) {
    if (n == 0) return cudaSuccess;
    T *dst = static_cast<T *>(dst_v);
    const T *src = static_cast<const T *>(src_v);
    size_t done = 0;
    if (kLanes<T> > 1 && reinterpret_cast<uintptr_t>(dst) % 16 == 0 && reinterpret_cast<uintptr_t>(src) % 16 == 0) {
        const size_t packs = n / kLanes<T>;
        if (packs) {
            reduce_packed<T, Op><<<blocks_for(packs), kThreads, 0, stream>>>(reinterpret_cast<Pack<T> *>(dst),
                                                                             reinterpret_cast<const Pack<T> *>(src), packs);
            done = packs * kLanes<T>;
        }
    }
    if (done < n) reduce_elements<T, Op><<<blocks_for(n - done), kThreads, 0, stream>>>(dst + done, src + done, n - done);
    return cudaGetLastError();
}

template <typename T, typename Op>
void host(void *dst_v, const void *src_v, size_t n) {
    T *dst = static_cast<T *>(dst_v);
    const T *src = static_cast<const T *>(src_v);
    for (size_t i = 0; i < n; ++i) dst[i] = Op::apply(dst[i], src[i]);
}

using namespace device_list;
#define LOOM_DEVICE_ENTRY(tname, oname, T, Op) {#tname, #oname, sizeof(T), launch<T, Op>, host<T, Op>},
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
