#pragma once
/// @file dropout.hpp
/// Inverted dropout: in training, zero each element with probability p and scale the rest by
/// 1 / (1 - p); at inference the identity. The mask is a hash of the element index keyed by one
/// draw from the Context's Rng per forward (drawing one mt19937 number per element would cost
/// more than the layer itself); p is resolved to 1/65536.
#include <cstdint>

#include <dnncost/nn/module.hpp>

namespace dnncost::nn {

namespace detail {
/// 16 pseudo-random bits for element i of a dropout mask with key `key` (murmur3's finaliser of
/// a Weyl sequence): a counter-based draw, so mask loops vectorise. Element i is dropped when
/// the bits are below round(p * 65536).
inline std::uint32_t dropout_bits(std::uint32_t i, std::uint32_t key) {
    std::uint32_t h = i * 0x9E3779B1u + key;
    h ^= h >> 16;
    h *= 0x85EBCA6Bu;
    h ^= h >> 13;
    h *= 0xC2B2AE35u;
    h ^= h >> 16;
    return h >> 16;
}
/// The per-forward key of a dropout mask (one draw from the Context's Rng).
inline std::uint32_t dropout_key(Rng& rng) {
    const std::uint64_t seed = rng.split();
    return static_cast<std::uint32_t>(seed ^ (seed >> 32));
}
}  // namespace detail

template <class T>
class Dropout final : public Module<T> {
public:
    /// @throws config_error unless 0 <= p < 1
    explicit Dropout(double p) : m_p(p) {
        if (!(p >= 0.0 && p < 1.0)) raise<config_error>("Dropout: rate must be in [0, 1), got ", p);
        m_threshold = static_cast<std::uint32_t>(p * 65536.0);
    }
    const Mat<T>& forward(const Mat<T>& x, const Context<T>& ctx) override {
        m_active = ctx.training && m_p > 0.0;
        if (!m_active) return x;
        if (!ctx.rng) raise<config_error>("Dropout: training needs an Rng in the Context");
        const std::uint32_t key = detail::dropout_key(*ctx.rng);
        const T scale = T(1) / static_cast<T>(1.0 - static_cast<double>(m_threshold) / 65536.0);
        m_mask.resize(x.rows(), x.cols());
        m_y.resize(x.rows(), x.cols());
        const Index n = x.size();
        const std::uint32_t threshold = m_threshold;
        T* mk = m_mask.data();
        T* y = m_y.data();
        const T* xs = x.data();
        for (Index i = 0; i < n; ++i) {
            const T m = detail::dropout_bits(static_cast<std::uint32_t>(i), key) < threshold ? T(0) : scale;
            mk[i] = m;
            y[i] = xs[i] * m;
        }
        return m_y;
    }
    const Mat<T>& backward(const Mat<T>& dy, const Context<T>&) override {
        if (!m_active) return dy;
        m_dx.array() = dy.array() * m_mask.array();
        return m_dx;
    }
    Index output_width(Index in) const override { return in; }
    std::string kind() const override { return "Dropout"; }
    double rate() const { return m_p; }

private:
    double m_p;
    std::uint32_t m_threshold = 0;
    bool m_active = false;
    Mat<T> m_mask, m_y, m_dx;
};

}  // namespace dnncost::nn
