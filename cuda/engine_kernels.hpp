// The kernels libloom launches through the driver (cuLaunchKernel), found
// by name in the image embedded in libloom: "loom_reduce_<type>_<op>" with
// libloom's names (loom-info -a). Their parameters, in order:
//   void *dst, LoomSources sources, int nsources, size_t packs, size_t n, int accumulate
// dst[i] = (accumulate ? dst[i] : sources[0][i]) op sources[...][i] ..., the
// sources in order, so every rank adding the same inputs gets the same bits.
// The first `packs` 16-byte packs move as packs (every pointer 16-byte
// aligned), the rest element by element. Shared by the kernels, libloom and
// the tests' stand-in driver, which runs the same operation on the CPU.
#pragma once
#include <cstddef>

namespace loom {

constexpr int kMaxKernelSources = 16;
struct LoomSources {
    const void *p[kMaxKernelSources];
};
constexpr unsigned kKernelThreads = 256;
constexpr size_t kKernelMaxBlocks = 4096;

}  // namespace loom
