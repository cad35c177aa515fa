// Ring reduce-scatter: in p-1 steps each block travels the ring once, picking
// up every rank's contribution, and ends at its owner. Blocks are cut into
// segments so sends, receives and reductions pipeline. (p-1) alpha (times the
// segments per block) + (p-1)/p n beta + (p-1)/p n gamma: bandwidth-optimal.
#include <algorithm>

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

    size_t max_block = 0;
    for (size_t blk = 0; blk < blocks.blocks(); ++blk) max_block = std::max(max_block, blocks.count(blk));
    const size_t seg = a.segment_bytes ? std::max<size_t>(1, a.segment_bytes / a.elem_size) : std::max<size_t>(1, max_block);
    const int right = (rank + 1) % p, left = (rank + p - 1) % p;
    // Partial sums arrive, are completed with my contribution in place, and
    // leave from there next step; two buffers so a step's receive overlaps
    // the previous step's send.
    const Slice landing[2] = {b.scratch(max_block), b.scratch(max_block)};
    auto block_of = [&](int i) { return static_cast<size_t>(((i % p) + p) % p); };
    auto segment = [&](size_t blk, size_t off) {
        return off < blocks.count(blk) ? std::min(seg, blocks.count(blk) - off) : size_t{0};
    };

    for (int step = 0; step < p - 1; ++step) {
        // Block rank-step-1 leaves to the right; block rank-step-2 arrives from
        // the left, so after p-1 steps my own block has come all the way round.
        const size_t out_block = block_of(rank - step - 1), in_block = block_of(rank - step - 2);
        const bool last = step == p - 2;
        const Slice outgoing = step == 0 ? input_slice(blocks.offset(out_block), blocks.count(out_block))
                                         : landing[(step - 1) % 2].sub(0, blocks.count(out_block));
        const Slice incoming = landing[step % 2];
        const size_t span = std::max(blocks.count(out_block), blocks.count(in_block));
        for (size_t off = 0; off < span; off += seg) {
            b.send(right, outgoing.sub(off, segment(out_block, off)));
            const size_t in_n = segment(in_block, off);
            const Slice arrived = incoming.sub(off, in_n);
            b.recv(left, arrived);
            if (last)
                b.reduce(result.sub(off, in_n), arrived);
            else
                b.reduce(arrived, input_slice(blocks.offset(in_block) + off, in_n));
        }
    }
}

}  // namespace

extern const AlgorithmInfo kReduceScatterRing = {
    Collective::reduce_scatter, "ring",
    "ring reduce-scatter, segmented for pipelining; bandwidth-optimal for large messages",
    "none", always_applicable, build, /*in_place_aliasing_safe=*/false};

extern const AlgorithmInfo kReduceScatterBlockRing = {
    Collective::reduce_scatter_block, "ring",
    "ring reduce-scatter, segmented for pipelining; bandwidth-optimal for large messages",
    "none", always_applicable, build, /*in_place_aliasing_safe=*/false};

}  // namespace loom
