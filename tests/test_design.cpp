// Shot design (train/design.hpp): the greedy D-optimal rows against exact enumeration of every
// subset, against random subsets, determinism per seed, and bad requests.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <vector>

#include <dnncost/core/error.hpp>
#include <dnncost/core/rng.hpp>
#include <dnncost/spaces/nb201.hpp>
#include <dnncost/train/design.hpp>

using namespace dnncost;

namespace {
// log det of [1 | x] over the rows, the quantity a D-optimal design maximises (the raw
// features: standardisation scales every subset's determinant by the same factor)
double log_det(const Eigen::MatrixXd& x, const std::vector<std::size_t>& rows) {
    Eigen::MatrixXd a(static_cast<Eigen::Index>(rows.size()), x.cols() + 1);
    for (std::size_t k = 0; k < rows.size(); ++k) {
        a(static_cast<Eigen::Index>(k), 0) = 1.0;
        a.row(static_cast<Eigen::Index>(k)).tail(x.cols()) = x.row(static_cast<Eigen::Index>(rows[k]));
    }
    const double det = (a.transpose() * a).determinant();
    return det > 0 ? std::log(det) : -1e300;
}
}  // namespace

TEST_CASE("d_optimal_rows: a straight line is pinned by its two ends") {
    // 1-D candidates 0..10: after the random first row the leverage is largest at the far end,
    // then at the other end; any 3 rows of a greedy design include both ends.
    Eigen::MatrixXd x(11, 1);
    for (int i = 0; i <= 10; ++i) x(i, 0) = i;
    for (std::uint64_t seed = 0; seed < 20; ++seed) {
        const auto rows = train::d_optimal_rows(x, 3, seed);
        REQUIRE(rows.size() == 3);
        CHECK(std::count(rows.begin(), rows.end(), 0u) == 1);
        CHECK(std::count(rows.begin(), rows.end(), 10u) == 1);
    }
}

TEST_CASE("d_optimal_rows: close to the best subset found by exact enumeration") {
    // 12 candidates in 2-D, 4 rows: all 495 subsets enumerated
    Rng rng(11);
    Eigen::MatrixXd x(12, 2);
    for (Eigen::Index i = 0; i < x.rows(); ++i) x.row(i) << rng.normal(), rng.normal();
    std::vector<double> all;
    for (std::size_t a = 0; a < 12; ++a)
        for (std::size_t b = a + 1; b < 12; ++b)
            for (std::size_t c = b + 1; c < 12; ++c)
                for (std::size_t d = c + 1; d < 12; ++d) all.push_back(log_det(x, {a, b, c, d}));
    std::sort(all.begin(), all.end());
    REQUIRE(all.size() == 495);
    const double best = all.back(), tenth = all[all.size() * 9 / 10];
    for (std::uint64_t seed = 0; seed < 10; ++seed) {
        const double got = log_det(x, train::d_optimal_rows(x, 4, seed));
        CHECK(got >= tenth);           // in the top 10 % of all designs
        CHECK(got >= best - std::log(4.0));  // within a factor 4 of the best determinant
    }
}

TEST_CASE("d_optimal_rows: NB201 operation counts, better determined than random shots") {
    // per-cell operation counts of 2,000 cells; 10 rows for a linear model with intercept. The
    // five counts sum to 6, so the determinant is taken over four of them (the design itself
    // copes with the collinear fifth through its ridge term).
    Rng rng(5);
    Eigen::MatrixXd x5(2000, 5);
    for (Eigen::Index i = 0; i < x5.rows(); ++i) {
        const auto e = nb201::op_counts(nb201::from_index(static_cast<std::int64_t>(rng.below(15625))));
        for (int j = 0; j < 5; ++j) x5(i, j) = e[static_cast<std::size_t>(j)];
    }
    const Eigen::MatrixXd x = x5.rightCols(4);
    int better = 0;
    for (std::uint64_t seed = 0; seed < 20; ++seed) {
        const auto rows = train::d_optimal_rows(x5, 10, seed);
        CHECK(std::set<std::size_t>(rows.begin(), rows.end()).size() == 10);  // distinct
        CHECK(rows == train::d_optimal_rows(x5, 10, seed));                    // deterministic per seed
        Rng r(100 + seed);
        std::vector<std::size_t> random_rows;
        while (random_rows.size() < 10) {
            const auto k = static_cast<std::size_t>(r.below(2000));
            if (std::find(random_rows.begin(), random_rows.end(), k) == random_rows.end()) random_rows.push_back(k);
        }
        better += log_det(x, rows) > log_det(x, random_rows) ? 1 : 0;
    }
    CHECK(better == 20);
    CHECK(train::d_optimal_rows(x, 10, 1) != train::d_optimal_rows(x, 10, 2));
}

TEST_CASE("d_optimal_rows: bad requests are errors") {
    Eigen::MatrixXd x(3, 1);
    x << 1, 2, 3;
    CHECK_THROWS_AS(train::d_optimal_rows(x, 0, 0), config_error);
    CHECK_THROWS_AS(train::d_optimal_rows(x, 4, 0), config_error);
    x(1, 0) = std::nan("");
    CHECK_THROWS_AS(train::d_optimal_rows(x, 2, 0), config_error);
}
