// Ring allgather: in step s every rank passes the block it received in step
// s-1 to its right neighbour, each block cut into segments so consecutive
// steps pipeline. (p-1) alpha + (p-1)/p n beta: bandwidth-optimal, latency
// linear in p, so it suits large messages.
#include "algorithms/algorithm.hpp"
#include "algorithms/phases.hpp"

namespace loom {
namespace {

void build(const CollArgs &a, int rank, ProgramBuilder &b) {
    const int p = a.nranks;
    const size_t block = a.count;
    const Slice vec = output_slice(0, block * static_cast<size_t>(p)), own_input = input_slice(0, block);
    // In place this copies the block onto itself, which the executor skips.
    b.copy(vec.sub(static_cast<size_t>(rank) * block, block), own_input);
    if (p == 1 || block == 0) return;
    // The first step sends straight from the input so it need not wait for the copy.
    const Ring ring(a, b.knobs().segment_bytes, rank,
                    BlockLayout(block * static_cast<size_t>(p), static_cast<size_t>(p)), static_cast<size_t>(rank));
    ring_allgather(ring, vec, own_input, b);
}

}  // namespace

extern const AlgorithmInfo kAllgatherRing = {
    Collective::allgather,
    "ring",
    "each rank forwards blocks around a ring, segmented for pipelining; bandwidth-optimal for large messages",
    "none",
    always_applicable,
    build,
    /*in_place_aliasing_safe=*/true};

}  // namespace loom
