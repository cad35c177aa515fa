// The one reduction loop of Loom's CUDA kernels (cuda/engine_kernels.hpp
// states its parameters): libloom's engine kernels (engine_kernels.cu) and
// loom-kernel-check's (reduce_kernels.cu) both run it.
#pragma once
#include <cstddef>

#include "engine_kernels.hpp"

namespace loom {

template <typename T>
constexpr size_t kLanes = (sizeof(T) <= 16 && 16 % sizeof(T) == 0) ? 16 / sizeof(T) : 1;

template <typename T>
struct alignas(16) Pack {
    T lane[kLanes<T>];
};

template <typename T, typename Op>
__device__ void reduce_sources(void *dst_v, const LoomSources &s, int nsources, size_t packs, size_t n,
                               int accumulate) {
    const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
    const size_t first = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    const int from = accumulate ? 0 : 1;
    Pack<T> *dp = static_cast<Pack<T> *>(dst_v);
    for (size_t i = first; i < packs; i += stride) {
        Pack<T> acc = accumulate ? dp[i] : static_cast<const Pack<T> *>(s.p[0])[i];
        for (int k = from; k < nsources; ++k) {
            const Pack<T> b = static_cast<const Pack<T> *>(s.p[k])[i];
#pragma unroll
            for (size_t l = 0; l < kLanes<T>; ++l) acc.lane[l] = Op::apply(acc.lane[l], b.lane[l]);
        }
        dp[i] = acc;
    }
    T *d = static_cast<T *>(dst_v);
    for (size_t i = packs * kLanes<T> + first; i < n; i += stride) {
        T acc = accumulate ? d[i] : static_cast<const T *>(s.p[0])[i];
        for (int k = from; k < nsources; ++k) acc = Op::apply(acc, static_cast<const T *>(s.p[k])[i]);
        d[i] = acc;
    }
}

}  // namespace loom
