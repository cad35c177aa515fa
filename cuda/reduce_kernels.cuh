// Loom's CUDA reduction kernels: dst[i] = dst[i] op src[i] on device memory,
// enqueued on a stream, for every pair of cuda/reductions.hpp. Looked up by
// libloom's names for the type and the op, so this code needs neither MPI
// nor loom.h (the device check builds it on machines without MPI).
#pragma once
#include <cstddef>

#include <cuda_runtime.h>

namespace loom {

struct DeviceReduction {
    const char *type;  // "float", "bfloat16", ...
    const char *op;    // "sum", "minloc", ...
    size_t element_size;
    // Enqueues dst = dst op src (n elements) on the stream.
    cudaError_t (*launch)(void *dst, const void *src, size_t n, cudaStream_t stream);
    // dst = (accumulate ? dst : sources[0]) op sources[...] (at most kMaxKernelSources).
    cudaError_t (*launch_sources)(void *dst, const void *const *sources, int nsources, size_t n, int accumulate,
                                  cudaStream_t stream);
    // The same operation on the CPU, for checks.
    void (*host)(void *dst, const void *src, size_t n);
};

// Every device reduction; *count set to their number.
const DeviceReduction *device_reductions(size_t *count);
// The one for (type, op), or nullptr.
const DeviceReduction *find_device_reduction(const char *type, const char *op);

}  // namespace loom
