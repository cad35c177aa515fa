// Node symmetry for the cost model. On nodes of one size, the programs of
// most algorithms map onto themselves when every rank moves to the same local
// index of another node: a ring or a pairwise exchange by a translation of
// the node numbers, a recursive exchange by an exclusive or. Then every node
// runs node 0's timeline, and simulating node 0's ranks alone, with each
// message to or from another node matched against node 0's image of it,
// prices the whole call: at 16384 ranks, 8 per node, 8 programs instead of
// 16384.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "algorithms/algorithm.hpp"
#include "node_map.hpp"
#include "select/program_builds.hpp"

namespace loom {

struct NodeSymmetry {
    enum class Kind { translation, exclusive_or };
    Kind kind = Kind::translation;
    const NodeMap *nodes = nullptr;

    // The node that group element `by` takes `node` to.
    int moved(int node, int by) const { return kind == Kind::translation ? (node + by) % nodes->nodes() : node ^ by; }
    // The element that takes `node` to node 0.
    int to_origin(int node) const {
        return kind == Kind::translation ? (nodes->nodes() - node) % nodes->nodes() : node;
    }
    int moved_rank(int rank, int by) const {
        return nodes->members[moved(nodes->node_of[rank], by)][nodes->local_index[rank]];
    }
    // Node 0's rank that stands for `rank`.
    int representative(int rank) const { return nodes->members[0][nodes->local_index[rank]]; }
};

// The symmetry under which `algo`'s programs for `args` map onto themselves,
// checked by comparing the programs of node 0's first and last rank
// (`first`, `last`) with those of their images on a sample of other nodes
// (maps_onto in node_symmetry.cpp). False, with the reason in `why`, where
// none holds: nodes of unequal size, a single node, a plan that visits the
// nodes in one order for all. Only sampled ranks are compared: a plan that
// differs elsewhere (counts skewed toward other ranks) shows in the
// simulation as messages that do not match, which then declines too.
bool find_node_symmetry(const AlgorithmInfo &algo, const CollArgs &args, const PlanKnobs &knobs, const Program &first,
                        const Program &last, NodeSymmetry *out, std::string *why);

}  // namespace loom
