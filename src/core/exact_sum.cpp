#include "core/exact_sum.hpp"

#include <cmath>
#include <cstring>
#include <limits>

#include "core/reduced_float.hpp"

namespace loom {
namespace {

constexpr int kBins = ExactSum::kBins;
constexpr int kBinBits = ExactSum::kBinBits;
// A special sum's count[0]: which of these its values held.
constexpr unsigned kSawPlusInfinity = 1, kSawMinusInfinity = 2, kSawNan = 4;

// The bins are the base-2^32 digits of |x| in units of the lowest bin's
// 2^(32 (top - 2)), truncated (what lies below is dropped), with x's sign.
ExactSum encode(double x) {
    ExactSum s{};
    uint64_t bits;
    std::memcpy(&bits, &x, sizeof bits);
    const int field = static_cast<int>((bits >> 52) & 0x7ff);
    uint64_t mantissa = bits & ((uint64_t{1} << 52) - 1);
    if (field == 0x7ff) {  // an infinity or a NaN: a flag, so that NaN payloads cannot depend on the order
        s.top = ExactSum::kSpecial;
        s.count[0] = mantissa ? kSawNan : bits >> 63 ? kSawMinusInfinity : kSawPlusInfinity;
        return s;
    }
    if (field != 0) mantissa |= uint64_t{1} << 52;
    if (mantissa == 0) {
        s.top = ExactSum::kEmpty;
        return s;
    }
    // x = mantissa 2^low; its leading bit is 2^lead.
    const int low = (field ? field : 1) - 1075;
    const int lead = low + 63 - __builtin_clzll(mantissa);
    s.top = lead >> 5;  // an arithmetic shift: floor(lead / 32)
    // 12..95: below 2^96 after the shift (docs/design.md, "Reproducible sums").
    const int shift = low - static_cast<int>(s.top - (kBins - 1)) * kBinBits;
    const unsigned __int128 units = static_cast<unsigned __int128>(mantissa) << shift;
    const double sign = bits >> 63 ? -1.0 : 1.0;
    for (int j = 0; j < kBins; ++j)
        s.count[j] = sign * static_cast<double>(static_cast<uint32_t>(units >> ((kBins - 1 - j) * kBinBits)));
    return s;
}

// Round to the nearest integer (even on ties) for |x| < 2^51, with IEEE
// additions only: the same bits on every machine.
double nearest_integer(double x) {
    constexpr double kRounder = 0x1.8p52;
    return (x + kRounder) - kRounder;
}

// Carries move up until every bin below the top holds at most half the next
// one's unit; the lower two then add with one rounding and the top with
// another (no cancellation: a nonzero top outweighs twice the rest), and the
// scaling by a power of two is exact unless the sum is subnormal or past
// the range. Only multiplications by powers of two, so a fused multiply-add
// gives the same bits as separate ones.
double decode(ExactSum s) {
    if (s.top == ExactSum::kEmpty) return 0;
    if (s.top == ExactSum::kSpecial) {
        const unsigned saw = static_cast<unsigned>(s.count[0]);
        if ((saw & kSawNan) || ((saw & kSawPlusInfinity) && (saw & kSawMinusInfinity)))
            return std::numeric_limits<double>::quiet_NaN();
        return saw & kSawPlusInfinity ? std::numeric_limits<double>::infinity()
                                      : -std::numeric_limits<double>::infinity();
    }
    constexpr double kUnit = 0x1p32, kInverse = 0x1p-32;
    for (int j = kBins - 1; j > 0; --j) {
        const double carry = nearest_integer(s.count[j] * kInverse);
        s.count[j] -= carry * kUnit;
        s.count[j - 1] += carry;
    }
    static_assert(kBins == 3, "the sum below is written out for three bins");
    const double lower = s.count[1] * kUnit + s.count[2];
    const double units = s.count[0] * (kUnit * kUnit) + lower;
    const int64_t exponent = (s.top - (kBins - 1)) * kBinBits;
    if (exponent >= -1022 && exponent <= 1023) {
        const uint64_t bits = static_cast<uint64_t>(exponent + 1023) << 52;
        double scale;
        std::memcpy(&scale, &bits, sizeof scale);
        return units * scale;
    }
    return std::ldexp(units, static_cast<int>(exponent));
}

void add(ExactSum &a, const ExactSum &b) {
    if (b.top == ExactSum::kEmpty) return;
    if (a.top == ExactSum::kEmpty || (b.top == ExactSum::kSpecial && a.top != ExactSum::kSpecial)) {
        a = b;
        return;
    }
    if (a.top == ExactSum::kSpecial) {
        if (b.top == ExactSum::kSpecial)
            a.count[0] = static_cast<double>(static_cast<unsigned>(a.count[0]) | static_cast<unsigned>(b.count[0]));
        return;
    }
    if (b.top > a.top) {  // the larger top is kept: a's bins move down
        const int64_t d = b.top - a.top;
        ExactSum moved = b;
        for (int j = 0; j + d < kBins; ++j) moved.count[j + d] += a.count[j];
        a = moved;
        return;
    }
    const int64_t d = a.top - b.top;
    for (int j = 0; j + d < kBins; ++j) a.count[j + d] += b.count[j];
}

template <typename Load>
void encode_all(const Load &load, size_t values, ExactSum *out) {
    for (size_t i = 0; i < values; ++i) out[i] = encode(load(i));
}

}  // namespace

bool exact_sum_type(loom_datatype_t type) {
    switch (type) {
        case LOOM_FLOAT:
        case LOOM_DOUBLE:
        case LOOM_FLOAT16:
        case LOOM_BFLOAT16:
        case LOOM_C_FLOAT_COMPLEX:
        case LOOM_C_DOUBLE_COMPLEX: return true;
        default: return false;
    }
}

size_t exact_sums_per_element(loom_datatype_t type) {
    return type == LOOM_C_FLOAT_COMPLEX || type == LOOM_C_DOUBLE_COMPLEX ? 2 : 1;
}

void exact_sum_encode(loom_datatype_t type, const void *in, size_t count, ExactSum *out) {
    const size_t values = count * exact_sums_per_element(type);
    switch (type) {
        case LOOM_FLOAT:
        case LOOM_C_FLOAT_COMPLEX: {
            const float *f = static_cast<const float *>(in);
            return encode_all([f](size_t i) { return static_cast<double>(f[i]); }, values, out);
        }
        case LOOM_DOUBLE:
        case LOOM_C_DOUBLE_COMPLEX: {
            const double *d = static_cast<const double *>(in);
            return encode_all([d](size_t i) { return d[i]; }, values, out);
        }
        case LOOM_FLOAT16: {
            const uint16_t *h = static_cast<const uint16_t *>(in);
            return encode_all([h](size_t i) { return static_cast<double>(fp16_to_float(h[i])); }, values, out);
        }
        case LOOM_BFLOAT16: {
            const uint16_t *h = static_cast<const uint16_t *>(in);
            return encode_all([h](size_t i) { return static_cast<double>(bf16_to_float(h[i])); }, values, out);
        }
        default: return;
    }
}

void exact_sum_decode(loom_datatype_t type, const ExactSum *in, size_t count, void *out) {
    const size_t values = count * exact_sums_per_element(type);
    for (size_t i = 0; i < values; ++i) {
        const double v = decode(in[i]);
        switch (type) {
            case LOOM_FLOAT:
            case LOOM_C_FLOAT_COMPLEX: static_cast<float *>(out)[i] = static_cast<float>(v); break;
            case LOOM_DOUBLE:
            case LOOM_C_DOUBLE_COMPLEX: static_cast<double *>(out)[i] = v; break;
            case LOOM_FLOAT16: static_cast<uint16_t *>(out)[i] = float_to_fp16(static_cast<float>(v)); break;
            case LOOM_BFLOAT16: static_cast<uint16_t *>(out)[i] = float_to_bf16(static_cast<float>(v)); break;
            default: return;
        }
    }
}

void exact_sum_add(void *dst, const void *src, size_t n) {
    ExactSum *a = static_cast<ExactSum *>(dst);
    const ExactSum *b = static_cast<const ExactSum *>(src);
    for (size_t i = 0; i < n; ++i) add(a[i], b[i]);
}

}  // namespace loom
