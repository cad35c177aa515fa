// Hierarchical allgatherv: every shard crosses to each other node once,
// whatever its size. Phase 1 exchanges the ranks' own shards within the
// node. Phase 2 sends each rank's shard to one rank of every other node
// (the one whose local index equals the sender's, modulo that node's size)
// on the sender's local index as lane, so local rank j's traffic rides rail
// j and all local ranks receive from the network at once. Phase 3 hands the
// shards that arrived on to the node's other ranks. Shards land straight at
// their displacements; empty ones send nothing. Nodes may be uneven and
// their ranks need not be consecutive.
#include "algorithms/compose.hpp"

namespace loom {
namespace {

void build(const CollArgs &a, int rank, ProgramBuilder &b) {
    const NodeView v(a, rank);
    const NodeMap &m = v.map;
    const Slice mine = input_slice(0, a.count);
    // The rank of `node` that receives remote shard q.
    auto receiver = [&](int node, int q) { return m.pick(node, static_cast<size_t>(m.local_index[q])); };
    b.copy(received_block(a, rank), mine);
    // Phase 1: own shards within the node.
    for (int i = 1; i < v.k; ++i) {
        const int from = v.members()[(v.local - i + v.k) % v.k];
        b.recv(from, received_block(a, from));
    }
    for (int i = 1; i < v.k; ++i) b.send(v.members()[(v.local + i) % v.k], mine);
    // Phase 2: my shard to my receiver on every other node; the remote
    // shards this rank receives, in node and rank order.
    for (int node = 0; node < m.nodes(); ++node)
        if (node != v.node) b.send(receiver(node, rank), mine, {}, v.local);
    for (int node = 0; node < m.nodes(); ++node) {
        if (node == v.node) continue;
        for (int q : m.members[node])
            if (receiver(v.node, q) == rank) b.recv(q, received_block(a, q), {}, m.local_index[q]);
    }
    // Phase 3: pass the remote shards on within the node.
    for (int i = 1; i < v.k; ++i) {
        const int to = v.members()[(v.local + i) % v.k];
        for (int node = 0; node < m.nodes(); ++node) {
            if (node == v.node) continue;
            for (int q : m.members[node])
                if (receiver(v.node, q) == rank) b.send(to, received_block(a, q));
        }
    }
    for (int i = 1; i < v.k; ++i) {
        const int from = v.members()[(v.local - i + v.k) % v.k];
        for (int node = 0; node < m.nodes(); ++node) {
            if (node == v.node) continue;
            for (int q : m.members[node])
                if (receiver(v.node, q) == from) b.recv(from, received_block(a, q));
        }
    }
}

}  // namespace

extern const AlgorithmInfo kAllgathervHierarchical = {
    Collective::allgatherv,
    "hierarchical",
    "own shards within the node, each shard once to every other node on its sender's rail, then within the node",
    "a node map (any ranks per node, any rank order)",
    needs_node_map,
    build,
    /*in_place_aliasing_safe=*/false};

}  // namespace loom
