// Ring allreduce: a ring reduce-scatter then a ring allgather over p blocks,
// each block cut into segments so sends, receives and reductions pipeline.
// 2(p-1) latency terms, 2(p-1)/p n bytes per rank: bandwidth-optimal.
#include <algorithm>

#include "algorithms/algorithm.hpp"

namespace loom {
namespace {

void build(const CollArgs &a, int rank, ProgramBuilder &b) {
    const int p = a.nranks;
    b.copy(output_slice(0, a.count), input_slice(0, a.count));
    if (p == 1 || a.count == 0) return;
    const BlockLayout blocks(a.count, p);
    const size_t max_block = blocks.count(0);
    const size_t seg = a.segment_bytes ? std::max<size_t>(1, a.segment_bytes / a.elem_size) : max_block;
    const int right = (rank + 1) % p, left = (rank + p - 1) % p;
    // Two receive buffers so step s+1 can arrive while step s is reduced.
    const Slice landing[2] = {b.scratch(max_block), b.scratch(max_block)};
    auto block_of = [&](int i) { return static_cast<size_t>(((i % p) + p) % p); };

    for (int step = 0; step < p - 1; ++step) {  // reduce-scatter
        const size_t out_block = block_of(rank - step), in_block = block_of(rank - step - 1);
        for (size_t off = 0; off < max_block; off += seg) {
            const size_t out_n = off < blocks.count(out_block) ? std::min(seg, blocks.count(out_block) - off) : 0;
            const size_t in_n = off < blocks.count(in_block) ? std::min(seg, blocks.count(in_block) - off) : 0;
            b.send(right, output_slice(blocks.offset(out_block) + off, out_n));
            const Slice tmp = landing[step % 2].sub(off, in_n);
            b.recv(left, tmp);
            b.reduce(output_slice(blocks.offset(in_block) + off, in_n), tmp);
        }
    }
    for (int step = 0; step < p - 1; ++step) {  // allgather of the reduced blocks
        const size_t out_block = block_of(rank + 1 - step), in_block = block_of(rank - step);
        for (size_t off = 0; off < max_block; off += seg) {
            const size_t out_n = off < blocks.count(out_block) ? std::min(seg, blocks.count(out_block) - off) : 0;
            const size_t in_n = off < blocks.count(in_block) ? std::min(seg, blocks.count(in_block) - off) : 0;
            b.send(right, output_slice(blocks.offset(out_block) + off, out_n));
            b.recv(left, output_slice(blocks.offset(in_block) + off, in_n));
        }
    }
}

}  // namespace

extern const AlgorithmInfo kAllreduceRing = {
    Collective::allreduce, "ring",
    "ring reduce-scatter then ring allgather, segmented for pipelining; bandwidth-optimal for large messages",
    "none", always_applicable, build, /*in_place_aliasing_safe=*/true};

}  // namespace loom
