// Node-aggregated alltoall: for each pair of nodes (M, N) one local rank of
// M collects what M's ranks send to N's ranks, sends it to N as one message,
// and one local rank of N hands the pieces out; the aggregating ranks are
// spread over the local ranks (node N's by M mod k). Small blocks then cross
// the network as N(N-1) large messages instead of p(p-1) small ones.
// Blocks within a node go directly. Nodes may be uneven.
#include "algorithms/compose.hpp"

namespace loom {
namespace {

void build(const CollArgs &a, int rank, ProgramBuilder &b) {
    const NodeView v(a, rank);
    const NodeMap &m = v.map;
    const size_t block = a.count;
    auto in_block = [&](int r) { return input_slice(static_cast<size_t>(r) * block, block); };
    auto out_block = [&](int r) { return output_slice(static_cast<size_t>(r) * block, block); };
    // The local rank of `node` that handles traffic with node `other`.
    auto agent = [&](int node, int other) { return m.pick(node, static_cast<size_t>(other)); };
    b.copy(out_block(rank), in_block(rank));
    // Within the node: directly.
    for (int i = 1; i < v.k; ++i) {
        const int from = v.members()[(v.local - i + v.k) % v.k];
        b.recv(from, out_block(from));
    }
    for (int i = 1; i < v.k; ++i) {
        const int to = v.members()[(v.local + i) % v.k];
        b.send(to, in_block(to));
    }
    // Phase 1: my blocks for node N's ranks go to my node's agent for N,
    // which packs them as [destination][source] so phase 3 sends runs.
    std::vector<Slice> pack(m.nodes());
    for (int node = 0; node < m.nodes(); ++node) {
        if (node == v.node) continue;
        const int agg = agent(v.node, node);
        if (agg != rank)
            for (int d : m.members[node]) b.send(agg, in_block(d));
    }
    for (int node = 0; node < m.nodes(); ++node) {
        if (node == v.node || agent(v.node, node) != rank) continue;
        const size_t kd = m.members[node].size();
        pack[node] = b.scratch(kd * v.k * block);
        for (int s = 0; s < v.k; ++s)
            for (size_t d = 0; d < kd; ++d) {
                const Slice at{Buffer::scratch, pack[node].offset + (d * v.k + s) * block, block};
                const int src = v.members()[s];
                if (src == rank) b.copy(at, in_block(m.members[node][d]));
                else b.recv(src, at);
            }
    }
    // Phase 2: packs cross between the agents, one message per node pair.
    std::vector<Slice> arrived(m.nodes());
    // The lane is the sending agent's local index: the agents of a node
    // spread over its rails.
    for (int node = 0; node < m.nodes(); ++node)
        if (node != v.node && agent(v.node, node) == rank) b.send(agent(node, v.node), pack[node], {}, v.local);
    for (int node = 0; node < m.nodes(); ++node) {
        if (node == v.node || agent(v.node, node) != rank) continue;
        arrived[node] = b.scratch(m.members[node].size() * v.k * block);
        b.recv(agent(node, v.node), arrived[node], {}, m.local_index[agent(node, v.node)]);
    }
    // Phase 3: the agent for node M hands each local rank its run of M's
    // blocks ([destination][source] order: one contiguous run per rank).
    for (int node = 0; node < m.nodes(); ++node) {
        if (node == v.node || agent(v.node, node) != rank) continue;
        const size_t ks = m.members[node].size();
        for (int d = 0; d < v.k; ++d) {
            const Slice run{Buffer::scratch, arrived[node].offset + d * ks * block, ks * block};
            if (v.members()[d] != rank) {
                b.send(v.members()[d], run);
                continue;
            }
            for (size_t s = 0; s < ks; ++s)
                b.copy(out_block(m.members[node][s]), Slice{Buffer::scratch, run.offset + s * block, block});
        }
    }
    for (int node = 0; node < m.nodes(); ++node) {
        if (node == v.node) continue;
        const int agg = agent(v.node, node);
        if (agg == rank) continue;
        const size_t ks = m.members[node].size();
        const Slice run = b.scratch(ks * block);
        b.recv(agg, run);
        for (size_t s = 0; s < ks; ++s)
            b.copy(out_block(m.members[node][s]), Slice{Buffer::scratch, run.offset + s * block, block});
    }
}

}  // namespace

extern const AlgorithmInfo kAlltoallNodeAggregation = {
    Collective::alltoall,
    "node_aggregation",
    "per node pair one aggregated message between agents spread over the local ranks; for small blocks across nodes",
    "a node map (any ranks per node, any rank order)",
    needs_node_map,
    build,
    /*in_place_aliasing_safe=*/false};

}  // namespace loom
