// Ring allgatherv: in step s every rank passes the block it received in step
// s-1 to its right neighbour, straight into its place in the receive buffer,
// each block cut into segments so consecutive steps pipeline. Bandwidth-
// optimal whatever the blocks' sizes; latency linear in p: for large totals.
#include <algorithm>

#include "algorithms/algorithm.hpp"

namespace loom {
namespace {

void build(const CollArgs &a, int rank, ProgramBuilder &b) {
    const int p = a.nranks;
    const Slice own_input = input_slice(0, a.count);
    // In place this copies the block onto itself, which the executor skips.
    b.copy(received_block(a, rank), own_input);
    if (p == 1) return;
    const size_t largest = *std::max_element(a.recv_counts.begin(), a.recv_counts.end());
    const size_t segment = segment_elements(b.knobs().segment_bytes, a.elem_size, largest);
    const int right = (rank + 1) % p, left = (rank - 1 + p) % p;
    auto part = [&](Slice s, size_t off) {
        return off < s.count ? s.sub(off, std::min(segment, s.count - off)) : s.sub(0, 0);
    };
    for (int step = 0; step < p - 1; ++step) {
        const int out_rank = (rank - step + p) % p, in_rank = (rank - step - 1 + p) % p;
        // The first step sends straight from the input so it need not wait for the copy.
        const Slice outgoing = step == 0 ? own_input : received_block(a, out_rank),
                    incoming = received_block(a, in_rank);
        // A segment missing on one side is an empty step there, as on its peer.
        for (size_t off = 0; off < std::max(outgoing.count, incoming.count); off += segment) {
            b.send(right, part(outgoing, off));
            b.recv(left, part(incoming, off));
        }
    }
}

}  // namespace

extern const AlgorithmInfo kAllgathervRing = {
    Collective::allgatherv,
    "ring",
    "each rank forwards blocks around a ring into their places, segmented for pipelining; bandwidth-optimal for "
    "large totals",
    "none",
    always_applicable,
    build,
    /*in_place_aliasing_safe=*/true};

}  // namespace loom
