// Pool-prior adaptation (device/pool_prior.hpp): the dual ridge's closed-form leave-one-out
// residuals against refitting without each row, and the model on exactly linear devices.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include <dnncost/core/rng.hpp>
#include <dnncost/device/pool_prior.hpp>

using namespace dnncost;

TEST_CASE("DualRidge: closed-form leave-one-out residuals equal refits without each row") {
    Rng rng(3);
    const Index m = 9, q = 12;  // more columns than rows: the dual form
    Eigen::MatrixXd a(m, q);
    Eigen::VectorXd r(m);
    for (Index i = 0; i < m; ++i) {
        for (Index j = 0; j < q; ++j) a(i, j) = rng.normal();
        r(i) = rng.normal();
    }
    const double lambda = 0.7;
    const auto e = device::DualRidge::loo_residuals(a, r, lambda);
    for (Index k = 0; k < m; ++k) {
        Eigen::MatrixXd ak(m - 1, q);
        Eigen::VectorXd rk(m - 1);
        for (Index i = 0, o = 0; i < m; ++i)
            if (i != k) {
                ak.row(o) = a.row(i);
                rk(o++) = r(i);
            }
        // primal ridge without row k: (A'A + lambda I) beta = A'r
        const Eigen::VectorXd beta =
            (ak.transpose() * ak + lambda * Eigen::MatrixXd::Identity(q, q)).ldlt().solve(ak.transpose() * rk);
        CHECK(e(k) == doctest::Approx(r(k) - a.row(k).dot(beta)).epsilon(1e-8));
    }
    CHECK_THROWS_AS(device::DualRidge::fit(a.topRows(1), r.head(1)), config_error);
}

namespace {
// five features (per-cell operation counts 0..6), costs exactly linear per device
struct LinearDevices {
    Eigen::MatrixXd x;
    Eigen::MatrixXd pool;
    double cost(const std::vector<double>& w, Index i) const {
        double c = w[0];
        for (Index j = 0; j < x.cols(); ++j) c += w[static_cast<std::size_t>(j + 1)] * x(i, j);
        return c;
    }
};
LinearDevices make_devices(const std::vector<std::vector<double>>& weights, Index n) {
    Rng rng(11);
    LinearDevices d;
    d.x.resize(n, 5);
    for (Index i = 0; i < n; ++i)
        for (Index j = 0; j < 5; ++j) d.x(i, j) = static_cast<double>(rng.below(7));
    d.pool.resize(n, static_cast<Index>(weights.size()));
    for (std::size_t k = 0; k < weights.size(); ++k)
        for (Index i = 0; i < n; ++i) d.pool(i, static_cast<Index>(k)) = d.cost(weights[k], i);
    return d;
}
}  // namespace

TEST_CASE("PoolPriorAdaptation: a device that is a pool device at another speed is predicted exactly") {
    const std::vector<std::vector<double>> w{{1.0, 0.1, 0.0, 0.5, 2.0, 0.3}, {2.0, 0.0, 0.4, 0.1, 0.2, 1.5}};
    const auto d = make_devices(w, 400);
    // the new device: the second pool device, 3.5 times slower
    std::vector<std::size_t> shots{3, 40, 77, 120, 150, 201, 260, 300, 333, 390};
    std::vector<double> shot_ms;
    for (auto s : shots) shot_ms.push_back(3.5 * d.pool(static_cast<Index>(s), 1));
    device::PoolPriorAdaptation m;
    m.fit(d.x, d.pool, shots, shot_ms);
    CHECK(m.prior_device() == 1);
    const auto p = m.predict(d.x);
    for (Index i = 0; i < d.x.rows(); ++i)
        CHECK(p[static_cast<std::size_t>(i)] == doctest::Approx(3.5 * d.pool(i, 1)).epsilon(1e-6));
}

TEST_CASE("PoolPriorAdaptation: enough shots move the model from the prior to the new device's costs") {
    const std::vector<std::vector<double>> w{{1.0, 0.1, 0.0, 0.5, 2.0, 0.3}};
    const auto d = make_devices(w, 300);
    const std::vector<double> target{0.5, 1.0, 1.0, 0.2, 0.1, 0.1};  // unlike the pool device
    std::vector<std::size_t> shots;
    std::vector<double> shot_ms;
    for (std::size_t s = 0; s < 60; ++s) {
        shots.push_back(s * 5);
        shot_ms.push_back(d.cost(target, static_cast<Index>(s * 5)));
    }
    device::PoolPriorAdaptation m;
    m.fit(d.x, d.pool, shots, shot_ms);
    const auto p = m.predict(d.x);
    for (Index i = 0; i < d.x.rows(); ++i)
        CHECK(p[static_cast<std::size_t>(i)] == doctest::Approx(d.cost(target, i)).epsilon(1e-3));
    std::vector<double> bad{1.0, -2.0};
    std::vector<std::size_t> two{0, 1};
    CHECK_THROWS_AS(m.fit(d.x, d.pool, two, bad), config_error);
}
