#pragma once
/// @file design.hpp
/// Which few networks to measure when a linear cost model is to be fitted on them: a greedy
/// D-optimal design over the model's features.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <vector>

#include <Eigen/Dense>

#include <dnncost/core/config.hpp>
#include <dnncost/core/error.hpp>
#include <dnncost/core/rng.hpp>

namespace dnncost::train {

/// `n` rows of `features` (one row per candidate network) chosen so that a least-squares fit
/// with an intercept on them is as well determined as possible: each step adds the candidate
/// whose features the current choice predicts worst (the largest leverage a'M⁻¹a, which
/// maximises det M when the row is added), with M = ε·I + Σ a aᵀ over the chosen rows of the
/// standardised features. The first row is drawn at random and ties are broken in a seeded random
/// order, so different seeds give different designs of about equal quality. ε keeps M invertible
/// while fewer rows than features are chosen (then the design spreads over the directions the
/// candidates vary most in). Returns row indices in the order chosen.
///
/// Why: with ten measurements of a device, the coefficients of a linear cost model are only as
/// good as the spread of the measured networks over its features; a design that covers every
/// feature direction pins them down far better than networks drawn at random or by latency.
/// @throws config_error when n is 0 or exceeds the candidates, or a feature is not finite
DNNCOST_FUNC std::vector<std::size_t> d_optimal_rows(const Eigen::MatrixXd& features, std::size_t n, std::uint64_t seed,
                                               double ridge = 1e-3);

}  // namespace dnncost::train

#if !defined(DNNCOST_COMPILED)
#include <dnncost/train/design_impl.hpp>
#endif
