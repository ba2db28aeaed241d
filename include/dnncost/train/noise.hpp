#pragma once
/// @file noise.hpp
/// How much of a measured cost is noise, from networks measured twice, and what that leaves for
/// any estimator.
#include <cmath>
#include <cstddef>
#include <span>
#include <utility>
#include <vector>

#include <dnncost/core/error.hpp>
#include <dnncost/train/metrics.hpp>

namespace dnncost::train {

/// Noise statistics of pairs (y1, y2) of two independent measurements of the same network (NB201
/// lists 1,500 networks under two strings, see nb201::isomorphic_twin):
/// - agreement(b): the fraction of pairs whose ratio y1 / y2 lies in [1 - b, 1 + b], both
///   orders counted (so the figure does not depend on which member comes first).
/// - sigma: the robust spread of one measurement in log space, 1.4826 MAD(log(y1 / y2)) / sqrt 2.
/// - ceiling(b): the error-bound accuracy +-b a perfect estimator (one that predicts every
///   network's typical cost exactly) would reach if log y = log f + e with e ~ N(0, s^2),
///   independent per measurement. Then log(y1 / y2) ~ N(0, 2 s^2); s is solved from the observed
///   agreement(b), not from the variance, so a few wild measurements do not dominate it, and the
///   ceiling is P(f / y in [1 - b, 1 + b]). A model, not a bound: real noise need not be log-normal.
struct PairNoise {
    std::size_t pairs = 0;   ///< pairs used
    double agreement = 0.0;  ///< fraction of ratios within +-bound, both orders counted
    double sigma = 0.0;      ///< robust spread of one measurement, log space
    double ceiling = 0.0;    ///< +-bound accuracy of a perfect estimator under log-normal noise
};

namespace detail {
inline double normal_cdf(double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); }
/// P(lo <= X <= hi) for X ~ N(0, s^2).
inline double normal_mass(double lo, double hi, double s) { return normal_cdf(hi / s) - normal_cdf(lo / s); }
}  // namespace detail

/// Fraction of the ratios y1 / y2 and y2 / y1 within [1 - bound, 1 + bound].
/// @throws config_error on no pairs or a value that is not finite and positive
inline double pair_agreement(std::span<const std::pair<double, double>> pairs, double bound) {
    if (pairs.empty()) raise<config_error>("pair_agreement: no pairs");
    std::size_t n = 0;
    for (std::size_t i = 0; i < pairs.size(); ++i) {
        const auto [a, b] = pairs[i];
        if (!(a > 0) || !(b > 0) || !std::isfinite(a) || !std::isfinite(b))
            raise<config_error>("pair_agreement: pair ", i, " is (", a, ", ", b,
                                "); costs must be finite and positive");
        n += std::abs(a / b - 1.0) <= bound;
        n += std::abs(b / a - 1.0) <= bound;
    }
    return static_cast<double>(n) / static_cast<double>(2 * pairs.size());
}

/// The log-normal spread s for which two measurements agree within +-bound (both orders)
/// with probability p: P(log(1 - bound) <= N(0, 2 s^2) <= log(1 + bound)) = p, by bisection.
/// @throws config_error unless 0 < p < 1 and 0 < bound < 1
inline double sigma_from_agreement(double p, double bound) {
    if (!(p > 0.0 && p < 1.0)) raise<config_error>("sigma_from_agreement: agreement ", p, " is not in (0, 1)");
    if (!(bound > 0.0 && bound < 1.0)) raise<config_error>("sigma_from_agreement: bound ", bound, " is not in (0, 1)");
    const double lo = std::log(1.0 - bound), hi = std::log(1.0 + bound);
    double low = 1e-9, high = 100.0;  // the mass falls from 1 to ~0 over this range
    for (int i = 0; i < 200; ++i) {
        const double middle = 0.5 * (low + high);
        (detail::normal_mass(lo, hi, std::sqrt(2.0) * middle) > p ? low : high) = middle;
    }
    return 0.5 * (low + high);
}

/// Agreement, robust spread and the log-normal ceiling of +-bound accuracy (see PairNoise).
/// An agreement of 1 (or 0) has no finite log-normal fit: the ceiling is then 1 (or 0).
/// @throws config_error on no pairs, a bad value or a bound outside (0, 1)
inline PairNoise pair_noise(std::span<const std::pair<double, double>> pairs, double bound = 0.1) {
    if (!(bound > 0.0 && bound < 1.0)) raise<config_error>("pair_noise: bound ", bound, " is not in (0, 1)");
    PairNoise r;
    r.pairs = pairs.size();
    r.agreement = pair_agreement(pairs, bound);
    std::vector<double> logs;
    logs.reserve(pairs.size());
    for (const auto& [a, b] : pairs) logs.push_back(std::abs(std::log(a / b)));
    r.sigma = 1.4826 * median(logs) / std::sqrt(2.0);  // the log ratio is symmetric: its MAD is the median |log ratio|
    if (r.agreement >= 1.0)
        r.ceiling = 1.0;
    else if (r.agreement <= 0.0)
        r.ceiling = 0.0;
    else {
        const double s = sigma_from_agreement(r.agreement, bound);
        r.ceiling = detail::normal_mass(-std::log(1.0 + bound), -std::log(1.0 - bound), s);  // f / y in [1 - b, 1 + b]
    }
    return r;
}

}  // namespace dnncost::train
