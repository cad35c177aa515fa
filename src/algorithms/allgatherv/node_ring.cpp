// Node-ring allgatherv, for shards skewed between nodes. hierarchical sends
// a node's shards straight to every other node, so a node of large shards
// sends N-1 times what it holds while the others wait on it; here the nodes
// pass each other's blocks on around a ring, and each node sends about
// what it receives, the least its link can carry. Phase 1 exchanges the
// ranks' own shards within the node. Phase 2: every node's shards, end to
// end, are cut into L equal pieces (L: the fewest ranks on a node); local
// rank j < L of every node forms a ring on lane j that carries piece j of
// every node's block, in segments, so a node's rails carry equal bytes and
// a segment moves on as soon as it arrives. Phase 3 hands the pieces that
// arrived on to the node's other ranks. Pieces land straight at their
// shards' displacements.
#include "algorithms/allgatherv/node_pieces.hpp"

namespace loom {
namespace {

void build(const CollArgs &a, int rank, ProgramBuilder &b) {
    const NodeView v(a, rank);
    const NodeMap &m = v.map;
    const int nodes = m.nodes();
    // Phase 1: own shards within the node.
    exchange_shards_within_node(a, rank, v, b);
    if (nodes == 1) return;
    int lanes = v.k;
    for (int n = 0; n < nodes; ++n) lanes = std::min(lanes, m.ranks_on(n));
    // Phase 2: the ring of the j-th ranks; in step s it passes on node
    // (n - s)'s piece j and takes node (n - s - 1)'s.
    if (v.local < lanes) {
        const size_t largest = *std::max_element(a.recv_counts.begin(), a.recv_counts.end());
        const size_t segment = segment_elements(b.knobs().segment_bytes, a.elem_size, largest);
        const int next = m.members[(v.node + 1) % nodes][static_cast<size_t>(v.local)];
        const int prev = m.members[(v.node - 1 + nodes) % nodes][static_cast<size_t>(v.local)];
        // Calls f(segment) for each segment of `node`'s piece that this ring carries.
        auto for_each_segment = [&](int node, auto &&f) {
            for_each_node_piece_part(a, m, node, v.local, lanes, [&](Slice part) {
                for (size_t off = 0; off < part.count; off += segment)
                    f(part.sub(off, std::min(segment, part.count - off)));
            });
        };
        for (int s = 0; s < nodes - 1; ++s) {
            const int out_node = (v.node - s + nodes) % nodes, in_node = (v.node - s - 1 + nodes) % nodes;
            for_each_segment(out_node, [&](Slice seg) { b.send(next, seg, {}, v.local); });
            for_each_segment(in_node, [&](Slice seg) { b.recv(prev, seg, {}, v.local); });
        }
    }
    // Phase 3: local rank j < lanes received piece j of every other node's
    // block; it passes them on to the node's other ranks.
    for (int i = 1; i < v.k && v.local < lanes; ++i) {
        const int to = v.members()[(v.local + i) % v.k];
        for (int n = 0; n < nodes; ++n)
            if (n != v.node) for_each_node_piece_part(a, m, n, v.local, lanes, [&](Slice part) { b.send(to, part); });
    }
    for (int i = 1; i < v.k; ++i) {
        const int from_local = (v.local - i + v.k) % v.k;
        if (from_local >= lanes) continue;
        const int from = v.members()[static_cast<size_t>(from_local)];
        for (int n = 0; n < nodes; ++n)
            if (n != v.node)
                for_each_node_piece_part(a, m, n, from_local, lanes, [&](Slice part) { b.recv(from, part); });
    }
}

}  // namespace

extern const AlgorithmInfo kAllgathervNodeRing = {
    Collective::allgatherv,
    "node_ring",
    "own shards within the node, then a ring of nodes per local rank and rail passing on equal pieces of every "
    "node's shards in segments, then within the node; for shards skewed between nodes",
    "a node map (any ranks per node, any rank order)",
    needs_node_map,
    build,
    /*in_place_aliasing_safe=*/false};

}  // namespace loom
