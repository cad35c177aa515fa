// Reduction kernels and datatype rules, checked against hand-computed values.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <cstring>
#include <limits>

#include "core/datatype.hpp"
#include "reference.hpp"

namespace loom {
namespace {

template <typename T>
std::vector<T> reduce(loom_datatype_t type, loom_op_t op, std::vector<T> a, const std::vector<T> &b) {
    ReduceFn fn = reduction_kernel(type, op);
    EXPECT_NE(fn, nullptr);
    if (fn) fn(a.data(), b.data(), a.size());
    return a;
}

TEST(Kernels, IntegerSumWrapsAroundInsteadOfSaturating) {
    // Open MPI 4.1.4's op/avx saturates 8-bit SUM; MPI's C semantics wrap.
    EXPECT_EQ(reduce<int8_t>(LOOM_INT8, LOOM_SUM, {100, -100, 127}, {100, -100, 1}),
              (std::vector<int8_t>{-56, 56, -128}));
    EXPECT_EQ(reduce<uint8_t>(LOOM_UINT8, LOOM_SUM, {200, 255}, {100, 1}), (std::vector<uint8_t>{44, 0}));
    EXPECT_EQ(reduce<int8_t>(LOOM_CHAR, LOOM_SUM, {120}, {10}), (std::vector<int8_t>{-126}));
    EXPECT_EQ(reduce<int32_t>(LOOM_INT32, LOOM_SUM, {std::numeric_limits<int32_t>::max()}, {1}),
              (std::vector<int32_t>{std::numeric_limits<int32_t>::min()}));
    EXPECT_EQ(reduce<int16_t>(LOOM_INT16, LOOM_PROD, {300}, {300}),
              (std::vector<int16_t>{static_cast<int16_t>(90000 - 131072)}));
    EXPECT_EQ(reduce<uint64_t>(LOOM_UINT64, LOOM_PROD, {1ULL << 63}, {2}), (std::vector<uint64_t>{0}));
}

TEST(Kernels, LogicalAndBitwise) {
    EXPECT_EQ(reduce<int32_t>(LOOM_INT32, LOOM_LAND, {0, 5, 5, 0}, {0, 0, 7, 3}), (std::vector<int32_t>{0, 0, 1, 0}));
    EXPECT_EQ(reduce<int32_t>(LOOM_INT32, LOOM_LOR, {0, 5, 5, 0}, {0, 0, 7, 3}), (std::vector<int32_t>{0, 1, 1, 1}));
    EXPECT_EQ(reduce<int32_t>(LOOM_INT32, LOOM_LXOR, {0, 5, 5, 0}, {0, 0, 7, 3}), (std::vector<int32_t>{0, 1, 0, 1}));
    EXPECT_EQ(reduce<uint8_t>(LOOM_BYTE, LOOM_BXOR, {0xf0, 0xff}, {0x0f, 0x0f}), (std::vector<uint8_t>{0xff, 0xf0}));
    EXPECT_EQ(reduce<uint8_t>(LOOM_BOOL, LOOM_LAND, {1, 1, 0}, {1, 0, 0}), (std::vector<uint8_t>{1, 0, 0}));
}

TEST(Kernels, FloatingMinMaxSumProd) {
    EXPECT_EQ(reduce<double>(LOOM_DOUBLE, LOOM_MIN, {1.5, -2}, {-1, 3}), (std::vector<double>{-1, -2}));
    EXPECT_EQ(reduce<float>(LOOM_FLOAT, LOOM_MAX, {1.5f, -2}, {-1, 3}), (std::vector<float>{1.5f, 3}));
    EXPECT_EQ(reduce<long double>(LOOM_LONG_DOUBLE, LOOM_SUM, {1.25L}, {2.5L})[0], 3.75L);
    auto c = reduce<std::complex<double>>(LOOM_C_DOUBLE_COMPLEX, LOOM_PROD, {{1, 2}}, {{3, -1}});
    EXPECT_EQ(c[0], std::complex<double>(5, 5));
}

TEST(Kernels, MinLocMaxLocBreakTiesByLowestIndex) {
    std::vector<TwoInt> a = {{3, 7}, {3, 2}, {1, 9}}, b = {{3, 4}, {3, 5}, {2, 0}};
    auto lo = reduce<TwoInt>(LOOM_2INT, LOOM_MINLOC, a, b);
    EXPECT_EQ(lo[0].index, 4);
    EXPECT_EQ(lo[1].index, 2);
    EXPECT_EQ(lo[2].value, 1);
    EXPECT_EQ(lo[2].index, 9);
    auto hi = reduce<TwoInt>(LOOM_2INT, LOOM_MAXLOC, a, b);
    EXPECT_EQ(hi[0].index, 4);
    EXPECT_EQ(hi[2].value, 2);
    EXPECT_EQ(hi[2].index, 0);
    std::vector<DoubleInt> d = {{-1.0, 3}}, e = {{-1.0, 1}};
    EXPECT_EQ(reduce<DoubleInt>(LOOM_DOUBLE_INT, LOOM_MINLOC, d, e)[0].index, 1);
}

TEST(ReducedFloats, Fp16ConversionRoundsToNearestEven) {
    EXPECT_EQ(float_to_fp16(1.0f), 0x3c00);
    EXPECT_EQ(float_to_fp16(-2.0f), 0xc000);
    EXPECT_EQ(float_to_fp16(65504.0f), 0x7bff);
    EXPECT_EQ(float_to_fp16(65520.0f), 0x7c00);  // halfway to the next: ties to even = inf
    EXPECT_EQ(float_to_fp16(1e-8f), 0x0000);
    EXPECT_EQ(float_to_fp16(std::ldexp(1.0f, -24)), 0x0001);             // smallest subnormal
    EXPECT_EQ(float_to_fp16(1.0f + std::ldexp(1.0f, -11)), 0x3c00);      // tie, even stays
    EXPECT_EQ(float_to_fp16(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);  // tie, odd rounds up
    EXPECT_TRUE(std::isnan(fp16_to_float(float_to_fp16(std::nanf("")))));
    for (uint32_t h = 0; h < 0x7c00; ++h)  // every finite half round-trips
        ASSERT_EQ(float_to_fp16(fp16_to_float(static_cast<uint16_t>(h))), h) << h;
}

TEST(ReducedFloats, Bf16ConversionRoundsToNearestEven) {
    EXPECT_EQ(float_to_bf16(1.0f), 0x3f80);
    EXPECT_EQ(bf16_to_float(0x3f80), 1.0f);
    EXPECT_EQ(float_to_bf16(1.0f + std::ldexp(1.0f, -8)), 0x3f80);      // tie to even
    EXPECT_EQ(float_to_bf16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3f82);  // tie, odd rounds up
    EXPECT_TRUE(std::isnan(bf16_to_float(float_to_bf16(std::nanf("")))));
    const uint16_t one = float_to_bf16(1.5f), two = float_to_bf16(2.25f);
    auto sum = reduce<uint16_t>(LOOM_BFLOAT16, LOOM_SUM, {one}, {two});
    EXPECT_EQ(bf16_to_float(sum[0]), 3.75f);
    auto hsum = reduce<uint16_t>(LOOM_FLOAT16, LOOM_SUM, {float_to_fp16(1.5f)}, {float_to_fp16(2.25f)});
    EXPECT_EQ(fp16_to_float(hsum[0]), 3.75f);
}

TEST(DatatypeRules, UndefinedPairsAreRejectedWithAClearMessage) {
    EXPECT_EQ(check_reduction(LOOM_C_DOUBLE_COMPLEX, LOOM_MAX), LOOM_ERR_INVALID_OP);
    EXPECT_NE(std::string(last_error_message()).find("max is not defined for datatype double_complex"),
              std::string::npos)
        << last_error_message();
    EXPECT_EQ(check_reduction(LOOM_FLOAT, LOOM_BAND), LOOM_ERR_INVALID_OP);
    EXPECT_EQ(check_reduction(LOOM_BYTE, LOOM_SUM), LOOM_ERR_INVALID_OP);
    EXPECT_EQ(check_reduction(LOOM_INT, LOOM_MINLOC), LOOM_ERR_INVALID_OP);
    EXPECT_EQ(check_reduction(LOOM_2INT, LOOM_SUM), LOOM_ERR_INVALID_OP);
    EXPECT_EQ(check_reduction(static_cast<loom_datatype_t>(999), LOOM_SUM), LOOM_ERR_INVALID_DATATYPE);
    EXPECT_EQ(check_reduction(LOOM_INT, static_cast<loom_op_t>(-3)), LOOM_ERR_INVALID_OP);
    EXPECT_EQ(check_reduction(LOOM_INT, LOOM_SUM), LOOM_SUCCESS);
}

// The test-side model of valid pairs and the library's table agree exactly.
TEST(DatatypeRules, KernelTableMatchesMpiRules) {
    for (const testing::TypeCase &t : testing::all_type_cases()) {
        const DatatypeInfo *info = datatype_info(t.type);
        ASSERT_NE(info, nullptr);
        EXPECT_EQ(info->size, t.size) << t.name;
        EXPECT_EQ(std::string(info->name), t.name);
        for (int op = 0; op < LOOM_OP_COUNT; ++op)
            EXPECT_EQ(reduction_kernel(t.type, static_cast<loom_op_t>(op)) != nullptr,
                      t.valid(static_cast<loom_op_t>(op)))
                << t.name << " " << op_name(static_cast<loom_op_t>(op));
    }
    EXPECT_EQ(testing::all_type_cases().size(), static_cast<size_t>(LOOM_DATATYPE_COUNT));
}

// Kernels against the plain reference on long, oddly offset vectors (vector
// loops and their scalar tails).
TEST(Kernels, EveryPairMatchesThePlainReferenceOnLongVectors) {
    for (const testing::Combo &c : testing::all_combos()) {
        for (size_t n : {size_t{1}, size_t{31}, size_t{1000}, size_t{4099}}) {
            const size_t es = c.type->size;  // start one element in: not vector-aligned
            std::vector<unsigned char> a((n + 2) * es), b((n + 2) * es);
            c.type->fill(a.data() + es, n, 0, n, c.op);
            c.type->fill(b.data(), n, 1, n, c.op);
            std::vector<unsigned char> expected(a);
            c.type->combine(expected.data() + es, b.data(), n, c.op);
            reduction_kernel(c.type->type, c.op)(a.data() + es, b.data(), n);
            size_t bad = 0;
            EXPECT_TRUE(c.type->equal(a.data() + es, expected.data() + es, n, &bad))
                << c.type->name << " " << op_name(c.op) << " n=" << n << " element " << bad;
        }
    }
}

}  // namespace
}  // namespace loom
