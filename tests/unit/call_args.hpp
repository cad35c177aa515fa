// CollArgs for a call in tests: collective, ranks, count and element size
// (reduce_scatter gets `count` for every rank).
#pragma once
#include "core/plan.hpp"

namespace loom {

inline CollArgs args(Collective c, int p, size_t count, size_t elem = 4) {
    CollArgs a;
    a.collective = c;
    a.nranks = p;
    a.count = count;
    a.elem_size = elem;
    if (c == Collective::reduce_scatter) a.recv_counts.assign(p, count);
    return a;
}

}  // namespace loom
