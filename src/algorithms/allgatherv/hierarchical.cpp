// Hierarchical allgatherv: every shard crosses to each other node once,
// whatever its size, and each node's rails carry equal bytes however the
// shards are skewed. Phase 1 exchanges the ranks' own shards within the
// node. Phase 2: a node's shards, laid end to end in member order, are cut
// into one piece per local rank by elements; local rank j sends piece j to
// the rank of every other node at local index j (modulo that node's size)
// on lane j, so each rail carries 1/k of the node's bytes. Phase 3 hands
// the pieces that arrived on to the node's other ranks. Pieces land
// straight at their shards' displacements; empty ones send nothing. Nodes
// may be uneven and their ranks need not be consecutive.
#include "algorithms/allgatherv/node_pieces.hpp"

namespace loom {
namespace {

void build(const CollArgs &a, int rank, ProgramBuilder &b) {
    const NodeView v(a, rank);
    const NodeMap &m = v.map;
    // Phase 1: own shards within the node.
    exchange_shards_within_node(a, rank, v, b);
    // Phase 2: my piece of this node's shards to every other node; the
    // pieces of other nodes this rank receives, in node and piece order.
    for (int node = 0; node < m.nodes(); ++node) {
        if (node == v.node) continue;
        const int to = m.pick(node, static_cast<size_t>(v.local));
        for_each_node_piece_part(a, m, v.node, v.local, v.k, [&](Slice part) { b.send(to, part, {}, v.local); });
    }
    // Calls f(part) for every part of the other nodes' pieces that `who` of
    // this node receives from the network, in node and piece order.
    auto for_each_part_received_by = [&](int who, auto &&f) {
        for (int node = 0; node < m.nodes(); ++node)
            for (int piece = 0; piece < m.ranks_on(node); ++piece)
                if (node != v.node && m.pick(v.node, static_cast<size_t>(piece)) == who)
                    for_each_node_piece_part(a, m, node, piece, m.ranks_on(node),
                                             [&](Slice part) { f(m.members[node][piece], piece, part); });
    };
    for_each_part_received_by(rank, [&](int sender, int lane, Slice part) { b.recv(sender, part, {}, lane); });
    // Phase 3: pass the pieces that arrived on within the node.
    for (int i = 1; i < v.k; ++i) {
        const int to = v.members()[(v.local + i) % v.k];
        for_each_part_received_by(rank, [&](int, int, Slice part) { b.send(to, part); });
    }
    for (int i = 1; i < v.k; ++i) {
        const int from = v.members()[(v.local - i + v.k) % v.k];
        for_each_part_received_by(from, [&](int, int, Slice part) { b.recv(from, part); });
    }
}

}  // namespace

extern const AlgorithmInfo kAllgathervHierarchical = {
    Collective::allgatherv,
    "hierarchical",
    "own shards within the node, each node's shards cut into equal pieces, one per local rank and rail, to every "
    "other node, then within the node",
    "a node map (any ranks per node, any rank order)",
    needs_node_map,
    build,
    /*in_place_aliasing_safe=*/false};

}  // namespace loom
