// Test-side models of every datatype: value generators whose reductions are
// exact in any order (so every algorithm must match bit for bit), and a plain
// reference reduction written independently of the library's kernels.
#pragma once
#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "core/datatype.hpp"

namespace loom::testing {

struct Rng {
    uint64_t state;
    explicit Rng(uint64_t seed) : state(seed * 0x9e3779b97f4a7c15ULL + 0x1234567ULL) {}
    uint64_t next() {
        uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        return z ^ (z >> 31);
    }
    int small(int lo, int hi) { return lo + static_cast<int>(next() % static_cast<uint64_t>(hi - lo + 1)); }
};

struct TypeCase {
    loom_datatype_t type;
    std::string name;
    size_t size;
    std::function<bool(loom_op_t)> valid;
    // Fills n elements for `rank` (values chosen so `op` is exact in any order).
    std::function<void(void *, size_t, int rank, uint64_t seed, loom_op_t)> fill;
    // acc[i] = acc[i] op in[i], written plainly.
    std::function<void(void *, const void *, size_t, loom_op_t)> combine;
    // Compares meaningful bytes only (no padding); sets *bad to the first mismatch.
    std::function<bool(const void *, const void *, size_t, size_t *)> equal;
};

namespace detail {

inline bool is_arith(loom_op_t op) { return op == LOOM_SUM || op == LOOM_PROD || op == LOOM_MIN || op == LOOM_MAX; }
inline bool is_logical(loom_op_t op) { return op == LOOM_LAND || op == LOOM_LOR || op == LOOM_LXOR; }
inline bool is_bitwise(loom_op_t op) { return op == LOOM_BAND || op == LOOM_BOR || op == LOOM_BXOR; }

template <typename T>
T int_combine(T a, T b, loom_op_t op) {
    using U = unsigned long long;
    switch (op) {
        case LOOM_SUM: return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
        case LOOM_PROD: return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
        case LOOM_MIN: return std::min(a, b);
        case LOOM_MAX: return std::max(a, b);
        case LOOM_LAND: return (a && b) ? 1 : 0;
        case LOOM_LOR: return (a || b) ? 1 : 0;
        case LOOM_LXOR: return (!a != !b) ? 1 : 0;
        case LOOM_BAND: return static_cast<T>(a & b);
        case LOOM_BOR: return static_cast<T>(a | b);
        case LOOM_BXOR: return static_cast<T>(a ^ b);
        default: return a;
    }
}

template <typename T>
bool equal_plain(const void *a, const void *b, size_t n, size_t *bad) {
    for (size_t i = 0; i < n; ++i) {
        T x, y;
        std::memcpy(&x, static_cast<const char *>(a) + i * sizeof(T), sizeof(T));
        std::memcpy(&y, static_cast<const char *>(b) + i * sizeof(T), sizeof(T));
        if (!(x == y)) {
            *bad = i;
            return false;
        }
    }
    return true;
}

template <typename T>
TypeCase integer_case(loom_datatype_t type, const char *name, bool arithmetic, bool logical) {
    TypeCase c;
    c.type = type;
    c.name = name;
    c.size = sizeof(T);
    c.valid = [=](loom_op_t op) {
        return (arithmetic && is_arith(op)) || (logical && is_logical(op)) || is_bitwise(op);
    };
    c.fill = [](void *buf, size_t n, int rank, uint64_t seed, loom_op_t op) {
        Rng rng(seed * 131 + rank);
        T *v = static_cast<T *>(buf);
        for (size_t i = 0; i < n; ++i) {
            uint64_t bits = rng.next();
            // Logical ops need zeros often enough to matter; arithmetic uses the
            // full range so SUM and PROD wrap around.
            if (is_logical(op) && (bits & 3) == 0) bits = 0;
            std::memcpy(&v[i], &bits, sizeof(T));
        }
    };
    c.combine = [](void *acc, const void *in, size_t n, loom_op_t op) {
        T *a = static_cast<T *>(acc);
        const T *b = static_cast<const T *>(in);
        for (size_t i = 0; i < n; ++i) a[i] = int_combine<T>(a[i], b[i], op);
    };
    c.equal = equal_plain<T>;
    return c;
}

// Values are small integers (or +-1, +-2, 1/2 for PROD), so any summation
// order gives the same exact result.
template <typename T>
T exact_value(Rng &rng, loom_op_t op, int rank) {
    if (op == LOOM_PROD) {
        static const T choices[] = {T(1), T(-1), T(2), T(0.5)};
        return choices[rng.next() % 4];
    }
    return static_cast<T>(rng.small(-4, 4));
}

template <typename T>
TypeCase floating_case(loom_datatype_t type, const char *name) {
    TypeCase c;
    c.type = type;
    c.name = name;
    c.size = sizeof(T);
    c.valid = [](loom_op_t op) { return is_arith(op); };
    c.fill = [](void *buf, size_t n, int rank, uint64_t seed, loom_op_t op) {
        Rng rng(seed * 131 + rank);
        std::vector<T> v(n);
        for (size_t i = 0; i < n; ++i) v[i] = exact_value<T>(rng, op, rank);
        if (n) std::memcpy(buf, v.data(), n * sizeof(T));  // long double: padding left as is
    };
    c.combine = [](void *acc, const void *in, size_t n, loom_op_t op) {
        for (size_t i = 0; i < n; ++i) {
            T a, b;
            std::memcpy(&a, static_cast<char *>(acc) + i * sizeof(T), sizeof(T));
            std::memcpy(&b, static_cast<const char *>(in) + i * sizeof(T), sizeof(T));
            T r = op == LOOM_SUM ? a + b : op == LOOM_PROD ? a * b : op == LOOM_MIN ? std::min(a, b) : std::max(a, b);
            std::memcpy(static_cast<char *>(acc) + i * sizeof(T), &r, sizeof(T));
        }
    };
    c.equal = equal_plain<T>;
    return c;
}

// IEEE half of an integer-valued float (|v| <= 65504, exact), written for the tests.
inline uint16_t half_of(double v) {
    if (v == 0) return std::signbit(v) ? 0x8000 : 0;
    uint16_t sign = v < 0 ? 0x8000 : 0;
    double a = std::fabs(v);
    int e = 0;
    double m = std::frexp(a, &e);  // a = m * 2^e, m in [0.5, 1)
    int exponent = e - 1 + 15;
    uint16_t mant = static_cast<uint16_t>((m * 2 - 1) * 1024);
    return static_cast<uint16_t>(sign | (exponent << 10) | mant);
}
inline double half_value(uint16_t h) {
    int e = (h >> 10) & 0x1f;
    double m = h & 0x3ff;
    double v = e == 0 ? m * std::ldexp(1.0, -24) : (1 + m / 1024) * std::ldexp(1.0, e - 15);
    return (h & 0x8000) ? -v : v;
}
inline uint16_t bf16_of(double v) {
    float f = static_cast<float>(v);
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    return static_cast<uint16_t>(bits >> 16);  // exact for the small values used
}
inline double bf16_value(uint16_t h) {
    uint32_t bits = static_cast<uint32_t>(h) << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
}

inline TypeCase reduced_case(loom_datatype_t type, const char *name, uint16_t (*encode)(double),
                             double (*decode)(uint16_t)) {
    TypeCase c;
    c.type = type;
    c.name = name;
    c.size = 2;
    c.valid = [](loom_op_t op) { return is_arith(op); };
    c.fill = [encode](void *buf, size_t n, int rank, uint64_t seed, loom_op_t op) {
        Rng rng(seed * 131 + rank);
        uint16_t *v = static_cast<uint16_t *>(buf);
        for (size_t i = 0; i < n; ++i) {
            // PROD: +-1 everywhere and one factor 2 from rank 0 keeps results exact and in range.
            double x = op == LOOM_PROD ? ((rng.next() & 1) ? 1.0 : -1.0) * (rank == 0 ? 2.0 : 1.0) : rng.small(-4, 4);
            v[i] = encode(x);
        }
    };
    c.combine = [encode, decode](void *acc, const void *in, size_t n, loom_op_t op) {
        uint16_t *a = static_cast<uint16_t *>(acc);
        const uint16_t *b = static_cast<const uint16_t *>(in);
        for (size_t i = 0; i < n; ++i) {
            double x = decode(a[i]), y = decode(b[i]);
            double r = op == LOOM_SUM    ? x + y
                       : op == LOOM_PROD ? x * y
                       : op == LOOM_MIN  ? std::min(x, y)
                                         : std::max(x, y);
            a[i] = encode(r);
        }
    };
    c.equal = [decode](const void *a, const void *b, size_t n, size_t *bad) {
        for (size_t i = 0; i < n; ++i) {
            uint16_t x, y;
            std::memcpy(&x, static_cast<const char *>(a) + 2 * i, 2);
            std::memcpy(&y, static_cast<const char *>(b) + 2 * i, 2);
            if (decode(x) != decode(y)) {
                *bad = i;
                return false;
            }
        }
        return true;
    };
    return c;
}

template <typename T>
TypeCase complex_case(loom_datatype_t type, const char *name) {
    using C = std::complex<T>;
    TypeCase c;
    c.type = type;
    c.name = name;
    c.size = sizeof(C);
    c.valid = [](loom_op_t op) { return op == LOOM_SUM || op == LOOM_PROD; };
    c.fill = [](void *buf, size_t n, int rank, uint64_t seed, loom_op_t op) {
        Rng rng(seed * 131 + rank);
        static const C units[] = {C(1, 0), C(-1, 0), C(0, 1), C(0, -1)};
        std::vector<C> v(n);
        for (size_t i = 0; i < n; ++i)
            v[i] = op == LOOM_PROD ? units[rng.next() % 4] : C(T(rng.small(-4, 4)), T(rng.small(-4, 4)));
        if (n) std::memcpy(buf, v.data(), n * sizeof(C));
    };
    c.combine = [](void *acc, const void *in, size_t n, loom_op_t op) {
        for (size_t i = 0; i < n; ++i) {
            T a[2], b[2];
            std::memcpy(a, static_cast<char *>(acc) + i * sizeof(C), sizeof(C));
            std::memcpy(b, static_cast<const char *>(in) + i * sizeof(C), sizeof(C));
            T r[2];
            if (op == LOOM_SUM) {
                r[0] = a[0] + b[0];
                r[1] = a[1] + b[1];
            } else {  // (a0 + i a1)(b0 + i b1)
                r[0] = a[0] * b[0] - a[1] * b[1];
                r[1] = a[0] * b[1] + a[1] * b[0];
            }
            std::memcpy(static_cast<char *>(acc) + i * sizeof(C), r, sizeof(C));
        }
    };
    c.equal = [](const void *a, const void *b, size_t n, size_t *bad) {
        for (size_t i = 0; i < n; ++i) {
            T x[2], y[2];
            std::memcpy(x, static_cast<const char *>(a) + i * sizeof(C), sizeof(C));
            std::memcpy(y, static_cast<const char *>(b) + i * sizeof(C), sizeof(C));
            if (!(x[0] == y[0] && x[1] == y[1])) {
                *bad = i;
                return false;
            }
        }
        return true;
    };
    return c;
}

template <typename P>
TypeCase pair_case(loom_datatype_t type, const char *name) {
    TypeCase c;
    c.type = type;
    c.name = name;
    c.size = sizeof(P);
    c.valid = [](loom_op_t op) { return op == LOOM_MINLOC || op == LOOM_MAXLOC; };
    c.fill = [](void *buf, size_t n, int rank, uint64_t seed, loom_op_t) {
        Rng rng(seed * 131 + rank);
        for (size_t i = 0; i < n; ++i) {
            P v;
            std::memset(&v, 0, sizeof(v));
            v.value = static_cast<decltype(v.value)>(rng.small(0, 2));  // few values: many ties
            v.index = rng.small(0, 5) == 0 ? 1000 - rank : rank;        // ties broken by index, not by order
            std::memcpy(static_cast<char *>(buf) + i * sizeof(P), &v, sizeof(P));
        }
    };
    c.combine = [](void *acc, const void *in, size_t n, loom_op_t op) {
        for (size_t i = 0; i < n; ++i) {
            P a, b;
            std::memcpy(&a, static_cast<char *>(acc) + i * sizeof(P), sizeof(P));
            std::memcpy(&b, static_cast<const char *>(in) + i * sizeof(P), sizeof(P));
            bool take_b = op == LOOM_MINLOC ? b.value < a.value : b.value > a.value;
            if (b.value == a.value) {
                if (b.index < a.index) a.index = b.index;
            } else if (take_b) {
                a.value = b.value;
                a.index = b.index;
            }
            std::memcpy(static_cast<char *>(acc) + i * sizeof(P), &a, sizeof(P));
        }
    };
    c.equal = [](const void *a, const void *b, size_t n, size_t *bad) {
        for (size_t i = 0; i < n; ++i) {
            P x, y;
            std::memcpy(&x, static_cast<const char *>(a) + i * sizeof(P), sizeof(P));
            std::memcpy(&y, static_cast<const char *>(b) + i * sizeof(P), sizeof(P));
            if (!(x.value == y.value && x.index == y.index)) {
                *bad = i;
                return false;
            }
        }
        return true;
    };
    return c;
}

inline TypeCase bool_case() {
    TypeCase c = integer_case<uint8_t>(LOOM_BOOL, "bool", false, true);
    c.valid = [](loom_op_t op) { return is_logical(op); };
    c.fill = [](void *buf, size_t n, int rank, uint64_t seed, loom_op_t) {
        Rng rng(seed * 131 + rank);
        for (size_t i = 0; i < n; ++i) static_cast<uint8_t *>(buf)[i] = (rng.next() % 3) != 0;
    };
    c.size = sizeof(bool);
    return c;
}

}  // namespace detail

inline const std::vector<TypeCase> &all_type_cases() {
    using namespace detail;
    using schar = std::conditional_t<std::is_signed_v<char>, int8_t, uint8_t>;
    using wchar_int = std::conditional_t<std::is_signed_v<wchar_t>, int32_t, uint32_t>;
    static const std::vector<TypeCase> cases = {
        integer_case<int8_t>(LOOM_INT8, "int8", true, true),
        integer_case<uint8_t>(LOOM_UINT8, "uint8", true, true),
        integer_case<int16_t>(LOOM_INT16, "int16", true, true),
        integer_case<uint16_t>(LOOM_UINT16, "uint16", true, true),
        integer_case<int32_t>(LOOM_INT32, "int32", true, true),
        integer_case<uint32_t>(LOOM_UINT32, "uint32", true, true),
        integer_case<int64_t>(LOOM_INT64, "int64", true, true),
        integer_case<uint64_t>(LOOM_UINT64, "uint64", true, true),
        integer_case<schar>(LOOM_CHAR, "char", true, true),
        integer_case<signed char>(LOOM_SIGNED_CHAR, "signed_char", true, true),
        integer_case<unsigned char>(LOOM_UNSIGNED_CHAR, "unsigned_char", true, true),
        integer_case<wchar_int>(LOOM_WCHAR, "wchar", true, true),
        integer_case<short>(LOOM_SHORT, "short", true, true),
        integer_case<unsigned short>(LOOM_UNSIGNED_SHORT, "unsigned_short", true, true),
        integer_case<int>(LOOM_INT, "int", true, true),
        integer_case<unsigned>(LOOM_UNSIGNED, "unsigned", true, true),
        integer_case<long>(LOOM_LONG, "long", true, true),
        integer_case<unsigned long>(LOOM_UNSIGNED_LONG, "unsigned_long", true, true),
        integer_case<long long>(LOOM_LONG_LONG, "long_long", true, true),
        integer_case<unsigned long long>(LOOM_UNSIGNED_LONG_LONG, "unsigned_long_long", true, true),
        integer_case<uint8_t>(LOOM_BYTE, "byte", false, false),
        bool_case(),
        reduced_case(LOOM_FLOAT16, "float16", half_of, half_value),
        reduced_case(LOOM_BFLOAT16, "bfloat16", bf16_of, bf16_value),
        floating_case<float>(LOOM_FLOAT, "float"),
        floating_case<double>(LOOM_DOUBLE, "double"),
        floating_case<long double>(LOOM_LONG_DOUBLE, "long_double"),
        complex_case<float>(LOOM_C_FLOAT_COMPLEX, "float_complex"),
        complex_case<double>(LOOM_C_DOUBLE_COMPLEX, "double_complex"),
        complex_case<long double>(LOOM_C_LONG_DOUBLE_COMPLEX, "long_double_complex"),
        pair_case<FloatInt>(LOOM_FLOAT_INT, "float_int"),
        pair_case<DoubleInt>(LOOM_DOUBLE_INT, "double_int"),
        pair_case<LongInt>(LOOM_LONG_INT, "long_int"),
        pair_case<TwoInt>(LOOM_2INT, "2int"),
        pair_case<ShortInt>(LOOM_SHORT_INT, "short_int"),
        pair_case<LongDoubleInt>(LOOM_LONG_DOUBLE_INT, "long_double_int"),
    };
    return cases;
}

struct Combo {
    const TypeCase *type;
    loom_op_t op;
};

// Every (type, op) pair MPI defines.
inline std::vector<Combo> all_combos() {
    std::vector<Combo> out;
    for (const TypeCase &t : all_type_cases())
        for (int op = 0; op < LOOM_OP_COUNT; ++op)
            if (t.valid(static_cast<loom_op_t>(op))) out.push_back({&t, static_cast<loom_op_t>(op)});
    return out;
}

}  // namespace loom::testing
