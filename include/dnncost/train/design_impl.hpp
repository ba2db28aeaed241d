#pragma once
/// @file design_impl.hpp
/// The definitions of design.hpp: compiled once into dnncost::compiled in compiled mode
/// (core/config.hpp), included by design.hpp in header-only mode.
#include <dnncost/train/design.hpp>

DNNCOST_FUNC auto dnncost::train::d_optimal_rows(const Eigen::MatrixXd& features, std::size_t n, std::uint64_t seed,
                                                 double ridge) -> std::vector<std::size_t> {
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
