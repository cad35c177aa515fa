// Rail-aligned ring reduce-scatter, for nodes with the same number of
// ranks k: the reverse of the rail_ring allgather. Local rank j of every
// node forms a ring with the j-th ranks of the other nodes, on lane j (its
// own rail). Phase 1 sums, on each local rank, the node's contributions to
// the blocks of its ring (one block per node, in node order). Phase 2 is a
// ring reduce-scatter of those node sums around the ring, each rank ending
// with its own block. Each byte crosses the network (N-1)/N times, one
// neighbour at a time, so a rail carries one stream per local rank
// instead of hierarchical's N-1 at once.
#include "algorithms/compose.hpp"
#include "algorithms/phases.hpp"

namespace loom {

extern const AlgorithmInfo kReduceScatterRing;

namespace {

void build(const CollArgs &a, int rank, ProgramBuilder &b) {
    const NodeView v(a, rank);
    const NodeMap &m = v.map;
    const int nodes = m.nodes();
    const BlockLayout blocks = reduce_scatter_blocks(a);
    // The ring of local index `j`: its rank on every node, in node order.
    auto ring_rank = [&](int node, int j) { return m.members[node][static_cast<size_t>(j)]; };
    std::vector<size_t> ring_counts(static_cast<size_t>(nodes));
    std::vector<size_t> at(static_cast<size_t>(nodes) + 1, 0);  // offsets in the node-sum vector
    for (int n = 0; n < nodes; ++n) {
        ring_counts[static_cast<size_t>(n)] = blocks.count(ring_rank(n, v.local));
        at[static_cast<size_t>(n) + 1] = at[static_cast<size_t>(n)] + ring_counts[static_cast<size_t>(n)];
    }
    const size_t total = at.back();
    // Phase 1: my contributions to every other local rank's ring, block by block.
    for (int i = 1; i < v.k; ++i) {
        const int peer_local = (v.local + i) % v.k;
        const int peer = v.members()[static_cast<size_t>(peer_local)];
        for (int n = 0; n < nodes; ++n) {
            const int r = ring_rank(n, peer_local);
            b.send(peer, input_slice(blocks.offset(r), blocks.count(r)));
        }
    }
    // The node sum of my ring's blocks: mine, then the others' in local order.
    const Slice node_sum = b.scratch(total);
    for (int n = 0; n < nodes; ++n) {
        const int r = ring_rank(n, v.local);
        b.copy(node_sum.sub(at[static_cast<size_t>(n)], ring_counts[static_cast<size_t>(n)]),
               input_slice(blocks.offset(r), blocks.count(r)));
    }
    for (int i = 1; i < v.k; ++i) {
        const int from = v.members()[static_cast<size_t>((v.local - i + v.k) % v.k)];
        for (int n = 0; n < nodes; ++n) {
            const size_t c = ring_counts[static_cast<size_t>(n)];
            const Slice landing = b.scratch(c);
            b.recv(from, landing);
            b.reduce(node_sum.sub(at[static_cast<size_t>(n)], c), landing);
        }
    }
    const size_t mine = blocks.count(rank);
    if (nodes == 1) {
        b.copy(output_slice(0, mine), node_sum.sub(at[0], mine));
        return;
    }
    // Phase 2: the ring of the j-th ranks reduces the node sums, block n ending at node n.
    std::vector<int> ring(static_cast<size_t>(nodes));
    for (int n = 0; n < nodes; ++n) ring[static_cast<size_t>(n)] = ring_rank(n, v.local);
    CollArgs sub = sub_args(a, Collective::reduce_scatter, nodes, 0, false);
    sub.recv_counts = ring_counts;
    b.push_group(ring, node_sum, output_slice(0, mine), v.local, phase_name(sub, kReduceScatterRing));
    kReduceScatterRing.build(sub, v.node, b);
    b.pop_group();
}

}  // namespace

extern const AlgorithmInfo kReduceScatterRailRing = {
    Collective::reduce_scatter,
    "rail_ring",
    "node sums of each local rank's ring of blocks within the node, then a ring reduce-scatter per local rank "
    "among the same local ranks of every node on its own rail",
    "a node map with the same number of ranks on every node (any rank order)",
    needs_uniform_node_map,
    build,
    /*in_place_aliasing_safe=*/false};

extern const AlgorithmInfo kReduceScatterBlockRailRing = {
    Collective::reduce_scatter_block,
    "rail_ring",
    "node sums of each local rank's ring of blocks within the node, then a ring reduce-scatter per local rank "
    "among the same local ranks of every node on its own rail",
    "a node map with the same number of ranks on every node (any rank order)",
    needs_uniform_node_map,
    build,
    /*in_place_aliasing_safe=*/false};

}  // namespace loom
