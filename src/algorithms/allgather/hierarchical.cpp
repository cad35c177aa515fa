// Hierarchical allgather: every block crosses to each other node once.
// Phase 1 exchanges the ranks' own blocks within the node. Phase 2 sends
// each rank's block to one rank of every other node (the one whose local
// index equals the sender's, modulo that node's size), so all local ranks
// receive from the network at once. Phase 3 hands the blocks that arrived
// on to the node's other ranks. Nodes may be uneven and their ranks need
// not be consecutive.
#include "algorithms/compose.hpp"

namespace loom {
namespace {

void build(const CollArgs &a, int rank, ProgramBuilder &b) {
    const NodeView v(a, rank);
    const NodeMap &m = v.map;
    const size_t block = a.count;
    auto block_of = [&](int r) { return output_slice(static_cast<size_t>(r) * block, block); };
    // The rank of `node` that receives remote block q.
    auto receiver = [&](int node, int q) { return m.pick(node, static_cast<size_t>(m.local_index[q])); };
    b.copy(block_of(rank), input_slice(0, block));
    // Phase 1: own blocks within the node.
    for (int i = 1; i < v.k; ++i) {
        const int from = v.members()[(v.local - i + v.k) % v.k];
        b.recv(from, block_of(from));
    }
    for (int i = 1; i < v.k; ++i) b.send(v.members()[(v.local + i) % v.k], input_slice(0, block));
    // Phase 2: my block to my receiver on every other node; the remote
    // blocks this rank receives, in node and rank order. Each rides its
    // sender's local index as lane: local rank j's traffic on rail j.
    for (int node = 0; node < m.nodes(); ++node)
        if (node != v.node) b.send(receiver(node, rank), input_slice(0, block), {}, v.local);
    for (int node = 0; node < m.nodes(); ++node) {
        if (node == v.node) continue;
        for (int q : m.members[node])
            if (receiver(v.node, q) == rank) b.recv(q, block_of(q), {}, m.local_index[q]);
    }
    // Phase 3: pass the remote blocks on within the node.
    for (int i = 1; i < v.k; ++i) {
        const int to = v.members()[(v.local + i) % v.k];
        for (int node = 0; node < m.nodes(); ++node) {
            if (node == v.node) continue;
            for (int q : m.members[node])
                if (receiver(v.node, q) == rank) b.send(to, block_of(q));
        }
    }
    for (int i = 1; i < v.k; ++i) {
        const int from = v.members()[(v.local - i + v.k) % v.k];
        for (int node = 0; node < m.nodes(); ++node) {
            if (node == v.node) continue;
            for (int q : m.members[node])
                if (receiver(v.node, q) == from) b.recv(from, block_of(q));
        }
    }
}

}  // namespace

extern const AlgorithmInfo kAllgatherHierarchical = {
    Collective::allgather,
    "hierarchical",
    "own blocks within the node, each block once to every other node (spread over its local ranks), then within the node",
    "a node map (any ranks per node, any rank order)",
    needs_node_map,
    build,
    /*in_place_aliasing_safe=*/false};

}  // namespace loom
