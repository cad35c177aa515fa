// Reduction kernels: one tight loop per (type, op), written so the compiler
// vectorizes it (restrict pointers, no branches for arithmetic ops), over the
// element-wise operations the CUDA kernels share (core/elementwise.hpp).
#include <array>
#include <complex>
#include <type_traits>

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

#include "core/datatype.hpp"
#include "core/elementwise.hpp"
#include "core/exact_sum.hpp"

namespace loom {
namespace {

// Cloned for AVX2 where the CPU has it (resolved once at load time): buffers
// that sit in cache are limited by vector width, not memory. Not under
// ThreadSanitizer: the resolvers run while the library is relocated, before
// its runtime is up, and its instrumentation of them crashes the load. Not
// under clang either (the fuzzing build): it clones no function templates.
#if defined(__SANITIZE_THREAD__) || defined(__clang__)
#define LOOM_CLONED_FOR_AVX2
#else
#define LOOM_CLONED_FOR_AVX2 __attribute__((target_clones("avx2", "default")))
#endif
template <typename T, typename Fn>
LOOM_CLONED_FOR_AVX2 void apply_elementwise(void *dst_v, const void *src_v, size_t n) {
    T *__restrict dst = static_cast<T *>(dst_v);
    const T *__restrict src = static_cast<const T *>(src_v);
    for (size_t i = 0; i < n; ++i) dst[i] = Fn::apply(dst[i], src[i]);
}

using namespace elementwise;

#if defined(__x86_64__)
// fp16 with the CPU's F16C conversions, 8 lanes at a time: the portable
// loop above cannot vectorize its bit-level conversions (0.5 GB/s vs
// ~25 GB/s). Same rounding (to nearest even) and the same min/max rule.
enum class HalfOp { sum, prod, min, max };

// From CPUID: clang's __builtin_cpu_supports does not know "f16c".
bool cpu_has_f16c() {
    unsigned a = 0, b = 0, c = 0, d = 0;
    return __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C);
}

template <HalfOp Op>
__attribute__((target("avx"), always_inline)) inline __m256 half_lanes(__m256 a, __m256 b) {
    switch (Op) {
        case HalfOp::sum: return _mm256_add_ps(a, b);
        case HalfOp::prod: return _mm256_mul_ps(a, b);
        case HalfOp::min: return _mm256_min_ps(b, a);  // b < a ? b : a
        default: return _mm256_max_ps(b, a);           // b > a ? b : a
    }
}

template <HalfOp Op>
__attribute__((target("avx,f16c"))) void apply_fp16_f16c(void *dst_v, const void *src_v, size_t n) {
    uint16_t *dst = static_cast<uint16_t *>(dst_v);
    const uint16_t *src = static_cast<const uint16_t *>(src_v);
    const size_t vector_end = n - n % 8;
    for (size_t i = 0; i < vector_end; i += 8) {
        const __m256 a = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i *>(dst + i)));
        const __m256 b = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i *>(src + i)));
        _mm_storeu_si128(reinterpret_cast<__m128i *>(dst + i),
                         _mm256_cvtps_ph(half_lanes<Op>(a, b), _MM_FROUND_TO_NEAREST_INT));
    }
    const size_t tail = n - vector_end;
    if (tail) {  // the last elements through the portable kernel
        using Fn = std::conditional_t<
            Op == HalfOp::sum, Reduced<Fp16, Sum<float>>,
            std::conditional_t<Op == HalfOp::prod, Reduced<Fp16, Prod<float>>,
                               std::conditional_t<Op == HalfOp::min, Reduced<Fp16, Min<float>>,
                                                  Reduced<Fp16, Max<float>>>>>;
        apply_elementwise<uint16_t, Fn>(dst + vector_end, src + vector_end, tail);
    }
}

// bf16 with AVX2 integer ops: widening is a shift, narrowing is the same
// round-to-nearest-even (and NaN quieting) as float_to_bf16, 8 lanes at once.
template <HalfOp Op>
__attribute__((target("avx2"))) void apply_bf16_avx2(void *dst_v, const void *src_v, size_t n) {
    uint16_t *dst = static_cast<uint16_t *>(dst_v);
    const uint16_t *src = static_cast<const uint16_t *>(src_v);
    const __m256i one = _mm256_set1_epi32(1), round = _mm256_set1_epi32(0x7fff),
                  abs_mask = _mm256_set1_epi32(0x7fffffff), inf = _mm256_set1_epi32(0x7f800000),
                  quiet = _mm256_set1_epi32(0x40);
    const size_t vector_end = n - n % 8;
    for (size_t i = 0; i < vector_end; i += 8) {
        const __m256i a16 = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i *>(dst + i)));
        const __m256i b16 = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i *>(src + i)));
        const __m256 r = half_lanes<Op>(_mm256_castsi256_ps(_mm256_slli_epi32(a16, 16)),
                                        _mm256_castsi256_ps(_mm256_slli_epi32(b16, 16)));
        const __m256i bits = _mm256_castps_si256(r);
        const __m256i odd = _mm256_and_si256(_mm256_srli_epi32(bits, 16), one);
        const __m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(bits, _mm256_add_epi32(round, odd)), 16);
        const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(bits, abs_mask), inf);
        const __m256i quiet_nan = _mm256_or_si256(_mm256_srli_epi32(bits, 16), quiet);
        const __m256i out = _mm256_blendv_epi8(rounded, quiet_nan, nan);
        _mm_storeu_si128(reinterpret_cast<__m128i *>(dst + i),
                         _mm_packus_epi32(_mm256_castsi256_si128(out), _mm256_extracti128_si256(out, 1)));
    }
    const size_t tail = n - vector_end;
    if (tail) {
        using Fn = std::conditional_t<
            Op == HalfOp::sum, Reduced<Bf16, Sum<float>>,
            std::conditional_t<Op == HalfOp::prod, Reduced<Bf16, Prod<float>>,
                               std::conditional_t<Op == HalfOp::min, Reduced<Bf16, Min<float>>,
                                                  Reduced<Bf16, Max<float>>>>>;
        apply_elementwise<uint16_t, Fn>(dst + vector_end, src + vector_end, tail);
    }
}
#endif

using Table = std::array<std::array<ReduceFn, LOOM_OP_COUNT>, LOOM_DATATYPE_COUNT>;

template <typename T>
void add_integer(Table &t, loom_datatype_t id, bool arithmetic = true, bool logical = true) {
    auto &row = t[id];
    if (arithmetic) {
        row[LOOM_SUM] = apply_elementwise<T, IntSum<T>>;
        row[LOOM_PROD] = apply_elementwise<T, IntProd<T>>;
        row[LOOM_MIN] = apply_elementwise<T, Min<T>>;
        row[LOOM_MAX] = apply_elementwise<T, Max<T>>;
    }
    if (logical) {
        row[LOOM_LAND] = apply_elementwise<T, LogicalAnd<T>>;
        row[LOOM_LOR] = apply_elementwise<T, LogicalOr<T>>;
        row[LOOM_LXOR] = apply_elementwise<T, LogicalXor<T>>;
    }
    row[LOOM_BAND] = apply_elementwise<T, BitAnd<T>>;
    row[LOOM_BOR] = apply_elementwise<T, BitOr<T>>;
    row[LOOM_BXOR] = apply_elementwise<T, BitXor<T>>;
}

template <typename T>
void add_floating(Table &t, loom_datatype_t id) {
    t[id][LOOM_SUM] = apply_elementwise<T, Sum<T>>;
    t[id][LOOM_PROD] = apply_elementwise<T, Prod<T>>;
    t[id][LOOM_MIN] = apply_elementwise<T, Min<T>>;
    t[id][LOOM_MAX] = apply_elementwise<T, Max<T>>;
}

template <typename Format>
void add_reduced(Table &t, loom_datatype_t id) {
    t[id][LOOM_SUM] = apply_elementwise<uint16_t, Reduced<Format, Sum<float>>>;
    t[id][LOOM_PROD] = apply_elementwise<uint16_t, Reduced<Format, Prod<float>>>;
    t[id][LOOM_MIN] = apply_elementwise<uint16_t, Reduced<Format, Min<float>>>;
    t[id][LOOM_MAX] = apply_elementwise<uint16_t, Reduced<Format, Max<float>>>;
}

template <typename T>
void add_complex(Table &t, loom_datatype_t id) {
    t[id][LOOM_SUM] = apply_elementwise<std::complex<T>, Sum<std::complex<T>>>;
    t[id][LOOM_PROD] = apply_elementwise<std::complex<T>, Prod<std::complex<T>>>;
}

template <typename P>
void add_pair(Table &t, loom_datatype_t id) {
    t[id][LOOM_MINLOC] = apply_elementwise<P, MinLoc<P>>;
    t[id][LOOM_MAXLOC] = apply_elementwise<P, MaxLoc<P>>;
}

template <size_t Size>
struct SignedOfSize;
template <>
struct SignedOfSize<1> {
    using type = int8_t;
};
template <>
struct SignedOfSize<2> {
    using type = int16_t;
};
template <>
struct SignedOfSize<4> {
    using type = int32_t;
};
template <>
struct SignedOfSize<8> {
    using type = int64_t;
};

Table build_table() {
    Table t{};
    add_integer<int8_t>(t, LOOM_INT8);
    add_integer<uint8_t>(t, LOOM_UINT8);
    add_integer<int16_t>(t, LOOM_INT16);
    add_integer<uint16_t>(t, LOOM_UINT16);
    add_integer<int32_t>(t, LOOM_INT32);
    add_integer<uint32_t>(t, LOOM_UINT32);
    add_integer<int64_t>(t, LOOM_INT64);
    add_integer<uint64_t>(t, LOOM_UINT64);
    // MPI_CHAR is reduced as a small integer, as Open MPI does (OSU's default type).
    add_integer<std::conditional_t<std::is_signed_v<char>, int8_t, uint8_t>>(t, LOOM_CHAR);
    add_integer<signed char>(t, LOOM_SIGNED_CHAR);
    add_integer<unsigned char>(t, LOOM_UNSIGNED_CHAR);
    add_integer<std::conditional_t<std::is_signed_v<wchar_t>, SignedOfSize<sizeof(wchar_t)>::type,
                                   std::make_unsigned_t<SignedOfSize<sizeof(wchar_t)>::type>>>(t, LOOM_WCHAR);
    add_integer<short>(t, LOOM_SHORT);
    add_integer<unsigned short>(t, LOOM_UNSIGNED_SHORT);
    add_integer<int>(t, LOOM_INT);
    add_integer<unsigned>(t, LOOM_UNSIGNED);
    add_integer<long>(t, LOOM_LONG);
    add_integer<unsigned long>(t, LOOM_UNSIGNED_LONG);
    add_integer<long long>(t, LOOM_LONG_LONG);
    add_integer<unsigned long long>(t, LOOM_UNSIGNED_LONG_LONG);
    add_integer<uint8_t>(t, LOOM_BYTE, /*arithmetic=*/false, /*logical=*/false);
    // C bool: logical ops only; stored as 0/1 bytes.
    t[LOOM_BOOL][LOOM_LAND] = apply_elementwise<uint8_t, LogicalAnd<uint8_t>>;
    t[LOOM_BOOL][LOOM_LOR] = apply_elementwise<uint8_t, LogicalOr<uint8_t>>;
    t[LOOM_BOOL][LOOM_LXOR] = apply_elementwise<uint8_t, LogicalXor<uint8_t>>;
    add_reduced<Fp16>(t, LOOM_FLOAT16);
    add_reduced<Bf16>(t, LOOM_BFLOAT16);
#if defined(__x86_64__)  // faster kernels where the CPU has the instructions
    if (__builtin_cpu_supports("avx") && cpu_has_f16c()) {
        t[LOOM_FLOAT16][LOOM_SUM] = apply_fp16_f16c<HalfOp::sum>;
        t[LOOM_FLOAT16][LOOM_PROD] = apply_fp16_f16c<HalfOp::prod>;
        t[LOOM_FLOAT16][LOOM_MIN] = apply_fp16_f16c<HalfOp::min>;
        t[LOOM_FLOAT16][LOOM_MAX] = apply_fp16_f16c<HalfOp::max>;
    }
    if (__builtin_cpu_supports("avx2")) {
        t[LOOM_BFLOAT16][LOOM_SUM] = apply_bf16_avx2<HalfOp::sum>;
        t[LOOM_BFLOAT16][LOOM_PROD] = apply_bf16_avx2<HalfOp::prod>;
        t[LOOM_BFLOAT16][LOOM_MIN] = apply_bf16_avx2<HalfOp::min>;
        t[LOOM_BFLOAT16][LOOM_MAX] = apply_bf16_avx2<HalfOp::max>;
    }
#endif
    add_floating<float>(t, LOOM_FLOAT);
    add_floating<double>(t, LOOM_DOUBLE);
    add_floating<long double>(t, LOOM_LONG_DOUBLE);
    add_complex<float>(t, LOOM_C_FLOAT_COMPLEX);
    add_complex<double>(t, LOOM_C_DOUBLE_COMPLEX);
    add_complex<long double>(t, LOOM_C_LONG_DOUBLE_COMPLEX);
    add_pair<FloatInt>(t, LOOM_FLOAT_INT);
    add_pair<DoubleInt>(t, LOOM_DOUBLE_INT);
    add_pair<LongInt>(t, LOOM_LONG_INT);
    add_pair<TwoInt>(t, LOOM_2INT);
    add_pair<ShortInt>(t, LOOM_SHORT_INT);
    add_pair<LongDoubleInt>(t, LOOM_LONG_DOUBLE_INT);
    return t;
}

const Table &table() {
    static const Table t = build_table();
    return t;
}

}  // namespace

ReduceFn reduction_kernel(loom_datatype_t type, loom_op_t op) {
    if (type == kExactSumType) return op == LOOM_SUM ? exact_sum_add : nullptr;
    if (static_cast<unsigned>(type) >= LOOM_DATATYPE_COUNT || !op_is_valid(op)) return nullptr;
    return table()[type][op];
}

}  // namespace loom
