// Ring reduce-scatter: in p-1 steps each block travels the ring once, picking
// up every rank's contribution, and ends at its owner. Blocks are cut into
// segments so sends, receives and reductions pipeline. (p-1) alpha (times the
// segments per block) + (p-1)/p n beta + (p-1)/p n gamma: bandwidth-optimal.
#include "algorithms/algorithm.hpp"
#include "algorithms/phases.hpp"

namespace loom {
namespace {

void build(const CollArgs &a, int rank, ProgramBuilder &b) {
    const int p = a.nranks;
    const BlockLayout blocks = reduce_scatter_blocks(a);
    const Slice result = output_slice(0, blocks.count(rank));
    // The last step adds the incoming partial sum straight into the result.
    b.copy(result, input_slice(blocks.offset(rank), blocks.count(rank)));
    if (p == 1) return;
    // The input is only read: partial sums are completed in the landing
    // buffers and leave from there next step.
    const Ring ring(a, b.knobs().segment_bytes, rank, blocks, static_cast<size_t>(rank));
    ring_reduce_scatter(ring, input_slice(0, blocks.total()), result, RingPartials::in_landing, b);
}

}  // namespace

extern const AlgorithmInfo kReduceScatterRing = {
    Collective::reduce_scatter,
    "ring",
    "ring reduce-scatter, segmented for pipelining; bandwidth-optimal for large messages",
    "none",
    always_applicable,
    build,
    /*in_place_aliasing_safe=*/false};

extern const AlgorithmInfo kReduceScatterBlockRing = {
    Collective::reduce_scatter_block,
    "ring",
    "ring reduce-scatter, segmented for pipelining; bandwidth-optimal for large messages",
    "none",
    always_applicable,
    build,
    /*in_place_aliasing_safe=*/false};

}  // namespace loom
