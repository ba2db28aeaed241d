#pragma once
/// @file rng.hpp
/// A seeded random engine that is always passed in explicitly: no global state anywhere.
#include <cmath>
#include <cstdint>
#include <random>

namespace dnncost {

/// The library's random engine. Every stochastic object takes an `Rng&` or a seed.
/// std::mt19937_64 is fully specified by the standard, so the same seed gives the same stream on
/// every platform. Distributions are written by hand below for the same reason (libstdc++ and
/// libc++ implement std::uniform_real_distribution etc. differently).
class Rng {
public:
    using result_type = std::uint64_t;
    explicit Rng(std::uint64_t seed = 0x5eed) : m_engine(seed) {}

    static constexpr result_type min() { return std::mt19937_64::min(); }
    static constexpr result_type max() { return std::mt19937_64::max(); }
    result_type operator()() { return m_engine(); }

    /// Uniform double in [0, 1).
    double uniform() { return static_cast<double>(m_engine() >> 11) * 0x1.0p-53; }
    /// Uniform double in [lo, hi).
    double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }
    /// Uniform integer in [0, n) without modulo bias; n must be > 0.
    std::uint64_t below(std::uint64_t n) {
        const std::uint64_t limit = max() - max() % n;
        std::uint64_t x;
        do x = m_engine();
        while (x >= limit);
        return x % n;
    }
    /// Standard normal (Box-Muller; one value per call for reproducibility).
    double normal() {
        double u1 = uniform();
        while (u1 <= 0.0) u1 = uniform();
        const double u2 = uniform();
        return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
    }
    double normal(double mean, double stddev) { return mean + stddev * normal(); }
    bool bernoulli(double p) { return uniform() < p; }
    /// Fisher-Yates shuffle with this engine.
    template <class It>
    void shuffle(It first, It last) {
        const auto n = last - first;
        for (auto i = n - 1; i > 0; --i) {
            const auto j = static_cast<decltype(i)>(below(static_cast<std::uint64_t>(i) + 1));
            using std::swap;
            swap(first[i], first[j]);
        }
    }
    /// A new independent seed drawn from this engine (for child objects).
    std::uint64_t split() { return m_engine() ^ 0x9e3779b97f4a7c15ULL; }

private:
    std::mt19937_64 m_engine;
};

}  // namespace dnncost
