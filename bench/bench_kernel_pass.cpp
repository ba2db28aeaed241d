// The kernel pass (device::kernel_graph) and the kernel features on NB201 networks (Google
// Benchmark): the per-network work of pricing a network with a kernel-level device model,
// without the regressors and without the residual.
//   bench_kernel_pass --benchmark_filter=KernelPass       the pass alone, networks per second
//   bench_kernel_pass --benchmark_filter=KernelFeatures   the pass plus every kernel's features
// Rules: the ONNX Runtime "all" rule set of docs/device_model.md (BatchNorm folded, Conv + Add +
// Relu fused, NCHWc16 layout with reorders).
#include <benchmark/benchmark.h>

#include <cstddef>
#include <string>
#include <vector>

#include <dnncost/core/rng.hpp>
#include <dnncost/device/kernel_features.hpp>
#include <dnncost/device/kernel_graph.hpp>
#include <dnncost/spaces/nb201.hpp>

#include "nb201_networks.hpp"

using namespace dnncost;

namespace {

const device::FusionRules& rules() {
    static const auto r = device::FusionRules::parse(
        "dnncost-fusion-rules 1\n"
        "fold Conv BatchNormalization operands=constant\n"
        "fuse Conv Relu operands=none\n"
        "fuse Conv Add operands=activation\n"
        "fuse Add Relu operands=none after=Conv\n"
        "fuse Gemm Relu consumers=shared\n"
        "layout NCHWc 16 anchors=Conv followers=MaxPool,AveragePool,GlobalAveragePool,Add,Relu narrow-input=yes\n");
    return r;
}

const std::vector<graph::Graph>& networks() { return bench_networks::nb201_networks(); }

}  // namespace

// range(0): distinct networks cycled through (1: one network that stays in cache, as when a
// search builds a network and prices it at once; 64: about 4 MB of graphs, mostly out of L2)
static void BM_KernelPass(benchmark::State& state) {
    const auto& all = networks();
    const std::vector<graph::Graph> g(all.begin(), all.begin() + state.range(0));
    std::size_t i = 0, kernels = 0, nodes = 0;
    for (auto _ : state) {
        const auto kg = device::kernel_graph(g[i], rules());
        kernels += kg.kernels.size();
        nodes += g[i].num_nodes();
        benchmark::DoNotOptimize(kg.kernels.data());
        i = (i + 1) % g.size();
    }
    state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
    state.counters["kernels/network"] = static_cast<double>(kernels) / static_cast<double>(state.iterations());
    state.counters["nodes/network"] = static_cast<double>(nodes) / static_cast<double>(state.iterations());
}
BENCHMARK(BM_KernelPass)->Arg(1)->Arg(64)->Unit(benchmark::kMicrosecond);

static void BM_KernelFeatures(benchmark::State& state) {
    const auto& all = networks();
    const std::vector<graph::Graph> g(all.begin(), all.begin() + state.range(0));
    std::size_t i = 0;
    double sum = 0;
    for (auto _ : state) {
        const auto kg = device::kernel_graph(g[i], rules());
        for (std::size_t k = 0; k < kg.kernels.size(); ++k) {
            const auto f = device::kernel_features(g[i], kg, k, rules().layout.block);
            sum += f.values[0];
        }
        benchmark::DoNotOptimize(sum);
        i = (i + 1) % g.size();
    }
    state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
}
BENCHMARK(BM_KernelFeatures)->Arg(1)->Arg(64)->Unit(benchmark::kMicrosecond);

BENCHMARK_MAIN();
