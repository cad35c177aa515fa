// The emulated topologies the node-aware algorithms' tests run on.
#pragma once
#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "node_map.hpp"

namespace loom::testing {

// For p ranks: one node, two nodes of consecutive ranks, up to four nodes
// with two rails, and uneven nodes (sizes 3, 1, 2, 3, 1, 2 ...) whose ranks
// are shuffled, so a node's ranks are neither consecutive nor in order.
inline std::vector<NodeMap> emulated_topologies(int p) {
    std::vector<NodeMap> maps;
    NodeMap m;
    if (NodeMap::parse("nodes=1", p, &m) == LOOM_SUCCESS) maps.push_back(m);
    if (p < 2) return maps;
    if (NodeMap::parse("nodes=2", p, &m) == LOOM_SUCCESS) maps.push_back(m);
    if (NodeMap::parse("nodes=" + std::to_string(std::min(4, p)) + ",rails=2", p, &m) == LOOM_SUCCESS)
        maps.push_back(m);
    std::vector<int> labels;
    const int sizes[] = {3, 1, 2};
    for (int node = 0; static_cast<int>(labels.size()) < p; ++node)
        for (int i = 0; i < sizes[node % 3] && static_cast<int>(labels.size()) < p; ++i) labels.push_back(node);
    std::mt19937 shuffle(static_cast<unsigned>(p));
    std::shuffle(labels.begin(), labels.end(), shuffle);
    maps.push_back(NodeMap::from_labels(labels));
    return maps;
}

}  // namespace loom::testing
