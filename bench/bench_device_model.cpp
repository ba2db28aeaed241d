// Pricing networks with the committed device model (data/devices/ort-cpu-all-1t.dnnc) on NB201
// networks (Google Benchmark): the kernel pass, every kernel's features, the per-kind regressors
// and the sum, one core.
//   bench_device_model --benchmark_filter=DeviceModelBatch    64 networks per call (a search's population)
//   bench_device_model --benchmark_filter=DeviceModelSingle   one network per call
//   bench_device_model --benchmark_filter=DeviceModelSpace    one network per call, 4,096 networks of the
//                                                             whole space in turn (few repeats)
//   bench_device_model --benchmark_filter=DeviceModelNoMemo   one network per call, no figure memo (every
//                                                             kernel row's regressor walked on every call)
//   DNNCOST_DEVICE_MODEL=FILE bench_device_model             another model
// The model's residual, if it has one, is part of the price; "kernel sum" runs are those of a
// model without one.
#include <benchmark/benchmark.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include <dnncost/core/rng.hpp>
#include <dnncost/device/device_model.hpp>
#include <dnncost/io/file.hpp>
#include <dnncost/spaces/nb201.hpp>

#include "nb201_networks.hpp"

using namespace dnncost;

namespace {

// DNNCOST_DEVICE_MODEL=FILE prices with another model (one without a residual, say). The model
// is never destroyed: its gradient-boosted trees must not be freed after XGBoost's own statics.
device::DeviceModel* load_model() {
    const char* env = std::getenv("DNNCOST_DEVICE_MODEL");
    const std::string path = env ? env : std::string(DNNCOST_DATA_DIR) + "/devices/ort-cpu-all-1t.dnnc";
    try {
        return device::DeviceModel::deserialize(io::read_file(path), path).release();
    } catch (const error&) {
        return nullptr;
    }
}
const device::DeviceModel* model() {
    static const device::DeviceModel* m = load_model();
    return m;
}
// a copy of its own, that remembers no kernel figures
const device::DeviceModel* model_without_memo() {
    static const device::DeviceModel* m = [] {
        auto* l = load_model();
        if (l) l->set_memo_capacity(0);
        return l;
    }();
    return m;
}

const std::vector<graph::Graph>& networks() { return bench_networks::nb201_networks(); }

// 4,096 distinct networks drawn from the whole space: one after another, a search's new networks
const std::vector<graph::Graph>& space_networks() {
    static const auto g = [] {
        std::vector<graph::Graph> out;
        std::vector<bool> taken(15625, false);
        Rng rng(7);
        while (out.size() < 4096) {
            const auto i = static_cast<std::int64_t>(rng() % 15625);
            if (taken[static_cast<std::size_t>(i)]) continue;
            taken[static_cast<std::size_t>(i)] = true;
            out.push_back(nb201::build_graph(nb201::from_index(i)));
        }
        return out;
    }();
    return g;
}

void price_one_per_call(benchmark::State& state, const device::DeviceModel* m, const std::vector<graph::Graph>& g) {
    if (!m) return state.SkipWithError("data/devices/ort-cpu-all-1t.dnnc does not load");
    std::size_t i = 0;
    for (auto _ : state) {
        const graph::Graph* one[] = {&g[i]};
        const auto p = m->predict_mean(one);
        benchmark::DoNotOptimize(p.data());
        i = (i + 1) % g.size();
    }
    state.counters["networks/s"] = benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
    state.counters["memo rows"] = static_cast<double>(m->memo().size());
    state.SetLabel(m->residual().trained() ? "with residual" : "kernel sum");
}

}  // namespace

static void BM_DeviceModelBatch(benchmark::State& state) {
    const auto* m = model();
    if (!m) return state.SkipWithError("data/devices/ort-cpu-all-1t.dnnc does not load");
    std::vector<const graph::Graph*> ptrs;
    for (const auto& g : networks()) ptrs.push_back(&g);
    for (auto _ : state) {
        const auto p = m->predict_mean(ptrs);
        benchmark::DoNotOptimize(p.data());
    }
    state.counters["networks/s"] =
        benchmark::Counter(static_cast<double>(state.iterations() * ptrs.size()), benchmark::Counter::kIsRate);
    state.SetLabel(m->residual().trained() ? "with residual" : "kernel sum");
}
BENCHMARK(BM_DeviceModelBatch)->Unit(benchmark::kMillisecond);

static void BM_DeviceModelSingle(benchmark::State& state) { price_one_per_call(state, model(), networks()); }
BENCHMARK(BM_DeviceModelSingle)->Unit(benchmark::kMicrosecond);

static void BM_DeviceModelSpace(benchmark::State& state) {
    const auto& g = space_networks();
    price_one_per_call(state, model(), g);
}
BENCHMARK(BM_DeviceModelSpace)->Unit(benchmark::kMicrosecond);

static void BM_DeviceModelNoMemo(benchmark::State& state) {
    price_one_per_call(state, model_without_memo(), networks());
}
BENCHMARK(BM_DeviceModelNoMemo)->Unit(benchmark::kMicrosecond);

BENCHMARK_MAIN();
