#pragma once
/// @file pool_prior_impl.hpp
/// The definitions of pool_prior.hpp: compiled once into dnncost::compiled in compiled mode
/// (core/config.hpp), included by pool_prior.hpp in header-only mode.
#include <dnncost/device/pool_prior.hpp>

DNNCOST_FUNC auto dnncost::device::DualRidge::loo_residuals(const Eigen::MatrixXd& a, const Eigen::VectorXd& r,
                                                            double lambda) -> Eigen::VectorXd {
    const Index m = a.rows();
    const Eigen::MatrixXd k = a * a.transpose();
    const Eigen::MatrixXd h =
        k * (k + lambda * Eigen::MatrixXd::Identity(m, m)).ldlt().solve(Eigen::MatrixXd::Identity(m, m));
    Eigen::VectorXd e = r - h * r;
    for (Index i = 0; i < m; ++i) {
        const double d = 1.0 - h(i, i);
        e(i) = d > 1e-12 ? e(i) / d : std::numeric_limits<double>::infinity();
    }
    return e;
}

DNNCOST_FUNC auto dnncost::device::DualRidge::fit(const Eigen::MatrixXd& a, const Eigen::VectorXd& r) -> DualRidge {
    if (a.rows() < 2 || a.rows() != r.size())
        raise<config_error>("DualRidge: needs at least 2 rows with one target each, got ", a.rows(), " and ", r.size());
    if (!a.allFinite() || !r.allFinite()) raise<config_error>("DualRidge: non-finite data");
    DualRidge best;
    for (int e = -16; e <= 10; ++e) {  // lambda 1e-4 ... 1e5, half decades
        const double lambda = std::pow(10.0, 0.5 * e);
        const double err = loo_residuals(a, r, lambda).squaredNorm() / static_cast<double>(a.rows());
        if (err < best.loo_error) {
            best.loo_error = err;
            best.lambda = lambda;
        }
    }
    if (!std::isfinite(best.loo_error)) best.lambda = 1.0;  // every LOO fit degenerate: a moderate penalty
    const Index m = a.rows();
    const Eigen::VectorXd alpha = (a * a.transpose() + best.lambda * Eigen::MatrixXd::Identity(m, m)).ldlt().solve(r);
    best.beta = a.transpose() * alpha;
    return best;
}

DNNCOST_FUNC auto dnncost::device::PoolPriorAdaptation::fit(const Eigen::MatrixXd& features,
                                                            const Eigen::MatrixXd& pool,
                                                            std::span<const std::size_t> shots,
                                                            std::span<const double> shot_ms) -> void {
    const Index n = features.rows(), p = features.cols();
    if (pool.rows() != n || pool.cols() < 1)
        raise<config_error>("PoolPriorAdaptation: ", pool.rows(), " pool rows x ", pool.cols(), " devices for ", n,
                            " networks");
    if (shots.size() < 2 || shots.size() != shot_ms.size())
        raise<config_error>("PoolPriorAdaptation: needs at least 2 shots with one latency each, got ", shots.size(),
                            " and ", shot_ms.size());
    if (!features.allFinite() || !pool.allFinite() || !(pool.array() > 0).all())
        raise<config_error>("PoolPriorAdaptation: features must be finite and pool latencies positive");
    for (std::size_t s = 0; s < shots.size(); ++s) {
        if (static_cast<Index>(shots[s]) >= n)
            raise<config_error>("PoolPriorAdaptation: shot row ", shots[s], " out of range");
        if (!(shot_ms[s] > 0) || !std::isfinite(shot_ms[s]))
            raise<config_error>("PoolPriorAdaptation: shot latency ", shot_ms[s], " is not positive and finite");
    }
    // column scales, so that one penalty treats a count and a MAC total alike
    m_scale = features.array().square().colwise().mean().sqrt();
    for (Index j = 0; j < p; ++j)
        if (!(m_scale(j) > 0)) m_scale(j) = 1.0;
    const Eigen::MatrixXd a = design(features);

    // each pool device's linear model over every network it measured (least squares with a
    // vanishing ridge for rank-deficient features)
    const Eigen::MatrixXd gram = a.transpose() * a / static_cast<double>(n);
    const double jitter = 1e-9 * (gram.trace() / static_cast<double>(gram.rows()) + 1.0);
    const auto solver = (gram + jitter * Eigen::MatrixXd::Identity(p + 1, p + 1)).ldlt();
    const auto m = static_cast<Index>(shots.size());
    Eigen::MatrixXd shot_a(m, p + 1);
    Eigen::VectorXd y(m);
    for (Index i = 0; i < m; ++i) {
        shot_a.row(i) = a.row(static_cast<Index>(shots[static_cast<std::size_t>(i)]));
        y(i) = shot_ms[static_cast<std::size_t>(i)];
    }
    m_target_scale = y.mean();
    const Eigen::VectorXd yn = y / m_target_scale;
    // the prior: the pool model that, rescaled to the new device's mean on the shots, fits
    // the shots best (the shots' latencies are the hardware descriptor that picks it)
    double best = std::numeric_limits<double>::infinity();
    m_prior_device = 0;
    for (Index d = 0; d < pool.cols(); ++d) {
        const Eigen::VectorXd w = solver.solve(a.transpose() * pool.col(d) / static_cast<double>(n));
        double device_scale = 0.0;
        for (Index i = 0; i < m; ++i) device_scale += pool(static_cast<Index>(shots[static_cast<std::size_t>(i)]), d);
        device_scale /= static_cast<double>(m);
        const Eigen::VectorXd wn = w / device_scale;
        const double err = (shot_a * wn - yn).squaredNorm();
        if (err < best) {
            best = err;
            m_prior_device = d;
            m_prior = wn;
        }
    }
    const auto ridge = DualRidge::fit(shot_a, yn - shot_a * m_prior);
    m_lambda = ridge.lambda;
    m_weights = m_prior + ridge.beta;
}

DNNCOST_FUNC auto dnncost::device::PoolPriorAdaptation::predict(const Eigen::MatrixXd& features) const
    -> std::vector<double> {
    if (m_weights.size() == 0) raise<config_error>("PoolPriorAdaptation: predict called before fit");
    if (features.cols() + 1 != m_weights.size())
        raise<shape_error>("PoolPriorAdaptation: ", features.cols(), " features, the model was fitted on ",
                           m_weights.size() - 1);
    const Eigen::VectorXd p = design(features) * m_weights * m_target_scale;
    return {p.data(), p.data() + p.size()};
}

DNNCOST_FUNC auto dnncost::device::PoolPriorAdaptation::design(const Eigen::MatrixXd& features) const
    -> Eigen::MatrixXd {
    Eigen::MatrixXd a(features.rows(), features.cols() + 1);
    a.col(0).setOnes();
    a.rightCols(features.cols()) = features.array().rowwise() / m_scale.array();
    return a;
}
