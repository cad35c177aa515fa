// Ring allreduce: a ring reduce-scatter then a ring allgather over p blocks,
// each block cut into segments so sends, receives and reductions pipeline.
// 2(p-1) latency terms, 2(p-1)/p n bytes per rank: bandwidth-optimal.
#include "algorithms/algorithm.hpp"
#include "algorithms/phases.hpp"

namespace loom {
namespace {

void build(const CollArgs &a, int rank, ProgramBuilder &b) {
    const int p = a.nranks;
    const Slice vec = output_slice(0, a.count);
    b.copy(vec, input_slice(0, a.count));
    if (p == 1 || a.count == 0) return;
    // The reduce-scatter leaves block rank+1 here, so the allgather starts
    // with it without a copy; partial sums are completed in the output,
    // which frees a landing buffer as soon as its reduction is done.
    const Ring ring(a, b.knobs().segment_bytes, rank, BlockLayout(a.count, p), static_cast<size_t>((rank + 1) % p));
    const Slice owned = vec.sub(ring.blocks.offset(ring.owned), ring.blocks.count(ring.owned));
    ring_reduce_scatter(ring, vec, owned, RingPartials::in_contribution, b);
    ring_allgather(ring, vec, owned, b);
}

}  // namespace

extern const AlgorithmInfo kAllreduceRing = {
    Collective::allreduce,
    "ring",
    "ring reduce-scatter then ring allgather, segmented for pipelining; bandwidth-optimal for large messages",
    "none",
    always_applicable,
    build,
    /*in_place_aliasing_safe=*/true};

}  // namespace loom
