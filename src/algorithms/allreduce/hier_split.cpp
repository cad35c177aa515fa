// Node-split allreduce: the vector is cut into as many pieces as the largest
// node has ranks; on every node each piece has one owner (node-local ranks
// own consecutive runs of pieces, so nodes of 3, 1 and 2 ranks all work).
// Phase 1 reduces the node's vectors onto the owners (intra-node
// reduce-scatter); phase 2 allreduces each piece among its owners, one per
// node, all local ranks crossing the network at once, each on its own rail;
// phase 3 gathers the pieces back within the node. Each byte crosses the
// network 2(N-1)/N times, spread over every local rank.
#include <algorithm>

#include "algorithms/compose.hpp"

namespace loom {
namespace {

// First piece owned by local rank j of a node with k ranks, of `pieces`.
size_t first_piece(size_t j, size_t k, size_t pieces) { return j * pieces / k; }

void build(const CollArgs &a, int rank, ProgramBuilder &b) {
    const NodeView v(a, rank);
    const size_t n = a.count;
    const size_t pieces = static_cast<size_t>(v.map.max_ranks_per_node());
    const BlockLayout layout(n, pieces);
    auto owner_range = [&](int node, size_t j) {
        const size_t k = v.map.members[node].size();
        return std::make_pair(first_piece(j, k, pieces), first_piece(j + 1, k, pieces));
    };
    // Phase 1: node-local reduce-scatter, each local rank receiving the node's
    // sum of its run of pieces, into scratch.
    std::vector<size_t> counts(v.k);
    for (int j = 0; j < v.k; ++j) {
        const auto [first, last] = owner_range(v.node, j);
        counts[j] = layout.span(first, last - first);
    }
    const auto [mine_first, mine_last] = owner_range(v.node, v.local);
    const size_t mine_offset = layout.offset(mine_first), mine_count = counts[v.local];
    const Slice node_sum = b.scratch(mine_count);
    CollArgs rs = sub_args(a, Collective::reduce_scatter, v.k, 0, true);
    rs.recv_counts = counts;
    build_sub_collective(b, rs, v.members(), v.local, input_slice(0, n), node_sum);

    // Phase 2: per owned piece, an allreduce among that piece's owners (one
    // per node, in node order), on the piece's lane: every owner agrees on
    // it, and with as many ranks per node as pieces, local rank j's traffic
    // rides rail j mod rails.
    for (size_t piece = mine_first; piece < mine_last; ++piece) {
        std::vector<int> owners;
        for (int node = 0; node < v.map.nodes(); ++node) {
            const size_t k = v.map.members[node].size();
            size_t j = 0;
            while (first_piece(j + 1, k, pieces) <= piece) ++j;
            owners.push_back(v.map.members[node][j]);
        }
        const size_t off = layout.offset(piece) - mine_offset;
        const CollArgs ar =
            sub_args(a, Collective::allreduce, static_cast<int>(owners.size()), layout.count(piece), false);
        const Slice in{Buffer::scratch, node_sum.offset + off, layout.count(piece)};
        build_sub_collective(b, ar, owners, v.node, in, output_slice(layout.offset(piece), layout.count(piece)),
                             static_cast<int>(piece % 256));
    }

    // Phase 3: node-local allgather of the runs (sizes differ: directly).
    const Slice mine = output_slice(mine_offset, mine_count);
    for (int i = 1; i < v.k; ++i) {
        const int from = (v.local - i + v.k) % v.k;
        const auto [first, last] = owner_range(v.node, from);
        b.recv(v.members()[from], output_slice(layout.offset(first), layout.span(first, last - first)));
    }
    for (int i = 1; i < v.k; ++i) b.send(v.members()[(v.local + i) % v.k], mine);
}

}  // namespace

extern const AlgorithmInfo kAllreduceHierSplit = {
    Collective::allreduce,
    "hier_split",
    "intra-node reduce-scatter, one inter-node allreduce per local rank on its own piece and rail, intra-node allgather",
    "a node map (any ranks per node, any rank order)",
    needs_node_map,
    build,
    /*in_place_aliasing_safe=*/false};

}  // namespace loom
