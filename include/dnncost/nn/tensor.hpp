#pragma once
/// @file tensor.hpp
/// The dense GEMM kernels every layer uses. GEMMs are split over a ThreadPool by rows of the
/// result (or by columns for weight gradients), in a fixed way, so a given thread count always
/// gives the same bits; one thread is fully deterministic.
///
/// At Precision::bf16 (kernels::PrecisionScope) every float product large enough to matter
/// multiplies bf16-rounded inputs with fp32 accumulation: on the AMX tile unit or with
/// AVX512-BF16 where the CPU has one (nn/kernels/), else emulated by rounding the inputs and
/// running the fp32 product, which is exact for products of bf16 values. A bf16 model thus
/// computes the same arithmetic on any CPU, up to the order of the fp32 sums.
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include <Eigen/Core>

#include <dnncost/core/matrix.hpp>
#include <dnncost/core/parallel.hpp>
#include <dnncost/nn/kernels/bf16_convert.hpp>
#include <dnncost/nn/kernels/bf16_multiply.hpp>
#include <dnncost/nn/kernels/bf16_pack.hpp>
#include <dnncost/nn/kernels/cpu_features.hpp>
#include <dnncost/nn/kernels/frozen_weights.hpp>
#include <dnncost/nn/kernels/thread_precision.hpp>
#include <dnncost/nn/precision.hpp>

namespace dnncost::nn {

namespace kernels {

/// Below this many multiply-adds a GEMM is not worth handing to a second thread.
inline constexpr double parallel_threshold_macs = 2.0e6;

/// Floating-point operations issued through these GEMM kernels (2 m n k each), for the
/// benchmarks' GFLOP/s figures. Statistics only: nothing reads it to make decisions.
inline std::atomic<std::uint64_t>& gemm_flops() {
    static std::atomic<std::uint64_t> count{0};
    return count;
}
inline void count_flops(Index m, Index n, Index k) {
    gemm_flops().fetch_add(
        2u * static_cast<std::uint64_t>(m) * static_cast<std::uint64_t>(n) * static_cast<std::uint64_t>(k),
        std::memory_order_relaxed);
}

inline bool worth_splitting(const ThreadPool* pool, Index m, Index n, Index k) {
    return pool && pool->size() > 1 && static_cast<double>(m) * n * k >= parallel_threshold_macs;
}

/// Smallest product (m n k) worth packing for a bf16 unit.
inline constexpr double bf16_threshold_macs = 32.0 * 32.0 * 32.0;

/// True when this float GEMM multiplies bf16-rounded inputs: this thread asked for bf16 and the
/// product is large enough. Depends on the shape only, never on the CPU.
template <class T>
bool bf16_product(Index m, Index n, Index k) {
    if constexpr (!std::is_same_v<T, float>)
        return false;
    else
        return precision() == Precision::bf16 && static_cast<double>(m) * n * k >= bf16_threshold_macs;
}
/// True when that bf16 product runs on a bf16 unit (else it is emulated, see gemm).
template <class T>
bool use_bf16_unit(Index m, Index n, Index k) {
    return bf16_product<T>(m, n, k) && bf16_in_hardware();
}

/// dst = src with every element rounded to the nearest bf16 value (kept as float): an operand
/// of the emulated bf16 product, whose fp32 products are then exact.
template <class D>
void round_to_bf16(Mat<float>& dst, const Eigen::MatrixBase<D>& src) {
    dst = src;
    float* p = dst.data();
    for (Index i = 0; i < dst.size(); ++i) p[i] = from_bf16(to_bf16(p[i]));
}

/// The right operand of a bf16 product, packed: the frozen copy when B is a weight frozen on
/// this thread (FrozenWeightsScope), else packed into ws.b.
template <class DB>
PackedB packed_right(Bf16Workspace& ws, const Eigen::MatrixBase<DB>& b) {
    if (FrozenWeights* frozen = frozen_weights())
        if (const float* p = row_major_data(b))
            if (const PackedB f = frozen->find(p, b.rows(), b.cols(), row_stride(b)); f.data) return f;
    pack_b(ws, b);
    return {ws.b.data(), ws.kp, ws.np};
}

/// C (+)= A * op(B) on the bf16 unit in use (bf16_unit() != emulated), A (m rows) already
/// packed in ws.a (ws.mp, ws.kp set); the 32-row blocks of C split over the pool.
template <class DB>
void gemm_bf16_packed_a(Mat<float>& c, Bf16Workspace& ws, Index m, const Eigen::MatrixBase<DB>& b, bool accumulate,
                        ThreadPool* pool) {
    const Index n = b.cols();
    const PackedB pb = packed_right(ws, b);
    if (!accumulate) c.resize(m, n);
    const Index parts = worth_splitting(pool, m, n, b.rows()) ? static_cast<Index>(pool->size()) : 1;
    const Bf16Unit unit = bf16_unit();
    const auto run = [&](Index p) { bf16_multiply(unit, ws, pb, c.data(), c.cols(), m, n, accumulate, p, parts); };
    if (parts > 1)
        pool->parallel_for(0, static_cast<std::size_t>(parts), [&](std::size_t p) { run(static_cast<Index>(p)); });
    else
        run(0);
}

/// C (+)= op(A) * op(B) in bf16 on the bf16 unit in use; A and B are packed on the
/// calling thread (B only once per FrozenWeightsScope if it is a frozen weight), the 32-row
/// blocks of C split over the pool.
template <class DA, class DB>
void gemm_bf16(Mat<float>& c, const Eigen::MatrixBase<DA>& a, const Eigen::MatrixBase<DB>& b, bool accumulate,
               ThreadPool* pool) {
    thread_local Bf16Workspace local;
    Bf16Workspace& ws = local;  // a reference: inside the lambda `local` would name the worker's own
    if constexpr (std::is_same_v<DA, Eigen::Transpose<const Mat<float>>>)  // S^T B: block-transpose S
        pack_a_transposed(ws, a.derived().nestedExpression().data(), a.cols(), a.rows(),
                          a.derived().nestedExpression().cols());
    else
        pack_a(ws, a);
    gemm_bf16_packed_a(c, ws, a.rows(), b, accumulate, pool);
}

/// A bf16 product without a bf16 unit: `product` (an fp32 kernel) run on copies of A and B
/// rounded to bf16. Products of bf16 values are exact in fp32, so this differs from the bf16
/// units only in the order of the fp32 sums.
template <class DA, class DB, class F>
void emulated_bf16(const Eigen::MatrixBase<DA>& a, const Eigen::MatrixBase<DB>& b, F&& product) {
    thread_local Mat<float> ra, rb;
    round_to_bf16(ra, a);
    round_to_bf16(rb, b);
    product(ra, rb);
}

template <class T, class DA, class DB>
void gemm_fp(Mat<T>& c, const Eigen::MatrixBase<DA>& a, const Eigen::MatrixBase<DB>& b, bool accumulate,
             ThreadPool* pool);
template <class T, class DA, class DB>
void gemm_tn_fp(Mat<T>& c, const Eigen::MatrixBase<DA>& a, const Eigen::MatrixBase<DB>& b, bool accumulate,
                ThreadPool* pool);

/// C (+)= A * B, split by rows of C. In bf16 (bf16_product) on a bf16 unit, or emulated:
/// the inputs rounded to bf16, then the fp32 product.
template <class T, class DA, class DB>
void gemm(Mat<T>& c, const Eigen::MatrixBase<DA>& a, const Eigen::MatrixBase<DB>& b, bool accumulate,
          ThreadPool* pool) {
    if (!accumulate) c.resize(a.rows(), b.cols());
    count_flops(a.rows(), b.cols(), a.cols());
    if constexpr (std::is_same_v<T, float>)
        if (bf16_product<T>(a.rows(), b.cols(), a.cols())) {
            if (bf16_in_hardware()) return gemm_bf16(c, a, b, accumulate, pool);
            return emulated_bf16(
                a, b, [&](const Mat<float>& ra, const Mat<float>& rb) { gemm_fp<T>(c, ra, rb, accumulate, pool); });
        }
    gemm_fp<T>(c, a, b, accumulate, pool);
}

/// gemm in the arithmetic of T (no bf16).
template <class T, class DA, class DB>
void gemm_fp(Mat<T>& c, const Eigen::MatrixBase<DA>& a, const Eigen::MatrixBase<DB>& b, bool accumulate,
             ThreadPool* pool) {
    const Index m = a.rows();
    if (!worth_splitting(pool, m, b.cols(), a.cols()) || m < 64) {
        if (accumulate)
            c.noalias() += a * b;
        else
            c.noalias() = a * b;
        return;
    }
    const Index parts = static_cast<Index>(pool->size());
    const Index chunk = (m + parts - 1) / parts;
    pool->parallel_for(0, static_cast<std::size_t>(parts), [&](std::size_t p) {
        const Index r0 = static_cast<Index>(p) * chunk;
        const Index rn = std::min(chunk, m - r0);
        if (rn <= 0) return;
        if (accumulate)
            c.middleRows(r0, rn).noalias() += a.middleRows(r0, rn) * b;
        else
            c.middleRows(r0, rn).noalias() = a.middleRows(r0, rn) * b;
    });
}

/// C (+)= A^T * B (weight gradients: a reduction over rows), split by columns of C.
template <class T, class DA, class DB>
void gemm_tn(Mat<T>& c, const Eigen::MatrixBase<DA>& a, const Eigen::MatrixBase<DB>& b, bool accumulate,
             ThreadPool* pool) {
    if (!accumulate) c.resize(a.cols(), b.cols());
    count_flops(a.cols(), b.cols(), a.rows());
    if constexpr (std::is_same_v<T, float>)
        if (bf16_product<T>(a.cols(), b.cols(), a.rows())) {
            if (bf16_in_hardware()) return gemm_bf16(c, a.transpose(), b, accumulate, pool);
            return emulated_bf16(
                a, b, [&](const Mat<float>& ra, const Mat<float>& rb) { gemm_tn_fp<T>(c, ra, rb, accumulate, pool); });
        }
    gemm_tn_fp<T>(c, a, b, accumulate, pool);
}

/// gemm_tn in the arithmetic of T (no bf16).
template <class T, class DA, class DB>
void gemm_tn_fp(Mat<T>& c, const Eigen::MatrixBase<DA>& a, const Eigen::MatrixBase<DB>& b, bool accumulate,
                ThreadPool* pool) {
    const Index n = b.cols();
    if (!worth_splitting(pool, a.cols(), n, a.rows()) || n < 32) {
        if (accumulate)
            c.noalias() += a.transpose() * b;
        else
            c.noalias() = a.transpose() * b;
        return;
    }
    const Index parts = static_cast<Index>(pool->size());
    const Index chunk = ((n + parts - 1) / parts + 15) / 16 * 16;
    pool->parallel_for(0, static_cast<std::size_t>(parts), [&](std::size_t p) {
        const Index c0 = static_cast<Index>(p) * chunk;
        const Index cn = std::min(chunk, n - c0);
        if (cn <= 0) return;
        if (accumulate)
            c.middleCols(c0, cn).noalias() += a.transpose() * b.middleCols(c0, cn);
        else
            c.middleCols(c0, cn).noalias() = a.transpose() * b.middleCols(c0, cn);
    });
}

/// C (+)= A * B^T (input gradients), split by rows of C.
template <class T, class DA, class DB>
void gemm_nt(Mat<T>& c, const Eigen::MatrixBase<DA>& a, const Eigen::MatrixBase<DB>& b, bool accumulate,
             ThreadPool* pool) {
    gemm<T>(c, a, b.transpose(), accumulate, pool);
}

/// Resize only when the shape changes (Eigen already does this; kept explicit for readers).
template <class T>
void ensure_shape(Mat<T>& m, Index rows, Index cols) {
    if (m.rows() != rows || m.cols() != cols) m.resize(rows, cols);
}

}  // namespace kernels
}  // namespace dnncost::nn
