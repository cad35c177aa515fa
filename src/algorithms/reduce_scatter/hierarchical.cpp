// Hierarchical reduce-scatter: on every node, the node's contributions to
// each result block are summed on one local rank (for block r, the local
// rank whose index matches r's index on its own node, modulo the node's
// size: r itself on r's node), which sends that node-sum straight to r.
// Each byte crosses the network once, as one message per (node, block);
// the owner adds the node-sums in node order. Nodes may be uneven.
#include "algorithms/compose.hpp"
#include "algorithms/phases.hpp"

namespace loom {
namespace {

void build(const CollArgs &a, int rank, ProgramBuilder &b) {
    const NodeView v(a, rank);
    const NodeMap &m = v.map;
    const int p = a.nranks;
    const BlockLayout blocks = reduce_scatter_blocks(a);
    // The local rank that sums block r on node `node`.
    auto summer = [&](int node, int r) { return m.pick(node, static_cast<size_t>(m.local_index[r])); };
    // Phase 1: send my contribution to every block to the rank summing it here.
    for (int r = 0; r < p; ++r) {
        const int s = summer(v.node, r);
        if (s != rank) b.send(s, input_slice(blocks.offset(r), blocks.count(r)));
    }
    // Blocks I sum for this node: mine plus the k-1 others', in local order.
    std::vector<Slice> node_sum(p);
    for (int r = 0; r < p; ++r) {
        if (summer(v.node, r) != rank) continue;
        const size_t c = blocks.count(r);
        node_sum[r] = r == rank ? output_slice(0, c) : b.scratch(c);
        std::vector<Slice> landing(v.k);
        for (int j = 0; j < v.k; ++j)
            if (v.members()[j] != rank) {
                landing[j] = b.scratch(c);
                b.recv(v.members()[j], landing[j]);
            }
        b.copy(node_sum[r], input_slice(blocks.offset(r), c));
        for (int j = 0; j < v.k; ++j)
            if (v.members()[j] != rank) b.reduce(node_sum[r], landing[j]);
    }
    // Phase 2: node-sums for ranks on other nodes go to their owners, on
    // the owner's local index as lane (the summers share it where nodes are even).
    for (int r = 0; r < p; ++r)
        if (summer(v.node, r) == rank && r != rank) b.send(r, node_sum[r], {}, m.local_index[r]);
    const size_t mine = blocks.count(rank);
    for (int node = 0; node < m.nodes(); ++node) {
        if (node == v.node) continue;
        const Slice remote = b.scratch(mine);
        b.recv(summer(node, rank), remote, {}, v.local);
        b.reduce(output_slice(0, mine), remote);
    }
}

}  // namespace

extern const AlgorithmInfo kReduceScatterHierarchical = {
    Collective::reduce_scatter,
    "hierarchical",
    "node-sums formed on one local rank per block, sent once across the network to the block's owner",
    "a node map (any ranks per node, any rank order)",
    needs_node_map,
    build,
    /*in_place_aliasing_safe=*/false};

extern const AlgorithmInfo kReduceScatterBlockHierarchical = {
    Collective::reduce_scatter_block,
    "hierarchical",
    "node-sums formed on one local rank per block, sent once across the network to the block's owner",
    "a node map (any ranks per node, any rank order)",
    needs_node_map,
    build,
    /*in_place_aliasing_safe=*/false};

}  // namespace loom
