#pragma once
/// @file bf16_multiply.hpp
/// A bf16 product of packed operands on the unit in use, AMX or AVX512-BF16.
#include <Eigen/Core>

#include <dnncost/nn/kernels/amx.hpp>
#include <dnncost/nn/kernels/avx512_bf16.hpp>
#include <dnncost/nn/kernels/bf16_pack.hpp>
#include <dnncost/nn/kernels/cpu_features.hpp>

namespace dnncost::nn::kernels {

/// C (m x n, row stride ldc) (+)= packed A (ws.a, ws.mp x kp) * packed B on the bf16 unit in
/// use (`unit`: amx or avx512), for the part-th of `parts` contiguous ranges of 32-row blocks
/// (parts run concurrently on disjoint rows). Preconditions: that unit is available,
/// ws.kp == b.kp.
inline void bf16_multiply(Bf16Unit unit, const Bf16Workspace& ws, PackedB b, float* c, Eigen::Index ldc, Eigen::Index m,
                          Eigen::Index n, bool accumulate, Eigen::Index part, Eigen::Index parts) {
#if DNNCOST_X86_BF16_KERNELS
    const Eigen::Index blocks = ws.mp / 32;
    const Eigen::Index b0 = blocks * part / parts, b1 = blocks * (part + 1) / parts;
    if (b1 <= b0) return;
    if (unit == Bf16Unit::amx)
        detail::amx_rows(ws.a.data(), b, c, ldc, m, n, accumulate, b0 * 32, b1 * 32);
    else
        detail::dpbf16_rows(ws.a.data(), b, c, ldc, m, n, accumulate, b0 * 32, b1 * 32);
#else
    (void)unit, (void)ws, (void)b, (void)c, (void)ldc, (void)m, (void)n, (void)accumulate, (void)part, (void)parts;
#endif
}

}  // namespace dnncost::nn::kernels
