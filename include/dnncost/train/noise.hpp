#pragma once
/// @file noise.hpp
/// How much of a measured cost is noise, from networks measured twice, and what that leaves for
/// any estimator.
#include <cmath>
#include <cstddef>
#include <span>
#include <utility>
#include <vector>

#include <dnncost/core/config.hpp>
#include <dnncost/core/error.hpp>
#include <dnncost/core/robust_statistics.hpp>
#include <dnncost/train/metrics.hpp>

namespace dnncost::train {

/// Noise statistics of pairs (y1, y2) of two independent measurements of the same network (NB201
/// lists 1,500 networks under two strings, see nb201::isomorphic_twin):
/// - agreement(b): the fraction of pairs whose ratio y1 / y2 lies in [1 - b, 1 + b], both
///   orders counted (so the figure does not depend on which member comes first).
/// - sigma: the robust spread of one measurement in log space, mad_sigma(log(y1 / y2), 0) / sqrt 2.
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
DNNCOST_FUNC double pair_agreement(std::span<const std::pair<double, double>> pairs, double bound);

/// The log-normal spread s for which two measurements agree within +-bound (both orders)
/// with probability p: P(log(1 - bound) <= N(0, 2 s^2) <= log(1 + bound)) = p, by bisection.
/// @throws config_error unless 0 < p < 1 and 0 < bound < 1
DNNCOST_FUNC double sigma_from_agreement(double p, double bound);

/// Agreement, robust spread and the log-normal ceiling of +-bound accuracy (see PairNoise).
/// An agreement of 1 (or 0) has no finite log-normal fit: the ceiling is then 1 (or 0).
/// @throws config_error on no pairs, a bad value or a bound outside (0, 1)
DNNCOST_FUNC PairNoise pair_noise(std::span<const std::pair<double, double>> pairs, double bound = 0.1);

}  // namespace dnncost::train

#if !defined(DNNCOST_COMPILED)
#include <dnncost/train/noise_impl.hpp>
#endif
