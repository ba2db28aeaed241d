#pragma once
/// @file bf16_convert.hpp
/// Rounding floats to bfloat16 (8-bit mantissa, round to nearest even) and back, one value or
/// a row at a time.
#include <cstdint>
#include <cstring>

#include <Eigen/Core>

#include <dnncost/nn/kernels/cpu_features.hpp>

namespace dnncost::nn::kernels {

/// Round a float to bfloat16 (nearest, ties to even; NaN stays NaN).
inline std::uint16_t to_bf16(float f) {
    std::uint32_t u;
    std::memcpy(&u, &f, 4);
    const std::uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
    const std::uint32_t nan = (u >> 16) | 0x40u;  // quiet NaN (branch-free, so loops vectorise)
    return static_cast<std::uint16_t>((u & 0x7fffffffu) > 0x7f800000u ? nan : rounded);
}
inline float from_bf16(std::uint16_t h) {
    const std::uint32_t u = static_cast<std::uint32_t>(h) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}

#if DNNCOST_X86_BF16_KERNELS
namespace detail {
/// dst[0, n) = bf16(src[0, n)), 32 at a time (AVX512-BF16 rounds to nearest even, as to_bf16).
__attribute__((target("avx512f,avx512bw,avx512bf16"))) inline void convert_row(std::uint16_t* dst, const float* src,
                                                                               Eigen::Index n) {
    Eigen::Index j = 0;
    for (; j + 32 <= n; j += 32) {
        const __m512bh v = _mm512_cvtne2ps_pbh(_mm512_loadu_ps(src + j + 16), _mm512_loadu_ps(src + j));
        _mm512_storeu_si512(dst + j, reinterpret_cast<const __m512i&>(v));
    }
    for (; j < n; ++j) dst[j] = to_bf16(src[j]);
}
}  // namespace detail
#endif

/// dst[0, n) = bf16(src[0, n)), rounded to nearest even.
inline void to_bf16_row(std::uint16_t* dst, const float* src, Eigen::Index n) {
#if DNNCOST_X86_BF16_KERNELS
    if (avx512bf16_available()) return detail::convert_row(dst, src, n);
#endif
    for (Eigen::Index j = 0; j < n; ++j) dst[j] = to_bf16(src[j]);
}

}  // namespace dnncost::nn::kernels
