// Leader allreduce: each node's first rank gathers and reduces the node's
// vectors, the leaders allreduce among themselves, and each leader sends the
// result back to its node. Few inter-node messages (one allreduce among N
// leaders): for small vectors, where latency counts and bandwidth does not.
#include "algorithms/compose.hpp"

namespace loom {
namespace {

void build(const CollArgs &a, int rank, ProgramBuilder &b) {
    const NodeView v(a, rank);
    const size_t n = a.count;
    const int leader = v.members()[0];
    const Slice result = output_slice(0, n);
    if (v.local != 0) {
        b.send(leader, input_slice(0, n));
        b.recv(leader, result);
        return;
    }
    // Reduce the node's vectors in local order (same expression on every run).
    const Slice node_sum = b.scratch(n);
    std::vector<Slice> landing(v.k);
    for (int j = 1; j < v.k; ++j) {
        landing[j] = b.scratch(n);
        b.recv(v.members()[j], landing[j]);
    }
    b.copy(node_sum, input_slice(0, n));
    for (int j = 1; j < v.k; ++j) b.reduce(node_sum, landing[j]);
    std::vector<int> leaders;
    for (int node = 0; node < v.map.nodes(); ++node) leaders.push_back(v.map.members[node][0]);
    build_sub_collective(b, sub_args(a, Collective::allreduce, v.map.nodes(), n, false), leaders, v.node, node_sum,
                         result);
    for (int j = 1; j < v.k; ++j) b.send(v.members()[j], result);
}

}  // namespace

extern const AlgorithmInfo kAllreduceHierLeader = {
    Collective::allreduce,
    "hier_leader",
    "reduce to each node's leader, allreduce among leaders, leaders send the result back; for small vectors",
    "a node map (any ranks per node, any rank order)",
    needs_node_map,
    build,
    /*in_place_aliasing_safe=*/false};

}  // namespace loom
