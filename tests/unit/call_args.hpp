// CollArgs for a call in tests: collective, ranks, count and element size
// (reduce_scatter gets `count` for every rank, the vector collectives
// `count` per block).
#pragma once
#include "algorithms/algorithm.hpp"
#include "core/plan.hpp"

namespace loom {

inline CollArgs args(Collective c, int p, size_t count, size_t elem = 4) {
    CollArgs a;
    a.collective = c;
    a.nranks = p;
    a.count = count;
    a.elem_size = elem;
    if (c == Collective::reduce_scatter) a.recv_counts.assign(p, count);
    if (is_vector_collective(c)) set_uniform_blocks(a, count);  // every block `count`, in rank order
    return a;
}

// The algorithms whose plan is the whole collective: every one but the
// shared slots and the node slots, which tests/unit/test_shared_slots.cpp
// checks with their slot phases; all or of one collective.
inline std::vector<const AlgorithmInfo *> plan_algorithms(int collective = -1) {
    std::vector<const AlgorithmInfo *> out;
    for (const AlgorithmInfo *a : all_algorithms())
        if (a->path == CallPath::plan && (collective < 0 || static_cast<int>(a->collective) == collective))
            out.push_back(a);
    return out;
}

}  // namespace loom
