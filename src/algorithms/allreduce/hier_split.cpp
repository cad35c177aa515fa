// Node-split allreduce: the vector is cut into as many pieces as the largest
// node has ranks; on every node each piece has one owner (node-local ranks
// own consecutive runs of pieces, so nodes of 3, 1 and 2 ranks all work).
// Phase 1 reduces the node's vectors onto the owners (intra-node
// reduce-scatter); phase 2 allreduces each piece among its owners, one per
// node, all local ranks crossing the network at once, each on its own rail;
// phase 3 gathers the pieces back within the node. Each byte crosses the
// network 2(N-1)/N times, spread over every local rank.
#include "algorithms/allreduce/node_split.hpp"

namespace loom {
namespace {

void build(const CollArgs &a, int rank, ProgramBuilder &b) {
    const NodeSplitRange whole(a, rank, 0, a.count, b);
    whole.reduce_within_node(b);
    whole.allreduce_across_nodes(b);
    whole.gather_within_node(b);
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
