// Rail-aligned ring allgather, for nodes with the same number of ranks k.
// Phase 1 exchanges the ranks' own blocks within the node. Phase 2: local
// rank j of every node forms a ring with the j-th ranks of the other nodes,
// on lane j (its own rail), and gathers their blocks: each rank sends N-1
// blocks over the network, one neighbour at a time, so a rail carries one
// stream per local rank instead of hierarchical's N-1 at once. Phase 3 hands
// the gathered blocks to the node's other ranks.
#include "algorithms/compose.hpp"

namespace loom {

extern const AlgorithmInfo kAllgatherRing;

namespace {

void build(const CollArgs &a, int rank, ProgramBuilder &b) {
    const NodeView v(a, rank);
    const NodeMap &m = v.map;
    const int nodes = m.nodes();
    const size_t block = a.count;
    auto block_of = [&](int r) { return output_slice(static_cast<size_t>(r) * block, block); };
    b.copy(block_of(rank), input_slice(0, block));
    // Phase 1: own blocks within the node.
    for (int i = 1; i < v.k; ++i)
        b.recv(v.members()[(v.local - i + v.k) % v.k], block_of(v.members()[(v.local - i + v.k) % v.k]));
    for (int i = 1; i < v.k; ++i) b.send(v.members()[(v.local + i) % v.k], input_slice(0, block));
    if (nodes == 1) return;
    // Phase 2: the ring of the j-th ranks, gathering node n's block at n.
    std::vector<int> ring(static_cast<size_t>(nodes));
    for (int n = 0; n < nodes; ++n) ring[static_cast<size_t>(n)] = m.members[n][static_cast<size_t>(v.local)];
    const Slice gathered = b.scratch(block * static_cast<size_t>(nodes));
    CollArgs sub = sub_args(a, Collective::allgather, nodes, block, false);
    b.push_group(ring, input_slice(0, block), gathered, v.local, phase_name(sub, kAllgatherRing));
    kAllgatherRing.build(sub, v.node, b);
    b.pop_group();
    auto gathered_block = [&](const Slice &at, int n) {
        return Slice{at.buffer, at.offset + static_cast<size_t>(n) * block, block};
    };
    for (int n = 0; n < nodes; ++n)
        if (n != v.node) b.copy(block_of(m.members[n][static_cast<size_t>(v.local)]), gathered_block(gathered, n));
    // Phase 3: the gathered blocks to the node's other ranks, theirs from them.
    for (int i = 1; i < v.k; ++i) b.send(v.members()[(v.local + i) % v.k], gathered);
    for (int i = 1; i < v.k; ++i) {
        const int from = (v.local - i + v.k) % v.k;
        const Slice theirs = b.scratch(block * static_cast<size_t>(nodes));
        b.recv(v.members()[from], theirs);
        for (int n = 0; n < nodes; ++n)
            if (n != v.node) b.copy(block_of(m.members[n][static_cast<size_t>(from)]), gathered_block(theirs, n));
    }
}

}  // namespace

extern const AlgorithmInfo kAllgatherRailRing = {
    Collective::allgather,
    "rail_ring",
    "own blocks within the node, a ring per local rank among the same local ranks of every node on its own rail, "
    "then within the node",
    "a node map with the same number of ranks on every node (any rank order)",
    needs_uniform_node_map,
    build,
    /*in_place_aliasing_safe=*/false};

}  // namespace loom
