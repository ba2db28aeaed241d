#pragma once
/// @file bf16_pack.hpp
/// GEMM operands rounded to bf16 and packed in the layout both bf16 units load (see
/// Bf16Workspace): the left operand A, its transposed form S^T for weight gradients, the right
/// operand B, and the fused SAGE block's [x | aggregate] operand written straight into place.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>
#include <type_traits>
#include <vector>

#include <Eigen/Core>

#include <dnncost/nn/kernels/bf16_convert.hpp>
#include <dnncost/nn/kernels/cpu_features.hpp>

namespace dnncost::nn::kernels {

/// Allocator of cache-line (64-byte) aligned storage, so that no 64-byte row of a packed tile
/// straddles two cache lines (a tile load would then touch twice as many lines).
template <class T>
struct CacheLineAllocator {
    using value_type = T;
    static constexpr std::align_val_t alignment{64};
    CacheLineAllocator() = default;
    template <class U>
    CacheLineAllocator(const CacheLineAllocator<U>&) noexcept {}
    T* allocate(std::size_t n) { return static_cast<T*>(::operator new(n * sizeof(T), alignment)); }
    void deallocate(T* p, std::size_t) noexcept { ::operator delete(p, alignment); }
    friend bool operator==(const CacheLineAllocator&, const CacheLineAllocator&) { return true; }
};
/// Storage of packed bf16 operands.
using Bf16Buffer = std::vector<std::uint16_t, CacheLineAllocator<std::uint16_t>>;

/// Operands packed for the tile unit, as the tiles it loads: every 16 x 32 bf16 tile (1 KB)
/// contiguous and 64-byte aligned, so a tile load reads 16 whole consecutive cache lines.
/// kt = kp / 32.
/// A (mp x kp, rows and depth padded to 32): element (i, k) at
///   ((i / 16) kt + k / 32) 512 + (i % 16) 32 + k % 32.
/// B (kp x np, depth and columns padded to 32), pairs of consecutive depth entries side by side
/// ("VNNI"): element (k, j) at ((j / 16) kt + k / 32) 512 + ((k % 32) / 2) 32 + (j % 16) 2 + k % 2.
struct Bf16Workspace {
    Bf16Buffer a, b;
    Eigen::Index mp = 0, np = 0, kp = 0;
};

/// A packed right operand (pair layout, see Bf16Workspace) of kp x np.
struct PackedB {
    const std::uint16_t* data = nullptr;
    Eigen::Index kp = 0, np = 0;
};

inline Eigen::Index round_up(Eigen::Index v, Eigen::Index to) { return (v + to - 1) / to * to; }

#if DNNCOST_X86_BF16_KERNELS
namespace detail {
/// Two rows r0, r1 (depth k, k + 1; k even) of B into the pair layout: columns [16 b, 16 b + 16)
/// go to dst + b * block_stride as 16 pairs (bf16(r0[j]), bf16(r1[j])); r1 == nullptr pairs with 0.
__attribute__((target("avx512f,avx512bw,avx512bf16"))) inline void interleave_rows(std::uint16_t* dst,
                                                                                   Eigen::Index block_stride,
                                                                                   const float* r0, const float* r1,
                                                                                   Eigen::Index n) {
    alignas(64) static constexpr std::uint16_t order[32] = {0,  16, 1,  17, 2,  18, 3,  19, 4,  20, 5,
                                                            21, 6,  22, 7,  23, 8,  24, 9,  25, 10, 26,
                                                            11, 27, 12, 28, 13, 29, 14, 30, 15, 31};
    const __m512i idx = _mm512_load_si512(order);
    Eigen::Index j = 0;
    for (; r1 && j + 16 <= n; j += 16) {
        const __m512bh v = _mm512_cvtne2ps_pbh(_mm512_loadu_ps(r1 + j), _mm512_loadu_ps(r0 + j));  // [r0 | r1]
        _mm512_storeu_si512(dst + (j / 16) * block_stride,
                            _mm512_permutexvar_epi16(idx, reinterpret_cast<const __m512i&>(v)));
    }
    for (; j < n; ++j) {
        std::uint16_t* d = dst + (j / 16) * block_stride + (j % 16) * 2;
        d[0] = to_bf16(r0[j]);
        d[1] = r1 ? to_bf16(r1[j]) : 0;
    }
}
/// Row of a packed left operand (dst = its first 32 entries; the next 32 columns are 512
/// entries further) = [bf16(xv) | bf16(sum_k w_k x_{idx_k})], d % 32 == 0, 2 d == kp: the
/// fused SAGE block's inference operand, summed in registers 128 columns at a time and
/// converted on the way out (no fp32 row is stored and reloaded).
__attribute__((target("avx512f,avx512bw,avx512bf16"))) inline void pack_sage_row(std::uint16_t* dst, const float* xv,
                                                                                 const float* x, Eigen::Index d,
                                                                                 const int* idx, const float* w,
                                                                                 int count) {
    for (Eigen::Index c = 0; c < d; c += 32) {
        const __m512bh v = _mm512_cvtne2ps_pbh(_mm512_loadu_ps(xv + c + 16), _mm512_loadu_ps(xv + c));
        _mm512_store_si512(dst + (c / 32) * 512, reinterpret_cast<const __m512i&>(v));
    }
    std::uint16_t* agg_dst = dst + (d / 32) * 512;
    Eigen::Index c0 = 0;
    for (; c0 + 128 <= d; c0 += 128) {  // 8 accumulators with fixed indices: they stay in registers
        __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
        for (int k = 0; k < count; ++k) {
            const float* xu = x + static_cast<Eigen::Index>(idx[k]) * d + c0;
            const __m512 wk = _mm512_set1_ps(w ? w[k] : 1.0f);
            a0 = _mm512_fmadd_ps(wk, _mm512_loadu_ps(xu), a0);
            a1 = _mm512_fmadd_ps(wk, _mm512_loadu_ps(xu + 16), a1);
            a2 = _mm512_fmadd_ps(wk, _mm512_loadu_ps(xu + 32), a2);
            a3 = _mm512_fmadd_ps(wk, _mm512_loadu_ps(xu + 48), a3);
            a4 = _mm512_fmadd_ps(wk, _mm512_loadu_ps(xu + 64), a4);
            a5 = _mm512_fmadd_ps(wk, _mm512_loadu_ps(xu + 80), a5);
            a6 = _mm512_fmadd_ps(wk, _mm512_loadu_ps(xu + 96), a6);
            a7 = _mm512_fmadd_ps(wk, _mm512_loadu_ps(xu + 112), a7);
        }
        std::uint16_t* o = agg_dst + (c0 / 32) * 512;
        __m512bh v = _mm512_cvtne2ps_pbh(a1, a0);
        _mm512_store_si512(o, reinterpret_cast<const __m512i&>(v));
        v = _mm512_cvtne2ps_pbh(a3, a2);
        _mm512_store_si512(o + 512, reinterpret_cast<const __m512i&>(v));
        v = _mm512_cvtne2ps_pbh(a5, a4);
        _mm512_store_si512(o + 1024, reinterpret_cast<const __m512i&>(v));
        v = _mm512_cvtne2ps_pbh(a7, a6);
        _mm512_store_si512(o + 1536, reinterpret_cast<const __m512i&>(v));
    }
    for (; c0 < d; c0 += 32) {  // the rest, 32 columns at a time (d % 32 == 0)
        __m512 a0 = _mm512_setzero_ps(), a1 = a0;
        for (int k = 0; k < count; ++k) {
            const float* xu = x + static_cast<Eigen::Index>(idx[k]) * d + c0;
            const __m512 wk = _mm512_set1_ps(w ? w[k] : 1.0f);
            a0 = _mm512_fmadd_ps(wk, _mm512_loadu_ps(xu), a0);
            a1 = _mm512_fmadd_ps(wk, _mm512_loadu_ps(xu + 16), a1);
        }
        const __m512bh v = _mm512_cvtne2ps_pbh(a1, a0);
        _mm512_store_si512(agg_dst + (c0 / 32) * 512, reinterpret_cast<const __m512i&>(v));
    }
}
/// Column c of a 32 x 32 tile of bf16 (row-major, 64-byte aligned) to dst(c) for c < cn: a
/// 16-bit transpose in registers. Interleaving 16-, 32- and 64-bit units of 8 rows leaves, in
/// 128-bit lane L of register k of row group g, rows 8g..8g+7 of column 8L+k; a 4 x 4
/// transpose of lanes across the 4 groups then gives each column whole.
template <class Dst>
__attribute__((target("avx512f,avx512bw"))) inline void transpose_tile(const std::uint16_t* tile, Eigen::Index cn,
                                                                       Dst&& dst) {
    constexpr __mmask32 m32 = 0xFFFFFFFFu;  // all lanes
    constexpr __mmask16 m16 = 0xFFFF;
    constexpr __mmask8 m8 = 0xFF;
    __m512i r[4][8];
    for (int g = 0; g < 4; ++g) {
        __m512i x[8], p[8], q[8];
        for (int i = 0; i < 8; ++i) x[i] = _mm512_load_si512(tile + (8 * g + i) * 32);
        for (int i = 0; i < 8; i += 2) {  // pairs of rows: columns 0-3 (lo) and 4-7 (hi) of each lane
            p[i] = _mm512_maskz_unpacklo_epi16(m32, x[i], x[i + 1]);
            p[i + 1] = _mm512_maskz_unpackhi_epi16(m32, x[i], x[i + 1]);
        }
        for (int h = 0; h < 2; ++h) {  // quads of rows (0-3, 4-7): columns {0,1}, {2,3}, {4,5}, {6,7}
            q[4 * h + 0] = _mm512_maskz_unpacklo_epi32(m16, p[4 * h + 0], p[4 * h + 2]);
            q[4 * h + 1] = _mm512_maskz_unpackhi_epi32(m16, p[4 * h + 0], p[4 * h + 2]);
            q[4 * h + 2] = _mm512_maskz_unpacklo_epi32(m16, p[4 * h + 1], p[4 * h + 3]);
            q[4 * h + 3] = _mm512_maskz_unpackhi_epi32(m16, p[4 * h + 1], p[4 * h + 3]);
        }
        for (int j = 0; j < 4; ++j) {  // all 8 rows: columns 2j and 2j + 1
            r[g][2 * j] = _mm512_maskz_unpacklo_epi64(m8, q[j], q[4 + j]);
            r[g][2 * j + 1] = _mm512_maskz_unpackhi_epi64(m8, q[j], q[4 + j]);
        }
    }
    for (int k = 0; k < 8; ++k) {
        const __m512i t0 = _mm512_maskz_shuffle_i64x2(m8, r[0][k], r[1][k], 0x44);
        const __m512i t1 = _mm512_maskz_shuffle_i64x2(m8, r[0][k], r[1][k], 0xEE);
        const __m512i t2 = _mm512_maskz_shuffle_i64x2(m8, r[2][k], r[3][k], 0x44);
        const __m512i t3 = _mm512_maskz_shuffle_i64x2(m8, r[2][k], r[3][k], 0xEE);
        const __m512i col[4] = {
            _mm512_maskz_shuffle_i64x2(m8, t0, t2, 0x88), _mm512_maskz_shuffle_i64x2(m8, t0, t2, 0xDD),
            _mm512_maskz_shuffle_i64x2(m8, t1, t3, 0x88), _mm512_maskz_shuffle_i64x2(m8, t1, t3, 0xDD)};
        for (int L = 0; L < 4; ++L)
            if (8 * L + k < cn) _mm512_store_si512(dst(8 * L + k), col[L]);
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
    if constexpr ((int(D::Flags) & Eigen::DirectAccessBit) != 0)
        return m.derived().outerStride();
    else
        return 0;
}

/// Size ws.a for an m x k left operand and zero its padding rows (m to mp); rows < m are
/// written whole (padding columns included) by the packers.
inline void prepare_a(Bf16Workspace& ws, Eigen::Index m, Eigen::Index k) {
    ws.mp = round_up(m, 32);
    ws.kp = round_up(k, 32);
    ws.a.resize(static_cast<std::size_t>(ws.mp * ws.kp));
    const Eigen::Index kt = ws.kp / 32;
    for (Eigen::Index i = m; i < ws.mp; ++i)
        for (Eigen::Index t = 0; t < kt; ++t)
            std::fill_n(ws.a.data() + ((i / 16) * kt + t) * 512 + (i % 16) * 32, 32, std::uint16_t{0});
}
/// Pack op(A) (m x k, any Eigen expression) into ws.a.
template <class DA>
void pack_a(Bf16Workspace& ws, const Eigen::MatrixBase<DA>& a) {
    const Eigen::Index m = a.rows(), k = a.cols();
    prepare_a(ws, m, k);
    const Eigen::Index kt = ws.kp / 32;
    const float* p = row_major_data(a);
    const Eigen::Index ld = p ? row_stride(a) : 0;
    for (Eigen::Index i = 0; i < m; ++i) {
        std::uint16_t* row = ws.a.data() + (i / 16) * kt * 512 + (i % 16) * 32;
        for (Eigen::Index t = 0; t < kt; ++t) {
            std::uint16_t* dst = row + t * 512;
            const Eigen::Index k0 = t * 32, kn = std::min<Eigen::Index>(32, k - k0);
            if (p)
                to_bf16_row(dst, p + i * ld + k0, kn);
            else
                for (Eigen::Index j = 0; j < kn; ++j) dst[j] = to_bf16(static_cast<float>(a(i, k0 + j)));
            std::fill(dst + kn, dst + 32, std::uint16_t{0});
        }
    }
}
/// Pack A = S^T into ws.a, S a row-major float matrix (rows x cols, row stride ld): the
/// left operand of a weight-gradient product S^T B. 32 x 32 blocks: rows of S are converted
/// contiguously, then transposed in L1, instead of walking S column by column.
inline void pack_a_transposed(Bf16Workspace& ws, const float* src, Eigen::Index rows, Eigen::Index cols,
                              Eigen::Index ld) {
    prepare_a(ws, cols, rows);
    const Eigen::Index kt = ws.kp / 32;
    alignas(64) std::uint16_t tile[32 * 32]{};
#if DNNCOST_X86_BF16_KERNELS
    const bool simd = avx512bf16_available();
#endif
    for (Eigen::Index r0 = 0; r0 < ws.kp; r0 += 32) {
        const Eigen::Index rn = std::clamp<Eigen::Index>(rows - r0, 0, 32);
        for (Eigen::Index c0 = 0; c0 < cols; c0 += 32) {
            const Eigen::Index cn = std::min<Eigen::Index>(32, cols - c0);
            for (Eigen::Index r = 0; r < rn; ++r) to_bf16_row(tile + r * 32, src + (r0 + r) * ld + c0, cn);
            // row c0 + c of A, depth [r0, r0 + 32)
            const auto dst = [&](Eigen::Index c) {
                const Eigen::Index i = c0 + c;
                return ws.a.data() + ((i / 16) * kt + r0 / 32) * 512 + (i % 16) * 32;
            };
#if DNNCOST_X86_BF16_KERNELS
            if (simd) {
                std::fill(tile + rn * 32, tile + 32 * 32, std::uint16_t{0});  // depth padding
                detail::transpose_tile(tile, cn, dst);
                continue;
            }
#endif
            for (Eigen::Index c = 0; c < cn; ++c) {
                std::uint16_t* d = dst(c);
                for (Eigen::Index r = 0; r < rn; ++r) d[r] = tile[r * 32 + c];
                std::fill(d + rn, d + 32, std::uint16_t{0});
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
    const Eigen::Index kt = ws.kp / 32;
    ws.b.resize(static_cast<std::size_t>(ws.kp * ws.np));
    if (n < ws.np) {
        std::fill(ws.b.begin(), ws.b.end(), std::uint16_t{0});
    } else if (k < ws.kp) {
        // the padding rows k..kp all lie in the last depth block, one contiguous 16 x 32 tile
        // per block of 16 columns: zero those tiles only, not the whole operand (a weight
        // gradient's B is the n x width output gradient, depth n rarely a multiple of 32)
        for (Eigen::Index jb = 0; jb < ws.np / 16; ++jb)
            std::fill_n(ws.b.begin() + static_cast<std::ptrdiff_t>((jb * kt + kt - 1) * 512), 512, std::uint16_t{0});
    }
    if constexpr (std::is_same_v<
                      DB,
                      Eigen::Transpose<const Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>>) {
        // B = W^T (input gradients): a depth pair (B(2p, j), B(2p + 1, j)) is two adjacent floats
        // of row j of W, so each row of W is converted once and its pairs moved as 32-bit words
        const auto& w = b.derived().nestedExpression();  // n x k, row-major
        std::vector<std::uint16_t> row(static_cast<std::size_t>(ws.kp), 0);
        for (Eigen::Index j = 0; j < n; ++j) {
            to_bf16_row(row.data(), w.data() + j * w.cols(), k);
            const Eigen::Index base = (j / 16) * kt * 256 + j % 16;  // in 32-bit words
            for (Eigen::Index p = 0; p < ws.kp / 2; ++p) {
                std::uint32_t pair;
                std::memcpy(&pair, row.data() + 2 * p, 4);
                std::memcpy(ws.b.data() + 2 * (base + (p / 16) * 256 + (p % 16) * 16), &pair, 4);
            }
        }
        return;
    }
    const auto pair_row = [&](Eigen::Index r) { return ws.b.data() + (r / 32) * 512 + ((r % 32) / 2) * 32; };
#if DNNCOST_X86_BF16_KERNELS
    if (const float* p = row_major_data(b); p && avx512bf16_available()) {
        const Eigen::Index ld = row_stride(b);
        for (Eigen::Index r = 0; r < k; r += 2)
            detail::interleave_rows(pair_row(r), kt * 512, p + r * ld, r + 1 < k ? p + (r + 1) * ld : nullptr, n);
        return;
    }
#endif
    for (Eigen::Index r = 0; r < k; ++r) {
        std::uint16_t* dst = pair_row(r) + (r % 2);
        for (Eigen::Index j = 0; j < n; ++j)
            dst[(j / 16) * kt * 512 + (j % 16) * 2] = to_bf16(static_cast<float>(b(r, j)));
    }
}

/// Packs the fused SAGE block's inference operand into ws.a: row v = [x_v | sum over
/// k in [ptr[v], ptr[v + 1]) of w_k x_{idx_k}] (w == nullptr: weights 1), x row-major n x d.
/// Returns false, writing nothing, unless d % 32 == 0 and the CPU has AVX512-BF16 (the
/// caller then builds the operand in fp32 and packs it with pack_a).
inline bool pack_sage_rows(Bf16Workspace& ws, const float* x, Eigen::Index n, Eigen::Index d, const int* ptr,
                           const int* idx, const float* w) {
#if DNNCOST_X86_BF16_KERNELS
    if (d % 32 != 0 || !avx512bf16_available()) return false;
    prepare_a(ws, n, 2 * d);
    const Eigen::Index kt = ws.kp / 32;
    for (Eigen::Index v = 0; v < n; ++v)
        detail::pack_sage_row(ws.a.data() + (v / 16) * kt * 512 + (v % 16) * 32, x + v * d, x, d, idx + ptr[v],
                              w ? w + ptr[v] : nullptr, ptr[v + 1] - ptr[v]);
    return true;
#else
    (void)ws, (void)x, (void)n, (void)d, (void)ptr, (void)idx, (void)w;
    return false;
#endif
}

}  // namespace dnncost::nn::kernels
