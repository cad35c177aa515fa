// Sums whose bits do not depend on the order of the additions (the
// reproducible parameter). Each floating value is cut into parts on fixed
// grids: bin b holds whole multiples of 2^(32 b), the value truncated to that
// grid minus its truncation to the next coarser one. A sum keeps, per bin,
// the exact sum of its values' parts, as an integer count of the bin's unit:
// such additions are exact while fewer than 2^21 values meet, so every order,
// tree, chunking or algorithm of additions ends with the same bins. A sum
// keeps the three bins from its largest value's down (64 bits and more below
// that value's leading bit); the parts of smaller values that fall below
// them are dropped on every path alike, so the error is at most a few units
// of 2^-64 of the largest value per value, plus the result's rounding. This
// is pre-rounding after Demmel and Nguyen, with fixed bins as in ReproBLAS's
// binned numbers. Infinities and NaNs are kept as flags: the result is an
// infinity of their sign, or the default quiet NaN; zeros of either sign sum
// to +0.
#pragma once
#include <cstddef>
#include <cstdint>

#include "core/status.hpp"
#include "loom.h"

namespace loom {

struct ExactSum {
    static constexpr int kBins = 3;
    static constexpr int kBinBits = 32;
    // top: the bin number of count[0] (count[j] is bin top - j's); kEmpty
    // for a sum of zeros, kSpecial where an infinity or NaN met it: then
    // count[0] says which (exact_sum.cpp's flags).
    static constexpr int64_t kEmpty = INT64_MIN;
    static constexpr int64_t kSpecial = INT64_MAX;
    double count[kBins];
    int64_t top;
};
static_assert(sizeof(ExactSum) == 32, "an exact sum's layout is part of the wire format between ranks");

// The most ranks whose values one exact sum can take (2^53 over a part's 2^32).
constexpr int kExactSumMaxRanks = 1 << 20;

// The types an exact sum takes: float, double, float16, bfloat16 and their
// complex forms; long double is wider than the parts' doubles.
bool exact_sum_type(loom_datatype_t type);
// Exact sums per element of `type` (2 for a complex one).
size_t exact_sums_per_element(loom_datatype_t type);
// count elements of `type` into count * exact_sums_per_element(type) sums.
void exact_sum_encode(loom_datatype_t type, const void *in, size_t count, ExactSum *out);
// The other way, rounded once from the exact sum to a double, then to `type`.
void exact_sum_decode(loom_datatype_t type, const ExactSum *in, size_t count, void *out);
// dst[i] += src[i] for i < n sums (a ReduceFn).
void exact_sum_add(void *dst, const void *src, size_t n);

}  // namespace loom
