// Few-shot adaptation (estimators/adaptation.hpp): encodings and descriptors against hand values,
// the bins of targeted uniform sampling, the shots-only ridge on exactly linear data, and the
// regressor recovering a device that is a blend of the pool's.
#include <doctest/doctest.h>

#include <cmath>
#include <numeric>
#include <vector>

#include <dnncost/estimators/adaptation.hpp>
#include <dnncost/train/metrics.hpp>

using namespace dnncost;

TEST_CASE("nb201_encoding: one-hot per edge, then per-cell operation counts") {
    const auto x = estimators::nb201_encoding(
        "|nor_conv_3x3~0|+|none~0|skip_connect~1|+|avg_pool_3x3~0|nor_conv_1x1~1|nor_conv_3x3~2|");
    REQUIRE(x.size() == 35);
    // ops: none 0, skip_connect 1, nor_conv_1x1 2, nor_conv_3x3 3, avg_pool_3x3 4
    const int expected_op[6] = {3, 0, 1, 4, 2, 3};
    for (int e = 0; e < 6; ++e)
        for (int k = 0; k < 5; ++k) CHECK(x[static_cast<std::size_t>(e * 5 + k)] == (k == expected_op[e] ? 1.0 : 0.0));
    const double counts[5] = {1, 1, 1, 2, 1};
    for (int k = 0; k < 5; ++k) CHECK(x[static_cast<std::size_t>(30 + k)] == counts[k]);
    CHECK_THROWS_AS(estimators::nb201_encoding("|conv~0|"), parse_error);
}

TEST_CASE("latency_descriptor: log geometric mean, then log deviations from it") {
    const double e = std::exp(1.0);
    const std::vector<double> ms{1.0, e, e * e};
    const auto h = estimators::latency_descriptor(ms);
    REQUIRE(h.size() == 4);
    CHECK(h[0] == doctest::Approx(1.0));
    CHECK(h[1] == doctest::Approx(-1.0));
    CHECK(h[2] == doctest::Approx(0.0).epsilon(1e-12));
    CHECK(h[3] == doctest::Approx(1.0));
    CHECK_THROWS_AS(estimators::latency_descriptor(std::vector<double>{1.0, 0.0}), config_error);
    CHECK_THROWS_AS(estimators::latency_descriptor(std::vector<double>{}), config_error);
}

TEST_CASE("choose_shots: uniform sampling draws one shot per bin of the proxy ranking") {
    std::vector<std::size_t> candidates(100);
    std::iota(candidates.begin(), candidates.end(), std::size_t{0});
    std::vector<double> proxy(100);
    for (std::size_t i = 0; i < 100; ++i) proxy[i] = static_cast<double>((i * 37) % 100);  // a permutation of 0..99
    for (std::uint64_t seed = 0; seed < 5; ++seed) {
        const auto shots = estimators::choose_shots(candidates, proxy, 10, train::Sampling::uniform, seed);
        REQUIRE(shots.size() == 10);
        std::vector<int> per_bin(10, 0);
        for (auto s : shots) ++per_bin[static_cast<std::size_t>(proxy[s] / 10)];
        for (int b = 0; b < 10; ++b) CHECK(per_bin[static_cast<std::size_t>(b)] == 1);
    }
    const auto random = estimators::choose_shots(candidates, proxy, 10, train::Sampling::random, 1);
    CHECK(random.size() == 10);
    CHECK_THROWS_WITH_AS(
        estimators::choose_shots(std::span(candidates).first(10), proxy, 10, train::Sampling::uniform, 0),
        doctest::Contains("only 10 measured rows"), config_error);
}

TEST_CASE("shots_only_ridge recovers exactly linear per-cell costs") {
    namespace nb = dnncost::nb201;
    Rng rng(4);
    std::vector<std::string> shots, all;
    std::vector<double> ms;
    const auto cost = [](const std::string& a) {
        const auto c = nb::op_counts(nb::parse(a));
        return 1.0 + 0.1 * c[1] + 0.7 * c[2] + 2.0 * c[3] + 0.3 * c[4];
    };
    for (int i = 0; i < 40; ++i) {
        const auto a = nb::to_string(nb::from_index(static_cast<std::int64_t>(rng.below(15625))));
        (i < 12 ? shots : all).push_back(a);
        if (i < 12) ms.push_back(cost(a));
    }
    const auto p = estimators::shots_only_ridge(shots, ms, all);
    for (std::size_t i = 0; i < all.size(); ++i) CHECK(p[i] == doctest::Approx(cost(all[i])).epsilon(1e-3));
}

TEST_CASE("MapleEdge: a new device that blends two pool devices is recovered from 10 shots") {
    // four pool devices with different per-feature costs; the new device is half one and half another
    const int n = 300, f = 4;
    Rng rng(7);
    Eigen::MatrixXd x(n, f);
    for (int i = 0; i < n; ++i)
        for (int j = 0; j < f; ++j) x(i, j) = static_cast<double>(rng.below(4));
    const double w[4][4] = {{1, 2, 0.5, 0.2}, {0.3, 0.5, 2, 1}, {2, 0.2, 0.2, 0.5}, {0.5, 1, 1, 1}};
    Eigen::MatrixXd pool(n, 4);
    std::vector<double> target(n);
    for (int i = 0; i < n; ++i) {
        for (int d = 0; d < 4; ++d) pool(i, d) = 1.0 + x.row(i).dot(Eigen::Map<const Eigen::RowVector4d>(w[d]));
        target[static_cast<std::size_t>(i)] = 0.5 * pool(i, 0) + 0.5 * pool(i, 1);
    }
    std::vector<std::size_t> candidates(n);
    std::iota(candidates.begin(), candidates.end(), std::size_t{0});
    const std::vector<double> proxy(pool.col(0).data(), pool.col(0).data() + n);
    const auto shots = estimators::choose_shots(candidates, proxy, 10, train::Sampling::uniform, 3);
    std::vector<double> shot_ms;
    for (auto s : shots) shot_ms.push_back(target[s]);
    estimators::AdaptationOptions o;
    o.hidden = {32, 32};
    o.epochs = 40;
    o.seed = 1;
    estimators::MapleEdge m;
    m.fit(x, pool, shots, shot_ms, o);
    const auto p = m.predict(x);
    CHECK(train::spearman(p, target) > 0.97);
    CHECK(train::error_bound_accuracy(p, target, 0.1) > 0.8);
    // the shots' own latencies come back as the descriptor's reference
    CHECK(m.reference() == shots);
    CHECK_THROWS_AS(m.fit(x, pool.topRows(10), shots, shot_ms, o), config_error);
}
