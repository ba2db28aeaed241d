#pragma once
/// @file amx.hpp
/// The bf16 GEMM kernel of the Intel AMX tile unit, on operands packed by bf16_pack.hpp.
#include <cstdint>

#include <Eigen/Core>

#include <dnncost/nn/kernels/bf16_pack.hpp>
#include <dnncost/nn/kernels/cpu_features.hpp>

namespace dnncost::nn::kernels {

#if DNNCOST_X86_BF16_KERNELS
namespace detail {
struct alignas(64) TileConfig {
    std::uint8_t palette = 1, start_row = 0;
    std::uint8_t reserved[14] = {};
    std::uint16_t colsb[16] = {};
    std::uint8_t rows[16] = {};
};
/// Rows [r0, r1) (multiples of 32, r0 < m) of C (+)= A * B on the packed operands: 2 x 2 tiles
/// of 16 x 16 fp32 accumulators per 32 x 32 block, streaming 32-deep slices of A and B.
/// Full blocks go straight to/from c (row stride ldc, n a multiple of 32); a block that
/// overhangs row m or column n goes through the scratch block `tmp` (32 x 32).
__attribute__((target("amx-tile,amx-bf16"))) inline void amx_rows(const std::uint16_t* A, PackedB pb, float* c,
                                                                  Eigen::Index ldc, Eigen::Index m, Eigen::Index n,
                                                                  bool accumulate, Eigen::Index r0, Eigen::Index r1) {
    TileConfig cfg;
    for (int t = 0; t < 8; ++t) {
        cfg.rows[t] = 16;
        cfg.colsb[t] = 64;
    }
    _tile_loadconfig(&cfg);
    alignas(64) float tmp[32 * 32];
    const std::uint16_t* B = pb.data;
    const Eigen::Index kt = pb.kp / 32, np = pb.np;
    for (Eigen::Index i = r0; i < r1; i += 32) {
        for (Eigen::Index j = 0; j < np; j += 32) {
            const bool direct = i + 32 <= m && j + 32 <= n;
            float* out = direct ? c + i * ldc + j : tmp;
            const long ld = static_cast<long>((direct ? ldc : 32) * 4);
            if (!direct && accumulate)
                for (Eigen::Index r = 0; r < 32; ++r)
                    for (Eigen::Index q = 0; q < 32; ++q)
                        tmp[r * 32 + q] = (i + r < m && j + q < n) ? c[(i + r) * ldc + j + q] : 0.0f;
            if (accumulate) {
                _tile_loadd(0, out, ld);
                _tile_loadd(1, out + 16, ld);
                _tile_loadd(2, out + 16 * (ld / 4), ld);
                _tile_loadd(3, out + 16 * (ld / 4) + 16, ld);
            } else {
                _tile_zero(0);
                _tile_zero(1);
                _tile_zero(2);
                _tile_zero(3);
            }
            const std::uint16_t* a0 = A + (i / 16) * kt * 512;
            const std::uint16_t* a1 = a0 + kt * 512;
            const std::uint16_t* b0 = B + (j / 16) * kt * 512;
            const std::uint16_t* b1 = b0 + kt * 512;
            for (Eigen::Index t = 0; t < kt; ++t) {
                _tile_loadd(4, a0 + t * 512, 64);
                _tile_loadd(5, a1 + t * 512, 64);
                _tile_loadd(6, b0 + t * 512, 64);
                _tile_loadd(7, b1 + t * 512, 64);
                _tile_dpbf16ps(0, 4, 6);
                _tile_dpbf16ps(1, 4, 7);
                _tile_dpbf16ps(2, 5, 6);
                _tile_dpbf16ps(3, 5, 7);
            }
            _tile_stored(0, out, ld);
            _tile_stored(1, out + 16, ld);
            _tile_stored(2, out + 16 * (ld / 4), ld);
            _tile_stored(3, out + 16 * (ld / 4) + 16, ld);
            if (!direct)
                for (Eigen::Index r = 0; r < 32 && i + r < m; ++r)
                    for (Eigen::Index q = 0; q < 32 && j + q < n; ++q) c[(i + r) * ldc + j + q] = tmp[r * 32 + q];
        }
    }
    _tile_release();
}
}  // namespace detail
#endif

}  // namespace dnncost::nn::kernels
