#pragma once
/// @file bf16.hpp
/// Optional bfloat16 matrix products on Intel AMX (Advanced Matrix Extensions, Sapphire Rapids
/// and later): inputs rounded to bf16 (8-bit mantissa, round to nearest even), products
/// accumulated in fp32 by the tile unit. About 7x the fp32 AVX-512 GEMM rate of a core on the
/// GNN's shapes, at the price of ~0.4 % relative rounding of every input: the standard
/// mixed-precision trade (fp32 master weights, optimiser and everything outside the GEMMs).
///
/// Off by default. A caller opts in per thread with `PrecisionScope` (Estimator does this
/// from FitOptions/predict options); the GEMM kernels of tensor.hpp then route float products
/// here when `amx_available()`, and keep fp32 otherwise, so a bf16 request is always safe.
/// Results depend on the precision and, as for fp32, on the machine's kernels, not on timing.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include <Eigen/Core>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && defined(__linux__)
#define DNNCOST_HAVE_AMX 1
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>
#else
#define DNNCOST_HAVE_AMX 0
#endif

namespace dnncost::nn {

/// Arithmetic of the GEMMs: fp32 everywhere, or bf16 inputs with fp32 accumulation.
enum class Precision : int { fp32 = 0, bf16 = 1 };

namespace kernels {

namespace detail {
inline Precision& thread_precision() {
    thread_local Precision p = Precision::fp32;
    return p;
}
}  // namespace detail

/// The precision GEMMs issued from this thread use.
inline Precision precision() { return detail::thread_precision(); }

/// Sets this thread's GEMM precision for its lifetime and restores the previous one.
class PrecisionScope {
public:
    explicit PrecisionScope(Precision p) : m_prev(detail::thread_precision()) { detail::thread_precision() = p; }
    PrecisionScope(const PrecisionScope&) = delete;
    PrecisionScope& operator=(const PrecisionScope&) = delete;
    ~PrecisionScope() { detail::thread_precision() = m_prev; }

private:
    Precision m_prev;
};

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

/// True when this CPU has AMX-BF16 and the kernel granted this process the tile state
/// (Linux arch_prctl ARCH_REQ_XCOMP_PERM). Checked once.
inline bool amx_available() {
#if DNNCOST_HAVE_AMX
    static const bool ok = [] {
        unsigned a = 0, b = 0, c = 0, d = 0;
        __asm__ volatile("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(0), "c"(0));
        if (a < 7) return false;
        __asm__ volatile("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(7), "c"(0));
        const bool bf16 = (d >> 22) & 1u, tile = (d >> 24) & 1u, avx512bw = (b >> 30) & 1u;
        if (!bf16 || !tile || !avx512bw) return false;
        __asm__ volatile("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(7), "c"(1));
        if (!((a >> 5) & 1u)) return false;  // AVX512_BF16, used to pack the operands
        constexpr long arch_req_xcomp_perm = 0x1023, xfeature_xtiledata = 18;
        return syscall(SYS_arch_prctl, arch_req_xcomp_perm, xfeature_xtiledata) == 0;
    }();
    return ok;
#else
    return false;
#endif
}

/// Operands packed for the tile unit. A: rows padded to 32, depth padded to 32, bf16 row-major.
/// B: depth padded to 32, columns padded to 32, in pairs of consecutive depth entries
/// ("VNNI" layout: element (k, n) at ((k / 2) * np + n) * 2 + k % 2).
struct Bf16Workspace {
    std::vector<std::uint16_t> a, b;
    Eigen::Index mp = 0, np = 0, kp = 0;
};

inline Eigen::Index round_up(Eigen::Index v, Eigen::Index to) { return (v + to - 1) / to * to; }

#if DNNCOST_HAVE_AMX
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
/// Two rows r0, r1 of B into the pair layout: dst[2 j] = bf16(r0[j]), dst[2 j + 1] = bf16(r1[j]).
__attribute__((target("avx512f,avx512bw,avx512bf16"))) inline void interleave_rows(std::uint16_t* dst, const float* r0,
                                                                                   const float* r1, Eigen::Index n) {
    alignas(64) static constexpr std::uint16_t order[32] = {0, 16, 1, 17, 2,  18, 3,  19, 4,  20, 5,  21, 6,  22, 7,  23,
                                                            8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31};
    const __m512i idx = _mm512_load_si512(order);
    Eigen::Index j = 0;
    for (; r1 && j + 16 <= n; j += 16) {
        const __m512bh v = _mm512_cvtne2ps_pbh(_mm512_loadu_ps(r1 + j), _mm512_loadu_ps(r0 + j));  // [r0 | r1]
        _mm512_storeu_si512(dst + 2 * j, _mm512_permutexvar_epi16(idx, reinterpret_cast<const __m512i&>(v)));
    }
    for (; j < n; ++j) {
        dst[2 * j] = to_bf16(r0[j]);
        dst[2 * j + 1] = r1 ? to_bf16(r1[j]) : 0;
    }
}
}  // namespace detail
#endif

/// Rows of a row-major float matrix with unit inner stride (a plain Mat or a row block of
/// one), or nullptr for any other expression (packed element by element).
template <class D>
const float* row_major_data(const Eigen::MatrixBase<D>& m) {
    if constexpr (std::is_same_v<typename D::Scalar, float> && (int(D::Flags) & Eigen::RowMajorBit) != 0 &&
                  (int(D::Flags) & Eigen::DirectAccessBit) != 0) {
        return m.derived().innerStride() == 1 ? m.derived().data() : nullptr;
    } else {
        return nullptr;
    }
}
template <class D>
Eigen::Index row_stride(const Eigen::MatrixBase<D>& m) {
    if constexpr ((int(D::Flags) & Eigen::DirectAccessBit) != 0) return m.derived().outerStride();
    else return 0;
}

/// Zero the padding of a rows x cols block inside a buffer of padded_rows x padded_cols.
inline void zero_padding(std::vector<std::uint16_t>& buf, Eigen::Index rows, Eigen::Index cols, Eigen::Index padded_rows,
                         Eigen::Index padded_cols) {
    buf.resize(static_cast<std::size_t>(padded_rows * padded_cols));
    if (cols < padded_cols)
        for (Eigen::Index i = 0; i < rows; ++i)
            std::fill(buf.begin() + i * padded_cols + cols, buf.begin() + (i + 1) * padded_cols, std::uint16_t{0});
    std::fill(buf.begin() + rows * padded_cols, buf.end(), std::uint16_t{0});
}

/// Pack op(A) (m x k, any Eigen expression) into ws.a.
template <class DA>
void pack_a(Bf16Workspace& ws, const Eigen::MatrixBase<DA>& a) {
    const Eigen::Index m = a.rows(), k = a.cols();
    ws.mp = round_up(m, 32);
    ws.kp = round_up(k, 32);
    zero_padding(ws.a, m, k, ws.mp, ws.kp);
#if DNNCOST_HAVE_AMX
    if (const float* p = row_major_data(a)) {
        const Eigen::Index ld = row_stride(a);
        for (Eigen::Index i = 0; i < m; ++i) detail::convert_row(ws.a.data() + i * ws.kp, p + i * ld, k);
        return;
    }
#endif
    for (Eigen::Index i = 0; i < m; ++i) {
        std::uint16_t* row = ws.a.data() + i * ws.kp;
        for (Eigen::Index j = 0; j < k; ++j) row[j] = to_bf16(static_cast<float>(a(i, j)));
    }
}
/// Pack A = S^T into ws.a, S a row-major float matrix (rows x cols, row stride ld): the
/// left operand of a weight-gradient product S^T B. 32 x 32 blocks: rows of S are converted
/// contiguously, then transposed in L1, instead of walking S column by column.
inline void pack_a_transposed(Bf16Workspace& ws, const float* src, Eigen::Index rows, Eigen::Index cols, Eigen::Index ld) {
    ws.mp = round_up(cols, 32);
    ws.kp = round_up(rows, 32);
    zero_padding(ws.a, cols, rows, ws.mp, ws.kp);
    alignas(64) std::uint16_t tile[32 * 32];
    for (Eigen::Index r0 = 0; r0 < rows; r0 += 32) {
        const Eigen::Index rn = std::min<Eigen::Index>(32, rows - r0);
        for (Eigen::Index c0 = 0; c0 < cols; c0 += 32) {
            const Eigen::Index cn = std::min<Eigen::Index>(32, cols - c0);
            for (Eigen::Index r = 0; r < rn; ++r) {
#if DNNCOST_HAVE_AMX
                detail::convert_row(tile + r * 32, src + (r0 + r) * ld + c0, cn);
#else
                for (Eigen::Index c = 0; c < cn; ++c) tile[r * 32 + c] = to_bf16(src[(r0 + r) * ld + c0 + c]);
#endif
            }
            for (Eigen::Index c = 0; c < cn; ++c) {
                std::uint16_t* dst = ws.a.data() + (c0 + c) * ws.kp + r0;
                for (Eigen::Index r = 0; r < rn; ++r) dst[r] = tile[r * 32 + c];
            }
        }
    }
}
/// Pack op(B) (k x n) into ws.b.
template <class DB>
void pack_b(Bf16Workspace& ws, const Eigen::MatrixBase<DB>& b) {
    const Eigen::Index k = b.rows(), n = b.cols();
    ws.kp = round_up(k, 32);
    ws.np = round_up(n, 32);
    // pair layout: "row" r/2 holds np pairs; padding = columns >= n and pairs beyond k
    zero_padding(ws.b, (k + 1) / 2, 2 * n, ws.kp / 2, 2 * ws.np);
#if DNNCOST_HAVE_AMX
    if (const float* p = row_major_data(b)) {
        const Eigen::Index ld = row_stride(b);
        for (Eigen::Index r = 0; r < k; r += 2)
            detail::interleave_rows(ws.b.data() + (r / 2) * ws.np * 2, p + r * ld, r + 1 < k ? p + (r + 1) * ld : nullptr, n);
        return;
    }
#endif
    for (Eigen::Index r = 0; r < k; ++r) {
        std::uint16_t* dst = ws.b.data() + (r / 2) * ws.np * 2 + (r % 2);
        for (Eigen::Index j = 0; j < n; ++j) dst[2 * j] = to_bf16(static_cast<float>(b(r, j)));
    }
}

#if DNNCOST_HAVE_AMX
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
__attribute__((target("amx-tile,amx-bf16"))) inline void amx_rows(const Bf16Workspace& ws, float* c, Eigen::Index ldc,
                                                                   Eigen::Index m, Eigen::Index n, bool accumulate,
                                                                   Eigen::Index r0, Eigen::Index r1) {
    TileConfig cfg;
    for (int t = 0; t < 8; ++t) {
        cfg.rows[t] = 16;
        cfg.colsb[t] = 64;
    }
    _tile_loadconfig(&cfg);
    alignas(64) float tmp[32 * 32];
    const std::uint16_t* A = ws.a.data();
    const std::uint16_t* B = ws.b.data();
    const Eigen::Index kp = ws.kp, np = ws.np;
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
            for (Eigen::Index k = 0; k < kp; k += 32) {
                _tile_loadd(4, A + i * kp + k, static_cast<long>(kp * 2));
                _tile_loadd(5, A + (i + 16) * kp + k, static_cast<long>(kp * 2));
                _tile_loadd(6, B + (k / 2) * np * 2 + j * 2, static_cast<long>(np * 4));
                _tile_loadd(7, B + (k / 2) * np * 2 + (j + 16) * 2, static_cast<long>(np * 4));
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

/// C (m x n, row stride ldc) (+)= packed A * packed B on the tile unit, for the part-th of
/// `parts` contiguous ranges of 32-row blocks (parts run concurrently on disjoint rows).
/// Precondition: amx_available().
inline void amx_multiply(const Bf16Workspace& ws, float* c, Eigen::Index ldc, Eigen::Index m, Eigen::Index n, bool accumulate,
                         Eigen::Index part, Eigen::Index parts) {
#if DNNCOST_HAVE_AMX
    const Eigen::Index blocks = ws.mp / 32;
    const Eigen::Index b0 = blocks * part / parts, b1 = blocks * (part + 1) / parts;
    if (b1 > b0) detail::amx_rows(ws, c, ldc, m, n, accumulate, b0 * 32, b1 * 32);
#else
    (void)ws, (void)c, (void)ldc, (void)m, (void)n, (void)accumulate, (void)part, (void)parts;
#endif
}

}  // namespace kernels
}  // namespace dnncost::nn
