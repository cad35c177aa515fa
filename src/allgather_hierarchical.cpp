// Hierarchical allgather: first within the node (every local rank gets its
// node's blocks, directly), then across nodes: rank r, local index j, gets
// each other node's blocks from that node's local rank j mod (its size).
// Every local rank receives from the network at once and no block crosses
// to a rank twice; nodes may be uneven and their ranks need not be
// consecutive.
#include "compose.hpp"

namespace loom {
namespace {

void build(const CollArgs &a, int rank, ProgramBuilder &b) {
    const NodeView v(a, rank);
    const NodeMap &m = v.map;
    const size_t block = a.count;
    auto block_of = [&](int r) { return output_slice(static_cast<size_t>(r) * block, block); };
    b.copy(block_of(rank), input_slice(0, block));
    // Phase 1: within the node.
    for (int i = 1; i < v.k; ++i) {
        const int from = v.members()[(v.local - i + v.k) % v.k];
        b.recv(from, block_of(from));
    }
    for (int i = 1; i < v.k; ++i) b.send(v.members()[(v.local + i) % v.k], input_slice(0, block));
    // Phase 2: my node's blocks to the remote ranks I serve; theirs from
    // whoever serves me. One message per block, in node and rank order.
    for (int node = 0; node < m.nodes(); ++node) {
        if (node == v.node) continue;
        for (int r : m.members[node]) {
            if (m.local_index[r] % v.k != v.local) continue;
            for (int q : v.members()) b.send(r, block_of(q));
        }
    }
    for (int node = 0; node < m.nodes(); ++node) {
        if (node == v.node) continue;
        const auto &theirs = m.members[node];
        const int server = theirs[static_cast<size_t>(v.local) % theirs.size()];
        for (int q : theirs) b.recv(server, block_of(q));
    }
}

}  // namespace

extern const AlgorithmInfo kAllgatherHierarchical = {
    Collective::allgather, "hierarchical",
    "allgather within each node, then each local rank fetches the other nodes' blocks from its counterpart there",
    "a node map (any ranks per node, any rank order)", needs_node_map, build, /*in_place_aliasing_safe=*/false};

}  // namespace loom
