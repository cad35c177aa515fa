// LOOM_HOST_DEVICE marks the code compiled for the CPU and, by nvcc, for
// the GPU too (core/elementwise.hpp, core/reduced_float.hpp).
#pragma once

#if defined(__CUDACC__)
#define LOOM_HOST_DEVICE __host__ __device__
#else
#define LOOM_HOST_DEVICE
#endif
