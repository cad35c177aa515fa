// Every (type, op) the CUDA kernels reduce, with its C type and its
// element-wise operation (core/elementwise.hpp): LOOM_DEVICE_REDUCTIONS(X)
// calls X(type name, op name, C type, operation) once per pair. Names are
// libloom's (loom-info -a). Compiled by nvcc for the kernels
// (cuda/reduce_kernels.cu) and by the host compiler for the unit test that
// checks each operation against libloom's CPU kernel of the same pair.
// Not on the device: long double, the complex types and long_double_int
// (no long double on GPUs; std::complex is host-only); Loom stages those.
#pragma once
#include <cstdint>
#include <type_traits>

#include "core/elementwise.hpp"
#include "core/pair_types.hpp"

namespace loom {
namespace device_list {

using namespace elementwise;
// MPI_CHAR and MPI_WCHAR reduce as integers of their size and signedness.
using char_int = std::conditional_t<std::is_signed_v<char>, int8_t, uint8_t>;
using wchar_int = std::conditional_t<std::is_signed_v<wchar_t>, std::make_signed_t<wchar_t>, std::make_unsigned_t<wchar_t>>;
// fp16/bf16 operations, named without commas for the macros below.
template <typename F>
using ReducedSum = Reduced<F, Sum<float>>;
template <typename F>
using ReducedProd = Reduced<F, Prod<float>>;
template <typename F>
using ReducedMin = Reduced<F, Min<float>>;
template <typename F>
using ReducedMax = Reduced<F, Max<float>>;

}  // namespace device_list
}  // namespace loom

#define LOOM_DEVICE_INTEGER_OPS(X, name, T)                                                 \
    X(name, sum, T, IntSum<T>) X(name, prod, T, IntProd<T>) X(name, min, T, Min<T>)         \
    X(name, max, T, Max<T>) X(name, land, T, LogicalAnd<T>) X(name, lor, T, LogicalOr<T>)   \
    X(name, lxor, T, LogicalXor<T>) X(name, band, T, BitAnd<T>) X(name, bor, T, BitOr<T>) \
    X(name, bxor, T, BitXor<T>)
#define LOOM_DEVICE_FLOAT_OPS(X, name, T) \
    X(name, sum, T, Sum<T>) X(name, prod, T, Prod<T>) X(name, min, T, Min<T>) X(name, max, T, Max<T>)
#define LOOM_DEVICE_REDUCED_OPS(X, name, F)                                            \
    X(name, sum, uint16_t, ReducedSum<F>) X(name, prod, uint16_t, ReducedProd<F>) \
    X(name, min, uint16_t, ReducedMin<F>) X(name, max, uint16_t, ReducedMax<F>)
#define LOOM_DEVICE_PAIR_OPS(X, name, P) X(name, minloc, P, MinLoc<P>) X(name, maxloc, P, MaxLoc<P>)

#define LOOM_DEVICE_REDUCTIONS(X)                                                                         \
    LOOM_DEVICE_INTEGER_OPS(X, int8, int8_t)                                                              \
    LOOM_DEVICE_INTEGER_OPS(X, uint8, uint8_t)                                                            \
    LOOM_DEVICE_INTEGER_OPS(X, int16, int16_t)                                                            \
    LOOM_DEVICE_INTEGER_OPS(X, uint16, uint16_t)                                                          \
    LOOM_DEVICE_INTEGER_OPS(X, int32, int32_t)                                                            \
    LOOM_DEVICE_INTEGER_OPS(X, uint32, uint32_t)                                                          \
    LOOM_DEVICE_INTEGER_OPS(X, int64, int64_t)                                                            \
    LOOM_DEVICE_INTEGER_OPS(X, uint64, uint64_t)                                                          \
    LOOM_DEVICE_INTEGER_OPS(X, char, char_int)                                                            \
    LOOM_DEVICE_INTEGER_OPS(X, signed_char, signed char)                                                  \
    LOOM_DEVICE_INTEGER_OPS(X, unsigned_char, unsigned char)                                              \
    LOOM_DEVICE_INTEGER_OPS(X, wchar, wchar_int)                                                          \
    LOOM_DEVICE_INTEGER_OPS(X, short, short)                                                              \
    LOOM_DEVICE_INTEGER_OPS(X, unsigned_short, unsigned short)                                            \
    LOOM_DEVICE_INTEGER_OPS(X, int, int)                                                                  \
    LOOM_DEVICE_INTEGER_OPS(X, unsigned, unsigned)                                                        \
    LOOM_DEVICE_INTEGER_OPS(X, long, long)                                                                \
    LOOM_DEVICE_INTEGER_OPS(X, unsigned_long, unsigned long)                                              \
    LOOM_DEVICE_INTEGER_OPS(X, long_long, long long)                                                      \
    LOOM_DEVICE_INTEGER_OPS(X, unsigned_long_long, unsigned long long)                                    \
    X(byte, band, uint8_t, BitAnd<uint8_t>) X(byte, bor, uint8_t, BitOr<uint8_t>)                         \
    X(byte, bxor, uint8_t, BitXor<uint8_t>)                                                               \
    X(bool, land, uint8_t, LogicalAnd<uint8_t>) X(bool, lor, uint8_t, LogicalOr<uint8_t>)                 \
    X(bool, lxor, uint8_t, LogicalXor<uint8_t>)                                                           \
    LOOM_DEVICE_REDUCED_OPS(X, float16, Fp16)                                                             \
    LOOM_DEVICE_REDUCED_OPS(X, bfloat16, Bf16)                                                            \
    LOOM_DEVICE_FLOAT_OPS(X, float, float)                                                                \
    LOOM_DEVICE_FLOAT_OPS(X, double, double)                                                              \
    LOOM_DEVICE_PAIR_OPS(X, float_int, FloatInt)                                                          \
    LOOM_DEVICE_PAIR_OPS(X, double_int, DoubleInt)                                                        \
    LOOM_DEVICE_PAIR_OPS(X, long_int, LongInt)                                                            \
    LOOM_DEVICE_PAIR_OPS(X, 2int, TwoInt)                                                                 \
    LOOM_DEVICE_PAIR_OPS(X, short_int, ShortInt)
