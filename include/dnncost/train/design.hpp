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
inline std::vector<std::size_t> d_optimal_rows(const Eigen::MatrixXd& features, std::size_t n, std::uint64_t seed,
                                               double ridge = 1e-3) {
    const auto rows = static_cast<std::size_t>(features.rows());
    if (n == 0) raise<config_error>("d_optimal_rows: needs at least one row");
    if (n > rows) raise<config_error>("d_optimal_rows: ", n, " rows requested from ", rows, " candidates");
    if (!features.allFinite()) raise<config_error>("d_optimal_rows: a candidate's feature is not finite");

    // standardised features with a leading intercept column; constant features dropped
    std::vector<Eigen::Index> kept;
    Eigen::VectorXd mean = features.colwise().mean().transpose(), sd(features.cols());
    for (Eigen::Index j = 0; j < features.cols(); ++j) {
        sd(j) = std::sqrt((features.col(j).array() - mean(j)).square().mean());
        if (sd(j) > 1e-12 * std::max(1.0, std::abs(mean(j)))) kept.push_back(j);
    }
    const auto d = static_cast<Eigen::Index>(kept.size()) + 1;
    Eigen::MatrixXd a(features.rows(), d);
    a.col(0).setOnes();
    for (std::size_t k = 0; k < kept.size(); ++k) {
        const auto j = kept[k];
        a.col(static_cast<Eigen::Index>(k) + 1) = (features.col(j).array() - mean(j)) / sd(j);
    }

    Rng rng(seed);
    std::vector<std::size_t> order(rows);
    std::iota(order.begin(), order.end(), std::size_t{0});
    rng.shuffle(order.begin(), order.end());

    Eigen::MatrixXd m_inv = Eigen::MatrixXd::Identity(d, d) / ridge;
    std::vector<char> chosen(rows, 0);
    std::vector<std::size_t> out;
    std::size_t next = order.front();
    for (;;) {
        out.push_back(next);
        chosen[next] = 1;
        if (out.size() == n) break;
        // Sherman-Morrison: (M + v vᵀ)⁻¹ = M⁻¹ - M⁻¹v vᵀM⁻¹ / (1 + vᵀM⁻¹v)
        const Eigen::VectorXd v = a.row(static_cast<Eigen::Index>(next)).transpose();
        const Eigen::VectorXd mv = m_inv * v;
        m_inv -= mv * mv.transpose() / (1.0 + v.dot(mv));
        // leverage of every candidate under the current design
        const Eigen::VectorXd leverage = ((a * m_inv).array() * a.array()).rowwise().sum();
        double best = -1.0;
        for (auto r : order) {  // the shuffled order breaks ties
            if (chosen[r]) continue;
            const double l = leverage(static_cast<Eigen::Index>(r));
            if (l > best * (1.0 + 1e-9)) {
                best = l;
                next = r;
            }
        }
    }
    return out;
}

}  // namespace dnncost::train
