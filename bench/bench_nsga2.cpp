// NSGA-II throughput, non-dominated sorting and hypervolume (Google Benchmark).
//   bench_nsga2 --benchmark_filter=Generation   time per generation on ZDT1, one thread
//   bench_nsga2 --benchmark_filter=Sort         random points, M = 2 and 3
//   bench_nsga2 --benchmark_filter=Hypervolume  mutually non-dominated points, M = 2 and 3
#include <benchmark/benchmark.h>

#include <cmath>
#include <numbers>
#include <vector>

#include <dnncost/core/rng.hpp>
#include <dnncost/search/hypervolume.hpp>
#include <dnncost/search/nsga2.hpp>
#include <dnncost/search/pareto.hpp>
#include <dnncost/search/problems.hpp>

using namespace dnncost;
using namespace dnncost::search;

// One generation of NSGA-II on ZDT1 (30 variables) with the default options (Deb's operators,
// cache, duplicate removal, archive), one thread, evaluation included.
static void BM_Nsga2Generation(benchmark::State& state) {
    const auto pop = static_cast<std::size_t>(state.range(0));
    problems::Zdt1 problem;
    Nsga2 nsga(problem, {.population = pop, .generations = 1}, 1);
    nsga.initialize();
    // Start from a population that has converged for a while, as in a real run.
    for (int g = 0; g < 50; ++g) nsga.step();
    const std::size_t before = nsga.evaluations();
    for (auto _ : state) nsga.step();
    const double evals = static_cast<double>(nsga.evaluations() - before);
    state.SetItemsProcessed(static_cast<std::int64_t>(evals));
    // CPU seconds per evaluation, printed with an SI prefix (e.g. 1.4us).
    state.counters["per_eval"] = benchmark::Counter(evals, benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
    state.counters["archive"] = static_cast<double>(nsga.archive().size());
}
BENCHMARK(BM_Nsga2Generation)->Arg(100)->Arg(1000)->Arg(10000)->Unit(benchmark::kMicrosecond);

static std::vector<double> uniform_points(std::size_t n, std::size_t m, std::uint64_t seed) {
    Rng rng(seed);
    std::vector<double> v(n * m);
    for (auto& x : v) x = rng.uniform();
    return v;
}

static void BM_Sort(benchmark::State& state) {
    const auto n = static_cast<std::size_t>(state.range(0));
    const auto m = static_cast<std::size_t>(state.range(1));
    const auto v = uniform_points(n, m, 3);
    std::size_t fronts = 0;
    for (auto _ : state) {
        const auto rank = non_dominated_ranks(v, m);
        fronts = *std::max_element(rank.begin(), rank.end()) + 1;
        benchmark::DoNotOptimize(rank.data());
    }
    state.counters["fronts"] = static_cast<double>(fronts);
}
BENCHMARK(BM_Sort)->ArgsProduct({{1000, 10000, 100000}, {2, 3}})->ArgNames({"N", "M"})->Unit(benchmark::kMillisecond);

// Fronts: the quarter circle (M = 2) and random points on the sphere octant (M = 3).
static std::vector<double> front_points(std::size_t n, std::size_t m, std::uint64_t seed) {
    Rng rng(seed);
    std::vector<double> v;
    v.reserve(n * m);
    for (std::size_t i = 0; i < n; ++i) {
        if (m == 2) {
            const double a = rng.uniform() * std::numbers::pi / 2;
            v.push_back(std::cos(a));
            v.push_back(std::sin(a));
        } else {
            double x = std::abs(rng.normal()), y = std::abs(rng.normal()), z = std::abs(rng.normal());
            const double r = std::sqrt(x * x + y * y + z * z);
            v.push_back(x / r);
            v.push_back(y / r);
            v.push_back(z / r);
        }
    }
    return v;
}

static void BM_Hypervolume(benchmark::State& state) {
    const auto n = static_cast<std::size_t>(state.range(0));
    const auto m = static_cast<std::size_t>(state.range(1));
    const auto v = front_points(n, m, 5);
    const std::vector<double> ref(m, 1.1);
    for (auto _ : state) benchmark::DoNotOptimize(hypervolume(v, ref));
}
BENCHMARK(BM_Hypervolume)->ArgsProduct({{1000, 10000}, {2, 3}})->ArgNames({"N", "M"})->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
