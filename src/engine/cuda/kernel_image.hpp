// libloom's CUDA kernels (cuda/engine_kernels.cu) as the fatbin nvcc made
// at build time, embedded verbatim (kernel_image.cpp) and loaded per
// context with cuModuleLoadData. Only in builds with the CUDA toolkit.
#pragma once

extern "C" {
extern const unsigned char loom_kernel_image[];
extern const unsigned char loom_kernel_image_end[];
}
