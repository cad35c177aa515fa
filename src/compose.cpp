#include "compose.hpp"

#include <algorithm>

#include "selector.hpp"

namespace loom {

CollArgs sub_args(const CollArgs &parent, Collective c, int nranks, size_t count, bool one_node) {
    CollArgs s;
    s.collective = c;
    s.nranks = nranks;
    s.count = count;
    s.elem_size = parent.elem_size;
    s.segment_bytes = parent.segment_bytes;
    s.radix = parent.radix;
    s.max_outstanding = parent.max_outstanding;
    s.single_node = one_node;
    return s;
}

void build_sub_collective(ProgramBuilder &b, const CollArgs &sub, const std::vector<int> &ranks, int me, Slice input,
                          Slice output, int lane) {
    std::string why;
    const AlgorithmInfo *algo = nullptr;
    for (const char *name : default_preference(sub, &why)) {
        const AlgorithmInfo *a = find_algorithm(sub.collective, name);
        if (a && a->not_applicable(sub).empty()) {
            algo = a;
            break;
        }
    }
    if (!algo)
        for (const AlgorithmInfo *a : algorithms_for(sub.collective))
            if (a->not_applicable(sub).empty()) {
                algo = a;
                break;
            }
    b.push_group(ranks, input, output, lane);
    algo->build(sub, me, b);
    b.pop_group();
}

int index_in(const std::vector<int> &ranks, int rank) {
    auto it = std::find(ranks.begin(), ranks.end(), rank);
    return it == ranks.end() ? -1 : static_cast<int>(it - ranks.begin());
}

std::string needs_node_map(const CollArgs &a) {
    if (!a.nodes) return "needs to know which ranks share a node";
    if (a.nodes->nranks() != a.nranks) return "the node map has " + std::to_string(a.nodes->nranks()) + " ranks";
    return {};
}

}  // namespace loom
