// Non-dominated sorting, crowding distance, hypervolume and IGD against brute force.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <vector>

#include <dnncost/core/rng.hpp>
#include <dnncost/search/hypervolume.hpp>
#include <dnncost/search/indicators.hpp>
#include <dnncost/search/pareto.hpp>

using namespace dnncost;
using namespace dnncost::search;

namespace {

// Rank by definition: peel off the points no remaining point dominates, O(N^3) but obviously right.
std::vector<std::size_t> brute_ranks(const std::vector<double>& v, std::size_t m, const std::vector<double>& cv = {}) {
    const std::size_t n = v.size() / m;
    auto dom = [&](std::size_t a, std::size_t b) {
        if (!cv.empty()) {
            const bool fa = !(cv[a] > 0), fb = !(cv[b] > 0);
            if (fa && !fb) return true;
            if (!fa && fb) return false;
            if (!fa && !fb) return cv[a] < cv[b];
        }
        return dominates(&v[a * m], &v[b * m], m);
    };
    std::vector<std::size_t> rank(n, std::numeric_limits<std::size_t>::max());
    std::size_t done = 0;
    for (std::size_t r = 0; done < n; ++r) {
        std::vector<std::size_t> layer;
        for (std::size_t i = 0; i < n; ++i) {
            if (rank[i] != std::numeric_limits<std::size_t>::max()) continue;
            bool dominated = false;
            for (std::size_t j = 0; j < n && !dominated; ++j)
                dominated = rank[j] == std::numeric_limits<std::size_t>::max() && dom(j, i);
            if (!dominated) layer.push_back(i);
        }
        for (std::size_t i : layer) rank[i] = r;
        done += layer.size();
    }
    return rank;
}

// Random points on a coarse grid so that ties in single objectives and exact duplicates are common.
std::vector<double> random_points(Rng& rng, std::size_t n, std::size_t m, int levels) {
    std::vector<double> v(n * m);
    for (auto& x : v) x = static_cast<double>(rng.below(static_cast<std::uint64_t>(levels))) / levels;
    for (std::size_t i = 1; i < n; ++i)
        if (rng.bernoulli(0.1)) std::copy_n(&v[rng.below(i) * m], m, &v[i * m]);  // duplicates
    return v;
}

// Exact hypervolume by cell decomposition of the grid of all coordinates: each cell is either
// wholly dominated or not.
double brute_hv(const std::vector<double>& v, std::size_t m, const std::vector<double>& ref) {
    const std::size_t n = v.size() / m;
    std::vector<std::vector<double>> axis(m);
    for (std::size_t k = 0; k < m; ++k) {
        for (std::size_t i = 0; i < n; ++i)
            if (v[i * m + k] < ref[k]) axis[k].push_back(v[i * m + k]);
        axis[k].push_back(ref[k]);
        std::sort(axis[k].begin(), axis[k].end());
        axis[k].erase(std::unique(axis[k].begin(), axis[k].end()), axis[k].end());
    }
    std::vector<std::size_t> cell(m, 0);
    double total = 0.0;
    for (;;) {
        bool valid = true;
        for (std::size_t k = 0; k < m; ++k) valid = valid && cell[k] + 1 < axis[k].size();
        if (valid) {
            bool covered = false;
            for (std::size_t i = 0; i < n && !covered; ++i) {
                bool all = true;
                for (std::size_t k = 0; k < m && all; ++k) all = v[i * m + k] <= axis[k][cell[k]];
                covered = all;
            }
            if (covered) {
                double vol = 1.0;
                for (std::size_t k = 0; k < m; ++k) vol *= axis[k][cell[k] + 1] - axis[k][cell[k]];
                total += vol;
            }
        }
        std::size_t k = 0;
        while (k < m && ++cell[k] >= axis[k].size()) cell[k++] = 0;
        if (k == m) break;
    }
    return total;
}

}  // namespace

TEST_CASE("non-dominated sort matches brute force for 1-5 objectives, with ties and duplicates") {
    Rng rng(7);
    for (std::size_t m = 1; m <= 5; ++m) {
        for (int trial = 0; trial < 40; ++trial) {
            const std::size_t n = 1 + rng.below(60);
            const int levels = trial % 2 == 0 ? 4 : 1000;
            const auto v = random_points(rng, n, m, levels);
            CAPTURE(m);
            CAPTURE(n);
            CHECK(non_dominated_ranks(v, m) == brute_ranks(v, m));
        }
    }
}

TEST_CASE("constrained domination: feasible first, then by total violation") {
    Rng rng(11);
    for (std::size_t m = 2; m <= 4; ++m) {
        for (int trial = 0; trial < 30; ++trial) {
            const std::size_t n = 2 + rng.below(40);
            const auto v = random_points(rng, n, m, 5);
            std::vector<double> cv(n);
            for (auto& c : cv) c = rng.bernoulli(0.5) ? 0.0 : static_cast<double>(rng.below(4)) * 0.5;
            CHECK(non_dominated_ranks(v, m, cv) == brute_ranks(v, m, cv));
        }
    }
}

TEST_CASE("non-dominated sort on larger random sets (all algorithms) agrees with brute force") {
    Rng rng(3);
    for (std::size_t m : {2u, 3u, 4u}) {
        const auto v = random_points(rng, 400, m, 50);
        CHECK(non_dominated_ranks(v, m) == brute_ranks(v, m));
    }
}

TEST_CASE("sorting rejects malformed input") {
    std::vector<double> v{1, 2, 3};
    CHECK_THROWS_AS(non_dominated_ranks(v, 2), shape_error);
    CHECK_THROWS_AS(non_dominated_ranks(v, 0), config_error);
    std::vector<double> cv{0.0};
    CHECK_THROWS_AS(non_dominated_ranks(v, 3, std::vector<double>{0.0, 1.0}), shape_error);
    CHECK(non_dominated_ranks(v, 3, cv) == std::vector<std::size_t>{0});
    // NaN compares false both ways: it would be silently kept or dropped
    const double nan = std::numeric_limits<double>::quiet_NaN();
    CHECK_THROWS_WITH_AS(non_dominated_ranks(std::vector<double>{1, 2, nan, 0}, 2),
                         "non_dominated_ranks: objective 0 of point 1 is NaN", config_error);
    CHECK_THROWS_AS(non_dominated_ranks(std::vector<double>{1, 2, 2, 1}, 2, std::vector<double>{0, nan}), config_error);
    CHECK_THROWS_AS(pareto_front(std::vector<double>{nan, 0, 1, 1}, 2), config_error);
    CHECK_THROWS_AS(igd(std::vector<double>{nan, 0, 5, 5}, std::vector<double>{0, 1, 1, 0}, 2), config_error);
    CHECK_THROWS_AS(crowding_distance(std::vector<double>{1, 2, 3, 4}, 2, std::vector<std::size_t>{0, 7}), shape_error);
    // infinite objectives are ordered: the interior keeps a finite (zero) distance, not NaN
    const double inf = std::numeric_limits<double>::infinity();
    const auto d =
        crowding_distance(std::vector<double>{-inf, 3, 0, 2, 1, 1, inf, 0}, 2, std::vector<std::size_t>{0, 1, 2, 3});
    for (double x : d) CHECK_FALSE(std::isnan(x));
}

TEST_CASE("crowding distance: extremes infinite, interior normalised neighbour gaps") {
    // Four points on a line f2 = 1 - f1.
    std::vector<double> v{0.0, 1.0, 0.25, 0.75, 0.5, 0.5, 1.0, 0.0};
    std::vector<std::size_t> front{0, 1, 2, 3};
    const auto d = crowding_distance(v, 2, front);
    CHECK(std::isinf(d[0]));
    CHECK(std::isinf(d[3]));
    CHECK(d[1] == doctest::Approx(0.5 + 0.5));
    CHECK(d[2] == doctest::Approx(0.75 + 0.75));
    const std::vector<std::size_t> two{1, 2};
    const auto d2 = crowding_distance(v, 2, two);
    CHECK((std::isinf(d2[0]) && std::isinf(d2[1])));
}

TEST_CASE("pareto_front extracts unique non-dominated points") {
    std::vector<double> v{1, 1, 0, 2, 1, 1, 2, 2, 2, 0};
    const auto f = pareto_front(v, 2);
    CHECK(f == std::vector<double>{0, 2, 1, 1, 2, 0});
    CHECK(pareto_front_indices(v, 2) == std::vector<std::size_t>{0, 1, 2, 4});
}

TEST_CASE("hypervolume matches cell-decomposition brute force for 1-5 objectives") {
    Rng rng(5);
    for (std::size_t m = 1; m <= 5; ++m) {
        const std::size_t max_n = m >= 4 ? 9 : 40;
        for (int trial = 0; trial < 30; ++trial) {
            const std::size_t n = 1 + rng.below(max_n);
            const auto v = random_points(rng, n, m, trial % 2 == 0 ? 5 : 100);
            std::vector<double> ref(m);
            for (auto& r : ref) r = 0.8 + 0.4 * rng.uniform();  // some points fall outside the box
            CAPTURE(m);
            CAPTURE(n);
            CHECK(hypervolume(v, ref) == doctest::Approx(brute_hv(v, m, ref)).epsilon(1e-12));
        }
    }
}

TEST_CASE("hypervolume of non-dominated sets in 3-5 objectives equals brute force") {
    // Points on a simplex are mutually non-dominated: the hardest case for the staircase and WFG.
    Rng rng(9);
    for (std::size_t m = 3; m <= 5; ++m) {
        const std::size_t n = m == 3 ? 60 : 10;
        std::vector<double> v(n * m);
        for (std::size_t i = 0; i < n; ++i) {
            double s = 0;
            for (std::size_t k = 0; k < m; ++k) s += (v[i * m + k] = rng.uniform() + 1e-3);
            for (std::size_t k = 0; k < m; ++k) v[i * m + k] /= s;
        }
        const std::vector<double> ref(m, 1.0);
        CHECK(hypervolume(v, ref) == doctest::Approx(brute_hv(v, m, ref)).epsilon(1e-12));
    }
}

TEST_CASE("hypervolume: closed forms and guards") {
    const std::vector<double> ref2{1.0, 1.0};
    CHECK(hypervolume(std::vector<double>{}, ref2) == 0.0);
    CHECK(hypervolume(std::vector<double>{0.5, 0.5}, ref2) == doctest::Approx(0.25));
    CHECK(hypervolume(std::vector<double>{1.0, 0.0}, ref2) == 0.0);  // on the boundary: no volume
    CHECK(hypervolume(std::vector<double>{0, 0, 0, 0}, std::vector<double>(4, 2.0)) == doctest::Approx(16.0));
    CHECK_THROWS_AS(hypervolume(std::vector<double>{0.5, NAN}, ref2), config_error);
    CHECK_THROWS_AS(hypervolume(std::vector<double>{0.5, 0.5, 0.5}, ref2), shape_error);
}

TEST_CASE("IGD and IGD+ on hand-computed sets") {
    const std::vector<double> ref{0.0, 1.0, 1.0, 0.0};
    const std::vector<double> approx{0.0, 1.0, 1.0, 1.0};
    CHECK(igd(approx, ref, 2) == doctest::Approx((0.0 + 1.0) / 2));
    // (1,1) is worse than (1,0) by 1 in f2 only; (0,1) is worse than (1,0) by 1 in f2 too.
    CHECK(igd_plus(approx, ref, 2) == doctest::Approx((0.0 + 1.0) / 2));
    const std::vector<double> better{-1.0, -1.0};
    CHECK(igd(better, ref, 2) > 0.0);
    CHECK(igd_plus(better, ref, 2) == 0.0);  // dominating every reference point: distance 0
    CHECK(std::isinf(igd(std::vector<double>{}, ref, 2)));
    CHECK_THROWS_AS(igd(approx, std::vector<double>{}, 2), config_error);
}

TEST_CASE("hypervolume of large sets (radix-sorted paths) equals a slab-by-slab sweep") {
    // Large enough for the radix sort; coarse values force ties in every objective.
    Rng rng(12);
    auto sweep_2d = [](std::vector<std::pair<double, double>> pts, double rx, double ry) {
        std::sort(pts.begin(), pts.end());
        double v = 0, h = ry;
        for (auto [x, y] : pts)
            if (y < h) {
                v += (rx - x) * (h - y);
                h = y;
            }
        return v;
    };
    for (int levels : {50, 1000000}) {
        std::vector<double> p2;
        std::vector<std::pair<double, double>> q2;
        for (int i = 0; i < 3000; ++i) {
            const double x = static_cast<double>(rng.below(static_cast<std::uint64_t>(levels))) / levels;
            const double y = static_cast<double>(rng.below(static_cast<std::uint64_t>(levels))) / levels;
            p2.insert(p2.end(), {x, y});
            q2.push_back({x, y});
        }
        CHECK(hypervolume(p2, std::vector<double>{1.0, 1.0}) == doctest::Approx(sweep_2d(q2, 1.0, 1.0)).epsilon(1e-12));
        // 3-d: integrate the 2-d area of the points below each z level over the z slabs.
        std::vector<double> p3;
        std::vector<std::array<double, 3>> q3;
        for (int i = 0; i < 1500; ++i) {
            std::array<double, 3> a{};
            for (auto& c : a) c = static_cast<double>(rng.below(static_cast<std::uint64_t>(levels))) / levels;
            if (i % 7 == 0 && !q3.empty()) a = q3[rng.below(q3.size())];  // exact duplicates
            q3.push_back(a);
            p3.insert(p3.end(), a.begin(), a.end());
        }
        std::sort(q3.begin(), q3.end(), [](const auto& a, const auto& b) { return a[2] < b[2]; });
        double expected = 0;
        std::vector<std::pair<double, double>> below;
        for (std::size_t i = 0; i < q3.size(); ++i) {
            below.push_back({q3[i][0], q3[i][1]});
            const double next = i + 1 < q3.size() ? q3[i + 1][2] : 1.0;
            if (next > q3[i][2]) expected += sweep_2d(below, 1.0, 1.0) * (next - q3[i][2]);
        }
        CHECK(hypervolume(p3, std::vector<double>(3, 1.0)) == doctest::Approx(expected).epsilon(1e-12));
    }
}
