// ONNX import/export and cost annotation timings (Google Benchmark).
#include <benchmark/benchmark.h>

#include <filesystem>
#include <string>

#include <dnncost/cost/analytic.hpp>
#include <dnncost/io/file.hpp>
#include <dnncost/io/onnx.hpp>
#include <dnncost/io/onnx/proto.hpp>  // ONNX messages, built and read here
#include <dnncost/spaces/nb201.hpp>

namespace {

const std::string& resnet50_bytes() {
    static const std::string bytes =
        dnncost::io::read_file(std::filesystem::path(DNNCOST_DATA_DIR) / "onnx" / "resnet50.onnx");
    return bytes;
}
constexpr const char* kArch =
    "|nor_conv_3x3~0|+|nor_conv_3x3~0|avg_pool_3x3~1|+|skip_connect~0|nor_conv_3x3~1|skip_connect~2|";

// Parse, shape inference, folding, graph construction and validation of the largest fixture.
void BM_import_resnet50(benchmark::State& state) {
    const auto& bytes = resnet50_bytes();
    for (auto _ : state) {
        auto g = dnncost::io::import_onnx_bytes(bytes, "resnet50.onnx");
        benchmark::DoNotOptimize(g);
    }
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * bytes.size()));
}
BENCHMARK(BM_import_resnet50)->Unit(benchmark::kMillisecond);

void BM_nb201_build(benchmark::State& state) {
    dnncost::nb201::Nb201Options opt;
    opt.prune = state.range(0) != 0;
    const auto arch = dnncost::nb201::parse(kArch);
    for (auto _ : state) {
        auto g = dnncost::nb201::build_graph(arch, opt);
        benchmark::DoNotOptimize(g);
    }
}
BENCHMARK(BM_nb201_build)->Arg(0)->Arg(1)->ArgName("prune")->Unit(benchmark::kMicrosecond);

void BM_annotate(benchmark::State& state) {
    const auto g = state.range(0) == 0 ? dnncost::io::import_onnx_bytes(resnet50_bytes(), "resnet50.onnx")
                                       : dnncost::nb201::build_graph(kArch);
    for (auto _ : state) {
        auto c = dnncost::cost::annotate(g);
        benchmark::DoNotOptimize(c);
    }
    state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * g.num_nodes()));
    state.SetLabel(state.range(0) == 0 ? "resnet50" : "nb201");
}
BENCHMARK(BM_annotate)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);

// Serialisation including onnx::checker::check_model.
void BM_export(benchmark::State& state) {
    const auto g = state.range(0) == 0 ? dnncost::io::import_onnx_bytes(resnet50_bytes(), "resnet50.onnx")
                                       : dnncost::nb201::build_graph(kArch);
    for (auto _ : state) {
        auto bytes = dnncost::io::export_onnx_bytes(g);
        benchmark::DoNotOptimize(bytes);
    }
    state.SetLabel(state.range(0) == 0 ? "resnet50" : "nb201");
}
BENCHMARK(BM_export)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

// Serialisation with every weight an initializer holding seeded random values (what a runtime
// needs to fold and fuse constants); resnet50 writes 25.6 M values.
void BM_export_random_weights(benchmark::State& state) {
    const auto g = state.range(0) == 0 ? dnncost::io::import_onnx_bytes(resnet50_bytes(), "resnet50.onnx")
                                       : dnncost::nb201::build_graph(kArch);
    dnncost::io::OnnxExportOptions options;
    options.weights = dnncost::io::WeightData::random;
    for (auto _ : state) {
        auto bytes = dnncost::io::export_onnx_bytes(g, options);
        benchmark::DoNotOptimize(bytes);
    }
    state.SetLabel(state.range(0) == 0 ? "resnet50" : "nb201");
}
BENCHMARK(BM_export_random_weights)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

// Import keeping every weight's values (OnnxImportOptions::weight_values) of a model written with
// random weights.
void BM_import_with_weight_values(benchmark::State& state) {
    const auto g = dnncost::io::import_onnx_bytes(resnet50_bytes(), "resnet50.onnx");
    dnncost::io::OnnxExportOptions options;
    options.weights = dnncost::io::WeightData::random;
    const auto bytes = dnncost::io::export_onnx_bytes(g, options);
    for (auto _ : state) {
        dnncost::io::WeightValues values;
        dnncost::io::OnnxImportOptions import_options;
        import_options.weight_values = &values;
        auto imported = dnncost::io::import_onnx_bytes(bytes, "resnet50.onnx", import_options);
        benchmark::DoNotOptimize(imported);
        benchmark::DoNotOptimize(values);
    }
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * bytes.size()));
}
BENCHMARK(BM_import_with_weight_values)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
