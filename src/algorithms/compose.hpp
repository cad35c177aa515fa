// Building blocks of node-aware algorithms: a sub-collective over a group of
// ranks, run by whichever algorithm the sub-collective chooser picks for its
// shape, and the direct exchanges the hierarchical plans glue phases with.
#pragma once
#include <algorithm>
#include <vector>

#include "algorithms/algorithm.hpp"
#include "node_map.hpp"

namespace loom {

// Group-relative arguments for a phase of `parent` over `nranks` ranks;
// `one_node` when the group shares a node. The phase is built with the
// builder's knobs (build_sub_collective leaves out the ring pieces).
CollArgs sub_args(const CollArgs &parent, Collective c, int nranks, size_t count, bool one_node);

// Picks a sub-collective's algorithm. The selector installs its default
// rules here (select/selector.cpp), so that the algorithms need not include
// the layer above them; until one is installed, the first applicable
// algorithm in the registry's order runs. `knobs`: those the phase is built
// with (the model prices candidates with them). Returns the chooser it replaces.
using SubCollectiveChooser = const AlgorithmInfo *(*)(const CollArgs &sub, const PlanKnobs &knobs);
SubCollectiveChooser choose_sub_collectives_with(SubCollectiveChooser chooser);

// Appends the steps of `sub` (chosen by the sub-collective chooser) for this rank,
// group rank `me` of `ranks`, reading `input` and writing `output` (slices
// of the current buffers; they must not overlap). `lane` >= 0 sets the rail.
void build_sub_collective(ProgramBuilder &b, const CollArgs &sub, const std::vector<int> &ranks, int me, Slice input,
                          Slice output, int lane = -1);

// The step timeline's name of a sub-collective: "allreduce ring over 4",
// "reduce_scatter direct over 2 (node)".
std::string phase_name(const CollArgs &sub, const AlgorithmInfo &algorithm);

// The nodes' ranks and this rank's place, for the node-aware builders; the
// algorithms' restrictions guarantee a.nodes is set.
struct NodeView {
    const NodeMap &map;
    int node, local, k;  // this rank's node, its index there, the node's rank count
    const std::vector<int> &members() const { return map.members[node]; }
    NodeView(const CollArgs &a, int rank)
        : map(*a.nodes),
          node(map.node_of[rank]),
          local(map.local_index[rank]),
          k(static_cast<int>(map.members[map.node_of[rank]].size())) {}
};

// What rank `rank` learns of an alltoallv whose every count `matrix` holds
// (row s what rank s sends, p x p): the counts of its node's ranks (`nodes`;
// one node where null) and every rank's totals, as a rank's own call
// exchanges them.
template <typename Count>
NodeCounts node_counts_of(const Count *matrix, int nranks, const NodeMap *nodes, int rank) {
    const size_t p = static_cast<size_t>(nranks);
    NodeCounts n;
    n.node = nodes ? nodes->node_of[rank] : 0;
    n.ranks = p;
    const size_t k = nodes ? nodes->members[n.node].size() : p;
    auto member = [&](size_t i) { return nodes ? static_cast<size_t>(nodes->members[n.node][i]) : i; };
    n.counts.resize(2 * k * p);
    for (size_t i = 0; i < k; ++i)
        for (size_t peer = 0; peer < p; ++peer) {
            n.counts[i * p + peer] = static_cast<size_t>(matrix[member(i) * p + peer]);
            n.counts[(k + i) * p + peer] = static_cast<size_t>(matrix[peer * p + member(i)]);
        }
    for (size_t b = 0; b < p * p; ++b) {
        n.total += static_cast<size_t>(matrix[b]);
        n.largest = std::max(n.largest, static_cast<size_t>(matrix[b]));
    }
    return n;
}
// The same from the model's description, a.count_matrix and a.nodes.
NodeCounts node_counts_from_matrix(const CollArgs &a, int rank);

// Restriction shared by the node-aware algorithms: a node map (any number
// of nodes, one included, any ranks per node). Communicators on one node
// pass none, so there they are forced only through a topology parameter.
std::string needs_node_map(const CollArgs &a);
// The rail-aligned ones (rail_ring): a node map whose nodes all hold as many ranks.
std::string needs_uniform_node_map(const CollArgs &a);

}  // namespace loom
