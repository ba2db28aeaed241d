// Mapping search speed (Google Benchmark):
//   bench_mapping --benchmark_filter=Evaluate     (T, E) of 20-block mappings, one core
//   bench_mapping --benchmark_filter=Incremental  one-gene changes re-evaluated in O(1)
//   bench_mapping --benchmark_filter=Exact        enumeration of 2^20 mappings and the exact front
//   bench_mapping --benchmark_filter=Inner        one IOE at MaGNAS's budget on ViG-S (34 blocks)
//   bench_mapping --benchmark_filter=Nested       the full nested search at MaGNAS's budgets
//                                                 (OOE 100 x 50, IOE 200 x 10), table costs
#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>
#include <vector>

#include <dnncost/core/rng.hpp>
#include <dnncost/search/mapping/mapping.hpp>

using namespace dnncost;
using namespace dnncost::search::mapping;

namespace {

std::vector<std::uint8_t> random_genomes(const MappingEvaluator& ev, std::size_t count, std::uint64_t seed) {
    Rng rng(seed);
    const auto card = ev.cardinalities();
    std::vector<std::uint8_t> g(count * card.size());
    for (std::size_t k = 0; k < count; ++k)
        for (std::size_t i = 0; i < card.size(); ++i)
            g[k * card.size() + i] = static_cast<std::uint8_t>(rng.below(card[i]));
    return g;
}

}  // namespace

// (T, E) of a batch of 4,096 random mappings of a 20-block instance; items = mappings evaluated.
static void BM_MappingEvaluate(benchmark::State& state) {
    const auto cus = static_cast<std::size_t>(state.range(0));
    const MappingEvaluator ev(random_instance({.blocks = 20, .cus = cus}, 1));
    constexpr std::size_t batch = 4096;
    const auto genomes = random_genomes(ev, batch, 2);
    for (auto _ : state) {
        double sum = 0.0;
        for (std::size_t k = 0; k < batch; ++k) {
            const auto v = ev.evaluate(genomes.data() + k * 20);
            sum += v.t + v.e;
        }
        benchmark::DoNotOptimize(sum);
    }
    state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * batch));
}
BENCHMARK(BM_MappingEvaluate)->Arg(2)->Arg(3)->ArgName("CUs");

// (T, E) and P (gamma 1 and 1, or 0.7 and 1.3 through std::pow) of the same batch.
static void BM_MappingEvaluateP(benchmark::State& state) {
    const MappingEvaluator ev(random_instance({.blocks = 20, .cus = 2}, 1));
    constexpr std::size_t batch = 4096;
    const auto genomes = random_genomes(ev, batch, 2);
    const auto norm = standalone_normaliser(ev);
    Preference pref;
    if (state.range(0)) {
        pref.gamma1 = 0.7;
        pref.gamma2 = 1.3;
    }
    for (auto _ : state) {
        double sum = 0.0;
        for (std::size_t k = 0; k < batch; ++k) sum += objective_p(ev.evaluate(genomes.data() + k * 20), norm, pref);
        benchmark::DoNotOptimize(sum);
    }
    state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * batch));
}
BENCHMARK(BM_MappingEvaluateP)->Arg(0)->Arg(1)->ArgName("pow");

// One random gene of a 20-block mapping changed and (T, E) updated from the two terms it touches.
static void BM_MappingIncremental(benchmark::State& state) {
    const MappingEvaluator ev(random_instance({.blocks = 20, .cus = 2}, 1));
    IncrementalMapping m(ev, std::vector<std::uint8_t>(20, 0));
    Rng rng(3);
    std::vector<std::uint32_t> moves(1 << 16);
    for (auto& x : moves) x = static_cast<std::uint32_t>(rng.below(40));  // gene index x 2 values
    std::size_t k = 0;
    for (auto _ : state) {
        const auto x = moves[k++ & (moves.size() - 1)];
        m.set(x >> 1, static_cast<std::uint8_t>(x & 1u));
        benchmark::DoNotOptimize(m.value());
    }
    state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
}
BENCHMARK(BM_MappingIncremental);

// Every mapping of a 20-block, 2-CU instance (2^20) enumerated and its exact front extracted.
static void BM_ExactFront(benchmark::State& state) {
    const MappingEvaluator ev(random_instance({.blocks = 20, .cus = 2}, 1));
    std::size_t front = 0;
    for (auto _ : state) {
        const auto r = exact_front(ev);
        front = r.front.size();
        benchmark::DoNotOptimize(front);
    }
    state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) << 20);
    state.counters["front"] = static_cast<double>(front);
}
BENCHMARK(BM_ExactFront)->Unit(benchmark::kMillisecond);

// One inner search at MaGNAS's budget (population 200, 10 generations) on ViG-S/max-relative,
// 34 blocks on the Xavier-like GPU + DLA platform.
static void BM_InnerSearch(benchmark::State& state) {
    const XavierLikePlatform x;
    const VigSpace space;
    const TableCostSource<VigSpace> src(tabulate(space, x));
    const MappingEvaluator ev(make_instance(src, space.blocks(VigSpace::baseline(GraphOp::max_relative)), 0));
    MappingSearchOptions o;
    std::size_t evaluations = 0, front = 0;
    for (auto _ : state) {
        const auto r = search_mappings(ev, o);
        evaluations += r.evaluations;
        front = r.front.size();
        ++o.seed;
    }
    state.SetItemsProcessed(static_cast<std::int64_t>(evaluations));
    state.counters["front"] = static_cast<double>(front);
}
BENCHMARK(BM_InnerSearch)->Unit(benchmark::kMillisecond);

// The whole nested co-search at MaGNAS's budgets on the ViG space and the Xavier-like platform
// (table costs, accuracy proxy), with 1 or 2 threads; wall time.
static void BM_NestedSearch(benchmark::State& state) {
    const XavierLikePlatform x;
    const VigSpace space;
    const TableCostSource<VigSpace> src(tabulate(space, x));
    const VigAccuracyProxy accuracy("cifar100");
    CoSearchOptions o;  // OOE 100 x 50, IOE 200 x 10
    o.threads = static_cast<std::size_t>(state.range(0));
    std::size_t runs = 0, mappings = 0, front = 0;
    for (auto _ : state) {
        const auto r = co_search(space, src, accuracy, o);
        runs = r.inner_runs;
        mappings = r.mapping_evaluations;
        front = r.front.size();
    }
    state.counters["ioe_runs"] = static_cast<double>(runs);
    state.counters["mappings"] = static_cast<double>(mappings);
    state.counters["front"] = static_cast<double>(front);
}
BENCHMARK(BM_NestedSearch)
    ->Arg(1)
    ->Arg(2)
    ->ArgName("threads")
    ->Unit(benchmark::kSecond)
    ->UseRealTime()
    ->Iterations(1)
    ->Repetitions(3);

BENCHMARK_MAIN();
