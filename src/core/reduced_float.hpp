// IEEE binary16 and bfloat16 conversions, round to nearest even. Inline and
// branch-free (every case computed, one selected) so the fp16/bf16
// reduction loops vectorize.
#pragma once
// Compiled for the GPU too (cuda/reduce_kernels.cu): the same bits on both.
#include <cstdint>
#include <cstring>

#include "core/host_device.hpp"

namespace loom {

LOOM_HOST_DEVICE inline uint32_t float_bits(float f) {
#if defined(__CUDA_ARCH__)
    return __float_as_uint(f);
#else
    uint32_t x;
    std::memcpy(&x, &f, 4);
    return x;
#endif
}

LOOM_HOST_DEVICE inline float bits_float(uint32_t x) {
#if defined(__CUDA_ARCH__)
    return __uint_as_float(x);
#else
    float f;
    std::memcpy(&f, &x, 4);
    return f;
#endif
}

LOOM_HOST_DEVICE inline uint16_t float_to_fp16(float f) {
    const uint32_t x = float_bits(f);
    const uint32_t sign = (x >> 16) & 0x8000u;
    const uint32_t abs_bits = x & 0x7fffffffu;
    // inf stays inf; NaN stays a quiet NaN with its top payload bits
    const uint32_t inf_or_nan = 0x7c00u | (abs_bits > 0x7f800000u ? 0x200u | ((abs_bits >> 13) & 0x3ffu) : 0u);
    // below 2^-14 the half is subnormal: adding 0.5 (ulp 2^-24, the half
    // subnormal step) lets the FPU round to nearest even
    const uint32_t subnormal = float_bits(bits_float(abs_bits) + 0.5f) - 0x3f000000u;
    // normal: rebias the exponent 127 -> 15 and round to nearest even
    const uint32_t normal = (abs_bits + 0xc8000fffu + ((abs_bits >> 13) & 1u)) >> 13;
    const uint32_t magnitude = abs_bits >= 0x7f800000u   ? inf_or_nan
                               : abs_bits >= 0x477ff000u ? 0x7c00u  // half-way above 65504 or more: inf
                               : abs_bits < 0x38800000u  ? subnormal
                                                         : normal;
    return static_cast<uint16_t>(sign | magnitude);
}

LOOM_HOST_DEVICE inline float fp16_to_float(uint16_t h) {
    const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    const uint32_t exponent = (h >> 10) & 0x1fu;
    const uint32_t mantissa = h & 0x3ffu;
    const uint32_t normal = ((exponent + 112u) << 23) | (mantissa << 13);
    const uint32_t inf_or_nan = 0x7f800000u | (mantissa << 13);
    const uint32_t subnormal = float_bits(static_cast<float>(mantissa) * 0x1p-24f);
    return bits_float(sign | (exponent == 0x1f ? inf_or_nan : exponent == 0 ? subnormal : normal));
}

LOOM_HOST_DEVICE inline uint16_t float_to_bf16(float f) {
    const uint32_t x = float_bits(f);
    const uint32_t rounded = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
    const uint32_t quiet_nan = (x >> 16) | 0x40u;
    return static_cast<uint16_t>((x & 0x7fffffffu) > 0x7f800000u ? quiet_nan : rounded);
}

LOOM_HOST_DEVICE inline float bf16_to_float(uint16_t h) { return bits_float(static_cast<uint32_t>(h) << 16); }

}  // namespace loom
