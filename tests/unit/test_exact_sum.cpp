// Exact sums (the reproducible parameter): any order or tree of additions
// gives the same bits; the result is the sum within a rounding; what no
// order can change (infinities, overflow of the true sum) comes out as IEEE
// says.
#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "core/datatype.hpp"
#include "core/exact_sum.hpp"

namespace loom {
namespace {

// Adds `values` (one exact sum each) in a random tree drawn from `rng`.
double sum_in_random_tree(const std::vector<ExactSum> &values, std::mt19937 &rng) {
    std::vector<ExactSum> pool = values;
    while (pool.size() > 1) {
        std::uniform_int_distribution<size_t> pick(0, pool.size() - 1);
        const size_t a = pick(rng);
        size_t b = pick(rng);
        while (b == a) b = pick(rng);
        exact_sum_add(&pool[a], &pool[b], 1);
        pool.erase(pool.begin() + static_cast<std::ptrdiff_t>(b));
    }
    double out = 0;
    exact_sum_decode(LOOM_DOUBLE, pool.data(), 1, &out);
    return out;
}

std::vector<ExactSum> encoded(const std::vector<double> &v) {
    std::vector<ExactSum> s(v.size());
    exact_sum_encode(LOOM_DOUBLE, v.data(), v.size(), s.data());
    return s;
}

TEST(ExactSum, EveryTreeOfAdditionsGivesTheSameBits) {
    std::mt19937 rng(20261207);
    for (int trial = 0; trial < 200; ++trial) {
        const int n = std::uniform_int_distribution<int>(1, 40)(rng);
        std::vector<double> v;
        for (int i = 0; i < n; ++i) {
            double x = std::ldexp(std::uniform_real_distribution<double>(1, 2)(rng),
                                  std::uniform_int_distribution<int>(-80, 80)(rng));
            if (rng() & 1) x = -x;
            if (i % 4 == 0) x += (i % 8 ? 1e22 : -1e22);               // large values that cancel
            if (i == 3 && trial % 7 == 0) x = std::ldexp(1.0, -1070);  // a subnormal's neighbour
            v.push_back(x);
        }
        const std::vector<ExactSum> s = encoded(v);
        const double first = sum_in_random_tree(s, rng);
        for (int order = 0; order < 10; ++order) {
            const double again = sum_in_random_tree(s, rng);
            ASSERT_EQ(std::memcmp(&first, &again, sizeof first), 0) << first << " then " << again;
        }
        // Within a rounding of the true sum (long double, sorted by magnitude,
        // is exact enough here only for the check's tolerance).
        std::vector<long double> sorted(v.begin(), v.end());
        std::sort(sorted.begin(), sorted.end(),
                  [](long double a, long double b) { return std::fabs(a) < std::fabs(b); });
        long double reference = 0, magnitude = 0;
        for (long double x : sorted) reference += x, magnitude += std::fabs(x);
        EXPECT_LE(std::fabs(first - reference), 0x1p-52L * std::fabs(reference) + 0x1p-62L * magnitude)
            << "trial " << trial;
    }
}

TEST(ExactSum, KeepsWhatAPlainSumLoses) {
    // 1e16 + 1 - 1e16 is 0 in doubles added in this order, 1 exactly.
    const std::vector<ExactSum> s = encoded({1e16, 1.0, -1e16});
    ExactSum acc = s[0];
    exact_sum_add(&acc, &s[1], 1);
    exact_sum_add(&acc, &s[2], 1);
    double out = 0;
    exact_sum_decode(LOOM_DOUBLE, &acc, 1, &out);
    EXPECT_EQ(out, 1.0);
    // Near the top of the range: DBL_MAX + DBL_MAX - DBL_MAX overflows in
    // doubles in that order; exact sums hold it.
    const std::vector<ExactSum> big = encoded({DBL_MAX, DBL_MAX, -DBL_MAX});
    ExactSum b = big[0];
    exact_sum_add(&b, &big[1], 1);
    exact_sum_add(&b, &big[2], 1);
    exact_sum_decode(LOOM_DOUBLE, &b, 1, &out);
    EXPECT_EQ(out, DBL_MAX);
    // A true sum past the range is an infinity, whatever the order.
    exact_sum_add(&b, &big[0], 1);
    exact_sum_decode(LOOM_DOUBLE, &b, 1, &out);
    EXPECT_EQ(out, INFINITY);
}

TEST(ExactSum, InfinitiesAndNansWinWhateverTheOrder) {
    const std::vector<ExactSum> s = encoded({1.0, INFINITY, -2.0, 0.0});
    ExactSum acc = s[3];
    for (int i : {0, 1, 2}) exact_sum_add(&acc, &s[static_cast<size_t>(i)], 1);
    double out = 0;
    exact_sum_decode(LOOM_DOUBLE, &acc, 1, &out);
    EXPECT_EQ(out, INFINITY);
    const std::vector<ExactSum> both = encoded({INFINITY, -INFINITY});
    acc = both[0];
    exact_sum_add(&acc, &both[1], 1);
    exact_sum_decode(LOOM_DOUBLE, &acc, 1, &out);
    EXPECT_TRUE(std::isnan(out));
    // NaNs are flags: no payload or sign depends on the order.
    const double payload = -std::nan("7");
    const std::vector<ExactSum> mixed = encoded({INFINITY, -INFINITY, payload});
    ExactSum left = mixed[0], right = mixed[1];
    exact_sum_add(&left, &mixed[1], 1);
    exact_sum_add(&left, &mixed[2], 1);
    exact_sum_add(&right, &mixed[2], 1);
    exact_sum_add(&right, &mixed[0], 1);
    double l = 0, r = 0;
    exact_sum_decode(LOOM_DOUBLE, &left, 1, &l);
    exact_sum_decode(LOOM_DOUBLE, &right, 1, &r);
    EXPECT_TRUE(std::isnan(l));
    EXPECT_EQ(std::memcmp(&l, &r, sizeof l), 0);
    // Zeros of either sign sum to +0.
    const std::vector<ExactSum> zeros = encoded({-0.0, -0.0});
    acc = zeros[0];
    exact_sum_add(&acc, &zeros[1], 1);
    exact_sum_decode(LOOM_DOUBLE, &acc, 1, &out);
    EXPECT_EQ(out, 0.0);
    EXPECT_FALSE(std::signbit(out));
}

TEST(ExactSum, EveryTypeComesBackAsItWent) {
    const float f[3] = {1.5f, -3.25e-20f, 7e30f};
    const double c[4] = {1.0, -2.5, 1e-300, -1e300};  // two complex values
    const uint16_t h[2] = {0x3c00, 0xc400};           // float16 1, -4
    const uint16_t bf[2] = {0x3f80, 0x4120};          // bfloat16 1, 10
    ExactSum s[4];
    float f_out[3];
    double c_out[4];
    uint16_t h_out[2], bf_out[2];
    exact_sum_encode(LOOM_FLOAT, f, 3, s);
    exact_sum_decode(LOOM_FLOAT, s, 3, f_out);
    EXPECT_EQ(std::memcmp(f, f_out, sizeof f), 0);
    ASSERT_EQ(exact_sums_per_element(LOOM_C_DOUBLE_COMPLEX), 2u);
    exact_sum_encode(LOOM_C_DOUBLE_COMPLEX, c, 2, s);
    exact_sum_decode(LOOM_C_DOUBLE_COMPLEX, s, 2, c_out);
    EXPECT_EQ(std::memcmp(c, c_out, sizeof c), 0);
    exact_sum_encode(LOOM_FLOAT16, h, 2, s);
    exact_sum_decode(LOOM_FLOAT16, s, 2, h_out);
    EXPECT_EQ(std::memcmp(h, h_out, sizeof h), 0);
    exact_sum_encode(LOOM_BFLOAT16, bf, 2, s);
    exact_sum_decode(LOOM_BFLOAT16, s, 2, bf_out);
    EXPECT_EQ(std::memcmp(bf, bf_out, sizeof bf), 0);
    EXPECT_FALSE(exact_sum_type(LOOM_LONG_DOUBLE));
    EXPECT_FALSE(exact_sum_type(LOOM_INT32));
}

TEST(ExactSum, IsLoomsOwnTypeNeverAUsers) {
    ASSERT_NE(datatype_info(kExactSumType), nullptr);
    EXPECT_EQ(datatype_info(kExactSumType)->size, sizeof(ExactSum));
    EXPECT_EQ(check_datatype(kExactSumType), LOOM_ERR_INVALID_DATATYPE);
    EXPECT_EQ(reduction_kernel(kExactSumType, LOOM_SUM), &exact_sum_add);
    EXPECT_EQ(reduction_kernel(kExactSumType, LOOM_PROD), nullptr);
}

}  // namespace
}  // namespace loom
