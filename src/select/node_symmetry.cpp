#include "select/node_symmetry.hpp"

#include <algorithm>

namespace loom {
namespace {

bool close_counts(size_t x, size_t y) {
    const size_t larger = std::max(x, y), gap = larger - std::min(x, y);
    return gap <= std::max<size_t>(1, larger / 100);
}

// Whether `moved` is `origin` with every peer moved by `by`: the same
// messages in the same order (kind, peer moved, lane, count), and as many
// bytes copied and reduced. The dependencies may differ where a rank's
// blocks sit elsewhere in its buffers (a rotation by the rank, as in
// Bruck's algorithm): the comparison with the simulation of every rank
// (test_cost_model.cpp) is what shows the timelines alike.
bool maps_onto(const Program &origin, const Program &moved, const NodeSymmetry &sym, int by) {
    size_t local_a = 0, local_b = 0;
    size_t i = 0, j = 0;
    const auto next_message = [](const Program &p, size_t &at, size_t &local) -> const Step * {
        for (; at < p.steps.size(); ++at) {
            const Step &s = p.steps[at];
            if (s.kind == StepKind::send || s.kind == StepKind::recv) return &p.steps[at++];
            if (s.kind == StepKind::copy || s.kind == StepKind::reduce) local += s.dst.count;
        }
        return nullptr;
    };
    for (;;) {
        const Step *a = next_message(origin, i, local_a), *b = next_message(moved, j, local_b);
        if (!a || !b) {
            if (a || b) return false;
            break;
        }
        const size_t count_a = a->kind == StepKind::send ? a->src.count : a->dst.count;
        const size_t count_b = b->kind == StepKind::send ? b->src.count : b->dst.count;
        if (a->kind != b->kind || a->lane != b->lane || sym.moved_rank(a->peer, by) != b->peer ||
            !close_counts(count_a, count_b))
            return false;
    }
    return close_counts(local_a, local_b);
}

// A few group elements spread over the nodes, with node 0's first and last
// rank: enough to catch a plan that treats some node or local rank apart (a
// root, a leader node, a last node that is short, a node's first or last
// rank). Building the programs is most of a prediction's time at scale, so
// only these.
std::vector<int> spread_over(int n, std::initializer_list<int> picks) {
    std::vector<int> out;
    for (int m : picks)
        if (m >= 0 && m < n && std::find(out.begin(), out.end(), m) == out.end()) out.push_back(m);
    return out;
}

}  // namespace

bool find_node_symmetry(const AlgorithmInfo &algo, const CollArgs &args, const PlanKnobs &knobs, const Program &first,
                        const Program &last, NodeSymmetry *out, std::string *why) {
    const NodeMap *nodes = args.nodes;
    if (!nodes || nodes->nranks() != args.nranks || nodes->nodes() < 2) {
        *why = "one node";
        return false;
    }
    if (!nodes->uniform()) {
        *why = "nodes of unequal size";
        return false;
    }
    const int n = nodes->nodes();
    const bool power_of_two = (n & (n - 1)) == 0;
    for (NodeSymmetry::Kind kind : {NodeSymmetry::Kind::translation, NodeSymmetry::Kind::exclusive_or}) {
        if (kind == NodeSymmetry::Kind::exclusive_or && !power_of_two) continue;
        NodeSymmetry sym;
        sym.kind = kind;
        sym.nodes = nodes;
        bool holds = true;
        const std::vector<int> &origin = nodes->members[0];
        const bool one_per_node = origin.size() == 1;
        for (int by : spread_over(n, {1, n - 1, n / 2})) {
            std::vector<int> ranks = {sym.moved_rank(origin.front(), by)};
            if (!one_per_node) ranks.push_back(sym.moved_rank(origin.back(), by));
            // An image longer than node 0's plans is cut one step past them: it cannot map.
            const std::vector<std::unique_ptr<Program>> moved =
                programs_of(algo, args, knobs, ranks, std::max(first.size(), last.size()) + 1);
            holds = !moved[0]->truncated && maps_onto(first, *moved[0], sym, by) &&
                    (one_per_node || (!moved[1]->truncated && maps_onto(last, *moved[1], sym, by)));
            if (!holds) break;
        }
        if (holds) {
            *out = sym;
            return true;
        }
    }
    *why = std::string("the plans of ") + algo.name + " differ from node to node beyond a translation" +
           (power_of_two ? " or an exclusive or" : "") + " of the nodes";
    return false;
}

}  // namespace loom
