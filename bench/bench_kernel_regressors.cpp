// Predicting the latencies of 10,000 kernel rows with each per-kernel regressor (Google Benchmark).
//   bench_kernel_regressors --benchmark_filter=Mlp   the project's MLP (nn/, one thread)
//   bench_kernel_regressors --benchmark_filter=Gbt   XGBoost trees, one thread (builds with XGBoost)
// Fitting is done once, before timing; its time is not measured here.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <dnncost/core/rng.hpp>
#include <dnncost/device/device_model_training.hpp>
#include <dnncost/device/mlp_regressor.hpp>
#if defined(DNNCOST_HAS_XGBOOST)
#include <dnncost/device/gbt_regressor.hpp>
#endif

using namespace dnncost;
using namespace dnncost::device;

namespace {

const std::vector<std::string> feature_names{"c_in", "c_out", "spatial", "kernel", "flops",
                                             "bytes", "intensity", "params", "aligned16"};

// Convolution-like rows and a roofline latency (50 GFLOP/s, 10 GB/s, 10 us overhead, 30 %
// slower off the 16-channel blocking) with 2 % log-normal noise.
void kernel_rows(Index n, std::uint64_t seed, Mat<double>& x, std::vector<double>& ms) {
    Rng rng(seed);
    x.resize(n, static_cast<Index>(feature_names.size()));
    ms.resize(static_cast<std::size_t>(n));
    for (Index i = 0; i < n; ++i) {
        const double c_in = std::round(std::exp(rng.uniform(std::log(3.0), std::log(512.0))));
        const double c_out = std::round(std::exp(rng.uniform(std::log(3.0), std::log(512.0))));
        const double hw = std::round(rng.uniform(4, 64)), k = 1 + 2 * static_cast<double>(rng.below(3));
        const double params = c_in * c_out * k * k, flops = 2 * params * hw * hw;
        const double bytes = 4 * (c_in * hw * hw + c_out * hw * hw + params);
        const bool aligned = static_cast<long>(c_out) % 16 == 0;
        x.row(i) << c_in, c_out, hw, k, flops, bytes, flops / bytes, params, aligned ? 1.0 : 0.0;
        const double law = (std::max(flops / 50e9, bytes / 10e9) + 10e-6) * 1e3 * (aligned ? 1.0 : 1.3);
        ms[static_cast<std::size_t>(i)] = law * std::exp(0.02 * rng.normal());
    }
}

constexpr Index rows_per_call = 10000;

void predict_rows(benchmark::State& state, TabularRegressor& model) {
    Mat<double> x, query;
    std::vector<double> ms, unused;
    kernel_rows(1500, 1, x, ms);
    model.fit(x, ms, feature_names);
    kernel_rows(rows_per_call, 2, query, unused);
    for (auto _ : state) benchmark::DoNotOptimize(model.predict(query));
    state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * rows_per_call);
}

}  // namespace

static void BM_MlpPredict10k(benchmark::State& state) {
    MlpRegressor mlp;
    predict_rows(state, mlp);
}
BENCHMARK(BM_MlpPredict10k)->Unit(benchmark::kMillisecond);

#if defined(DNNCOST_HAS_XGBOOST)
static void BM_GbtPredict10k(benchmark::State& state) {
    GbtRegressor gbt;
    predict_rows(state, gbt);
}
BENCHMARK(BM_GbtPredict10k)->Unit(benchmark::kMillisecond);
#endif

BENCHMARK_MAIN();
