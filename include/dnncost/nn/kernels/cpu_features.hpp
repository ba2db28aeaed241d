#pragma once
/// @file cpu_features.hpp
/// Which bf16 unit this CPU offers (the AMX tile unit, AVX512-BF16, or none), whether the
/// process may use it, and the precision an estimator trains in by default.
///
/// DNNCOST_X86_BF16_KERNELS is 1 where the x86 bf16 kernels are compiled in (each dispatched at
/// run time by CPUID): x86-64 with GCC or Clang on Linux, which has the tile-state permission
/// AMX needs (arch_prctl). Elsewhere bf16 products are emulated.
#include <atomic>
#include <cstdlib>
#include <cstring>

#include <dnncost/nn/precision.hpp>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && defined(__linux__)
#define DNNCOST_X86_BF16_KERNELS 1
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>
#else
#define DNNCOST_X86_BF16_KERNELS 0
#endif

namespace dnncost::nn::kernels {

#if DNNCOST_X86_BF16_KERNELS
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
#if DNNCOST_X86_BF16_KERNELS
    static const bool ok = [] {
        if (detail::cpuid(0, 0).a < 7) return false;
        if (!((detail::cpuid(1, 0).c >> 27) & 1u)) return false;  // OSXSAVE: XGETBV usable
        unsigned xlo = 0, xhi = 0;
        __asm__ volatile("xgetbv" : "=a"(xlo), "=d"(xhi) : "c"(0));
        if ((xlo & 0xE6u) != 0xE6u) return false;  // SSE, AVX, opmask, ZMM_Hi256, Hi16_ZMM state
        const unsigned b = detail::cpuid(7, 0).b;
        if (!((b >> 16) & 1u) || !((b >> 30) & 1u)) return false;  // AVX512-F, AVX512-BW
        return ((detail::cpuid(7, 1).a >> 5) & 1u) != 0;           // AVX512_BF16
    }();
    return ok;
#else
    return false;
#endif
}

/// True when this CPU has AMX-BF16 (and AVX512-BF16, which packs the operands) and the kernel
/// granted this process the tile state (Linux arch_prctl ARCH_REQ_XCOMP_PERM). Checked once.
inline bool amx_available() {
#if DNNCOST_X86_BF16_KERNELS
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
/// runs it, fp32 elsewhere (emulated bf16 rounds the inputs and then runs the fp32 product, so
/// it is never faster than fp32).
inline Precision default_precision() { return bf16_in_hardware() ? Precision::bf16 : Precision::fp32; }

}  // namespace dnncost::nn::kernels
