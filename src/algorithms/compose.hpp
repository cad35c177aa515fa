// Building blocks of node-aware algorithms: a sub-collective over a group of
// ranks, run by whichever algorithm the sub-collective chooser picks for its
// shape, and the direct exchanges the hierarchical plans glue phases with.
#pragma once
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

// Restriction shared by the node-aware algorithms: a node map (any number
// of nodes, one included, any ranks per node). Communicators on one node
// pass none, so there they are forced only through a topology parameter.
std::string needs_node_map(const CollArgs &a);
// The rail-aligned ones (rail_ring): a node map whose nodes all hold as many ranks.
std::string needs_uniform_node_map(const CollArgs &a);

}  // namespace loom
