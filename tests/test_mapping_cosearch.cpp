// Nested co-search (OOE over architectures, IOE per architecture): determinism across thread
// counts, the per-network cache, a user space with a callable cost source (the hook for a
// trained estimator), targets and fallback, DVFS brute force.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include <dnncost/search/mapping/cosearch.hpp>
#include <dnncost/search/mapping/cost_source.hpp>
#include <dnncost/search/mapping/platforms/xavier.hpp>
#include <dnncost/search/mapping/vig_space.hpp>

using namespace dnncost;
using namespace dnncost::search::mapping;

namespace {

CoSearchOptions small_budget() {
    CoSearchOptions o;
    o.population = 16;
    o.generations = 4;
    o.inner.population = 24;
    o.inner.generations = 3;
    o.seed = 11;
    return o;
}

template <class Point>
bool dominates(const Point& a, const Point& b) {
    const std::array<double, 3> x{-a.accuracy, a.mapping.best.value.t, a.mapping.best.value.e};
    const std::array<double, 3> y{-b.accuracy, b.mapping.best.value.t, b.mapping.best.value.e};
    bool strictly = false;
    for (int k = 0; k < 3; ++k) {
        if (x[k] > y[k]) return false;
        strictly = strictly || x[k] < y[k];
    }
    return strictly;
}

// A user space: n layers (gene 0: 2..5), each "narrow" or "wide" (gene 1).
struct ToySpace {
    struct Architecture {
        int layers = 2;
        bool wide = false;
    };
    struct Block {
        bool wide = false;
        int position = 0;
    };
    std::vector<std::size_t> cardinalities() const { return {4, 2}; }
    Architecture decode(std::span<const std::uint8_t> g) const { return {2 + g[0], g[1] != 0}; }
    std::vector<Block> blocks(const Architecture& a) const {
        std::vector<Block> b;
        for (int i = 0; i < a.layers; ++i) b.push_back({a.wide, i});
        return b;
    }
};

}  // namespace

TEST_CASE("co-search on the Xavier-like platform: same seed, same front, whatever the thread count") {
    const XavierLikePlatform x;
    const VigSpace space;
    const TableCostSource<VigSpace> src(tabulate(space, x));
    const VigAccuracyProxy accuracy("cifar100");
    auto o = small_budget();
    const auto one = co_search(space, src, accuracy, o);
    o.threads = 2;
    const auto two = co_search(space, src, accuracy, o);
    REQUIRE(one.front.size() == two.front.size());
    REQUIRE_FALSE(one.front.empty());
    for (std::size_t i = 0; i < one.front.size(); ++i) {
        CHECK(one.front[i].genome == two.front[i].genome);
        CHECK(one.front[i].mapping.best.value.t == two.front[i].mapping.best.value.t);
        CHECK(one.front[i].mapping.best.cus == two.front[i].mapping.best.cus);
    }
    CHECK(one.inner_runs == two.inner_runs);
    CHECK(one.mapping_evaluations == two.mapping_evaluations);
    CHECK(one.outer_evaluations <= o.population * (o.generations + 1));
    CHECK(one.inner_runs <= one.outer_evaluations);

    std::vector<std::vector<std::uint8_t>> networks;
    for (const auto& p : one.front) {
        // one entry per network, mutually non-dominated
        const auto key = space.canonical(p.genome);
        CHECK(std::find(networks.begin(), networks.end(), key) == networks.end());
        networks.push_back(key);
        for (const auto& q : one.front) CHECK_FALSE(dominates(q, p));
        // the IOE's best mapping is its lowest P, on its own front, and P uses the standalone maxima
        const auto& m = p.mapping;
        CHECK(m.standalone.size() == 2);
        for (const auto& s : m.front) CHECK(m.best.p <= s.p);
        const double e_max = std::max(m.standalone[0].value.e, m.standalone[1].value.e);
        const double t_max = std::max(m.standalone[0].value.t, m.standalone[1].value.t);
        CHECK(m.best.p == doctest::Approx(m.best.value.e / e_max * m.best.value.t / t_max));
        CHECK(p.accuracy == doctest::Approx(accuracy(p.architecture)));
        CHECK(m.best.cus.size() == space.blocks(p.architecture).size());
    }
}

TEST_CASE("co-search cache: one IOE run per network, genomes of the same network share it") {
    const XavierLikePlatform x;
    const VigSpace space;
    const TableCostSource<VigSpace> src(tabulate(space, x));
    const VigAccuracyProxy accuracy;
    CoSearchProblem problem(space, src, accuracy, small_budget());
    auto g = space.encode(space.parse("2G-3Mpf96-4S-2E"));
    auto twin = g;
    twin[19] = 2;  // the fourth superblock has no FFN: its width gene does not matter
    const auto other = space.encode(VigSpace::baseline(GraphOp::gin));
    const std::vector<std::vector<std::uint8_t>> batch{g, twin, other, g};
    const auto r = problem.evaluate_batch(batch);
    REQUIRE(r.size() == 4);
    CHECK(problem.inner_runs() == 2);
    CHECK(r[0].objectives == r[1].objectives);
    CHECK(r[0].objectives == r[3].objectives);
    CHECK(r[0].objectives != r[2].objectives);
    (void)problem.evaluate(other);
    CHECK(problem.inner_runs() == 2);
    // the cached result is what evaluating the network directly gives
    const auto direct = problem.evaluate_architecture(space.canonical(g));
    CHECK(direct.mapping.best.value.t == r[0].objectives[1]);
    CHECK(-r[0].objectives[0] == doctest::Approx(accuracy(space.decode(g))));
}

TEST_CASE("co-search over a user space with a callable cost source and accuracy function") {
    const ToySpace space;
    Platform p{"toy", {"fast", "frugal"}, {{"default", {}}}};
    // the hook a trained estimator plugs into: any function of (block, cu, dvfs)
    const CallableCostSource<ToySpace::Block> src(p, [](const ToySpace::Block& b, std::size_t cu, std::size_t) {
        const double work = b.wide ? 2.0 : 1.0;
        if (cu == 1 && b.position == 0) return std::optional<BlockCost>{};  // frugal cannot run the first block
        return std::optional<BlockCost>(
            BlockCost{work * (cu ? 2.0 : 1.0), work * (cu ? 1.0 : 3.0), 0.1, 0.1, 0.1, 0.1});
    });
    const auto accuracy = [](const ToySpace::Architecture& a) { return a.layers + (a.wide ? 1.5 : 0.0); };
    CoSearchOptions o = small_budget();
    o.population = 8;
    o.generations = 3;
    const auto res = co_search(space, src, accuracy, o);
    REQUIRE_FALSE(res.front.empty());
    CHECK(res.inner_runs <= 8);  // the space has 8 networks
    for (const auto& pt : res.front) {
        CHECK(pt.mapping.best.cus.front() == 0);  // only "fast" runs the first block
        CHECK(pt.mapping.standalone.size() == 1);
        CHECK(pt.accuracy == accuracy(pt.architecture));
    }
    // the most accurate network (5 wide layers) is on the front
    bool best_there = false;
    for (const auto& pt : res.front) best_there = best_there || pt.accuracy == 6.5;
    CHECK(best_there);
}

TEST_CASE("co-search with unreachable targets: every network falls back to its best standalone mapping") {
    const XavierLikePlatform x;
    const VigSpace space;
    const TableCostSource<VigSpace> src(tabulate(space, x));
    const VigAccuracyProxy accuracy;
    auto o = small_budget();
    o.population = 8;
    o.generations = 1;
    o.inner.preference.t_target = 1.0;  // ms: no ViG subnet is that fast on this platform
    const auto res = co_search(space, src, accuracy, o);
    REQUIRE_FALSE(res.front.empty());
    for (const auto& pt : res.front) {
        CHECK(pt.mapping.fallback);
        CHECK(pt.mapping.note.find("best standalone") != std::string::npos);
        CHECK(transitions(pt.mapping.best.cus) == 0);
    }
}

TEST_CASE("co-search with DVFS brute force picks settings of the paper's grid") {
    const XavierLikePlatform x;
    const VigSpace space;
    const TableCostSource<VigSpace> src(tabulate(space, x));
    const VigAccuracyProxy accuracy;
    CoSearchProblem problem(space, src, accuracy, [] {
        auto o = small_budget();
        o.dvfs_brute_force = true;
        o.inner.population = 12;
        o.inner.generations = 1;
        return o;
    }());
    const auto e = problem.evaluate_architecture(space.encode(VigSpace::baseline(GraphOp::gin)));
    CHECK(e.mapping.best.dvfs < x.platform().num_dvfs());
    CHECK(e.mapping.standalone.size() == 2 * x.platform().num_dvfs());
    // normalised at MaxN: the best P over all settings is at most MaxN's best standalone P
    double maxn_best = 1e9;
    for (const auto& s : e.mapping.standalone)
        if (s.dvfs == 0) maxn_best = std::min(maxn_best, s.p);
    CHECK(e.mapping.best.p <= maxn_best);
    std::set<std::size_t> settings;
    for (const auto& s : e.mapping.front) settings.insert(s.dvfs);
    CHECK_FALSE(settings.empty());

    CoSearchOptions bad = small_budget();
    bad.dvfs = 24;
    CHECK_THROWS_AS(CoSearchProblem(space, src, accuracy, bad), config_error);
    bad = small_budget();
    bad.mutation_probability = 1.5;
    CHECK_THROWS_AS(CoSearchProblem(space, src, accuracy, bad), config_error);
}
