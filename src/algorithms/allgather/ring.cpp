// Ring allgather: in step s every rank passes the block it received in step
// s-1 to its right neighbour, each block cut into segments so consecutive
// steps pipeline. (p-1) alpha + (p-1)/p n beta: bandwidth-optimal, latency
// linear in p, so it suits large messages.
#include <algorithm>

#include "algorithms/algorithm.hpp"

namespace loom {
namespace {

void build(const CollArgs &a, int rank, ProgramBuilder &b) {
    const int p = a.nranks;
    const size_t block = a.count;
    auto block_slice = [&](int r, size_t off, size_t n) {
        return output_slice(static_cast<size_t>(r) * block + off, n);
    };
    // In place this copies the block onto itself, which the executor skips.
    b.copy(block_slice(rank, 0, block), input_slice(0, block));
    if (p == 1 || block == 0) return;
    const size_t seg = a.segment_bytes ? std::max<size_t>(1, a.segment_bytes / a.elem_size) : block;
    const int right = (rank + 1) % p, left = (rank + p - 1) % p;

    for (int step = 0; step < p - 1; ++step) {
        const int out_block = (rank - step + p) % p, in_block = (rank - step - 1 + p) % p;
        for (size_t off = 0; off < block; off += seg) {
            const size_t n = std::min(seg, block - off);
            // The first step sends straight from the input so it need not wait for the copy.
            b.send(right, step == 0 ? input_slice(off, n) : block_slice(out_block, off, n));
            b.recv(left, block_slice(in_block, off, n));
        }
    }
}

}  // namespace

extern const AlgorithmInfo kAllgatherRing = {
    Collective::allgather, "ring",
    "each rank forwards blocks around a ring, segmented for pipelining; bandwidth-optimal for large messages",
    "none", always_applicable, build, /*in_place_aliasing_safe=*/true};

}  // namespace loom
