// The reduction kernels of libloom's CUDA engine (cuda/engine_kernels.hpp):
// one extern "C" kernel per (type, op) of cuda/reductions.hpp, compiled into
// a fatbin that libloom embeds and loads with cuModuleLoadData, so libloom
// needs neither the CUDA runtime nor nvcc's host registration.
#include "reduce_sources.cuh"
#include "reductions.hpp"

using namespace loom;
using namespace loom::device_list;
#define LOOM_ENGINE_KERNEL(tname, oname, T, Op)                                                            \
    extern "C" __global__ void loom_reduce_##tname##_##oname(void *dst, loom::LoomSources s, int nsources, \
                                                             size_t packs, size_t n, int accumulate) {     \
        loom::reduce_sources<T, Op>(dst, s, nsources, packs, n, accumulate);                               \
    }
LOOM_DEVICE_REDUCTIONS(LOOM_ENGINE_KERNEL)
#undef LOOM_ENGINE_KERNEL
