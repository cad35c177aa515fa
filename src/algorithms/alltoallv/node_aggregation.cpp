// Node-aggregated alltoallv: for each pair of nodes (M, N) one local rank of
// M (its agent for N) collects what M's ranks send to N's ranks and sends it
// to N's agent for M as one message, on the sending agent's rail; that agent
// hands each of its node's ranks its run. Each node's agents are spread over
// its local ranks, so every local rank owns a share of the destination
// nodes and its rail carries that share. Blocks within a node go directly.
// Every rank builds from the counts of the blocks that leave or enter its
// node (CollArgs::node_counts, which the ranks learn first; the cost model
// gives every rank's), so the agents know the sizes of what they forward;
// empty blocks send nothing. Nodes may be uneven.
#include <numeric>

#include "algorithms/compose.hpp"

namespace loom {
namespace {

std::string not_applicable(const CollArgs &a) {
    const std::string nodes = needs_node_map(a);
    if (!nodes.empty()) return nodes;
    const size_t p = static_cast<size_t>(a.nranks);
    if (a.count_matrix.size() == p * p) return {};  // the model's description: every rank's counts
    const NodeCounts &n = a.node_counts;
    const size_t rows = n.node >= 0 && n.node < a.nodes->nodes() ? static_cast<size_t>(a.nodes->ranks_on(n.node)) : 0;
    if (!n.known() || n.ranks != p || n.rows() != rows || n.counts.size() != 2 * rows * n.ranks)
        return "the counts of its node's ranks (alltoallv exchanges them on communicators that span several nodes)";
    return {};
}

void build(const CollArgs &a, int rank, ProgramBuilder &b) {
    const NodeView v(a, rank);
    const NodeMap &m = v.map;
    // What a rank's call learnt, or the same from the model's every-rank counts.
    const NodeCounts derived = a.node_counts.known() ? NodeCounts{} : node_counts_from_matrix(a, rank);
    const NodeCounts &n = a.node_counts.known() ? a.node_counts : derived;
    // Every block this rank's plan sizes leaves or enters its node.
    auto count = [&](int s, int d) {
        if (m.node_of[s] == v.node) return n.sent(static_cast<size_t>(m.local_index[s]), static_cast<size_t>(d));
        return n.received(static_cast<size_t>(m.local_index[d]), static_cast<size_t>(s));
    };
    // The local rank of `node` that handles traffic with node `other`.
    auto agent = [&](int node, int other) { return m.pick(node, static_cast<size_t>(other)); };
    b.copy(received_block(a, rank), sent_block(a, rank));
    // Within the node: directly.
    for (int i = 1; i < v.k; ++i) {
        const int from = v.members()[(v.local - i + v.k) % v.k];
        b.recv(from, received_block(a, from));
    }
    for (int i = 1; i < v.k; ++i) {
        const int to = v.members()[(v.local + i) % v.k];
        b.send(to, sent_block(a, to));
    }
    // A pack between nodes `from` and `to`: [destination][source] blocks, so
    // each destination's run is contiguous. offsets[d * ks + s] is where
    // block (source s, destination d) starts; the last entry the total.
    auto layout = [&](int from, int to) {
        const std::vector<int> &sources = m.members[from], &destinations = m.members[to];
        std::vector<size_t> offsets(1, 0);
        for (int d : destinations)
            for (int s : sources) offsets.push_back(offsets.back() + count(s, d));
        return offsets;
    };
    // Phase 1: my blocks for node N's ranks go to my node's agent for N.
    std::vector<Slice> pack(m.nodes());
    for (int node = 0; node < m.nodes(); ++node) {
        if (node == v.node) continue;
        const int agg = agent(v.node, node);
        if (agg != rank)
            for (int d : m.members[node]) b.send(agg, sent_block(a, d));
    }
    for (int node = 0; node < m.nodes(); ++node) {
        if (node == v.node || agent(v.node, node) != rank) continue;
        const std::vector<size_t> at = layout(v.node, node);
        pack[node] = b.scratch(at.back());
        const std::vector<int> &destinations = m.members[node];
        for (size_t d = 0; d < destinations.size(); ++d)
            for (int s = 0; s < v.k; ++s) {
                const size_t i = d * static_cast<size_t>(v.k) + static_cast<size_t>(s);
                const Slice into = pack[node].sub(at[i], at[i + 1] - at[i]);
                const int src = v.members()[s];
                if (src == rank) b.copy(into, sent_block(a, destinations[d]));
                else b.recv(src, into);
            }
    }
    // Phase 2: packs cross between the agents, one message per node pair,
    // on the sending agent's rail.
    std::vector<Slice> arrived(m.nodes());
    std::vector<std::vector<size_t>> arrived_at(m.nodes());
    for (int node = 0; node < m.nodes(); ++node)
        if (node != v.node && agent(v.node, node) == rank) b.send(agent(node, v.node), pack[node], {}, v.local);
    for (int node = 0; node < m.nodes(); ++node) {
        if (node == v.node || agent(v.node, node) != rank) continue;
        arrived_at[node] = layout(node, v.node);
        arrived[node] = b.scratch(arrived_at[node].back());
        b.recv(agent(node, v.node), arrived[node], {}, m.local_index[agent(node, v.node)]);
    }
    // Phase 3: the agent for node M hands each local rank its run of M's blocks.
    for (int node = 0; node < m.nodes(); ++node) {
        if (node == v.node || agent(v.node, node) != rank) continue;
        const std::vector<size_t> &at = arrived_at[node];
        const size_t ks = m.members[node].size();
        for (int d = 0; d < v.k; ++d) {
            const size_t first = static_cast<size_t>(d) * ks;
            const Slice run = arrived[node].sub(at[first], at[first + ks] - at[first]);
            if (v.members()[d] != rank) {
                b.send(v.members()[d], run);
                continue;
            }
            for (size_t s = 0; s < ks; ++s)
                b.copy(received_block(a, m.members[node][s]),
                       arrived[node].sub(at[first + s], at[first + s + 1] - at[first + s]));
        }
    }
    for (int node = 0; node < m.nodes(); ++node) {
        if (node == v.node) continue;
        const int agg = agent(v.node, node);
        if (agg == rank) continue;
        const std::vector<int> &sources = m.members[node];
        size_t total = 0;
        for (int s : sources) total += a.recv_counts[s];
        const Slice run = b.scratch(total);
        b.recv(agg, run);
        size_t at = 0;
        for (int s : sources) {
            b.copy(received_block(a, s), run.sub(at, a.recv_counts[s]));
            at += a.recv_counts[s];
        }
    }
}

}  // namespace

extern const AlgorithmInfo kAlltoallvNodeAggregation = {
    Collective::alltoallv,
    "node_aggregation",
    "per node pair one aggregated message between agents spread over the local ranks and their rails, from the "
    "counts its node's ranks exchange first; for exchanges across nodes",
    "a node map, and the counts of its node's ranks (exchanged on communicators that span several nodes)",
    not_applicable,
    build,
    /*in_place_aliasing_safe=*/false};

}  // namespace loom
