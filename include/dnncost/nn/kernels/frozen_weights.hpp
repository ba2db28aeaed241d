#pragma once
/// @file frozen_weights.hpp
/// Weights packed once for a stretch of forward passes in which they do not change (one
/// predict call), instead of once per product.
#include <algorithm>
#include <utility>
#include <vector>

#include <Eigen/Core>

#include <dnncost/nn/kernels/bf16_pack.hpp>

namespace dnncost::nn::kernels {

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

}  // namespace dnncost::nn::kernels
