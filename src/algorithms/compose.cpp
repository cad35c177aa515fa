#include "algorithms/compose.hpp"

#include <cstdio>
#include <cstdlib>

namespace loom {
namespace {

SubCollectiveChooser sub_chooser = nullptr;

const AlgorithmInfo &choose_sub_collective(const CollArgs &sub, const PlanKnobs &knobs) {
    if (sub_chooser)
        if (const AlgorithmInfo *chosen = sub_chooser(sub, knobs)) return *chosen;
    for (const AlgorithmInfo *algo : algorithms_for(sub.collective))
        if (algo->build && why_not_applicable(*algo, sub).empty()) return *algo;
    // Every collective has flat algorithms that run anywhere on host memory.
    std::fprintf(stderr, "loom: internal error: no %s algorithm builds %s\n", collective_name(sub.collective),
                 sub.describe().c_str());
    std::abort();
}

}  // namespace

SubCollectiveChooser choose_sub_collectives_with(SubCollectiveChooser chooser) {
    const SubCollectiveChooser before = sub_chooser;
    sub_chooser = chooser;
    return before;
}

CollArgs sub_args(const CollArgs &parent, Collective c, int nranks, size_t count, bool one_node) {
    CollArgs s;
    s.collective = c;
    s.nranks = nranks;
    s.count = count;
    s.elem_size = parent.elem_size;
    s.single_node = one_node;
    return s;
}

void build_sub_collective(ProgramBuilder &b, const CollArgs &sub, const std::vector<int> &ranks, int me, Slice input,
                          Slice output, int lane) {
    // Sub-arguments carry no node map, so the node-aware algorithms never
    // apply here and the flat ones (some always applicable) are chosen.
    // The parent's knobs, but not its ring pieces: those were sized for its own blocks.
    const PlanKnobs parent = b.knobs();
    PlanKnobs knobs = parent;
    knobs.ring_piece_bytes = 0;
    const AlgorithmInfo &chosen = choose_sub_collective(sub, knobs);
    b.set_knobs(knobs);
    b.push_group(ranks, input, output, lane, phase_name(sub, chosen));
    chosen.build(sub, me, b);
    b.pop_group();
    b.set_knobs(parent);
}

std::string phase_name(const CollArgs &sub, const AlgorithmInfo &algorithm) {
    std::string name = collective_name(sub.collective);
    name += ' ';
    name += algorithm.name;
    name += " over " + std::to_string(sub.nranks);
    if (sub.single_node) name += " (node)";
    return name;
}

NodeCounts node_counts_from_matrix(const CollArgs &a, int rank) {
    return node_counts_of(a.count_matrix.data(), a.nranks, a.nodes, rank);
}

std::string needs_node_map(const CollArgs &a) {
    if (!a.nodes) return "needs to know which ranks share a node";
    if (a.nodes->nranks() != a.nranks) return "the node map has " + std::to_string(a.nodes->nranks()) + " ranks";
    return {};
}

std::string needs_uniform_node_map(const CollArgs &a) {
    std::string why = needs_node_map(a);
    if (why.empty() && !a.nodes->uniform()) why = "needs the same number of ranks on every node";
    return why;
}

}  // namespace loom
