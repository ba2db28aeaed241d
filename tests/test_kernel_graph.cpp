// The kernel pass: operator graphs built by hand, run under hand-written fusion rules, give the
// kernels, layouts, reorders and per-kernel counts worked out in the comments.
#include <doctest/doctest.h>

#include <map>
#include <string>
#include <vector>

#include <dnncost/device/fusion_rules.hpp>
#include <dnncost/device/kernel_graph.hpp>
#include <dnncost/device/kind_spec.hpp>
#include <dnncost/spaces/nb201.hpp>

#include "kernel_graph_fixtures.hpp"

using namespace dnncost;
using namespace kg_fixtures;
using device::FusionRules;

namespace {

FusionRules parse(const std::string& text) { return FusionRules::parse(text, "test rules"); }

/// A rule file "r.txt" of the header and `body` is refused with a message containing `what`.
void fails(const std::string& body, const std::string& what) {
    try {
        (void)FusionRules::parse("dnncost-fusion-rules 1\n" + body, "r.txt");
        FAIL("accepted: " << body);
    } catch (const parse_error& e) {
        CHECK(std::string(e.what()).find(what) != std::string::npos);
    }
}

std::vector<std::string> kinds(const device::KernelGraph& kg) {
    std::vector<std::string> out;
    for (const auto& k : kg.kernels) out.push_back(k.kind);
    return out;
}

std::vector<std::string> layouts(const device::KernelGraph& kg) {
    std::vector<std::string> out;
    for (const auto& k : kg.kernels) out.push_back(kg.layout_string(k.layout));
    return out;
}

std::vector<std::string> names(const Graph& g, const std::vector<int>& ids) {
    std::vector<std::string> out;
    for (int i : ids) out.push_back(g.node(i).name);
    return out;
}

/// A simple per-kernel latency: 0.5 per kernel, 1e-6 per FLOP, 1e-5 per byte.
double simple_kernel_cost(const device::Kernel& k) {
    return 0.5 + 1e-6 * static_cast<double>(k.cost.flops) + 1e-5 * static_cast<double>(k.cost.bytes());
}

const char* const resnet_rules = R"(dnncost-fusion-rules 1
fold Conv BatchNormalization operands=constant
fuse Conv Relu
fuse Conv Add operands=activation
fuse Add Relu after=Conv
)";

// x [1,16,8,8] -> Conv 16->32 3x3 -> BatchNorm -> Relu
Graph conv_bn_relu() {
    Graph g("conv_bn_relu");
    const int x = g.add_input("x", {1, 16, 8, 8});
    const int c = conv(g, "conv", x, 32, 3);
    const int b = batch_norm(g, "bn", c);
    g.mark_output(same(g, "Relu", "relu", {b}));
    g.validate();
    return g;
}

}  // namespace

TEST_CASE("kernel graph: Conv-BatchNorm-Relu is one kernel, BatchNorm folded, counts by hand") {
    const auto g = conv_bn_relu();
    const auto kg = device::kernel_graph(g, parse(resnet_rules));
    REQUIRE(kg.kernels.size() == 1);
    const auto& k = kg.kernels[0];
    CHECK(k.kind == "Conv+Relu");
    CHECK(names(g, k.nodes) == std::vector<std::string>{"conv", "relu"});
    CHECK(names(g, k.folded) == std::vector<std::string>{"bn"});
    // conv: 32*8*8 outputs x 16*9 MACs = 294912; FLOPs 2 x MACs (no bias) + Relu 2048
    CHECK(k.cost.macs == 294912);
    CHECK(k.cost.flops == 2 * 294912 + 2048);
    CHECK(k.cost.params == 32 * 16 * 9);
    CHECK(k.cost.input_bytes == 4 * 16 * 64);
    CHECK(k.cost.output_bytes == 4 * 32 * 64);
    CHECK(k.cost.weight_bytes == 4 * 32 * 16 * 9);
    CHECK(k.input_shapes == std::vector<graph::Shape>{{1, 16, 8, 8}});
    CHECK(k.output_shapes == std::vector<graph::Shape>{{1, 32, 8, 8}});
    CHECK(kg.kernel_of_node == std::vector<int>{0, 0, 0});
    CHECK(kg.edges.empty());
    // 0.5 + 591872e-6 + (4096 + 8192 + 18432)e-5
    CHECK(simple_kernel_cost(k) == doctest::Approx(0.5 + 0.591872 + 0.3072));
}

TEST_CASE("kernel graph: without rules every operator is a kernel and the sums are the analytic ones") {
    const auto g = conv_bn_relu();
    const auto kg = device::kernel_graph(g, FusionRules{});
    CHECK(kinds(kg) == std::vector<std::string>{"Conv", "BatchNormalization", "Relu"});
    REQUIRE(kg.edges.size() == 2);
    CHECK(kg.edges[0] == device::KernelEdge{0, 1, g.node(0).outputs[0]});
    CHECK(kg.edges[1] == device::KernelEdge{1, 2, g.node(1).outputs[0]});
    const auto total = kg.total_cost();
    const auto analytic = cost::total_cost(g);
    CHECK(total.macs == analytic.macs);
    CHECK(total.flops == analytic.flops);
    CHECK(total.params == analytic.params);
    CHECK(total.bytes() == analytic.bytes());
    // three kernels: conv 589824 FLOPs, 30720 bytes; bn 4096, 8192 + 8192 + 512; relu 2048, 16384
    double sum = 0;
    for (const auto& k : kg.kernels) sum += simple_kernel_cost(k);
    CHECK(sum == doctest::Approx(1.5 + (589824 + 4096 + 2048) * 1e-6 + (30720 + 16896 + 16384) * 1e-5));
}

TEST_CASE("kernel graph: a residual block chains fold, Conv+Add and Add+Relu behind a Conv") {
    Graph g("residual");
    const int x = g.add_input("x", {1, 32, 8, 8});
    const int r1 = same(g, "Relu", "relu1", {batch_norm(g, "bn1", conv(g, "conv1", x, 32, 3))});
    const int b2 = batch_norm(g, "bn2", conv(g, "conv2", r1, 32, 3));
    g.mark_output(same(g, "Relu", "relu2", {same(g, "Add", "add", {b2, x})}));
    g.validate();
    const auto kg = device::kernel_graph(g, parse(resnet_rules));
    REQUIRE(kinds(kg) == std::vector<std::string>{"Conv+Relu", "Conv+Add+Relu"});
    CHECK(names(g, kg.kernels[1].nodes) == std::vector<std::string>{"conv2", "add", "relu2"});
    CHECK(names(g, kg.kernels[1].folded) == std::vector<std::string>{"bn2"});
    CHECK(kg.kernels[1].inputs == std::vector<int>{r1, x});
    REQUIRE(kg.edges.size() == 1);
    CHECK(kg.edges[0] == device::KernelEdge{0, 1, r1});

    SUBCASE("Add+Relu without a Conv before it stays two kernels") {
        Graph h("add_relu");
        const int a = h.add_input("a", {1, 8, 4, 4}), b = h.add_input("b", {1, 8, 4, 4});
        h.mark_output(same(h, "Relu", "relu", {same(h, "Add", "add", {a, b})}));
        CHECK(kinds(device::kernel_graph(h, parse(resnet_rules))) == std::vector<std::string>{"Add", "Relu"});
    }
    SUBCASE("a bias Add (constant operand) does not match the activation-operand rule") {
        Graph h("bias");
        const int c = conv(h, "conv", h.add_input("x", {1, 8, 4, 4}), 8, 1);
        h.mark_output(same(h, "Add", "add", {c, h.add_weight("bias", {8, 1, 1})}));
        CHECK(kinds(device::kernel_graph(h, parse(resnet_rules))) == std::vector<std::string>{"Conv", "Add"});
    }
}

TEST_CASE("kernel graph: a sole-consumer rule does not fuse an intermediate read elsewhere") {
    Graph g("shared");
    const int c = conv(g, "conv", g.add_input("x", {1, 8, 4, 4}), 8, 1);
    g.mark_output(c);
    g.mark_output(same(g, "Relu", "relu", {c}));
    CHECK(kinds(device::kernel_graph(g, parse(resnet_rules))) == std::vector<std::string>{"Conv", "Relu"});
    const auto shared = device::kernel_graph(g, parse("dnncost-fusion-rules 1\nfuse Conv Relu consumers=shared\n"));
    REQUIRE(kinds(shared) == std::vector<std::string>{"Conv+Relu"});
    CHECK(shared.kernels[0].outputs.size() == 2);  // the intermediate is written too
}

TEST_CASE("kernel graph: an intermediate two units of one kernel would read keeps them apart") {
    // a NAS-Bench-201 cell: conv -> relu (to the next edge) and conv + x -> add -> relu. Each
    // reader of the convolution's output has a rule to join its kernel (fuse Conv Relu, fuse Conv
    // Add), but the runtime fuses a producer only into the one reader of its output: the
    // convolution, its Relu and the Add run alone (the Add's Relu joins an Add behind a Conv only)
    Graph g("cell");
    const int x = g.add_input("x", {1, 8, 4, 4});
    const int c = conv(g, "conv", same(g, "Relu", "relu_in", {x}), 8, 1);
    g.mark_output(same(g, "Relu", "relu_next", {c}));
    g.mark_output(same(g, "Relu", "relu_sum", {same(g, "Add", "add", {x, c})}));
    g.validate();
    CHECK(kinds(device::kernel_graph(g, parse(resnet_rules))) ==
          std::vector<std::string>{"Relu", "Conv", "Relu", "Add", "Relu"});
    // read by the Add alone, the same output joins it: Conv+Add+Relu
    Graph h("residual");
    const int y = h.add_input("x", {1, 8, 4, 4});
    const int d = conv(h, "conv", same(h, "Relu", "relu_in", {y}), 8, 1);
    h.mark_output(same(h, "Relu", "relu_sum", {same(h, "Add", "add", {y, d})}));
    CHECK(kinds(device::kernel_graph(h, parse(resnet_rules))) == std::vector<std::string>{"Relu", "Conv+Add+Relu"});
}

TEST_CASE("kernel graph: a fusion that would make the kernels cyclic is undone") {
    // conv -> relu -> sigmoid -> add, and conv -> add: fusing conv, relu and add around the
    // sigmoid would give kernel -> sigmoid -> kernel
    Graph g("cycle");
    const int c = conv(g, "conv", g.add_input("x", {1, 8, 4, 4}), 8, 1);
    const int s = same(g, "Sigmoid", "sigmoid", {same(g, "Relu", "relu", {c})});
    g.mark_output(same(g, "Add", "add", {c, s}));
    g.validate();
    const auto kg = device::kernel_graph(
        g, parse("dnncost-fusion-rules 1\nfuse Conv Relu consumers=shared\nfuse Conv Add consumers=shared\n"));
    CHECK(kinds(kg) == std::vector<std::string>{"Conv", "Relu", "Sigmoid", "Add"});
    for (const auto& e : kg.edges) CHECK(e.src < e.dst);
}

TEST_CASE("kernel graph: a depthwise-separable block runs blocked, reorders at its boundaries") {
    Graph g("mobile");
    const int x = g.add_input("x", {1, 32, 14, 14});
    const int r1 = same(g, "Relu", "relu1", {conv(g, "pw1", x, 64, 1)});
    const int r2 = same(g, "Relu", "relu2", {conv(g, "dw", r1, 64, 3, 1, 64)});
    const int y = conv(g, "pw2", r2, 32, 1);
    g.mark_output(y);
    g.validate();
    const auto rules =
        parse("dnncost-fusion-rules 1\nfuse Conv Relu\nlayout NCHWc 16 anchors=Conv followers=Relu,Add,MaxPool\n");
    const auto kg = device::kernel_graph(g, rules);
    CHECK(kinds(kg) == std::vector<std::string>{"Reorder", "Conv+Relu", "Conv+Relu", "Conv", "Reorder"});
    CHECK(layouts(kg) == std::vector<std::string>{"NCHWc16", "NCHWc16", "NCHWc16", "NCHWc16", "NCHW"});
    CHECK(kg.layout_string(kg.kernels[0].input_layout) == "NCHW");
    CHECK(kg.layout_string(kg.kernels[4].input_layout) == "NCHWc16");
    CHECK(kg.edges == std::vector<device::KernelEdge>{{0, 1, x}, {1, 2, r1}, {2, 3, r2}, {3, 4, y}});
    // a reorder reads and writes its value once: 4 * 32 * 14 * 14 bytes each way
    CHECK(kg.kernels[0].cost.input_bytes == 4 * 32 * 196);
    CHECK(kg.kernels[0].cost.output_bytes == 4 * 32 * 196);
    CHECK(kg.kernels[0].cost.flops == 0);
    CHECK(kg.num_reorders() == 2);
}

TEST_CASE("kernel graph: channel counts off the block fall back to the plain layout with reorders") {
    // 3 -> 16 -> 24 -> 32 -> 32 channels
    Graph g("unaligned");
    const int x = g.add_input("x", {1, 3, 16, 16});
    const int r1 = same(g, "Relu", "relu1", {conv(g, "c1", x, 16, 3)});
    const int r2 = same(g, "Relu", "relu2", {conv(g, "c2", r1, 24, 3)});
    const int c3 = conv(g, "c3", r2, 32, 3);
    const int c4 = conv(g, "c4", c3, 32, 3);
    g.mark_output(c4);
    g.validate();
    const std::string base = "dnncost-fusion-rules 1\nfuse Conv Relu\n";
    SUBCASE("block 16") {
        const auto kg = device::kernel_graph(g, parse(base + "layout NCHWc 16 anchors=Conv followers=Relu\n"));
        // c1 reads its 3 channels plain (narrow input) and writes 16 blocked; c2 writes 24: plain;
        // c3 reads 24: plain; c4 is aligned: its input is reordered in, its output out
        CHECK(kinds(kg) ==
              std::vector<std::string>{"Conv+Relu", "Reorder", "Conv+Relu", "Conv", "Reorder", "Conv", "Reorder"});
        CHECK(layouts(kg) == std::vector<std::string>{"NCHWc16", "NCHW", "NCHW", "NCHW", "NCHWc16", "NCHWc16", "NCHW"});
        CHECK(kg.edges ==
              std::vector<device::KernelEdge>{{0, 1, r1}, {1, 2, r1}, {2, 3, r2}, {3, 4, c3}, {4, 5, c3}, {5, 6, c4}});
        // reorder bytes: r1 16x16x16, c3 32x16x16, c4 32x16x16 floats, each read and written
        std::int64_t bytes = 0;
        for (const auto& k : kg.kernels)
            if (k.is_reorder()) bytes += k.cost.bytes();
        CHECK(bytes == 2 * 4 * (16 + 32 + 32) * 256);
    }
    SUBCASE("block 8: every count fits, one reorder at the output") {
        const auto kg = device::kernel_graph(g, parse(base + "layout NCHWc 8 anchors=Conv followers=Relu\n"));
        CHECK(kinds(kg) == std::vector<std::string>{"Conv+Relu", "Conv+Relu", "Conv", "Conv", "Reorder"});
        CHECK(layouts(kg) == std::vector<std::string>{"NCHWc8", "NCHWc8", "NCHWc8", "NCHWc8", "NCHW"});
    }
    SUBCASE("without narrow inputs the first convolution runs plain") {
        const auto kg =
            device::kernel_graph(g, parse(base + "layout NCHWc 8 anchors=Conv followers=Relu narrow-input=no\n"));
        CHECK(kinds(kg) == std::vector<std::string>{"Conv+Relu", "Reorder", "Conv+Relu", "Conv", "Conv", "Reorder"});
        CHECK(kg.layout_string(kg.kernels[0].layout) == "NCHW");
    }
}

TEST_CASE("kernel graph: Gemm + activation, MatMul + bias, MatMul + activation operand") {
    Graph g("mlp");
    const int x = g.add_input("x", {4, 256});
    const int h = g.add_op("Gemm", "fc1", {x, g.add_weight("w1", {256, 128}), g.add_weight("b1", {128})}, {4, 128});
    const int r = same(g, "Relu", "relu", {h});
    const int y = g.add_op("MatMul", "mm", {r, g.add_weight("w2", {128, 32})}, {4, 32});
    const int yb = same(g, "Add", "bias", {y, g.add_weight("b2", {32})});
    g.mark_output(same(g, "Add", "skip", {yb, g.add_input("z", {4, 32})}));
    g.validate();
    const auto rules = parse("dnncost-fusion-rules 1\nfuse Gemm Relu\nfuse MatMul Add operands=constant\n");
    const auto kg = device::kernel_graph(g, rules);
    REQUIRE(kinds(kg) == std::vector<std::string>{"Gemm+Relu", "MatMul+Add", "Add"});
    const auto& k = kg.kernels[0];
    // Gemm: 4*128 outputs x 256 MACs = 131072; FLOPs 2 x MACs + 512 (bias) + Relu 512
    CHECK(k.cost.macs == 131072);
    CHECK(k.cost.flops == 2 * 131072 + 512 + 512);
    CHECK(k.cost.params == 256 * 128 + 128);
    CHECK(k.cost.bytes() == 4 * (4 * 256) + 4 * (4 * 128) + 4 * (256 * 128 + 128));
    CHECK(kg.kernels[1].cost.params == 128 * 32 + 32);
}

TEST_CASE("kernel graph: a decomposed LayerNorm matches its pattern and is one kernel") {
    Graph g("ln");
    const int x = g.add_input("x", {1, 16, 64});
    const int ln = layer_norm_decomposed(g, "ln", x);
    const int y = g.add_op("MatMul", "proj", {ln, g.add_weight("w", {64, 64})}, {1, 16, 64});
    g.mark_output(y);
    g.validate();
    const auto rules = parse(
        "dnncost-fusion-rules 1\npattern LayerNormalization ReduceMean Sub Pow ReduceMean Add Sqrt Div Mul Add\n");
    const auto kg = device::kernel_graph(g, rules);
    REQUIRE(kinds(kg) == std::vector<std::string>{"LayerNormalization", "MatMul"});
    const auto& k = kg.kernels[0];
    CHECK(k.nodes.size() == 9);
    CHECK(k.inputs == std::vector<int>{x});
    CHECK(k.outputs == std::vector<int>{ln});
    // FLOPs: ReduceMean 1024, Sub 1024, Pow 1024, ReduceMean 1024, Add 16, Sqrt 4*16, Div, Mul, Add 1024 each
    CHECK(k.cost.flops == 7 * 1024 + 16 + 64);
    CHECK(k.cost.params == 1 + 1 + 64 + 64);  // the exponent, epsilon, gamma, beta
    CHECK(kg.edges == std::vector<device::KernelEdge>{{0, 1, ln}});

    SUBCASE("an intermediate read outside the group breaks the match") {
        Graph h = g;
        h.mark_output(h.node(h.find_node("ln.sub")).outputs[0]);
        CHECK(device::kernel_graph(h, rules).kernels.size() == 10);
    }
    SUBCASE("a pattern kernel fuses further like an operator of its name") {
        auto more = rules;
        more.fusions.push_back({"LayerNormalization", "MatMul", device::Operands::constant, true, false, {}});
        CHECK(kinds(device::kernel_graph(g, more)) == std::vector<std::string>{"LayerNormalization+MatMul"});
    }
}

TEST_CASE("kernel graph: free operators and shape arithmetic get no kernel, and read the plain layout") {
    Graph g("head");
    const int x = g.add_input("x", {1, 32, 4, 4});
    const int c = conv(g, "conv", x, 32, 1);
    const int gap = g.add_op("GlobalAveragePool", "gap", {c}, {1, 32, 1, 1});
    // the target shape [1, -1] computed from the tensor's own shape, as exporters write it
    const int shape = g.add_op("Shape", "shape", {gap}, {4}, {}, graph::DataType::int64);
    const int zero = g.add_weight("zero", {}, graph::DataType::int64);
    g.set_data(zero, {0});
    const int n = g.add_op("Gather", "batch", {shape, zero}, {}, {}, graph::DataType::int64);
    const int n1 = g.add_op("Unsqueeze", "batch1", {n}, {1}, {{"axes", Ints{0}}}, graph::DataType::int64);
    const int rest = g.add_weight("rest", {1}, graph::DataType::int64);
    g.set_data(rest, {-1});
    const int target =
        g.add_op("Concat", "target", {n1, rest}, {2}, {{"axis", std::int64_t{0}}}, graph::DataType::int64);
    const int flat = g.add_op("Reshape", "flatten", {gap, target}, {1, 32});
    const int y = g.add_op("Gemm", "fc", {flat, g.add_weight("w", {32, 10})}, {1, 10});
    g.mark_output(y);
    g.validate();
    const auto kg = device::kernel_graph(
        g, parse("dnncost-fusion-rules 1\nlayout NCHWc 16 anchors=Conv followers=GlobalAveragePool\n"));
    CHECK(kinds(kg) == std::vector<std::string>{"Reorder", "Conv", "GlobalAveragePool", "Reorder", "Gemm"});
    CHECK(layouts(kg) == std::vector<std::string>{"NCHWc16", "NCHWc16", "NCHWc16", "NCHW", "NCHW"});
    CHECK(kg.edges == std::vector<device::KernelEdge>{{0, 1, x}, {1, 2, c}, {2, 3, gap}, {3, 4, flat}});
    for (const char* name : {"shape", "batch", "batch1", "target", "flatten"})
        CHECK(kg.kernel_of_node[static_cast<std::size_t>(g.find_node(name))] == -1);
    CHECK(kg.roles[static_cast<std::size_t>(g.find_node("target"))] == device::NodeRole::constant);
    CHECK(kg.roles[static_cast<std::size_t>(g.find_node("flatten"))] == device::NodeRole::free);
}

TEST_CASE("kernel graph: deterministic, and its JSON is one object") {
    const auto g = conv_bn_relu();
    const auto rules = parse(resnet_rules);
    const auto a = device::kernel_graph(g, rules).to_json(g), b = device::kernel_graph(g, rules).to_json(g);
    CHECK(a == b);
    CHECK(a.front() == '{');
    CHECK(a.back() == '}');
    CHECK(a.find("\"kind\": \"Conv+Relu\"") != std::string::npos);
}

TEST_CASE("kernel graph: kernels of one graph with the same kind number have the same kind string") {
    nb201::Arch a;
    for (std::size_t i = 0; i < a.ops.size(); ++i) a.ops[i] = static_cast<nb201::Op>(i % 5);
    const auto rules = parse(std::string(resnet_rules) + "layout NCHWc 16 anchors=Conv followers=Relu,Add\n");
    std::size_t fused = 0, reorders = 0;
    for (const auto& g : {nb201::build_graph(a), conv_bn_relu()}) {
        const auto kg = device::kernel_graph(g, rules);
        std::map<int, std::string> kind_of_number;
        std::map<std::string, int> number_of_kind;
        for (const auto& k : kg.kernels) {
            REQUIRE(k.kind_id >= 0);
            CHECK(kind_of_number.emplace(k.kind_id, k.kind).first->second == k.kind);
            // no op type here has a '+' in its name, so a kind string has one number too
            CHECK(number_of_kind.emplace(k.kind, k.kind_id).first->second == k.kind_id);
            if (k.is_reorder()) CHECK(k.kind_id == 0);
            fused += !device::KindSpec::parse(k.kind).fusions.empty();
            reorders += k.is_reorder();
        }
    }
    CHECK(fused > 0);  // kernels of several units (Conv+Relu) were numbered
    CHECK(reorders > 0);
}

TEST_CASE("kind spec: an anchor and its ordered fusions, read from and written to the string form") {
    using device::KindSpec;
    const auto k = KindSpec::parse("Conv+Add+Relu");
    CHECK(k.anchor == "Conv");
    CHECK(k.fusions == std::vector<std::string>{"Add", "Relu"});
    CHECK(k.str() == "Conv+Add+Relu");
    CHECK(k == KindSpec{"Conv", {"Add", "Relu"}});
    CHECK(k.fuses("Relu"));
    CHECK_FALSE(k.fuses("Conv"));  // the anchor is not a fusion
    CHECK(k.has_unit("Conv"));
    CHECK_FALSE(k.has_unit("Act"));
    CHECK(KindSpec::anchor_of("DepthwiseConv+Act") == "DepthwiseConv");
    CHECK(KindSpec::anchor_of("LayerNorm") == "LayerNorm");
    // one unit, and the degenerate forms: each '+' separates two units, so str() gives them back
    CHECK(KindSpec::parse("Gemm") == KindSpec{"Gemm", {}});
    for (const char* s : {"", "+", "A+", "+B", "A++B"}) CHECK(KindSpec::parse(s).str() == s);
    CHECK(KindSpec::parse("A++B").fusions == std::vector<std::string>{"", "B"});
    std::string built;
    for (const char* unit : {"MatMul", "Add", "Relu"}) KindSpec::append(built, unit);
    CHECK(built == "MatMul+Add+Relu");
}

TEST_CASE("kernel graph: built over another's storage, it is the graph built afresh") {
    Graph mobile("mobile");
    {
        const int x = mobile.add_input("x", {1, 32, 14, 14});
        const int r1 = same(mobile, "Relu", "relu1", {conv(mobile, "pw1", x, 64, 1)});
        const int r2 = same(mobile, "Relu", "relu2", {conv(mobile, "dw", r1, 64, 3, 1, 64)});
        mobile.mark_output(conv(mobile, "pw2", r2, 32, 1));
        mobile.validate();
    }
    nb201::Arch a;
    for (std::size_t i = 0; i < a.ops.size(); ++i) a.ops[i] = static_cast<nb201::Op>(i % 5);
    const std::vector<Graph> graphs{nb201::build_graph(a), conv_bn_relu(), mobile, nb201::build_graph(a), mobile};
    const auto rules = parse(std::string(resnet_rules) + "layout NCHWc 16 anchors=Conv followers=Relu,Add\n");
    const auto same_kernels = [](const device::KernelGraph& x, const device::KernelGraph& y) {
        REQUIRE(x.kernels.size() == y.kernels.size());
        for (std::size_t i = 0; i < x.kernels.size(); ++i) {
            const auto &p = x.kernels[i], &q = y.kernels[i];
            CHECK(p.kind == q.kind);
            CHECK(p.nodes == q.nodes);
            CHECK(p.folded == q.folded);
            CHECK(p.inputs == q.inputs);
            CHECK(p.outputs == q.outputs);
            CHECK(p.input_shapes == q.input_shapes);
            CHECK(p.output_shapes == q.output_shapes);
            CHECK(p.layout == q.layout);
            CHECK(p.input_layout == q.input_layout);
            CHECK(p.kind_id == q.kind_id);
            CHECK((p.cost.macs == q.cost.macs && p.cost.flops == q.cost.flops && p.cost.params == q.cost.params &&
                   p.cost.input_bytes == q.cost.input_bytes && p.cost.output_bytes == q.cost.output_bytes &&
                   p.cost.weight_bytes == q.cost.weight_bytes));
        }
        CHECK(x.edges == y.edges);
        CHECK(x.kernel_of_node == y.kernel_of_node);
        CHECK(x.roles == y.roles);
        CHECK(x.layout_name == y.layout_name);
    };
    device::KernelGraph reused;
    std::size_t reorders = 0;
    for (const auto& g : graphs) {
        device::kernel_graph_into(g, rules, reused);
        const auto fresh = device::kernel_graph(g, rules);
        reorders += fresh.num_reorders();
        same_kernels(reused, fresh);
        CHECK(reused.to_json(g) == fresh.to_json(g));
    }
    CHECK(reorders > 0);  // the storage was reused across plain, blocked and reorder kernels
}

TEST_CASE("fusion rules: the text form round-trips and bad lines are named") {
    auto rules = parse(std::string(resnet_rules) +
                       "device ort cpu all\npattern Gelu Div Erf Add Mul Mul\nfuse Gemm Relu consumers=shared\n"
                       "layout NCHWc 16 anchors=Conv followers=Relu,Add narrow-input=no # blocked\n");
    CHECK(rules.device == "ort cpu all");
    CHECK(rules.fusions.size() == 5);
    CHECK(rules.fusions[0].fold);
    CHECK(rules.fusions[3].after == std::vector<std::string>{"Conv"});
    CHECK_FALSE(rules.fusions[4].sole_consumer);
    CHECK(rules.layout.block == 16);
    CHECK_FALSE(rules.layout.narrow_input);
    CHECK(FusionRules::parse(rules.to_text()) == rules);
    const auto json = rules.to_json();
    CHECK(json.front() == '{');
    CHECK(json.find("\"block\": 16") != std::string::npos);

    CHECK_THROWS_WITH_AS(parse("fuse Conv Relu\n"), doctest::Contains("test rules:1: expected the header"),
                         parse_error);
    CHECK_THROWS_WITH_AS(parse("dnncost-fusion-rules 1\n\nfuse Conv\n"), doctest::Contains("test rules:3:"),
                         parse_error);
    CHECK_THROWS_WITH_AS(parse("dnncost-fusion-rules 1\nfuse Conv Relu operands=maybe\n"),
                         doctest::Contains("unknown operand class 'maybe'"), parse_error);
    CHECK_THROWS_WITH_AS(parse("dnncost-fusion-rules 1\n# a comment\nfold Conv BatchNormalization\n"),
                         doctest::Contains("test rules:3: fold Conv BatchNormalization must require operands=constant"),
                         parse_error);
    // checks of the parsed rule name its line too; a control character is refused, shown escaped
    fails("fuse Conv Relu\nfuse Conv Relu after=\n", "r.txt:3: operator kind ''");
    fails("pattern P A\x1b[31mB C\n", "r.txt:2: operator kind \"A\\u001b[31mB\" has a control character");
    fails("execute Reshape Fl\x7f\n", "r.txt:2: operator kind");
    fails("layout NCHWc 8 anchors=Conv followers=,Add\n", "r.txt:2: operator kind ''");
    fails("device d\x07x\n", "r.txt:2: the device name");
    CHECK(parse("dnncost-fusion-rules 1\ndevice a\tb\n").device == "a\tb");
    CHECK_THROWS_WITH_AS(parse("dnncost-fusion-rules 1\nlayout NCHWc x16\n"), doctest::Contains("test rules:2:"),
                         parse_error);
    CHECK_THROWS_WITH_AS(parse("dnncost-fusion-rules 2\n"), doctest::Contains("unsupported format version"),
                         parse_error);
    CHECK_THROWS_AS(parse(""), parse_error);
    device::FusionRules bad;
    bad.fusions.push_back({"Conv Relu", "Add", device::Operands::any, true, false, {}});
    CHECK_THROWS_AS(bad.check(), config_error);
    CHECK_THROWS_AS((void)device::kernel_graph(conv_bn_relu(), bad), config_error);
}

namespace {
// x [1,16,8,8] -> Conv 16->32 -> Flatten [1,2048] -> MatMul [2048,10]
Graph conv_flatten_matmul() {
    Graph g("conv_flatten_matmul");
    const int x = g.add_input("x", {1, 16, 8, 8});
    const int c = conv(g, "conv", x, 32, 3);
    const int f = g.add_op("Flatten", "flatten", {c}, {1, 2048});
    g.mark_output(g.add_op("MatMul", "matmul", {f, g.add_weight("w", {2048, 10})}, {1, 10}));
    g.validate();
    return g;
}

// x [1,4,8] (or [4,8] when `rank2`) -> MatMul [8,16] -> Add bias [16] -> Relu, or -> Reshape
// [1,4,4,4] instead of the Relu when `reshape_after`
Graph linear(bool rank2, bool reshape_after) {
    Graph g("linear");
    const graph::Shape in = rank2 ? graph::Shape{4, 8} : graph::Shape{1, 4, 8};
    auto out = in;
    out.back() = 16;
    const int x = g.add_input("x", in);
    const int m = g.add_op("MatMul", "matmul", {x, g.add_weight("w", {8, 16})}, out);
    const int a = g.add_op("Add", "add", {m, g.add_weight("b", {16})}, out);
    if (reshape_after)
        g.mark_output(g.add_op("Reshape", "split_heads", {a, g.add_weight("shape", {4})}, {1, 4, 4, 4}));
    else
        g.mark_output(same(g, "Relu", "relu", {a}));
    g.validate();
    return g;
}
}  // namespace

TEST_CASE("kernel graph: 'execute' gives the listed free operators kernels of their own") {
    const auto g = conv_flatten_matmul();
    CHECK(kinds(device::kernel_graph(g, FusionRules{})) == std::vector<std::string>{"Conv", "MatMul"});
    const auto kg = device::kernel_graph(g, parse("dnncost-fusion-rules 1\nexecute Reshape Flatten\n"));
    REQUIRE(kinds(kg) == std::vector<std::string>{"Conv", "Flatten", "MatMul"});
    const auto& f = kg.kernels[1];
    CHECK(names(g, f.nodes) == std::vector<std::string>{"flatten"});
    CHECK(!f.is_reorder());
    CHECK(f.cost.input_bytes == 4 * 2048);  // it reads and writes the 32x8x8 values
    CHECK(f.cost.output_bytes == 4 * 2048);
    CHECK(kg.edges == std::vector<device::KernelEdge>{{0, 1, g.node(0).outputs[0]}, {1, 2, g.node(1).outputs[0]}});
    // an operator the list does not name stays free
    CHECK(kinds(device::kernel_graph(g, parse("dnncost-fusion-rules 1\nexecute Reshape\n"))) ==
          std::vector<std::string>{"Conv", "MatMul"});
}

TEST_CASE("kernel graph: 'rewrite' runs MatMul+Add as a Gemm, between two reshapes on a 3-D input") {
    const char* rules = "dnncost-fusion-rules 1\nfuse MatMul Add operands=constant\n"
                        "rewrite MatMul+Add Gemm reshape-rank=3\n";
    SUBCASE("3-D input: Reshape, Gemm, Reshape, then the Relu") {
        const auto g = linear(false, false);
        const auto kg = device::kernel_graph(g, parse(rules));
        REQUIRE(kinds(kg) == std::vector<std::string>{"Reshape", "Gemm", "Reshape", "Relu"});
        CHECK(kg.kernels[0].nodes.empty());
        CHECK(kg.kernels[0].is_reorder());  // priced as data movement
        CHECK(!kg.kernels[0].is_layout_reorder());
        CHECK(kg.num_reorders() == 0);
        CHECK(names(g, kg.kernels[1].nodes) == std::vector<std::string>{"matmul", "add"});
        CHECK(kg.kernels[2].nodes.empty());
        // the reshapes move the 1x4x8 input and the 1x4x16 output
        CHECK(kg.kernels[0].cost.input_bytes == 4 * 32);
        CHECK(kg.kernels[0].cost.output_bytes == 4 * 32);
        CHECK(kg.kernels[2].cost.input_bytes == 4 * 64);
        const int x = g.node(0).inputs[0], a = g.node(1).outputs[0];
        CHECK(kg.edges == std::vector<device::KernelEdge>{{0, 1, x}, {1, 2, a}, {2, 3, a}});
        CHECK(kg.kernel_of_node == std::vector<int>{1, 1, 3});
        // the kind numbers tell Reshape, Gemm and Relu apart
        CHECK(kg.kernels[0].kind_id == kg.kernels[2].kind_id);
        CHECK(kg.kernels[0].kind_id != kg.kernels[1].kind_id);
        CHECK(kg.kernels[1].kind_id != kg.kernels[3].kind_id);
    }
    SUBCASE("2-D input: a Gemm alone") {
        const auto kg = device::kernel_graph(linear(true, false), parse(rules));
        CHECK(kinds(kg) == std::vector<std::string>{"Gemm", "Relu"});
    }
    SUBCASE("an executed Reshape after it stands for the output reshape") {
        const auto g = linear(false, true);
        // the network's Reshape free: the rewrite's own reshape after the Gemm
        CHECK(kinds(device::kernel_graph(g, parse(rules))) == std::vector<std::string>{"Reshape", "Gemm", "Reshape"});
        const auto kg = device::kernel_graph(g, parse(std::string(rules) + "execute Reshape\n"));
        REQUIRE(kinds(kg) == std::vector<std::string>{"Reshape", "Gemm", "Reshape"});
        CHECK(kg.kernels[0].nodes.empty());
        CHECK(names(g, kg.kernels[2].nodes) == std::vector<std::string>{"split_heads"});
    }
    SUBCASE("without the rewrite: one MatMul+Add kernel") {
        const auto kg = device::kernel_graph(linear(false, false),
                                             parse("dnncost-fusion-rules 1\nfuse MatMul Add operands=constant\n"));
        CHECK(kinds(kg) == std::vector<std::string>{"MatMul+Add", "Relu"});
    }
}

TEST_CASE("kernel graph: 'rewrite' to two kinds runs a HardSwish as HardSigmoid then Mul") {
    Graph g("hswish");
    const int x = g.add_input("x", {1, 16, 8, 8});
    const int c = conv(g, "conv", x, 16, 1);
    const int h = same(g, "HardSwish", "hswish", {c});
    g.mark_output(same(g, "Relu", "relu", {h}));
    g.validate();
    const auto kg = device::kernel_graph(g, parse("dnncost-fusion-rules 1\nrewrite HardSwish HardSigmoid,Mul\n"));
    REQUIRE(kinds(kg) == std::vector<std::string>{"Conv", "HardSigmoid", "Mul", "Relu"});
    CHECK(names(g, kg.kernels[1].nodes) == std::vector<std::string>{"hswish"});
    CHECK(kg.kernels[2].nodes.empty());
    // the Relu reads the HardSwish's value from the Mul
    CHECK(kg.edges == std::vector<device::KernelEdge>{{0, 1, c}, {1, 2, h}, {2, 3, h}});
}

TEST_CASE("kernel graph: 'merge-duplicates' computes a repeated node once") {
    // x -> Relu a, Relu b (the same) -> Conv c1 (from a), Conv c2 (from b) -> Add
    Graph g("duplicates");
    const int x = g.add_input("x", {1, 16, 8, 8});
    const int a = same(g, "Relu", "a", {x});
    const int b = same(g, "Relu", "b", {x});
    const int c1 = conv(g, "c1", a, 16, 3);
    const int c2 = conv(g, "c2", b, 16, 3);
    g.mark_output(same(g, "Add", "add", {c1, c2}));
    g.validate();
    CHECK(kinds(device::kernel_graph(g, FusionRules{})) ==
          std::vector<std::string>{"Relu", "Relu", "Conv", "Conv", "Add"});
    const auto kg = device::kernel_graph(g, parse("dnncost-fusion-rules 1\nmerge-duplicates\n"));
    REQUIRE(kinds(kg) == std::vector<std::string>{"Relu", "Conv", "Conv", "Add"});
    CHECK(kg.kernel_of_node[1] == 0);  // b: computed in a's kernel
    // c2 reads b's value from a's kernel
    CHECK(kg.predecessors(2) == std::vector<int>{0});
    // Relus of different inputs, or the same operator with other attributes, stay apart
    Graph h("different");
    const int y = h.add_input("y", {1, 16, 8, 8});
    const int p1 = h.add_op("LeakyRelu", "p1", {y}, {1, 16, 8, 8}, {{"alpha", 0.1}});
    const int p2 = h.add_op("LeakyRelu", "p2", {y}, {1, 16, 8, 8}, {{"alpha", 0.2}});
    h.mark_output(same(h, "Add", "add", {p1, p2}));
    h.validate();
    CHECK(device::kernel_graph(h, parse("dnncost-fusion-rules 1\nmerge-duplicates\n")).kernels.size() == 3);
}

TEST_CASE("kernel graph: operand-layout=blocked fuses an Add into a Conv only when its other input may be blocked") {
    // x -> Conv c1; x -> Mul m (by a constant) or Conv c2; Add(c1, m or c2)
    const auto build = [](bool mul) {
        Graph g("sum");
        const int x = g.add_input("x", {1, 16, 8, 8});
        const int c1 = conv(g, "c1", x, 16, 3);
        const int other = mul ? g.add_op("Mul", "m", {x, scalar(g, "s", 2.0)}, {1, 16, 8, 8}) : conv(g, "c2", x, 16, 3);
        g.mark_output(same(g, "Add", "add", {c1, other}));
        g.validate();
        return g;
    };
    const std::string layout = "layout NCHWc 16 anchors=Conv followers=Add,Relu narrow-input=yes\n";
    const auto strict = parse("dnncost-fusion-rules 1\nfuse Conv Add operands=activation operand-layout=blocked\n" + layout);
    const auto loose = parse("dnncost-fusion-rules 1\nfuse Conv Add operands=activation\n" + layout);
    std::vector<std::string> fused;
    for (const auto& k : device::kernel_graph(build(true), loose).kernels)
        if (!k.is_layout_reorder()) fused.push_back(k.kind);
    CHECK(fused == std::vector<std::string>{"Mul", "Conv+Add"});
    const auto kg = device::kernel_graph(build(true), strict);
    std::vector<std::string> plain;
    for (const auto& k : kg.kernels)
        if (!k.is_layout_reorder()) plain.push_back(k.kind);
    CHECK(plain == std::vector<std::string>{"Conv", "Mul", "Add"});
    std::vector<std::string> two;
    for (const auto& k : device::kernel_graph(build(false), strict).kernels)
        if (!k.is_layout_reorder()) two.push_back(k.kind);
    CHECK(two == std::vector<std::string>{"Conv", "Conv+Add"});
}

TEST_CASE("fusion rules: the new directives are read, written back, and rejected with the line") {
    const char* text = "dnncost-fusion-rules 1\ndevice d\nfuse Conv Add operands=activation operand-layout=blocked\n"
                       "merge-duplicates\nexecute Reshape Flatten\nrewrite MatMul+Add Gemm reshape-rank=3\n"
                       "rewrite HardSwish HardSigmoid,Mul\n";
    const auto r = parse(text);
    CHECK(r.fusions.at(0).blocked_operands);
    CHECK(r.merge_duplicates);
    CHECK(r.executed == std::vector<std::string>{"Reshape", "Flatten"});
    REQUIRE(r.rewrites.size() == 2);
    CHECK(r.rewrites[0].as == std::vector<std::string>{"Gemm"});
    CHECK(r.rewrites[0].reshape_rank == 3);
    CHECK(r.rewrites[1].as == std::vector<std::string>{"HardSigmoid", "Mul"});
    CHECK(r.rewrites[1].reshape_rank == 0);
    CHECK(r.to_text() == text);
    CHECK(parse(r.to_text()) == r);
    CHECK(r.to_json().find("\"rewrites\": [{\"kind\": \"MatMul+Add\", \"as\": [\"Gemm\"], \"reshape_rank\": 3}") !=
          std::string::npos);
    // a rule set without them reads and writes as before
    const char* old = "dnncost-fusion-rules 1\nfuse Conv Relu operands=none\n";
    CHECK(parse(old).to_text() == old);
    CHECK(parse(old).to_json().find("executed") == std::string::npos);
    fails("rewrite MatMul+Add\n", "r.txt:2: a rewrite is");
    fails("rewrite A B reshape-rank=x\n", "r.txt:2: reshape-rank=");
    fails("rewrite A B size=3\n", "r.txt:2: unknown option 'size'");
    fails("rewrite A B\nrewrite A C\n", "r.txt:3: two rewrites of kernels of kind A");
    fails("rewrite A B,,C\n", "r.txt:2: kernel kind ''");
    fails("merge-duplicates yes\n", "r.txt:2: merge-duplicates takes no arguments");
    fails("execute\n", "r.txt:2: an execute line is");
    fails("fuse Conv Add operand-layout=nchw\n", "r.txt:2: operand-layout= is any or blocked");
}

TEST_CASE("kernel graph: operand-layout=blocked: a plain convolution takes any sum, a blocked one only blocked sums") {
    const std::string layout = "layout NCHWc 16 anchors=Conv followers=Add,Relu narrow-input=yes\n";
    const auto strict = parse("dnncost-fusion-rules 1\nfuse Conv Add operands=activation operand-layout=blocked\n" + layout);
    const auto executed = [](const device::KernelGraph& kg) {
        std::vector<std::string> out;
        for (const auto& k : kg.kernels)
            if (!k.is_layout_reorder()) out.push_back(k.kind);
        return out;
    };
    // x -> Conv c1 (2 groups of 8 channels: not depthwise, runs plain); x -> Conv c2; Add(c2, c1):
    // c1's output is plain, so the blocked c2 cannot take the sum, and the plain c1 takes it
    Graph g("grouped");
    const int x = g.add_input("x", {1, 16, 8, 8});
    const int c1 = conv(g, "c1", x, 16, 1, 1, 2);
    const int c2 = conv(g, "c2", x, 16, 1);
    g.mark_output(same(g, "Add", "add", {c2, c1}));
    g.validate();
    const auto kg = device::kernel_graph(g, strict);
    CHECK(executed(kg) == std::vector<std::string>{"Conv", "Conv+Add"});
    CHECK(kg.kernel_of_node[2] == kg.kernel_of_node[0]);  // the Add is in c1's kernel
    // a sum of a Conv and a plain Mul is plain, and so a later Add that reads it is not fused
    Graph h("chain");
    const int y = h.add_input("y", {1, 16, 8, 8});
    const int a = conv(h, "a", y, 16, 1);
    const int m = h.add_op("Mul", "m", {y, scalar(h, "s", 0.0)}, {1, 16, 8, 8});
    const int s1 = same(h, "Add", "s1", {m, a});
    const int b = conv(h, "b", y, 16, 1);
    h.mark_output(same(h, "Add", "s2", {s1, b}));
    h.validate();
    CHECK(executed(device::kernel_graph(h, strict)) == std::vector<std::string>{"Conv", "Mul", "Add", "Conv", "Add"});
}

TEST_CASE("kernel graph: a rewrite with layout=blocked applies only to kernels that run blocked") {
    // y -> BatchNormalization: plain input (a graph input, no anchor before it) or blocked (after a Conv)
    const auto rules = parse("dnncost-fusion-rules 1\n"
                             "layout NCHWc 16 anchors=Conv followers=BatchNormalization,Relu narrow-input=yes\n"
                             "rewrite BatchNormalization Conv layout=blocked\n");
    Graph plain("plain");
    const int y = plain.add_input("y", {1, 16, 8, 8});
    plain.mark_output(batch_norm(plain, "bn", y));
    plain.validate();
    CHECK(kinds(device::kernel_graph(plain, rules)) == std::vector<std::string>{"BatchNormalization"});
    Graph blocked("blocked");
    const int z = blocked.add_input("z", {1, 16, 8, 8});
    blocked.mark_output(batch_norm(blocked, "bn", conv(blocked, "c", z, 16, 1)));
    blocked.validate();
    CHECK(kinds(device::kernel_graph(blocked, rules)) ==
          std::vector<std::string>{"Reorder", "Conv", "Conv", "Reorder"});
    CHECK(parse("dnncost-fusion-rules 1\nrewrite BatchNormalization Conv layout=blocked\n").to_text() ==
          "dnncost-fusion-rules 1\nrewrite BatchNormalization Conv layout=blocked\n");
}

namespace {
// x [1,16,8,8] -> Conv -> Transpose to NHWC -> Sigmoid -> Transpose to NCHW -> Conv: a layer norm
// over the channels between two blocked convolutions, as channels-last blocks write it
Graph channels_last_sandwich() {
    Graph g("channels_last");
    const int x = g.add_input("x", {1, 16, 8, 8});
    const int c1 = conv(g, "c1", x, 16, 1);
    const int t1 = g.add_op("Transpose", "to_nhwc", {c1}, {1, 8, 8, 16}, {{"perm", Ints{0, 2, 3, 1}}});
    const int s = same(g, "Sigmoid", "sig", {t1});
    const int t2 = g.add_op("Transpose", "to_nchw", {s}, {1, 16, 8, 8}, {{"perm", Ints{0, 3, 1, 2}}});
    g.mark_output(conv(g, "c2", t2, 16, 1));
    g.validate();
    return g;
}
}  // namespace

TEST_CASE(
    "kernel graph: channels-last=yes: a Transpose to or from channels-last beside the blocked layout runs in its "
    "reorder") {
    const std::string layout = "layout NCHWc 16 anchors=Conv followers=Relu narrow-input=yes";
    const auto without = parse("dnncost-fusion-rules 1\n" + layout + "\n");
    const auto with = parse("dnncost-fusion-rules 1\n" + layout + " channels-last=yes\n");
    const auto g = channels_last_sandwich();
    CHECK(kinds(device::kernel_graph(g, without)) == std::vector<std::string>{"Reorder", "Conv", "Reorder", "Transpose",
                                                                              "Sigmoid", "Transpose", "Reorder", "Conv",
                                                                              "Reorder"});
    // the reorder out of the blocked layout writes NHWC, the one into it reads NHWC
    const auto kg = device::kernel_graph(g, with);
    CHECK(kinds(kg) == std::vector<std::string>{"Reorder", "Conv", "Reorder", "Sigmoid", "Reorder", "Conv", "Reorder"});
    CHECK(layouts(kg) == std::vector<std::string>{"NCHWc16", "NCHWc16", "NCHW", "NCHW", "NCHWc16", "NCHWc16", "NCHW"});
    // a Transpose of a plain value, or to NCHW for a reader that runs plain, keeps its kernel
    Graph h("plain_transposes");
    const int y = h.add_input("y", {1, 16, 8, 8});
    const int t =
        h.add_op("Transpose", "to_nhwc", {same(h, "Sigmoid", "sig", {y})}, {1, 8, 8, 16}, {{"perm", Ints{0, 2, 3, 1}}});
    const int back = h.add_op("Transpose", "to_nchw", {t}, {1, 16, 8, 8}, {{"perm", Ints{0, 3, 1, 2}}});
    h.mark_output(same(h, "Sigmoid", "sig2", {back}));
    h.validate();
    CHECK(kinds(device::kernel_graph(h, with)) ==
          std::vector<std::string>{"Sigmoid", "Transpose", "Transpose", "Sigmoid"});
}

TEST_CASE("kernel graph: a fusion with layout=blocked holds only where its producer runs blocked") {
    // BatchNormalization -> Relu: on a graph input (plain) two kernels; after a Conv (blocked) one,
    // run as a blocked convolution
    const auto rules = parse(
        "dnncost-fusion-rules 1\nfuse BatchNormalization Relu operands=none layout=blocked\n"
        "layout NCHWc 16 anchors=Conv followers=BatchNormalization,Relu narrow-input=yes\n"
        "rewrite BatchNormalization+Relu Conv layout=blocked\n");
    Graph plain("plain");
    const int y = plain.add_input("y", {1, 16, 8, 8});
    plain.mark_output(same(plain, "Relu", "relu", {batch_norm(plain, "bn", y)}));
    plain.validate();
    CHECK(kinds(device::kernel_graph(plain, rules)) == std::vector<std::string>{"BatchNormalization", "Relu"});
    Graph blocked("blocked");
    const int z = blocked.add_input("z", {1, 16, 8, 8});
    blocked.mark_output(same(blocked, "Relu", "relu", {batch_norm(blocked, "bn", conv(blocked, "c", z, 16, 1))}));
    blocked.validate();
    const auto kg = device::kernel_graph(blocked, rules);
    CHECK(kinds(kg) == std::vector<std::string>{"Reorder", "Conv", "Conv", "Reorder"});
    CHECK(names(blocked, kg.kernels[2].nodes) == std::vector<std::string>{"bn", "relu"});
    CHECK(rules.to_text().find("fuse BatchNormalization Relu operands=none layout=blocked\n") != std::string::npos);
}

TEST_CASE("kernel graph: concat-alignment: a Concat runs blocked only when every input fills whole blocks of it") {
    // x -> Conv to 24 or 32 channels, x -> Conv to 16; Concat of the two
    const auto build = [](std::int64_t width) {
        Graph g("concat");
        const int x = g.add_input("x", {1, 16, 8, 8});
        g.mark_output(g.add_op("Concat", "cat", {conv(g, "c1", x, width, 1), conv(g, "c2", x, 16, 1)},
                               {1, width + 16, 8, 8}, {{"axis", std::int64_t{1}}}));
        g.validate();
        return g;
    };
    const std::string layout = "layout NCHWc 8 anchors=Conv followers=Concat narrow-input=yes";
    const auto concat_layout = [](const Graph& g, const FusionRules& r) {
        const auto kg = device::kernel_graph(g, r);
        for (const auto& k : kg.kernels)
            if (k.kind == "Concat") return kg.layout_string(k.layout);
        return std::string("none");
    };
    const auto aligned = parse("dnncost-fusion-rules 1\n" + layout + " concat-alignment=16\n");
    CHECK(concat_layout(build(24), parse("dnncost-fusion-rules 1\n" + layout + "\n")) == "NCHWc8");
    CHECK(concat_layout(build(24), aligned) == "NCHW");
    CHECK(concat_layout(build(32), aligned) == "NCHWc8");
}

TEST_CASE(
    "fusion rules: channels-last, concat-alignment and layout= are read, written back, and rejected with the line") {
    const char* text =
        "dnncost-fusion-rules 1\nfuse BatchNormalization Relu operands=none layout=blocked\n"
        "layout NCHWc 8 anchors=Conv followers=Concat narrow-input=yes channels-last=yes "
        "concat-alignment=16\n";
    const auto r = parse(text);
    CHECK(r.fusions.at(0).blocked_producer);
    CHECK(r.layout.channels_last_reorders);
    CHECK(r.layout.concat_alignment == 16);
    CHECK(r.to_text() == text);
    CHECK(parse(r.to_text()) == r);
    CHECK(r.to_json().find("\"channels_last\": true, \"concat_alignment\": 16}") != std::string::npos);
    CHECK(r.to_json().find("\"layout\": \"blocked\"}") != std::string::npos);
    // a layout without them reads and writes as before
    const char* old = "dnncost-fusion-rules 1\nlayout NCHWc 8 anchors=Conv narrow-input=yes\n";
    CHECK(parse(old).to_text() == old);
    CHECK(parse(old).to_json().find("channels_last") == std::string::npos);
    fails("layout NCHWc 8 channels-last=maybe\n", "r.txt:2: channels-last= is yes or no");
    fails("layout NCHWc 8 concat-alignment=-4\n", "r.txt:2: concat-alignment= is a whole number");
    fails("fuse BatchNormalization Relu layout=nchw\n", "r.txt:2: layout= is any or blocked");
}
