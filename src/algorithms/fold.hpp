// Shared piece of the power-of-radix algorithms (recursive doubling, halving,
// multiplying): folding a communicator of any size onto a power of the radix.
// Ranks 0..core-1 take part in the core exchange; every other rank r hands its
// data to rank r % core before and gets the result back after.
#pragma once
#include <vector>

#include "core/plan.hpp"

namespace loom {

struct Fold {
    Fold(int nranks, int radix = 2);
    int nranks, core;
    bool in_core(int rank) const { return rank < core; }
    int carrier(int rank) const { return rank % core; }  // for ranks outside the core
    // Ranks outside the core that `rank` carries, in increasing order.
    std::vector<int> carried(int rank) const;
};

// Largest power of `radix` not above n (n >= 1).
int largest_power_at_most(int n, int radix);
bool is_power_of_two(int n);

}  // namespace loom
