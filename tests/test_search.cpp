// NSGA-II: option guards, determinism, constraints, archive, genome kinds, callbacks, caching.
#include <doctest/doctest.h>

#include <limits>

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <map>
#include <mutex>
#include <set>
#include <span>
#include <string>
#include <vector>

#include <dnncost/search/function_problem.hpp>
#include <dnncost/search/hypervolume.hpp>
#include <dnncost/search/indicators.hpp>
#include <dnncost/search/nsga2.hpp>
#include <dnncost/search/operators.hpp>
#include <dnncost/search/problems.hpp>

using namespace dnncost;
using namespace dnncost::search;

namespace {

struct Schaffer {
    using Genome = std::vector<double>;
    std::size_t num_objectives() const { return 2; }
    std::vector<Bounds> bounds() const { return {{-10.0, 10.0}}; }
    std::array<double, 2> evaluate(const Genome& x) const { return {x[0] * x[0], (x[0] - 2) * (x[0] - 2)}; }
};

// Returns whatever the test sets, to exercise the evaluation checks.
struct Faulty {
    using Genome = std::vector<double>;
    std::vector<double> answer{1.0, 2.0};
    std::size_t num_objectives() const { return 2; }
    std::vector<Bounds> bounds() const { return {{0.0, 1.0}}; }
    std::vector<double> evaluate(const Genome&) const { return answer; }
};

// Integer/categorical genome: pick 6 genes from 5 categories; minimise sum and distance to 4s.
struct Categorical {
    using Genome = std::vector<int>;
    std::size_t num_objectives() const { return 2; }
    std::vector<std::size_t> cardinalities() const { return std::vector<std::size_t>(6, 5); }
    std::array<double, 2> evaluate(const Genome& g) const {
        double a = 0, b = 0;
        for (int v : g) {
            a += v;
            b += 4 - v;
        }
        return {a, b};
    }
};

// A mixed genome with a variable length: `layers` decides how many widths follow (repair hook).
struct Mixed {
    struct Genome {
        int layers = 1;
        std::vector<double> widths;
        bool operator==(const Genome&) const = default;
    };
    std::size_t num_objectives() const { return 2; }
    Genome random_genome(Rng& rng) const {
        Genome g{1 + static_cast<int>(rng.below(4)), {}};
        for (int i = 0; i < g.layers; ++i) g.widths.push_back(rng.uniform());
        return g;
    }
    std::pair<Genome, Genome> crossover(const Genome& a, const Genome& b, Rng& rng) const {
        return rng.bernoulli(0.5) ? std::pair{a, b} : std::pair{b, a};
    }
    void mutate(Genome& g, Rng& rng) const {
        if (rng.bernoulli(0.3)) g.layers = 1 + static_cast<int>(rng.below(4));
        for (auto& w : g.widths) w = std::clamp(w + 0.1 * rng.normal(), 0.0, 1.0);
    }
    void repair(Genome& g) const { g.widths.resize(static_cast<std::size_t>(g.layers), 0.5); }
    std::size_t hash(const Genome& g) const {
        std::size_t h = std::hash<int>{}(g.layers);
        for (double w : g.widths) h = h * 31 + std::hash<double>{}(w);
        return h;
    }
    std::array<double, 2> evaluate(const Genome& g) const {
        CHECK(g.widths.size() == static_cast<std::size_t>(g.layers));  // repair ran before evaluation
        double cost = 0, error = 0;
        for (double w : g.widths) {
            cost += w;
            error += (1 - w) * (1 - w);
        }
        return {cost, error / g.layers};
    }
};

// Counts calls and records every evaluated objective vector (serial evaluation only).
struct Recording {
    using Genome = std::vector<double>;
    static constexpr ThreadSafety thread_safety = ThreadSafety::none;
    mutable std::vector<double> seen;
    mutable std::size_t calls = 0;
    problems::Zdt1 inner{.variables = 5};
    std::size_t num_objectives() const { return 2; }
    std::vector<Bounds> bounds() const { return inner.bounds(); }
    std::array<double, 2> evaluate(const Genome& x) const {
        ++calls;
        auto f = inner.evaluate(x);
        seen.insert(seen.end(), f.begin(), f.end());
        return f;
    }
};

// Batch-evaluated problem that returns Evaluation with constraints (CONSTR in batch form).
struct BatchConstr {
    using Genome = std::vector<double>;
    mutable std::size_t batches = 0;
    problems::Constr inner;
    std::size_t num_objectives() const { return 2; }
    std::size_t num_constraints() const { return 2; }
    std::vector<Bounds> bounds() const { return inner.bounds(); }
    Evaluation evaluate(const Genome& x) const {
        auto f = inner.evaluate(x);
        auto c = inner.constraints(x);
        return {{f.begin(), f.end()}, {c.begin(), c.end()}};
    }
    std::vector<Evaluation> evaluate_batch(std::span<const Genome> gs) const {
        ++batches;
        std::vector<Evaluation> out;
        for (const auto& g : gs) out.push_back(evaluate(g));
        return out;
    }
};

struct Rec3 {
    using Genome = std::vector<double>;
    static constexpr ThreadSafety thread_safety = ThreadSafety::none;
    mutable std::vector<double> seen;
    problems::Dtlz2 inner;
    std::size_t num_objectives() const { return 3; }
    std::vector<Bounds> bounds() const { return inner.bounds(); }
    std::vector<double> evaluate(const Genome& x) const {
        auto f = inner.evaluate(x);
        seen.insert(seen.end(), f.begin(), f.end());
        return f;
    }
};

template <class G>
std::vector<double> objectives_of(const std::vector<Individual<G>>& members) {
    std::vector<double> out;
    for (const auto& m : members) out.insert(out.end(), m.objectives.begin(), m.objectives.end());
    return out;
}

}  // namespace

TEST_CASE("option guards name the bad value") {
    Schaffer p;
    auto message = [&](Options o) {
        try {
            Nsga2 nsga(p, o, 1);
        } catch (const config_error& e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    CHECK(message({.population = 1}).find("population must be at least 2, got 1") != std::string::npos);
    CHECK(message({.population = 0}).find("got 0") != std::string::npos);
    CHECK(message({.population = std::numeric_limits<std::size_t>::max()}).find("beyond the supported") !=
          std::string::npos);
    CHECK(message({.generations = 0}).find("no budget") != std::string::npos);
    CHECK(message({.max_seconds = -1.0}).find("max_seconds") != std::string::npos);
    CHECK(message({.real = {.crossover_probability = 1.5}}).find("crossover_probability must be in [0, 1], got 1.5") !=
          std::string::npos);
    CHECK(message({.real = {.mutation_probability = 2.0}}).find("mutation_probability") != std::string::npos);
    CHECK(message({.real = {.eta_crossover = -1.0}}).find("eta_crossover=-1") != std::string::npos);
    Categorical c;
    CHECK_THROWS_AS(Nsga2(c, {.integer = {.swap_probability = -0.1}}, 1), config_error);
    CHECK_THROWS_AS(Nsga2(c, {.integer = {.mutation_probability = NAN}}, 1), config_error);
    CHECK_THROWS_WITH_AS(RealVariation({{1.0, 0.0}}, {}),
                         "RealVariation: bounds of gene 0 are [1, 0]; need finite lower <= upper", config_error);
    CHECK_THROWS_AS(RealVariation({}, {}), config_error);
    CHECK_THROWS_AS(IntegerVariation<int>({3, 0}, {}), config_error);
    const problems::Dtlz2 short_dtlz{.objectives = 3, .variables = 2};
    CHECK_THROWS_AS(short_dtlz.bounds(), config_error);
}

TEST_CASE("evaluation guards: wrong objective count and NaN") {
    Faulty p;
    p.answer = {1.0};
    CHECK_THROWS_WITH_AS(Nsga2(p, {}, 1).run(), "Nsga2: evaluate returned 1 objectives, the problem declares 2", error);
    p.answer = {1.0, NAN};
    CHECK_THROWS_WITH_AS(Nsga2(p, {}, 1).run(), "Nsga2: evaluate returned NaN for objective 1", error);
}

TEST_CASE("any population size works, including odd and tiny ones") {
    problems::Zdt1 p;
    for (std::size_t n : {2u, 3u, 5u, 7u, 101u}) {
        Nsga2 nsga(p, {.population = n, .generations = 5}, 3);
        const auto r = nsga.run();
        CHECK(r.population.size() == n);
        CHECK(r.generations == 5);
        CHECK(r.evaluations + r.cache_hits == n * 6);
        CHECK(!r.front.empty());
    }
}

TEST_CASE("same seed gives the same front for 1 and 2 evaluation threads, another seed differs") {
    problems::Zdt3 p;
    auto front = [&](std::size_t threads, std::uint64_t seed) {
        Nsga2 nsga(p, {.population = 60, .generations = 40, .threads = threads}, seed);
        return objectives_of(nsga.run().front);
    };
    const auto a = front(1, 42);
    CHECK(a == front(2, 42));
    CHECK(a == front(1, 42));
    CHECK(a != front(1, 43));
}

TEST_CASE("a FunctionProblem searches as the problem type it wraps, and checks its bounds") {
    problems::Zdt1 zdt1{.variables = 6};
    const FunctionProblem wrapped(zdt1.bounds(), 2, [&](const std::vector<double>& x) {
        const auto f = zdt1.evaluate(x);
        return std::vector<double>(f.begin(), f.end());
    });
    for (std::size_t threads : {1, 2}) {
        const Options o{.population = 24, .generations = 15, .threads = threads};
        CHECK(objectives_of(Nsga2(wrapped, o, 7).run().front) == objectives_of(Nsga2(zdt1, o, 7).run().front));
    }
    const auto zero = [](const std::vector<double>&) { return std::vector<double>{0.0, 0.0}; };
    CHECK_THROWS_WITH_AS(FunctionProblem({}, 2, zero), "FunctionProblem: no genes (bounds is empty)", config_error);
    CHECK_THROWS_WITH_AS(FunctionProblem({{0.0, std::nan("")}}, 2, zero),
                         "FunctionProblem: bounds of gene 0 are [0, nan]: they must be finite with lower <= upper",
                         config_error);
    CHECK_THROWS_AS(FunctionProblem({{1.0, 0.0}}, 2, zero), config_error);
    CHECK_THROWS_WITH_AS(FunctionProblem({{0.0, 1.0}}, 0, zero), "FunctionProblem: 0 objectives", config_error);
    CHECK_THROWS_AS(FunctionProblem({{0.0, 1.0}}, 2, nullptr), config_error);
}

TEST_CASE("ZDT and DTLZ objective functions on their Pareto sets") {
    std::vector<double> x(30, 0.0);
    x[0] = 0.25;
    CHECK(problems::Zdt1{}.evaluate(x)[1] == doctest::Approx(0.5));
    CHECK(problems::Zdt2{}.evaluate(x)[1] == doctest::Approx(1 - 0.0625));
    std::vector<double> y(10, 0.0);
    y[0] = 0.25;
    CHECK(problems::Zdt4{}.evaluate(y)[1] == doctest::Approx(0.5));
    std::vector<double> d(12, 0.5);
    d[0] = 0.3;
    d[1] = 0.8;
    const auto f2 = problems::Dtlz2{}.evaluate(d);
    CHECK(f2[0] * f2[0] + f2[1] * f2[1] + f2[2] * f2[2] == doctest::Approx(1.0));
    std::vector<double> e(7, 0.5);
    e[0] = 0.3;
    e[1] = 0.8;
    const auto f1 = problems::Dtlz1{}.evaluate(e);
    CHECK(f1[0] + f1[1] + f1[2] == doctest::Approx(0.5));
    // Reference fronts have the requested size and lie on the analytic front.
    const auto r3 = problems::Zdt3::reference_front(1000);
    CHECK(r3.size() == 2000);
    CHECK(pareto_front_indices(r3, 2).size() == 1000);
    const auto s = problems::Dtlz2{}.reference_front(1000);
    for (std::size_t i = 0; i < s.size(); i += 3)
        CHECK(s[i] * s[i] + s[i + 1] * s[i + 1] + s[i + 2] * s[i + 2] == doctest::Approx(1.0));
    const auto t = problems::Dtlz1{}.reference_front(1000);
    for (std::size_t i = 0; i < t.size(); i += 3) CHECK(t[i] + t[i + 1] + t[i + 2] == doctest::Approx(0.5));
    // DTLZ1 is multimodal; its front is reachable: a short run's IGD against it is finite.
    const problems::Dtlz1 dtlz1;
    Nsga2 nsga(dtlz1, {.population = 92, .generations = 300, .archive = false}, 5);
    const auto r = nsga.run();
    CHECK(igd(objectives_of(r.front), t, 3) < 1.0);
}

TEST_CASE("CONSTR ends with a feasible front on the analytic curve, spanning both pieces") {
    problems::Constr p;
    Nsga2 nsga(p, {.population = 100, .generations = 250}, 11);
    const auto r = nsga.run();
    // Distance to a dense sample of the analytic front, each objective scaled by the front's
    // extent (f1 in [7/18, 1], f2 in [1, 9]): within 2% of the extent everywhere.
    std::vector<double> curve;
    for (int k = 0; k <= 20000; ++k) {
        const double f1 = 7.0 / 18.0 + (1.0 - 7.0 / 18.0) * k / 20000.0;
        curve.push_back(f1);
        curve.push_back(problems::Constr::front_f2(f1));
    }
    double lo = 1, hi = 0;
    for (const auto& m : r.front) {
        CHECK(m.feasible());
        const double f1 = m.objectives[0], f2 = m.objectives[1];
        CHECK(f2 >= problems::Constr::front_f2(f1) - 1e-9);  // never beyond the front
        double nearest = 1e9;
        for (std::size_t i = 0; i < curve.size(); i += 2)
            nearest = std::min(nearest, std::hypot((f1 - curve[i]) / (1.0 - 7.0 / 18.0), (f2 - curve[i + 1]) / 8.0));
        CHECK(nearest < 0.02);
        lo = std::min(lo, f1);
        hi = std::max(hi, f1);
    }
    CHECK(lo < 0.40);  // reaches the left end (7/18 = 0.389) of the first piece
    CHECK(hi > 0.99);  // and the right end of the second
    CHECK(r.front.size() == 100);
}

TEST_CASE("SRN ends with a feasible front matching the front of a dense feasible grid") {
    problems::Srn p;
    Nsga2 nsga(p, {.population = 100, .generations = 250}, 13);
    const auto r = nsga.run();
    std::vector<double> grid;
    for (int i = 0; i <= 400; ++i)
        for (int j = 0; j <= 400; ++j) {
            const std::vector<double> x{-20.0 + 0.1 * i, -20.0 + 0.1 * j};
            const auto c = p.constraints(x);
            if (c[0] > 0 || c[1] > 0) continue;
            const auto f = p.evaluate(x);
            grid.insert(grid.end(), f.begin(), f.end());
        }
    const auto reference = pareto_front(grid, 2);
    const auto front = objectives_of(r.front);
    double f2_lo = 1e9, f2_hi = -1e9;
    for (const auto& m : r.front) {
        CHECK(m.feasible());
        // On the front f1 + f2 = x1^2 + 5 x1 + 6 >= -1/4 with equality at x1 = -2.5.
        CHECK(m.objectives[0] + m.objectives[1] >= -0.25 - 1e-9);
        f2_lo = std::min(f2_lo, m.objectives[1]);
        f2_hi = std::max(f2_hi, m.objectives[1]);
    }
    // Within 1% of the front's extent (about 230 in f2) of the grid's front, on average.
    CHECK(igd(front, reference, 2) < 0.01 * (f2_hi - f2_lo));
    CHECK(f2_hi - f2_lo > 200.0);
}

TEST_CASE("infeasible populations rank by total violation") {
    // Every genome violates the constraint; smaller violation must win.
    struct AlwaysInfeasible {
        using Genome = std::vector<double>;
        std::size_t num_objectives() const { return 2; }
        std::size_t num_constraints() const { return 1; }
        std::vector<Bounds> bounds() const { return {{0.0, 1.0}}; }
        std::array<double, 2> evaluate(const Genome& x) const { return {x[0], 1 - x[0]}; }
        std::array<double, 1> constraints(const Genome& x) const { return {1.0 + x[0]}; }
    } p;
    Nsga2 nsga(p, {.population = 20, .generations = 30, .archive = true}, 2);
    const auto r = nsga.run();
    CHECK(r.front.size() >= 1);
    CHECK(r.front[0].genome[0] < 0.05);
    CHECK(r.archive.size() >= 1);
    CHECK(r.archive[0].violation <= r.front[0].violation);
}

TEST_CASE("archive holds exactly the non-dominated set of everything evaluated") {
    Recording p;
    Nsga2 nsga(p, {.population = 30, .generations = 30, .archive = true}, 17);
    const auto r = nsga.run();
    CHECK(p.calls == r.evaluations);
    CHECK(p.seen.size() == 2 * r.evaluations);
    auto expected = pareto_front(p.seen, 2);
    auto got = pareto_front(objectives_of(r.archive), 2);
    CHECK(got == expected);
    CHECK(r.archive.size() >= r.front.size());
    CHECK(hypervolume(objectives_of(r.archive), std::vector<double>{1.1, 1.1}) >=
          hypervolume(objectives_of(r.front), std::vector<double>{1.1, 1.1}));
}

TEST_CASE("archive in three objectives matches brute force too") {
    Rec3 p;
    Nsga2 nsga(p, {.population = 24, .generations = 15, .archive = true}, 4);
    const auto r = nsga.run();
    CHECK(pareto_front(objectives_of(r.archive), 3) == pareto_front(p.seen, 3));
}

TEST_CASE("integer genomes: uniform operators stay in range, cache and duplicate removal work") {
    Categorical p;
    std::size_t calls = 0;
    Nsga2 nsga(p, {.population = 16, .generations = 40}, 8);
    const auto r = nsga.run([&](const auto& s) {
        ++calls;
        for (const auto& m : s.population())
            for (int v : m.genome) CHECK((v >= 0 && v < 5));
    });
    CHECK(calls == 41);
    // 5^6 = 15625 genomes exist but the front is the 25-point line a + b = 24; the cache means
    // no genome is ever evaluated twice.
    CHECK(r.cache_hits > 0);
    CHECK(r.evaluations + r.cache_hits == 16 * 41);
    std::set<std::vector<int>> distinct;
    for (const auto& m : r.population) distinct.insert(m.genome);
    CHECK(distinct.size() == r.population.size());  // duplicates removed
    for (const auto& m : r.front) CHECK(m.objectives[0] + m.objectives[1] == doctest::Approx(24.0));
}

TEST_CASE("real genomes: no cache by default, Cache::on never evaluates a genome twice") {
    Recording a, b;
    const auto ra = Nsga2(a, {.population = 20, .generations = 30, .remove_duplicates = false}, 9).run();
    const auto rb =
        Nsga2(b, {.population = 20, .generations = 30, .cache = Cache::on, .remove_duplicates = false}, 9).run();
    CHECK(ra.cache_hits == 0);
    CHECK(ra.evaluations == 20 * 31);
    CHECK(rb.cache_hits > 0);  // unmutated copies of parents
    CHECK(rb.evaluations + rb.cache_hits == 20 * 31);
    CHECK(b.calls == rb.evaluations);
    CHECK(objectives_of(ra.front) == objectives_of(rb.front));  // caching changes nothing else
}

TEST_CASE("tiny spaces: duplicates are accepted once the space is exhausted") {
    struct Tiny {
        using Genome = std::vector<int>;
        std::size_t num_objectives() const { return 2; }
        std::vector<std::size_t> cardinalities() const { return {2}; }
        std::array<double, 2> evaluate(const Genome& g) const { return {double(g[0]), double(1 - g[0])}; }
    } p;
    Nsga2 nsga(p, {.population = 6, .generations = 3}, 1);
    const auto r = nsga.run();
    CHECK(r.population.size() == 6);
    CHECK(r.evaluations == 2);
}

TEST_CASE("user-supplied operators and a repair hook for variable-length mixed genomes") {
    Mixed p;
    Nsga2 nsga(p, {.population = 20, .generations = 20}, 6);
    const auto r = nsga.run();
    CHECK(r.population.size() == 20);
    for (const auto& m : r.population) CHECK(m.genome.widths.size() == static_cast<std::size_t>(m.genome.layers));
}

TEST_CASE("budgets and callbacks: generations, evaluations, wall time, early stop") {
    problems::Zdt1 p;
    {
        Nsga2 nsga(p, {.population = 10, .generations = 0, .max_evaluations = 95}, 1);
        const auto r = nsga.run();
        CHECK(r.evaluations >= 95);
        CHECK(r.evaluations < 95 + 10);
    }
    {
        Nsga2 nsga(p, {.population = 10, .generations = 0, .max_seconds = 0.05}, 1);
        const auto r = nsga.run();
        CHECK(r.seconds >= 0.05);
        CHECK(r.generations > 0);
    }
    {
        std::vector<std::size_t> gens;
        std::size_t logged = 0;
        Nsga2 nsga(p, {.population = 10, .generations = 100}, 1);
        const auto r = nsga.run(
            [&](const auto& s) {
                gens.push_back(s.generation());
                return s.generation() == 7;
            },
            [&](const auto&) { ++logged; });
        CHECK(r.stopped_by_callback);
        CHECK(r.generations == 7);
        CHECK(gens.size() == 8);
        CHECK(logged == 8);  // the logger still sees the generation that stopped the run
    }
}

TEST_CASE("batch evaluation with Evaluation results and constraints") {
    BatchConstr p;
    Nsga2 nsga(p, {.population = 40, .generations = 50, .threads = 2}, 21);
    const auto r = nsga.run();
    CHECK(p.batches == 51);
    for (const auto& m : r.front) CHECK(m.feasible());
}

TEST_CASE("parallel evaluation is used and exceptions propagate") {
    struct Throws {
        using Genome = std::vector<double>;
        std::size_t num_objectives() const { return 2; }
        std::vector<Bounds> bounds() const { return {{0.0, 1.0}}; }
        std::array<double, 2> evaluate(const Genome& x) const {
            if (x[0] > 0.5) throw std::runtime_error("device unreachable");
            return {x[0], 1 - x[0]};
        }
    } p;
    Nsga2 nsga(p, {.population = 50, .generations = 3, .threads = 2}, 1);
    CHECK_THROWS_WITH(nsga.run(), "device unreachable");
}

TEST_CASE("operators: SBX and polynomial mutation respect bounds, SBX children centred on parents") {
    Rng rng(1);
    const std::vector<Bounds> b(8, Bounds{-1.0, 2.0});
    double mean_shift = 0;
    int n = 0;
    for (int t = 0; t < 2000; ++t) {
        std::vector<double> x(8), y(8);
        for (auto& v : x) v = rng.uniform(-1.0, 2.0);
        for (auto& v : y) v = rng.uniform(-1.0, 2.0);
        auto cx = x, cy = y;
        sbx_crossover(cx, cy, b, 20.0, rng);
        polynomial_mutation(cx, b, 20.0, 0.5, rng);
        for (std::size_t i = 0; i < 8; ++i) {
            CHECK((cx[i] >= -1.0 && cx[i] <= 2.0 && cy[i] >= -1.0 && cy[i] <= 2.0));
            mean_shift += (cy[i] + cx[i]) - (x[i] + y[i]);
            ++n;
        }
    }
    CHECK(std::abs(mean_shift / n) < 0.02);
    // eta = 20: children stay close to their parents.
    auto c = sbx_gene(0.4, 0.6, 0.0, 1.0, 20.0, rng);
    CHECK(std::abs(c.first - 0.5) < 0.5);
    CHECK(std::abs(polynomial_mutation_gene(0.5, 0.0, 1.0, 20.0, rng) - 0.5) < 0.5);
    CHECK(polynomial_mutation_gene(3.0, 3.0, 3.0, 20.0, rng) == 3.0);
}

namespace {
struct NoOperators {  // evaluates, but has no way to create genomes
    using Genome = std::vector<double>;
    std::size_t num_objectives() const { return 2; }
    std::array<double, 2> evaluate(const Genome&) const { return {0, 0}; }
};
struct WrongReturn {
    using Genome = std::vector<double>;
    std::size_t num_objectives() const { return 2; }
    std::vector<Bounds> bounds() const { return {{0, 1}}; }
    std::string evaluate(const Genome&) const { return "x"; }
};
}  // namespace

TEST_CASE("the Problem concept accepts the supported shapes and rejects incomplete ones") {
    static_assert(Problem<problems::Zdt1>);
    static_assert(Problem<problems::Dtlz2>);
    static_assert(Problem<Categorical>);
    static_assert(Problem<Mixed>);
    static_assert(Problem<BatchConstr>);
    static_assert(HasConstraints<problems::Constr> && !HasConstraints<problems::Zdt1>);
    static_assert(HasOwnOperators<Mixed> && HasRepair<Mixed> && HashableGenome<Mixed>);
    static_assert(HasBatchEvaluation<BatchConstr>);
    static_assert(thread_safety_of<Recording>() == ThreadSafety::none);
    static_assert(thread_safety_of<problems::Zdt1>() == ThreadSafety::concurrent);
    static_assert(!Problem<NoOperators>);
    static_assert(!Problem<WrongReturn>);
    static_assert(!Problem<int>);
    CHECK(true);
}
