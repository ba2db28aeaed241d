// Import and inspection of 100,000-operator ONNX models (Google Benchmark): every pass over a
// graph must stay O(N log N), so a wide or long model cannot stall a search or a CI job.
//   fanout: N Relu operators reading the one graph input, every result a graph output
//   chain:  N Relu operators in sequence
#include <benchmark/benchmark.h>

#include <string>

#include <dnncost/core/error.hpp>
#include <dnncost/cost/analytic.hpp>
#include <dnncost/cost/memory.hpp>
#include <dnncost/io/onnx.hpp>
#include <dnncost/io/onnx/proto.hpp>  // ONNX messages, built and read here

namespace {

void add_value(::onnx::ValueInfoProto& v, const std::string& name) {
    v.set_name(name);
    auto* t = v.mutable_type()->mutable_tensor_type();
    t->set_elem_type(::onnx::TensorProto::FLOAT);
    t->mutable_shape()->add_dim()->set_dim_value(1);
    t->mutable_shape()->add_dim()->set_dim_value(4);
}

std::string wide_model(int n, bool chain) {
    ::onnx::ModelProto m;
    m.set_ir_version(8);
    auto* opset = m.add_opset_import();
    opset->set_domain("");
    opset->set_version(17);
    auto* g = m.mutable_graph();
    g->set_name(chain ? "chain" : "fanout");
    add_value(*g->add_input(), "x");
    for (int i = 0; i < n; ++i) {
        auto* node = g->add_node();
        node->set_op_type("Relu");
        node->set_name(dnncost::concat("relu", i));
        node->add_input(chain && i > 0 ? dnncost::concat("y", i - 1) : "x");
        node->add_output(dnncost::concat("y", i));
        if (!chain || i == n - 1) add_value(*g->add_output(), dnncost::concat("y", i));
    }
    return m.SerializeAsString();
}

// What `dnncost inspect` computes: import, per-operator costs, totals, peak memory, roofline.
void BM_import_inspect(benchmark::State& state) {
    const bool chain = state.range(1) != 0;
    const auto bytes = wide_model(static_cast<int>(state.range(0)), chain);
    dnncost::cost::DeviceSpec device;
    device.peak_flops = 1e12;
    device.bandwidth = 1e11;
    for (auto _ : state) {
        const auto g = dnncost::io::import_onnx_bytes(bytes, chain ? "chain.onnx" : "fanout.onnx");
        auto per_node = dnncost::cost::annotate(g);
        auto total = dnncost::cost::total_cost(g);
        auto memory = dnncost::cost::peak_memory(g);
        auto roofline = dnncost::cost::roofline(g, device);
        benchmark::DoNotOptimize(per_node);
        benchmark::DoNotOptimize(total);
        benchmark::DoNotOptimize(memory);
        benchmark::DoNotOptimize(roofline);
    }
    state.SetItemsProcessed(state.iterations() * state.range(0));
    state.SetLabel(chain ? "chain" : "fanout");
}
BENCHMARK(BM_import_inspect)
    ->ArgsProduct({{10000, 100000}, {0, 1}})
    ->ArgNames({"nodes", "chain"})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);

// The graph's own passes on the imported 100k graphs: topological order and validation.
void BM_topological_order(benchmark::State& state) {
    const bool chain = state.range(1) != 0;
    const auto g = dnncost::io::import_onnx_bytes(wide_model(static_cast<int>(state.range(0)), chain), "wide.onnx");
    for (auto _ : state) {
        auto order = g.topological_order();
        g.validate();
        benchmark::DoNotOptimize(order);
    }
    state.SetLabel(chain ? "chain" : "fanout");
}
BENCHMARK(BM_topological_order)
    ->ArgsProduct({{100000}, {0, 1}})
    ->ArgNames({"nodes", "chain"})
    ->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
