#pragma once
/// @file operators.hpp
/// Variation operators: simulated binary crossover and polynomial mutation for bounded real
/// genes (Deb & Agrawal 1995; Deb & Goyal 1996, in the bounded form of Deb's NSGA-II code), and
/// uniform crossover / uniform resampling mutation for integer and categorical genes. The free
/// functions can be reused inside user-supplied operators for mixed genomes.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <tuple>
#include <utility>
#include <vector>

#include <dnncost/core/error.hpp>
#include <dnncost/core/rng.hpp>
#include <dnncost/search/problem.hpp>

namespace dnncost::search {

/// Settings of SBX + polynomial mutation (Deb's defaults).
struct RealOperatorOptions {
    double crossover_probability = 0.9;  ///< probability that a pair of parents is recombined
    double eta_crossover = 20.0;         ///< SBX distribution index
    double eta_mutation = 20.0;          ///< polynomial mutation distribution index
    double mutation_probability = -1.0;  ///< per gene; negative means 1 / number of genes
};

/// Settings of uniform crossover + uniform mutation (MaGNAS's settings by default).
struct IntegerOperatorOptions {
    double crossover_probability = 0.8;  ///< probability that a pair of parents is recombined
    double swap_probability = 0.5;       ///< per gene, when recombining: exchange the two genes
    double mutation_probability = 0.4;   ///< per gene: resample uniformly from its categories
};

namespace detail {
inline void check_probability(double p, const char* name) {
    if (!(p >= 0.0 && p <= 1.0)) raise<config_error>("search: ", name, " must be in [0, 1], got ", p);
}
}  // namespace detail

namespace detail {
/// x^e; exact repeated squaring when e is a small whole number (eta = 20 gives e = 21), which
/// is several times faster than std::pow in the inner loop of SBX and polynomial mutation.
inline double power(double x, double e) {
    if (e >= 0.0 && e <= 64.0 && e == std::floor(e)) {
        auto n = static_cast<unsigned>(e);
        double r = 1.0;
        while (n) {
            if (n & 1u) r *= x;
            x *= x;
            n >>= 1u;
        }
        return r;
    }
    return std::pow(x, e);
}

/// x^e for x > 0 through exp and log, about twice as fast as std::pow here (x = 0 gives 0).
inline double positive_power(double x, double e) { return x > 0.0 ? std::exp(e * std::log(x)) : 0.0; }

/// Fair coin flips served 64 per engine draw.
class CoinFlips {
public:
    explicit CoinFlips(Rng& rng) : m_rng(&rng) {}
    bool next() {
        if (m_left == 0) {
            m_bits = (*m_rng)();
            m_left = 64;
        }
        const bool b = m_bits & 1u;
        m_bits >>= 1u;
        --m_left;
        return b;
    }

private:
    Rng* m_rng;
    std::uint64_t m_bits = 0;
    int m_left = 0;
};

/// Calls f(i) for each i in [0, n) chosen independently with probability p, drawing geometric
/// gaps between chosen indices instead of one number per index.
template <class F>
void for_each_chosen(std::size_t n, double p, Rng& rng, F f) {
    if (!(p > 0.0)) return;
    if (p >= 1.0) {
        for (std::size_t i = 0; i < n; ++i) f(i);
        return;
    }
    const double log_q = std::log1p(-p);
    std::size_t i = 0;
    for (;;) {
        double u = rng.uniform();
        while (u <= 0.0) u = rng.uniform();
        const double gap = std::floor(std::log(u) / log_q);
        if (gap >= static_cast<double>(n - i)) return;
        i += static_cast<std::size_t>(gap);
        f(i);
        if (++i >= n) return;
    }
}
}  // namespace detail

/// SBX on one pair of genes within [lo, hi] given the uniform draw u and whether to swap the
/// children; returns the two children (Deb's bounded variant).
inline std::pair<double, double> sbx_gene(double a, double b, double lo, double hi, double eta, double u, bool swap) {
    if (std::abs(a - b) <= 1e-14 || !(hi > lo)) return {a, b};
    const double y1 = std::min(a, b), y2 = std::max(a, b);
    const double exponent = 1.0 / (eta + 1.0);
    auto spread = [&](double beta) {
        const double alpha = 2.0 - 1.0 / detail::power(beta, eta + 1.0);
        return u <= 1.0 / alpha ? detail::positive_power(u * alpha, exponent)
                                : detail::positive_power(1.0 / (2.0 - u * alpha), exponent);
    };
    const double gap = y2 - y1;
    double c1 = 0.5 * ((y1 + y2) - spread(1.0 + 2.0 * (y1 - lo) / gap) * gap);
    double c2 = 0.5 * ((y1 + y2) + spread(1.0 + 2.0 * (hi - y2) / gap) * gap);
    c1 = std::clamp(c1, lo, hi);
    c2 = std::clamp(c2, lo, hi);
    if (swap) std::swap(c1, c2);
    return {c1, c2};
}

/// SBX on one pair of genes, drawing its random numbers from rng.
inline std::pair<double, double> sbx_gene(double a, double b, double lo, double hi, double eta, Rng& rng) {
    const double u = rng.uniform();
    return sbx_gene(a, b, lo, hi, eta, u, rng.bernoulli(0.5));
}

/// SBX over whole vectors: each gene pair is recombined with probability 1/2, in place.
inline void sbx_crossover(std::span<double> a, std::span<double> b, std::span<const Bounds> bounds, double eta,
                          Rng& rng) {
    detail::CoinFlips coin(rng);
    for (std::size_t i = 0; i < a.size(); ++i) {
        if (!coin.next()) continue;
        const double u = rng.uniform();
        std::tie(a[i], b[i]) = sbx_gene(a[i], b[i], bounds[i].lower, bounds[i].upper, eta, u, coin.next());
    }
}

/// Polynomial mutation of one gene within [lo, hi] (Deb's bounded variant).
inline double polynomial_mutation_gene(double y, double lo, double hi, double eta, Rng& rng) {
    if (!(hi > lo)) return y;
    const double range = hi - lo;
    const double d1 = (y - lo) / range, d2 = (hi - y) / range;
    const double u = rng.uniform();
    const double exponent = 1.0 / (eta + 1.0);
    double dq;
    if (u < 0.5) {
        const double v = 2.0 * u + (1.0 - 2.0 * u) * detail::power(1.0 - d1, eta + 1.0);
        dq = detail::positive_power(v, exponent) - 1.0;
    } else {
        const double v = 2.0 * (1.0 - u) + 2.0 * (u - 0.5) * detail::power(1.0 - d2, eta + 1.0);
        dq = 1.0 - detail::positive_power(v, exponent);
    }
    return std::clamp(y + dq * range, lo, hi);
}

/// Polynomial mutation of each gene with probability p, in place.
inline void polynomial_mutation(std::span<double> x, std::span<const Bounds> bounds, double eta, double p, Rng& rng) {
    detail::for_each_chosen(x.size(), p, rng, [&](std::size_t i) {
        x[i] = polynomial_mutation_gene(x[i], bounds[i].lower, bounds[i].upper, eta, rng);
    });
}

/// Uniform crossover: exchange each gene pair with probability p_swap, in place.
template <class T>
void uniform_crossover(std::span<T> a, std::span<T> b, double p_swap, Rng& rng) {
    for (std::size_t i = 0; i < a.size(); ++i)
        if (rng.bernoulli(p_swap)) std::swap(a[i], b[i]);
}

/// Uniform mutation: with probability p, replace gene i by a uniform draw from [0, cardinality[i]).
/// The new value may equal the old one (every category is equally likely).
template <class T>
void uniform_mutation(std::span<T> x, std::span<const std::size_t> cardinality, double p, Rng& rng) {
    detail::for_each_chosen(x.size(), p, rng, [&](std::size_t i) { x[i] = static_cast<T>(rng.below(cardinality[i])); });
}

/// Variation for bounded real vectors: random init, SBX, polynomial mutation.
class RealVariation {
public:
    using Genome = std::vector<double>;
    /// @throws config_error for empty bounds, lower > upper, non-finite bounds, bad settings.
    RealVariation(std::vector<Bounds> bounds, RealOperatorOptions options)
        : m_bounds(std::move(bounds)), m_options(options) {
        if (m_bounds.empty()) raise<config_error>("RealVariation: the problem has no genes (empty bounds)");
        for (std::size_t i = 0; i < m_bounds.size(); ++i) {
            const auto& b = m_bounds[i];
            if (!std::isfinite(b.lower) || !std::isfinite(b.upper) || b.lower > b.upper)
                raise<config_error>("RealVariation: bounds of gene ", i, " are [", b.lower, ", ", b.upper,
                                    "]; need finite lower <= upper");
        }
        detail::check_probability(m_options.crossover_probability, "crossover_probability");
        if (m_options.mutation_probability < 0.0)
            m_options.mutation_probability = 1.0 / static_cast<double>(m_bounds.size());
        detail::check_probability(m_options.mutation_probability, "mutation_probability");
        if (!(m_options.eta_crossover >= 0.0) || !(m_options.eta_mutation >= 0.0))
            raise<config_error>("RealVariation: distribution indices must be >= 0, got eta_crossover=",
                                m_options.eta_crossover, " eta_mutation=", m_options.eta_mutation);
    }
    Genome random(Rng& rng) const {
        Genome g(m_bounds.size());
        for (std::size_t i = 0; i < g.size(); ++i) g[i] = rng.uniform(m_bounds[i].lower, m_bounds[i].upper);
        return g;
    }
    std::pair<Genome, Genome> crossover(const Genome& a, const Genome& b, Rng& rng) const {
        std::pair<Genome, Genome> c{a, b};
        if (rng.bernoulli(m_options.crossover_probability))
            sbx_crossover(c.first, c.second, m_bounds, m_options.eta_crossover, rng);
        return c;
    }
    void mutate(Genome& g, Rng& rng) const {
        polynomial_mutation(g, m_bounds, m_options.eta_mutation, m_options.mutation_probability, rng);
    }
    const std::vector<Bounds>& bounds() const { return m_bounds; }
    const RealOperatorOptions& options() const { return m_options; }

private:
    std::vector<Bounds> m_bounds;
    RealOperatorOptions m_options;
};

/// Variation for integer / categorical vectors: gene i takes values in [0, cardinality[i]).
template <class T = int>
class IntegerVariation {
public:
    using Genome = std::vector<T>;
    /// @throws config_error for no genes, a zero cardinality or bad probabilities.
    IntegerVariation(std::vector<std::size_t> cardinalities, IntegerOperatorOptions options)
        : m_cardinalities(std::move(cardinalities)), m_options(options) {
        if (m_cardinalities.empty()) raise<config_error>("IntegerVariation: the problem has no genes");
        for (std::size_t i = 0; i < m_cardinalities.size(); ++i)
            if (m_cardinalities[i] == 0) raise<config_error>("IntegerVariation: gene ", i, " has cardinality 0");
        detail::check_probability(m_options.crossover_probability, "crossover_probability");
        detail::check_probability(m_options.swap_probability, "swap_probability");
        detail::check_probability(m_options.mutation_probability, "mutation_probability");
    }
    Genome random(Rng& rng) const {
        Genome g(m_cardinalities.size());
        for (std::size_t i = 0; i < g.size(); ++i) g[i] = static_cast<T>(rng.below(m_cardinalities[i]));
        return g;
    }
    std::pair<Genome, Genome> crossover(const Genome& a, const Genome& b, Rng& rng) const {
        std::pair<Genome, Genome> c{a, b};
        if (rng.bernoulli(m_options.crossover_probability))
            uniform_crossover<T>(c.first, c.second, m_options.swap_probability, rng);
        return c;
    }
    void mutate(Genome& g, Rng& rng) const {
        uniform_mutation<T>(g, m_cardinalities, m_options.mutation_probability, rng);
    }

private:
    std::vector<std::size_t> m_cardinalities;
    IntegerOperatorOptions m_options;
};

/// Variation delegated to the problem's own random_genome / crossover / mutate.
template <class P>
class ProblemVariation {
public:
    using Genome = typename P::Genome;
    explicit ProblemVariation(const P& problem) : m_problem(&problem) {}
    Genome random(Rng& rng) const { return m_problem->random_genome(rng); }
    std::pair<Genome, Genome> crossover(const Genome& a, const Genome& b, Rng& rng) const {
        return m_problem->crossover(a, b, rng);
    }
    void mutate(Genome& g, Rng& rng) const { m_problem->mutate(g, rng); }

private:
    const P* m_problem;
};

}  // namespace dnncost::search
