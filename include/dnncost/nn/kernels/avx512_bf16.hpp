#pragma once
/// @file avx512_bf16.hpp
/// The bf16 GEMM kernel of AVX512-BF16 (VDPBF16PS), on the operands packed for the tile unit
/// (bf16_pack.hpp), so both units share the packers.
#include <cstdint>
#include <cstring>

#include <Eigen/Core>

#include <dnncost/nn/kernels/bf16_pack.hpp>
#include <dnncost/nn/kernels/cpu_features.hpp>

namespace dnncost::nn::kernels {

#if DNNCOST_X86_BF16_KERNELS
namespace detail {
/// Rows [r0, r1) (multiples of 32, r0 < m) of C (+)= A * B on the packed operands with
/// AVX512-BF16: blocks of 8 rows x 32 columns in 16 fp32 accumulator registers. For each depth
/// pair, the two 16-column pair rows of B are loaded once and each of the 8 rows' bf16 pair of
/// A is broadcast to all lanes (VDPBF16PS: lane j += a0 b0j + a1 b1j). The pair layout of B and
/// the row layout of A are the tile unit's, so both units share the packers. A 32-row block of
/// A and a 32-column block of B (16 KB each at depth 256) stay in L1 while the 4 row groups of
/// the block run over them.
__attribute__((target("avx512f,avx512bw,avx512bf16"))) inline void dpbf16_rows(const std::uint16_t* A, PackedB pb,
                                                                               float* c, Eigen::Index ldc,
                                                                               Eigen::Index m, Eigen::Index n,
                                                                               bool accumulate, Eigen::Index r0,
                                                                               Eigen::Index r1) {
    const std::uint16_t* B = pb.data;
    const Eigen::Index kt = pb.kp / 32, np = pb.np;
    for (Eigen::Index i32 = r0; i32 < r1; i32 += 32) {
        for (Eigen::Index j = 0; j < np; j += 32) {
            const std::uint16_t* b0 = B + (j / 16) * kt * 512;
            const std::uint16_t* b1 = b0 + kt * 512;
            // columns j .. j + 15 and j + 16 .. j + 31 that exist in C
            const __mmask16 mask0 = j >= n ? 0 : j + 16 <= n ? 0xFFFF : static_cast<__mmask16>((1u << (n - j)) - 1u);
            const __mmask16 mask1 = j + 16 >= n   ? 0
                                    : j + 32 <= n ? 0xFFFF
                                                  : static_cast<__mmask16>((1u << (n - j - 16)) - 1u);
            for (Eigen::Index i = i32; i < i32 + 32 && i < m; i += 8) {
                const std::uint16_t* a = A + (i / 16) * kt * 512 + (i % 16) * 32;
                __m512 acc[8][2];
                for (int r = 0; r < 8; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
                for (Eigen::Index t = 0; t < kt; ++t) {
                    const std::uint16_t* at = a + t * 512;
                    const std::uint16_t* bt0 = b0 + t * 512;
                    const std::uint16_t* bt1 = b1 + t * 512;
                    for (int p = 0; p < 16; ++p) {
                        const __m512i v0 = _mm512_load_si512(bt0 + p * 32), v1 = _mm512_load_si512(bt1 + p * 32);
                        const __m512bh w0 = reinterpret_cast<const __m512bh&>(v0),
                                       w1 = reinterpret_cast<const __m512bh&>(v1);
#pragma GCC unroll 8
                        for (int r = 0; r < 8; ++r) {
                            std::int32_t pair;
                            std::memcpy(&pair, at + r * 32 + 2 * p, 4);
                            const __m512i u = _mm512_set1_epi32(pair);
                            const __m512bh x = reinterpret_cast<const __m512bh&>(u);
                            acc[r][0] = _mm512_dpbf16_ps(acc[r][0], x, w0);
                            acc[r][1] = _mm512_dpbf16_ps(acc[r][1], x, w1);
                        }
                    }
                }
                for (int r = 0; r < 8 && i + r < m; ++r) {
                    float* out = c + (i + r) * ldc + j;
                    if (accumulate) {
                        acc[r][0] = _mm512_add_ps(acc[r][0], _mm512_maskz_loadu_ps(mask0, out));
                        acc[r][1] = _mm512_add_ps(acc[r][1], _mm512_maskz_loadu_ps(mask1, out + 16));
                    }
                    _mm512_mask_storeu_ps(out, mask0, acc[r][0]);
                    _mm512_mask_storeu_ps(out + 16, mask1, acc[r][1]);
                }
            }
        }
    }
}
}  // namespace detail
#endif

}  // namespace dnncost::nn::kernels
