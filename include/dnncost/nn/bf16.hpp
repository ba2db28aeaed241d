#pragma once
/// @file bf16.hpp
/// Optional bfloat16 matrix products: inputs rounded to bf16 (8-bit mantissa, round to
/// nearest even), products accumulated in fp32, at the price of ~0.4 % relative rounding of
/// every input: the standard mixed-precision trade (fp32 master weights, optimiser and
/// everything outside the GEMMs). Two hardware units run them:
/// - Intel AMX (Advanced Matrix Extensions, Sapphire Rapids and later): the tile unit, ~1,300
///   GFLOP/s on one core for a SAGE layer's 420 x 256 x 128 product (fp32 AVX-512: ~110);
/// - AVX512-BF16 (VDPBF16PS: AMD Zen 4 and later, Intel Cooper Lake and later): 16 lanes of
///   two-term bf16 dot products per instruction, twice the multiply-adds of an fp32 FMA (issue
///   rates on a Zen 5 core, bench_gnn's BM_IssuePeak: 478 vs 241 GFLOP/s).
/// Both read the same packed operands. Packing costs about as much as the multiply on the tile
/// unit, so the layers avoid it where they can: weights are packed once per predict call
/// (FrozenWeightsScope), and the fused SAGE block writes its [x | aggregate] operand straight
/// into the packed form at inference.
///
/// A caller asks for bf16 per thread with `PrecisionScope` (Estimator does this with the
/// precision it was trained with, which its model file records). The GEMM kernels of
/// tensor.hpp then run every float product large enough to matter with bf16-rounded inputs:
/// on the unit `bf16_unit()` names, or emulated where neither is present or allowed (inputs
/// rounded to bf16, then an fp32 product, exact for the products of bf16 values), so a bf16
/// model computes the same arithmetic on any CPU, up to the order of the fp32 sums (~1e-6
/// relative), like fp32 across SIMD widths. The emulation is slower than plain fp32: without a
/// bf16 unit, bf16 is for reproducing a bf16 model's numbers, not for speed. Results depend on
/// the precision and the machine's kernels, not on timing.
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <cstdint>
#include <cstring>
#include <new>
#include <optional>
#include <string_view>
#include <type_traits>
#include <vector>

#include <Eigen/Core>

// Compiles in both x86 bf16 kernels, AMX and AVX512-BF16 (each dispatched at run time by
// CPUID), and the AVX-512 packers they share. Linux only, for the tile-state permission AMX needs
// (arch_prctl); elsewhere bf16 products are emulated.
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
inline const char* to_string(Precision p) { return p == Precision::bf16 ? "bf16" : "fp32"; }
/// "bf16" / "fp32" -> the precision; any other word -> nullopt.
inline std::optional<Precision> precision_from_string(std::string_view s) {
    if (s == "bf16") return Precision::bf16;
    if (s == "fp32") return Precision::fp32;
    return std::nullopt;
}

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

#if DNNCOST_HAVE_AMX
namespace detail {
struct CpuidRegs {
    unsigned a = 0, b = 0, c = 0, d = 0;
};
inline CpuidRegs cpuid(unsigned leaf, unsigned subleaf) {
    CpuidRegs r;
    __asm__ volatile("cpuid" : "=a"(r.a), "=b"(r.b), "=c"(r.c), "=d"(r.d) : "a"(leaf), "c"(subleaf));
    return r;
}
}  // namespace detail
#endif

/// True when this CPU has AVX512-F, -BW and -BF16 and the operating system saves the
/// 512-bit register state (XCR0). Checked once.
inline bool avx512bf16_available() {
#if DNNCOST_HAVE_AMX
    static const bool ok = [] {
        if (detail::cpuid(0, 0).a < 7) return false;
        if (!((detail::cpuid(1, 0).c >> 27) & 1u)) return false;  // OSXSAVE: XGETBV usable
        unsigned xlo = 0, xhi = 0;
        __asm__ volatile("xgetbv" : "=a"(xlo), "=d"(xhi) : "c"(0));
        if ((xlo & 0xE6u) != 0xE6u) return false;  // SSE, AVX, opmask, ZMM_Hi256, Hi16_ZMM state
        const unsigned b = detail::cpuid(7, 0).b;
        if (!((b >> 16) & 1u) || !((b >> 30) & 1u)) return false;  // AVX512-F, AVX512-BW
        return ((detail::cpuid(7, 1).a >> 5) & 1u) != 0;          // AVX512_BF16
    }();
    return ok;
#else
    return false;
#endif
}

/// True when this CPU has AMX-BF16 (and AVX512-BF16, which packs the operands) and the kernel
/// granted this process the tile state (Linux arch_prctl ARCH_REQ_XCOMP_PERM). Checked once.
inline bool amx_available() {
#if DNNCOST_HAVE_AMX
    static const bool ok = [] {
        if (!avx512bf16_available()) return false;
        const unsigned d = detail::cpuid(7, 0).d;
        if (!((d >> 22) & 1u) || !((d >> 24) & 1u)) return false;  // AMX-BF16, AMX-TILE
        constexpr long arch_req_xcomp_perm = 0x1023, xfeature_xtiledata = 18;
        return syscall(SYS_arch_prctl, arch_req_xcomp_perm, xfeature_xtiledata) == 0;
    }();
    return ok;
#else
    return false;
#endif
}

namespace detail {
/// False when the environment variable `name` is set to something other than empty or "0".
inline bool not_forbidden_by(const char* name) {
    const char* v = std::getenv(name);
    return v == nullptr || *v == '\0' || std::strcmp(v, "0") == 0;
}
inline std::atomic<bool>& amx_allowed() {
    static std::atomic<bool> on{not_forbidden_by("DNNCOST_NO_AMX")};
    return on;
}
inline std::atomic<bool>& avx512bf16_allowed() {
    static std::atomic<bool> on{not_forbidden_by("DNNCOST_NO_AVX512BF16")};
    return on;
}
}  // namespace detail

/// Allow or forbid the tile unit for this process (default: allowed unless the environment
/// variable DNNCOST_NO_AMX is set to something other than 0). Forbidden, bf16 products run
/// with AVX512-BF16 where allowed, else emulated: what a CPU without AMX computes, for checking
/// that a bf16 model predicts the same numbers there.
inline void set_amx_allowed(bool on) { detail::amx_allowed().store(on, std::memory_order_relaxed); }

/// Allow or forbid the AVX512-BF16 kernel for this process (default: allowed unless the
/// environment variable DNNCOST_NO_AVX512BF16 is set to something other than 0). With both
/// units forbidden, bf16 products run emulated.
inline void set_avx512bf16_allowed(bool on) { detail::avx512bf16_allowed().store(on, std::memory_order_relaxed); }

/// True when bf16 products run on the tile unit: the CPU has it and it is allowed.
inline bool amx_in_use() { return amx_available() && detail::amx_allowed().load(std::memory_order_relaxed); }

/// Where bf16 products run.
enum class Bf16Unit : int { amx = 0, avx512 = 1, emulated = 2 };
inline const char* to_string(Bf16Unit u) {
    return u == Bf16Unit::amx ? "the AMX tile unit" : u == Bf16Unit::avx512 ? "AVX512-BF16" : "emulated";
}

/// The unit bf16 products run on now: the tile unit when present and allowed, else
/// AVX512-BF16 when present and allowed, else emulation.
inline Bf16Unit bf16_unit() {
    if (amx_in_use()) return Bf16Unit::amx;
    if (avx512bf16_available() && detail::avx512bf16_allowed().load(std::memory_order_relaxed)) return Bf16Unit::avx512;
    return Bf16Unit::emulated;
}
/// True when bf16 products run on hardware (not emulated).
inline bool bf16_in_hardware() { return bf16_unit() != Bf16Unit::emulated; }

/// The precision an estimator trains in when the caller does not say: bf16 where a bf16 unit
/// runs it (2-4x faster GEMMs at ~0.4 % input rounding), fp32 elsewhere (where bf16 would be
/// emulated and slower).
inline Precision default_precision() { return bf16_in_hardware() ? Precision::bf16 : Precision::fp32; }

/// Allocator of cache-line (64-byte) aligned storage: a packed tile row must not straddle two
/// lines (unaligned packed operands measured at half the kernel rate).
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
/// Measured on one core, 420 x 256 x 128 (a SAGE layer of 2 NB201 graphs): ~430 GFLOP/s with
/// row-major packed operands in default-aligned vectors, ~1,300 GFLOP/s with this layout.
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
/// Two rows r0, r1 (depth k, k + 1; k even) of B into the pair layout: columns [16 b, 16 b + 16)
/// go to dst + b * block_stride as 16 pairs (bf16(r0[j]), bf16(r1[j])); r1 == nullptr pairs with 0.
__attribute__((target("avx512f,avx512bw,avx512bf16"))) inline void interleave_rows(std::uint16_t* dst, Eigen::Index block_stride,
                                                                                   const float* r0, const float* r1,
                                                                                   Eigen::Index n) {
    alignas(64) static constexpr std::uint16_t order[32] = {0, 16, 1, 17, 2,  18, 3,  19, 4,  20, 5,  21, 6,  22, 7,  23,
                                                            8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31};
    const __m512i idx = _mm512_load_si512(order);
    Eigen::Index j = 0;
    for (; r1 && j + 16 <= n; j += 16) {
        const __m512bh v = _mm512_cvtne2ps_pbh(_mm512_loadu_ps(r1 + j), _mm512_loadu_ps(r0 + j));  // [r0 | r1]
        _mm512_storeu_si512(dst + (j / 16) * block_stride, _mm512_permutexvar_epi16(idx, reinterpret_cast<const __m512i&>(v)));
    }
    for (; j < n; ++j) {
        std::uint16_t* d = dst + (j / 16) * block_stride + (j % 16) * 2;
        d[0] = to_bf16(r0[j]);
        d[1] = r1 ? to_bf16(r1[j]) : 0;
    }
}
}  // namespace detail
#endif

#if DNNCOST_HAVE_AMX
namespace detail {
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
__attribute__((target("avx512f,avx512bw"))) inline void transpose_tile(const std::uint16_t* tile, Eigen::Index cn, Dst&& dst) {
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
        const __m512i col[4] = {_mm512_maskz_shuffle_i64x2(m8, t0, t2, 0x88), _mm512_maskz_shuffle_i64x2(m8, t0, t2, 0xDD),
                                _mm512_maskz_shuffle_i64x2(m8, t1, t3, 0x88), _mm512_maskz_shuffle_i64x2(m8, t1, t3, 0xDD)};
        for (int L = 0; L < 4; ++L)
            if (8 * L + k < cn) _mm512_store_si512(dst(8 * L + k), col[L]);
    }
}
}  // namespace detail
#endif

/// dst[0, n) = bf16(src[0, n)), rounded to nearest even.
inline void to_bf16_row(std::uint16_t* dst, const float* src, Eigen::Index n) {
#if DNNCOST_HAVE_AMX
    if (avx512bf16_available()) return detail::convert_row(dst, src, n);
#endif
    for (Eigen::Index j = 0; j < n; ++j) dst[j] = to_bf16(src[j]);
}

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
            if (p) to_bf16_row(dst, p + i * ld + k0, kn);
            else
                for (Eigen::Index j = 0; j < kn; ++j) dst[j] = to_bf16(static_cast<float>(a(i, k0 + j)));
            std::fill(dst + kn, dst + 32, std::uint16_t{0});
        }
    }
}
/// Pack A = S^T into ws.a, S a row-major float matrix (rows x cols, row stride ld): the
/// left operand of a weight-gradient product S^T B. 32 x 32 blocks: rows of S are converted
/// contiguously, then transposed in L1, instead of walking S column by column.
inline void pack_a_transposed(Bf16Workspace& ws, const float* src, Eigen::Index rows, Eigen::Index cols, Eigen::Index ld) {
    prepare_a(ws, cols, rows);
    const Eigen::Index kt = ws.kp / 32;
    alignas(64) std::uint16_t tile[32 * 32]{};
#if DNNCOST_HAVE_AMX
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
#if DNNCOST_HAVE_AMX
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
    if constexpr (std::is_same_v<DB, Eigen::Transpose<const Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>>) {
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
#if DNNCOST_HAVE_AMX
    if (const float* p = row_major_data(b); p && avx512bf16_available()) {
        const Eigen::Index ld = row_stride(b);
        for (Eigen::Index r = 0; r < k; r += 2)
            detail::interleave_rows(pair_row(r), kt * 512, p + r * ld, r + 1 < k ? p + (r + 1) * ld : nullptr, n);
        return;
    }
#endif
    for (Eigen::Index r = 0; r < k; ++r) {
        std::uint16_t* dst = pair_row(r) + (r % 2);
        for (Eigen::Index j = 0; j < n; ++j) dst[(j / 16) * kt * 512 + (j % 16) * 2] = to_bf16(static_cast<float>(b(r, j)));
    }
}

/// Packs the fused SAGE block's inference operand into ws.a: row v = [x_v | sum over
/// k in [ptr[v], ptr[v + 1]) of w_k x_{idx_k}] (w == nullptr: weights 1), x row-major n x d.
/// Returns false, writing nothing, unless d % 32 == 0 and the CPU has AVX512-BF16 (the
/// caller then builds the operand in fp32 and packs it with pack_a).
inline bool pack_sage_rows(Bf16Workspace& ws, const float* x, Eigen::Index n, Eigen::Index d, const int* ptr, const int* idx,
                           const float* w) {
#if DNNCOST_HAVE_AMX
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

#if DNNCOST_HAVE_AMX
namespace detail {
/// Rows [r0, r1) (multiples of 32, r0 < m) of C (+)= A * B on the packed operands with
/// AVX512-BF16: blocks of 8 rows x 32 columns in 16 fp32 accumulator registers. For each depth
/// pair, the two 16-column pair rows of B are loaded once and each of the 8 rows' bf16 pair of
/// A is broadcast to all lanes (VDPBF16PS: lane j += a0 b0j + a1 b1j). The pair layout of B and
/// the row layout of A are the tile unit's, so both units share the packers. A 32-row block of
/// A and a 32-column block of B (16 KB each at depth 256) stay in L1 while the 4 row groups of
/// the block run over them.
__attribute__((target("avx512f,avx512bw,avx512bf16"))) inline void dpbf16_rows(const std::uint16_t* A, PackedB pb, float* c,
                                                                                Eigen::Index ldc, Eigen::Index m, Eigen::Index n,
                                                                                bool accumulate, Eigen::Index r0, Eigen::Index r1) {
    const std::uint16_t* B = pb.data;
    const Eigen::Index kt = pb.kp / 32, np = pb.np;
    for (Eigen::Index i32 = r0; i32 < r1; i32 += 32) {
        for (Eigen::Index j = 0; j < np; j += 32) {
            const std::uint16_t* b0 = B + (j / 16) * kt * 512;
            const std::uint16_t* b1 = b0 + kt * 512;
            // columns j .. j + 15 and j + 16 .. j + 31 that exist in C
            const __mmask16 mask0 = j >= n ? 0 : j + 16 <= n ? 0xFFFF : static_cast<__mmask16>((1u << (n - j)) - 1u);
            const __mmask16 mask1 = j + 16 >= n ? 0 : j + 32 <= n ? 0xFFFF : static_cast<__mmask16>((1u << (n - j - 16)) - 1u);
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
                        const __m512bh w0 = reinterpret_cast<const __m512bh&>(v0), w1 = reinterpret_cast<const __m512bh&>(v1);
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

/// C (m x n, row stride ldc) (+)= packed A (ws.a, ws.mp x kp) * packed B on the bf16 unit in
/// use (`unit`: amx or avx512), for the part-th of `parts` contiguous ranges of 32-row blocks
/// (parts run concurrently on disjoint rows). Preconditions: that unit is available,
/// ws.kp == b.kp.
inline void bf16_multiply(Bf16Unit unit, const Bf16Workspace& ws, PackedB b, float* c, Eigen::Index ldc, Eigen::Index m,
                          Eigen::Index n, bool accumulate, Eigen::Index part, Eigen::Index parts) {
#if DNNCOST_HAVE_AMX
    const Eigen::Index blocks = ws.mp / 32;
    const Eigen::Index b0 = blocks * part / parts, b1 = blocks * (part + 1) / parts;
    if (b1 <= b0) return;
    if (unit == Bf16Unit::amx) detail::amx_rows(ws.a.data(), b, c, ldc, m, n, accumulate, b0 * 32, b1 * 32);
    else detail::dpbf16_rows(ws.a.data(), b, c, ldc, m, n, accumulate, b0 * 32, b1 * 32);
#else
    (void)unit, (void)ws, (void)b, (void)c, (void)ldc, (void)m, (void)n, (void)accumulate, (void)part, (void)parts;
#endif
}

/// Packed copies of weight matrices for a stretch of forward passes during which the weights
/// do not change (one predict call): a right-hand GEMM operand whose data pointer is one of
/// the listed weights is packed on first use and reused, instead of packed on every product.
/// Only listed pointers are cached, so an activation buffer that is reused with new contents
/// is never mistaken for a weight. Per thread: installed with FrozenWeightsScope.
class FrozenWeights {
public:
    explicit FrozenWeights(std::vector<const float*> weights) : m_weights(std::move(weights)) {}
    /// The packed copy of b (k x n floats, row stride ld) if b is a listed weight, else an
    /// empty PackedB (data == nullptr).
    PackedB find(const float* b, Eigen::Index k, Eigen::Index n, Eigen::Index ld) {
        if (std::find(m_weights.begin(), m_weights.end(), b) == m_weights.end()) return {};
        for (auto& e : m_packed)
            if (e.src == b && e.k == k && e.n == n && e.ld == ld) return {e.ws.b.data(), e.ws.kp, e.ws.np};
        auto& e = m_packed.emplace_back(Entry{b, k, n, ld, {}});
        pack_b(e.ws, Eigen::Map<const Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>, 0,
                                Eigen::OuterStride<>>(b, k, n, Eigen::OuterStride<>(ld)));
        return {e.ws.b.data(), e.ws.kp, e.ws.np};
    }

private:
    struct Entry {
        const float* src;
        Eigen::Index k, n, ld;
        Bf16Workspace ws;
    };
    std::vector<const float*> m_weights;
    std::vector<Entry> m_packed;
};

namespace detail {
inline FrozenWeights*& thread_frozen_weights() {
    thread_local FrozenWeights* f = nullptr;
    return f;
}
}  // namespace detail

/// The calling thread's frozen weights, or nullptr.
inline FrozenWeights* frozen_weights() { return detail::thread_frozen_weights(); }

/// Declares `weights` unchanged on this thread for the scope's lifetime (see FrozenWeights).
/// The caller guarantees that nothing writes them meanwhile.
class FrozenWeightsScope {
public:
    explicit FrozenWeightsScope(std::vector<const float*> weights)
        : m_frozen(std::move(weights)), m_prev(detail::thread_frozen_weights()) {
        detail::thread_frozen_weights() = &m_frozen;
    }
    FrozenWeightsScope(const FrozenWeightsScope&) = delete;
    FrozenWeightsScope& operator=(const FrozenWeightsScope&) = delete;
    ~FrozenWeightsScope() { detail::thread_frozen_weights() = m_prev; }

private:
    FrozenWeights m_frozen;
    FrozenWeights* m_prev;
};

}  // namespace kernels
}  // namespace dnncost::nn
