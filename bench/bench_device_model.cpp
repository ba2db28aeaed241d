// Pricing networks with the committed device model (data/devices/ort-cpu-all-1t.dnnc) on NB201
// networks (Google Benchmark): the kernel pass, every kernel's features, the per-kind regressors
// and the sum, one core.
//   bench_device_model --benchmark_filter=DeviceModelBatch    64 networks per call (a search's population)
//   bench_device_model --benchmark_filter=DeviceModelSingle   one network per call
//   DNNCOST_DEVICE_MODEL=FILE bench_device_model             another model
// The model's residual, if it has one, is part of the price; "kernel sum" runs are those of a
// model without one.
#include <benchmark/benchmark.h>

#include <cstddef>
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
const device::DeviceModel* model() {
    static const device::DeviceModel* m = []() -> const device::DeviceModel* {
        const char* env = std::getenv("DNNCOST_DEVICE_MODEL");
        const std::string path = env ? env : std::string(DNNCOST_DATA_DIR) + "/devices/ort-cpu-all-1t.dnnc";
        try {
            return device::DeviceModel::deserialize(io::read_file(path), path).release();
        } catch (const error&) {
            return nullptr;
        }
    }();
    return m;
}

const std::vector<graph::Graph>& networks() { return bench_networks::nb201_networks(); }

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

static void BM_DeviceModelSingle(benchmark::State& state) {
    const auto* m = model();
    if (!m) return state.SkipWithError("data/devices/ort-cpu-all-1t.dnnc does not load");
    const auto& g = networks();
    std::size_t i = 0;
    for (auto _ : state) {
        const graph::Graph* one[] = {&g[i]};
        const auto p = m->predict_mean(one);
        benchmark::DoNotOptimize(p.data());
        i = (i + 1) % g.size();
    }
    state.counters["networks/s"] = benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
    state.SetLabel(m->residual().trained() ? "with residual" : "kernel sum");
}
BENCHMARK(BM_DeviceModelSingle)->Unit(benchmark::kMicrosecond);

BENCHMARK_MAIN();
