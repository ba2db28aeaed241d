// The kernel pass on the real networks of data/onnx under a rule set of the kind a CPU runtime
// has: invariants that hold for any correct pass (every executed node in one kernel, kernels in
// execution order, arithmetic kept), and counts that follow from the networks' structure.
#include <doctest/doctest.h>

#include <map>
#include <string>

#include <dnncost/cost/kernel_graph.hpp>
#include <dnncost/io/onnx.hpp>

using namespace dnncost;

namespace {

const char* const cpu_rules = R"(dnncost-fusion-rules 1
fold Conv BatchNormalization operands=constant
fuse Conv Relu operands=none
fuse Conv Clip operands=constant
fuse Conv Add operands=activation
fuse Add Relu operands=none after=Conv
fuse Gemm Relu operands=none
layout NCHWc 16 anchors=Conv followers=MaxPool,AveragePool,GlobalAveragePool,Add,Relu,Clip,Concat
)";

}  // namespace

TEST_CASE("kernel graph on data/onnx: invariants and structure of real networks") {
    const auto rules = cost::FusionRules::parse(cpu_rules);
    for (const std::string file : {"resnet50.onnx", "mobilenet_v2.onnx", "squeezenet1_1.onnx", "inception_v3.onnx"}) {
        CAPTURE(file);
        const auto g = io::import_onnx(std::string(DNNCOST_DATA_DIR) + "/onnx/" + file);
        const auto kg = cost::kernel_graph(g, rules);
        std::map<std::string, int> ops;
        for (const auto& n : g.nodes()) ++ops[n.op_type];
        // every compute node is in exactly one kernel, the others in none
        std::vector<int> seen(g.num_nodes(), 0);
        for (std::size_t k = 0; k < kg.kernels.size(); ++k) {
            for (int v : kg.kernels[k].nodes) ++seen[static_cast<std::size_t>(v)];
            for (int v : kg.kernels[k].folded) ++seen[static_cast<std::size_t>(v)];
        }
        for (std::size_t v = 0; v < g.num_nodes(); ++v) {
            const bool compute = kg.roles[v] == cost::NodeRole::compute;
            CHECK(seen[v] == (compute ? 1 : 0));
            CHECK((kg.kernel_of_node[v] >= 0) == compute);
        }
        for (const auto& e : kg.edges) CHECK(e.src < e.dst);
        // arithmetic is kept: folded BatchNorms do none in the kernels, the rest is the analytic sum
        std::int64_t macs = 0, flops = 0, folded_flops = 0;
        for (std::size_t v = 0; v < g.num_nodes(); ++v) {
            const auto c = cost::node_cost(g, static_cast<int>(v));
            if (kg.roles[v] != cost::NodeRole::compute) continue;
            macs += c.macs;
            flops += c.flops;
        }
        for (const auto& k : kg.kernels)
            for (int v : k.folded) folded_flops += cost::node_cost(g, v).flops;
        CHECK(kg.total_cost().macs == macs);
        CHECK(kg.total_cost().flops == flops - folded_flops);
        // one kernel per convolution, each starting with it
        int conv_kernels = 0;
        for (const auto& k : kg.kernels) conv_kernels += !k.is_reorder() && g.node(k.nodes.front()).op_type == "Conv";
        CHECK(conv_kernels == ops["Conv"]);
        CHECK(kg.num_reorders() >= 1);  // at least the graph output leaves the blocked layout
        CHECK(kg.to_json(g) == cost::kernel_graph(g, rules).to_json(g));
        MESSAGE(file, ": ", g.num_nodes(), " nodes, ", kg.kernels.size(), " kernels (", kg.num_reorders(),
                " reorders)");
    }
}
