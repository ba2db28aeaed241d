// Metrics and robust statistics against hand-computed values (ties included) and a brute-force Kendall.
#include <doctest/doctest.h>

#include <cmath>
#include <utility>
#include <vector>

#include <dnncost/core/rng.hpp>
#include <dnncost/core/robust_statistics.hpp>
#include <dnncost/train/metrics.hpp>
#include <dnncost/train/noise.hpp>

using namespace dnncost;
using doctest::Approx;

TEST_CASE("metrics: MAPE, RMSE and error-bound accuracy by hand") {
    const std::vector<double> pred{110, 90, 100, 205}, truth{100, 100, 100, 200};
    CHECK(train::mape(pred, truth) == Approx(0.05625));
    CHECK(train::rmse(pred, truth) == Approx(7.5));
    CHECK(train::error_bound_accuracy(pred, truth, 0.01) == Approx(0.25));
    CHECK(train::error_bound_accuracy(pred, truth, 0.05) == Approx(0.5));
    CHECK(train::error_bound_accuracy(pred, truth, 0.10) == Approx(1.0));  // a bound is inclusive
    CHECK(train::error_bound_accuracy(pred, truth, 0.099) == Approx(0.5));
}

TEST_CASE("metrics: average ranks share tied positions") {
    const std::vector<double> x{10, 20, 20, 5, 20};
    CHECK(train::average_ranks(x) == std::vector<double>{2, 4, 4, 1, 4});
}

TEST_CASE("metrics: Spearman and Kendall with ties, by hand") {
    // x has one tied pair: ranks (1, 2.5, 2.5, 4) vs (1, 3, 2, 4).
    const std::vector<double> x{1, 2, 2, 3}, y{1, 3, 2, 4};
    CHECK(train::spearman(x, y) == Approx(4.5 / std::sqrt(4.5 * 5.0)));
    // 5 concordant, 0 discordant, one pair tied in x: tau-b = 5 / sqrt(5 * 6).
    CHECK(train::kendall(x, y) == Approx(5.0 / std::sqrt(30.0)));
    // y has one tied pair; 7 concordant, 2 discordant: tau-b = 5 / sqrt(10 * 9).
    const std::vector<double> a{1, 2, 3, 4, 5}, b{2, 1, 2, 5, 3};
    CHECK(train::kendall(a, b) == Approx(5.0 / std::sqrt(90.0)));
    CHECK(train::kendall(b, a) == Approx(5.0 / std::sqrt(90.0)));
    CHECK(train::spearman(a, a) == Approx(1.0));
    const std::vector<double> rev{5, 4, 3, 2, 1};
    CHECK(train::kendall(a, rev) == Approx(-1.0));
    CHECK(train::spearman(a, rev) == Approx(-1.0));
    CHECK(std::isnan(train::kendall(std::vector<double>{1, 1, 1}, std::vector<double>{1, 2, 3})));
}

TEST_CASE("metrics: O(n log n) Kendall equals the O(n^2) definition on tied data") {
    Rng rng(7);
    std::vector<double> x(300), y(300);
    for (std::size_t i = 0; i < x.size(); ++i) {
        x[i] = static_cast<double>(rng.below(20));  // many ties
        y[i] = 0.5 * x[i] + static_cast<double>(rng.below(10));
    }
    double c = 0, d = 0, tx = 0, ty = 0, n0 = 0;
    for (std::size_t i = 0; i < x.size(); ++i)
        for (std::size_t j = i + 1; j < x.size(); ++j) {
            ++n0;
            const double sx = (x[i] > x[j]) - (x[i] < x[j]), sy = (y[i] > y[j]) - (y[i] < y[j]);
            if (sx == 0) ++tx;
            if (sy == 0) ++ty;
            if (sx * sy > 0) ++c;
            if (sx * sy < 0) ++d;
        }
    CHECK(train::kendall(x, y) == Approx((c - d) / std::sqrt((n0 - tx) * (n0 - ty))).epsilon(1e-12));
}

TEST_CASE("metrics: evaluate excludes items below 5% of the median") {
    const std::vector<double> truth{100, 100, 100, 200, 1}, pred{110, 90, 100, 205, 50};
    const auto e = train::evaluate(pred, truth);
    CHECK(e.degenerate_threshold == Approx(5.0));
    CHECK(e.n_degenerate == 1);
    CHECK(e.all.n == 5);
    CHECK(e.non_degenerate.n == 4);
    CHECK(e.non_degenerate.mape == Approx(0.05625));
    CHECK(e.all.mape == Approx((0.225 + 49.0) / 5.0));
}

TEST_CASE("robust statistics: median, high median and MAD by hand") {
    using V = std::vector<double>;
    CHECK(median(V{3, 1, 2}) == 2);
    CHECK(median(V{4, 1, 3, 2}) == 2.5);  // the mean of the middle two
    CHECK(median(V{7}) == 7);
    CHECK(std::isnan(median(V{})));
    CHECK(median_high(V{3, 1, 2}) == 2);
    CHECK(median_high(V{4, 1, 3, 2}) == 3);  // the upper middle value: always one of the values
    CHECK_THROWS_AS(median_high(V{}), config_error);
    // deviations from 10 of {9, 10, 12, 16}: {1, 0, 2, 6} -> median 1.5
    CHECK(mad(V{9, 10, 12, 16}, 10) == 1.5);
    // median of {1, 2, 4, 8, 100} is 4; deviations {3, 2, 0, 4, 96} -> 3
    CHECK(mad(V{1, 2, 4, 8, 100}) == 3);
    CHECK(mad_sigma(V{1, 2, 4, 8, 100}) == mad_to_sigma * 3);
    CHECK(mad_sigma(V{9, 10, 12, 16}, 10) == 1.4826 * 1.5);
    CHECK(std::isnan(mad(V{}, 0)));
    // the input is left as it was
    const V v{5, 3, 1, 4, 2};
    (void)median(v);
    (void)mad(v);
    CHECK(v == V{5, 3, 1, 4, 2});
}

TEST_CASE("metrics: coverage of mean +- 2 sigma") {
    const std::vector<double> mean{0, 0, 0, 0}, sigma{1, 1, 1, 1}, truth{1, 2, 2.5, -1.9};
    CHECK(train::coverage(mean, sigma, truth) == Approx(0.75));
    CHECK(train::coverage(mean, sigma, truth, 1.0) == Approx(0.25));
}

TEST_CASE("metrics: size mismatch is a shape_error") {
    CHECK_THROWS_AS(train::mape(std::vector<double>{1}, std::vector<double>{1, 2}), shape_error);
}

TEST_CASE("metrics: a NaN or infinite value, or a zero truth, is an error, not a silently ranked item") {
    const std::vector<double> t{1, 2, 3, 4, 5};
    CHECK_THROWS_WITH_AS(train::compute_metrics(std::vector<double>{1, std::nan(""), 3, 4, 5}, t),
                         doctest::Contains("prediction 1 is not finite"), config_error);
    CHECK_THROWS_WITH_AS(train::compute_metrics(t, std::vector<double>{1, 2, HUGE_VAL, 4, 5}),
                         doctest::Contains("true value 2 is not finite"), config_error);
    CHECK_THROWS_WITH_AS(train::evaluate(t, std::vector<double>{1, 2, 3, 0, 5}),
                         doctest::Contains("true value 3 is zero"), config_error);
    CHECK_NOTHROW(train::compute_metrics(t, t));
}

TEST_CASE("noise: agreement of measurement pairs by hand, both orders counted") {
    // (1, 1.105): 1.105 is 10.5 % above, 1 / 1.105 = 0.905 only 9.5 % below: one order of two
    const std::vector<std::pair<double, double>> pairs{{1, 1}, {1, 1.05}, {1, 1.2}, {2, 1.9}, {1, 1.105}};
    CHECK(train::pair_agreement(pairs, 0.1) == Approx(7.0 / 10.0));
    CHECK(train::pair_agreement(pairs, 0.01) == Approx(2.0 / 10.0));
    CHECK(train::pair_agreement(pairs, 0.25) == Approx(1.0));
    const auto r = train::pair_noise(pairs, 0.25);
    CHECK(r.pairs == 5);
    CHECK(r.ceiling == 1.0);  // everything agrees: no finite log-normal spread, a perfect score
    // robust spread: the median |log ratio| of the five pairs (0, log 1.05, log(2 / 1.9),
    // log 1.105, log 1.2) is log(2 / 1.9), times 1.4826 / sqrt 2
    CHECK(r.sigma == Approx(1.4826 * std::log(2.0 / 1.9) / std::sqrt(2.0)));
}

TEST_CASE("noise: the log-normal spread is recovered from its agreement") {
    for (double s : {0.01, 0.05, 0.2}) {
        // P(log 0.9 <= N(0, 2 s^2) <= log 1.1), written out with erfc
        const double t = std::sqrt(2.0) * s;
        const double p =
            0.5 * std::erfc(-std::log(1.1) / t / std::sqrt(2.0)) - 0.5 * std::erfc(-std::log(0.9) / t / std::sqrt(2.0));
        CHECK(train::sigma_from_agreement(p, 0.1) == Approx(s).epsilon(1e-9));
    }
    CHECK_THROWS_AS(train::sigma_from_agreement(1.0, 0.1), config_error);
    CHECK_THROWS_AS(train::sigma_from_agreement(0.5, 0.0), config_error);
}

TEST_CASE("noise: the ceiling is what a perfect estimator scores on simulated log-normal measurements") {
    // networks of true cost f, each measured twice with independent log-normal noise; the
    // perfect estimator predicts f, and its +-10 % accuracy on single measurements is counted
    Rng rng(17);
    const double s = 0.07;
    std::vector<std::pair<double, double>> pairs;
    std::size_t within = 0, n = 0;
    for (int i = 0; i < 200000; ++i) {
        const double f = std::exp(rng.uniform(0.0, 3.0));
        const double y1 = f * std::exp(rng.normal(0.0, s)), y2 = f * std::exp(rng.normal(0.0, s));
        pairs.emplace_back(y1, y2);
        for (double y : {y1, y2}) {
            within += std::abs(f / y - 1.0) <= 0.1;
            ++n;
        }
    }
    const auto r = train::pair_noise(pairs, 0.1);
    CHECK(r.sigma == Approx(s).epsilon(0.02));
    CHECK(r.ceiling == Approx(static_cast<double>(within) / static_cast<double>(n)).epsilon(0.005));
    CHECK(r.ceiling > r.agreement);  // one measurement's noise, not two
}

TEST_CASE("noise: bad input is a clear error") {
    const std::vector<std::pair<double, double>> none;
    CHECK_THROWS_AS(train::pair_noise(none), config_error);
    const std::vector<std::pair<double, double>> nan{{1.0, std::nan("")}};
    CHECK_THROWS_AS(train::pair_noise(nan), config_error);
    const std::vector<std::pair<double, double>> negative{{1.0, -2.0}};
    CHECK_THROWS_AS(train::pair_agreement(negative, 0.1), config_error);
    const std::vector<std::pair<double, double>> fine{{1.0, 1.2}};
    CHECK_THROWS_AS(train::pair_noise(fine, 1.5), config_error);
    CHECK(train::pair_noise(fine, 0.1).ceiling == 0.0);  // nothing agrees
}
