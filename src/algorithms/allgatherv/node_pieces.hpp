// A node's shards of an allgatherv laid end to end in member order and cut
// by elements into equal pieces, one per lane: how the node-aware
// allgatherv plans load a node's rails alike however the shards are skewed.
#pragma once
#include <algorithm>

#include "algorithms/compose.hpp"

namespace loom {

// Calls f(slice) for each non-empty part of `node`'s piece `piece` of
// `pieces`: a member's shard in the receive buffer, or the part of it
// that falls in the piece.
template <typename F>
void for_each_node_piece_part(const CollArgs &a, const NodeMap &m, int node, int piece, int pieces, F &&f) {
    size_t total = 0;
    for (int q : m.members[node]) total += a.recv_counts[q];
    const size_t k = static_cast<size_t>(pieces), j = static_cast<size_t>(piece);
    // floor(total * j / k) without the product's overflow.
    const size_t begin = total / k * j + total % k * j / k;
    const size_t end = total / k * (j + 1) + total % k * (j + 1) / k;
    size_t at = 0;  // where member q's shard starts in the node's concatenation
    for (int q : m.members[node]) {
        if (at >= end) break;
        const size_t n = a.recv_counts[q];
        const size_t lo = std::max(begin, at), hi = std::min(end, at + n);
        if (lo < hi) f(received_block(a, q).sub(lo - at, hi - lo));
        at += n;
    }
}

}  // namespace loom
