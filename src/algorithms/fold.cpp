#include "algorithms/fold.hpp"

namespace loom {

int largest_power_at_most(int n, int radix) {
    int p = 1;
    while (static_cast<long long>(p) * radix <= n) p *= radix;
    return p;
}

bool is_power_of_two(int n) { return n > 0 && (n & (n - 1)) == 0; }

Fold::Fold(int n, int radix) : nranks(n), core(largest_power_at_most(n, radix)) {}

std::vector<int> Fold::carried(int rank) const {
    std::vector<int> out;
    if (rank < core)
        for (int r = rank + core; r < nranks; r += core) out.push_back(r);
    return out;
}

}  // namespace loom
