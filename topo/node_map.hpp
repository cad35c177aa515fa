// Which ranks of a communicator share a node: the node of every rank, each
// node's members, every rank's index among them, and a rail count. Comes
// from the machine (shared-memory locality, host names) or from an emulated
// topology ("nodes=4", or an explicit map "0,0,1,1,1,2", plus "rails=2"),
// so node-aware algorithms run and are tested on one machine.
#pragma once
#include <string>
#include <vector>

#include "core/params.hpp"
#include "core/status.hpp"

namespace loom {

extern const ParamId kParamTopology;

struct NodeMap {
    std::vector<int> node_of;               // per communicator rank, nodes numbered by first appearance
    std::vector<std::vector<int>> members;  // per node: its communicator ranks, ascending
    std::vector<int> local_index;           // per rank: its index in members[node_of[rank]]
    int rails = 1;                          // network rails per node (lanes of the inter-node phases)
    bool emulated = false;

    int nranks() const { return static_cast<int>(node_of.size()); }
    int nodes() const { return static_cast<int>(members.size()); }
    int ranks_on(int node) const { return static_cast<int>(members[node].size()); }
    int max_ranks_per_node() const;
    // The rank of `node` at local index `index` modulo its size: how the
    // node-aware plans spread a role over a node's ranks.
    int pick(int node, size_t index) const { return members[node][index % members[node].size()]; }
    bool uniform() const;  // every node has the same number of ranks
    // "2 nodes: [0 2] [1 3]" for messages and loom-info.
    std::string describe() const;

    // From any node label per rank (host ids, emulated node numbers).
    static NodeMap from_labels(const std::vector<int> &labels, int rails = 1);
    // Every rank on one node.
    static NodeMap single_node(int nranks);
    // "nodes=N[,rails=R]" (consecutive ranks, as even as possible, the first
    // nodes one larger), "L0,L1,...[;rails=R]" (a label per rank), or "".
    // Errors name what is wrong.
    static Status parse(const std::string &spec, int nranks, NodeMap *out);
};

}  // namespace loom
