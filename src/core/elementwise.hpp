// The element-wise operation of every reduction, dst = dst op src, one
// definition for the CPU kernels (core/reduce_kernels.cpp) and, compiled by
// nvcc, the CUDA kernels (cuda/reduce_kernels.cu): the unit tests check
// the arithmetic the GPU runs.
// Integer SUM/PROD wrap around as C unsigned arithmetic does, for signed
// types too (the MPI standard's C semantics; Open MPI 4.1.4's op/avx
// saturates 8-bit SUM instead).
#pragma once
#include <cstdint>
#include <type_traits>

#include "core/host_device.hpp"
#include "core/reduced_float.hpp"

namespace loom {
namespace elementwise {

template <typename T>
using Wide = std::make_unsigned_t<T>;

// --- integer ops: arithmetic in the unsigned type of the same width wraps.
template <typename T>
struct IntSum {
    LOOM_HOST_DEVICE static T apply(T a, T b) {
        return static_cast<T>(static_cast<Wide<T>>(a) + static_cast<Wide<T>>(b));
    }
};
template <typename T>
struct IntProd {
    // Promote to at least unsigned int so 16-bit products do not go through signed int.
    using U = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, Wide<T>>;
    LOOM_HOST_DEVICE static T apply(T a, T b) {
        return static_cast<T>(static_cast<U>(static_cast<Wide<T>>(a)) * static_cast<U>(static_cast<Wide<T>>(b)));
    }
};
template <typename T>
struct Min {
    LOOM_HOST_DEVICE static T apply(T a, T b) { return b < a ? b : a; }
};
template <typename T>
struct Max {
    LOOM_HOST_DEVICE static T apply(T a, T b) { return a < b ? b : a; }
};
template <typename T>
struct LogicalAnd {
    LOOM_HOST_DEVICE static T apply(T a, T b) { return static_cast<T>((a != 0) & (b != 0)); }
};
template <typename T>
struct LogicalOr {
    LOOM_HOST_DEVICE static T apply(T a, T b) { return static_cast<T>((a != 0) | (b != 0)); }
};
template <typename T>
struct LogicalXor {
    LOOM_HOST_DEVICE static T apply(T a, T b) { return static_cast<T>((a != 0) ^ (b != 0)); }
};
template <typename T>
struct BitAnd {
    LOOM_HOST_DEVICE static T apply(T a, T b) { return static_cast<T>(a & b); }
};
template <typename T>
struct BitOr {
    LOOM_HOST_DEVICE static T apply(T a, T b) { return static_cast<T>(a | b); }
};
template <typename T>
struct BitXor {
    LOOM_HOST_DEVICE static T apply(T a, T b) { return static_cast<T>(a ^ b); }
};
// --- floating and complex
template <typename T>
struct Sum {
    LOOM_HOST_DEVICE static T apply(T a, T b) { return a + b; }
};
template <typename T>
struct Prod {
    LOOM_HOST_DEVICE static T apply(T a, T b) { return a * b; }
};

// --- fp16 / bf16: widen to float, operate, round back to nearest even.
struct Fp16 {
    LOOM_HOST_DEVICE static float widen(uint16_t h) { return fp16_to_float(h); }
    LOOM_HOST_DEVICE static uint16_t narrow(float f) { return float_to_fp16(f); }
};
struct Bf16 {
    LOOM_HOST_DEVICE static float widen(uint16_t h) { return bf16_to_float(h); }
    LOOM_HOST_DEVICE static uint16_t narrow(float f) { return float_to_bf16(f); }
};
template <typename Format, typename FloatOp>
struct Reduced {
    LOOM_HOST_DEVICE static uint16_t apply(uint16_t a, uint16_t b) {
        return Format::narrow(FloatOp::apply(Format::widen(a), Format::widen(b)));
    }
};

// --- MINLOC / MAXLOC: ties keep the smaller index (MPI's rule).
template <typename P>
struct MinLoc {
    LOOM_HOST_DEVICE static P apply(P a, P b) {
        if (b.value < a.value || (b.value == a.value && b.index < a.index)) return b;
        return a;
    }
};
template <typename P>
struct MaxLoc {
    LOOM_HOST_DEVICE static P apply(P a, P b) {
        if (a.value < b.value || (b.value == a.value && b.index < a.index)) return b;
        return a;
    }
};

}  // namespace elementwise
}  // namespace loom
