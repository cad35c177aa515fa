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

// Phase 1 of both: this rank's shard into place, and the node's ranks'
// own shards exchanged within the node.
inline void exchange_shards_within_node(const CollArgs &a, int rank, const NodeView &v, ProgramBuilder &b) {
    const Slice mine = input_slice(0, a.count);
    b.copy(received_block(a, rank), mine);
    for (int i = 1; i < v.k; ++i) {
        const int from = v.members()[(v.local - i + v.k) % v.k];
        b.recv(from, received_block(a, from));
    }
    for (int i = 1; i < v.k; ++i) b.send(v.members()[(v.local + i) % v.k], mine);
}

}  // namespace loom
