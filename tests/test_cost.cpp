// Analytic cost model: per-operator MACs/FLOPs/params/bytes on hand-built graphs whose figures
// are worked out by hand in the comments, and the roofline latency.
#include <doctest/doctest.h>

#include <limits>

#include <dnncost/cost/analytic.hpp>
#include <dnncost/graph/flat_view.hpp>
#include <dnncost/spaces/nb201.hpp>

using namespace dnncost;
using graph::Attribute;
using graph::Shape;

namespace {
using Ints = std::vector<std::int64_t>;
}

TEST_CASE("cost: Conv counts groups, dilation and padding through the output shape") {
    graph::Graph g("conv");
    const int x = g.add_input("x", {1, 32, 56, 56});
    // depthwise 3x3, stride 1, pad 1 (group 32): 32 * 56 * 56 outputs x 9 MACs
    const int w1 = g.add_weight("w1", {32, 1, 3, 3});
    const int y1 = g.add_op("Conv", "dw", {x, w1}, {1, 32, 56, 56},
                            {{"group", std::int64_t{32}}, {"kernel_shape", Ints{3, 3}}, {"pads", Ints{1, 1, 1, 1}}});
    // grouped 3x3 with dilation 2, no padding, group 4, 64 outputs, bias: out 52x52 (56 - 2*2)
    const int w2 = g.add_weight("w2", {64, 8, 3, 3});
    const int b2 = g.add_weight("b2", {64});
    g.add_op("Conv", "grouped", {y1, w2, b2}, {1, 64, 52, 52},
             {{"group", std::int64_t{4}}, {"dilations", Ints{2, 2}}, {"kernel_shape", Ints{3, 3}}});
    const auto c = cost::annotate(g);
    CHECK(c[0].macs == 32 * 56 * 56 * 9);
    CHECK(c[0].flops == 2 * c[0].macs);
    CHECK(c[0].params == 32 * 9);
    CHECK(c[1].macs == 64LL * 52 * 52 * 8 * 9);
    CHECK(c[1].flops == 2 * c[1].macs + 64 * 52 * 52);
    CHECK(c[1].params == 64 * 8 * 9 + 64);
    // bytes: activation in + out + weights, float32
    CHECK(c[1].input_bytes == 4 * 32 * 56 * 56);
    CHECK(c[1].output_bytes == 4 * 64 * 52 * 52);
    CHECK(c[1].weight_bytes == 4 * (64 * 8 * 9 + 64));
    CHECK(c[1].bytes() == c[1].input_bytes + c[1].output_bytes + c[1].weight_bytes);
}

TEST_CASE("cost: ConvTranspose, Gemm, batched MatMul with broadcasting, LSTM") {
    graph::Graph g("la");
    const int x = g.add_input("x", {1, 16, 8, 8});
    // ConvTranspose 16 -> 8 channels, 4x4 kernel, stride 2: every input element x 8 * 16 MACs
    const int wt = g.add_weight("wt", {16, 8, 4, 4});
    g.add_op("ConvTranspose", "up", {x, wt}, {1, 8, 18, 18}, {{"strides", Ints{2, 2}}});
    // Gemm A^T: A [256, 4] transposed -> [4, 256] x B [256, 10] + C
    const int a = g.add_input("a", {256, 4});
    const int b = g.add_weight("b", {256, 10});
    const int bias = g.add_weight("bias", {10});
    g.add_op("Gemm", "fc", {a, b, bias}, {4, 10}, {{"transA", std::int64_t{1}}});
    // MatMul [2, 1, 5, 7] x [3, 7, 6] -> [2, 3, 5, 6]: 180 outputs x 7 MACs
    const int m1 = g.add_input("m1", {2, 1, 5, 7});
    const int m2 = g.add_input("m2", {3, 7, 6});
    g.add_op("MatMul", "mm", {m1, m2}, {2, 3, 5, 6});
    // LSTM: seq 10, batch 2, input 32, hidden 64, one direction: W [1,256,32], R [1,256,64]
    const int xs = g.add_input("xs", {10, 2, 32});
    const int w = g.add_weight("W", {1, 256, 32});
    const int r = g.add_weight("R", {1, 256, 64});
    g.add_op("LSTM", "lstm", {xs, w, r}, {10, 1, 2, 64}, {{"hidden_size", std::int64_t{64}}});
    const auto c = cost::annotate(g);
    CHECK(c[0].macs == 16 * 8 * 8 * 8 * 16);
    CHECK(c[1].macs == 4 * 10 * 256);
    CHECK(c[1].flops == 2 * 4 * 10 * 256 + 40);
    CHECK(c[2].macs == 2 * 3 * 5 * 6 * 7);
    CHECK(c[2].params == 0);  // both operands are activations
    CHECK(c[3].macs == 10 * 2 * (256 * 32 + 256 * 64));
    CHECK(c[3].flops == 2 * c[3].macs + 4 * 10 * 2 * 256);
}

TEST_CASE("cost: non-linear-algebra operators have zero MACs and documented FLOPs") {
    graph::Graph g("misc");
    const int x = g.add_input("x", {1, 8, 16, 16});  // 2048 elements
    const int mp =
        g.add_op("MaxPool", "mp", {x}, {1, 8, 8, 8}, {{"kernel_shape", Ints{3, 3}}, {"strides", Ints{2, 2}}});
    g.add_op("GlobalAveragePool", "gap", {x}, {1, 8, 1, 1});
    const int s = g.add_weight("s", {8}), bb = g.add_weight("bb", {8}), m = g.add_weight("m", {8}),
              v = g.add_weight("v", {8});
    g.add_op("BatchNormalization", "bn", {x, s, bb, m, v}, {1, 8, 16, 16});
    g.add_op("Relu", "relu", {x}, {1, 8, 16, 16});
    g.add_op("Add", "add", {x, x}, {1, 8, 16, 16});
    g.add_op("Sum", "sum3", {x, x, x}, {1, 8, 16, 16});
    g.add_op("Softmax", "sm", {x}, {1, 8, 16, 16});
    g.add_op("Reshape", "rs", {mp}, {1, 512});
    g.add_op("Resize", "rz", {x}, {1, 8, 32, 32}, {{"mode", std::string("linear")}});
    g.add_op("Resize", "rn", {x}, {1, 8, 32, 32}, {{"mode", std::string("nearest")}});
    const int gamma = g.add_weight("gamma", {16});
    g.add_op("LayerNormalization", "ln", {x, gamma}, {1, 8, 16, 16});
    g.add_op("MysteryOp", "mystery", {x}, {1, 8, 16, 16});
    const auto c = cost::annotate(g);
    for (const auto& nc : c) CHECK(nc.macs == 0);
    CHECK(c[0].flops == 512 * 9);
    CHECK(c[1].flops == 2048);
    CHECK(c[2].flops == 2 * 2048);
    CHECK(c[2].params == 32);
    CHECK(c[3].flops == 2048);
    CHECK(c[4].flops == 2048);
    CHECK(c[5].flops == 2 * 2048);
    CHECK(c[6].flops == 8 * 2048);
    CHECK(c[7].flops == 0);
    CHECK(c[7].bytes() == 2 * 4 * 512);  // a reshape still moves its bytes
    CHECK(c[8].flops == 2 * 4 * 8192);
    CHECK(c[9].flops == 0);
    CHECK(c[10].flops == 6 * 2048);
    CHECK(c[11].flops == 2048);  // unknown: one per output element
    CHECK(cost::is_known_operator("Conv"));
    CHECK(cost::is_known_operator("LayerNormalization"));
    CHECK_FALSE(cost::is_known_operator("MysteryOp"));
    CHECK_FALSE(cost::is_known_operator("conv"));
}

TEST_CASE("cost: totals count a shared weight once") {
    graph::Graph g("shared");
    const int x = g.add_input("x", {1, 4});
    const int w = g.add_weight("w", {4, 4});
    const int y = g.add_op("MatMul", "a", {x, w}, {1, 4});
    g.add_op("MatMul", "b", {y, w}, {1, 4});
    const auto t = cost::total_cost(g);
    CHECK(t.macs == 32);
    CHECK(t.params == 16);
}

TEST_CASE("cost: roofline latency per node and total against hand-computed values") {
    graph::Graph g("roof");
    const int x = g.add_input("x", {1, 64, 32, 32});
    const int w = g.add_weight("w", {64, 64, 3, 3});
    const int y = g.add_op("Conv", "conv", {x, w}, {1, 64, 32, 32}, {{"pads", Ints{1, 1, 1, 1}}});
    g.add_op("Relu", "relu", {y}, {1, 64, 32, 32});
    cost::DeviceSpec d;
    d.name = "toy";
    d.peak_flops = 1e9;  // 1 GFLOP/s
    d.bandwidth = 1e8;   // 100 MB/s
    const auto r = cost::roofline(g, d);
    REQUIRE(r.per_node.size() == 2);
    // conv: MACs = 65536 * 576 = 37,748,736; FLOPs 75,497,472 -> 0.075497472 s compute;
    // bytes = 262,144 in + 262,144 out + 147,456 weights = 671,744 -> 0.00671744 s memory
    CHECK(r.per_node[0] == doctest::Approx(0.075497472).epsilon(1e-12));
    // relu: 65,536 FLOPs -> 6.5536e-5 s; 524,288 bytes -> 5.24288e-3 s (memory bound)
    CHECK(r.per_node[1] == doctest::Approx(5.24288e-3).epsilon(1e-12));
    CHECK(r.total == doctest::Approx(0.075497472 + 5.24288e-3).epsilon(1e-12));
    d.per_op_overhead_s = 1e-3;
    CHECK(cost::roofline(g, d).total == doctest::Approx(0.075497472 + 5.24288e-3 + 2e-3).epsilon(1e-12));
    d.bandwidth = 0;
    CHECK_THROWS_AS(cost::roofline(g, d), config_error);
}

TEST_CASE("cost: every operator of the NB201 graphs has a rule") {
    for (const char* arch : {"|nor_conv_3x3~0|+|nor_conv_1x1~0|avg_pool_3x3~1|+|none~0|skip_connect~1|none~2|"}) {
        for (bool prune : {false, true}) {
            nb201::Nb201Options o;
            o.prune = prune;
            const auto g = nb201::build_graph(arch, o);
            for (const auto& n : g.nodes()) CHECK_MESSAGE(cost::is_known_operator(n.op_type), n.op_type);
        }
    }
}

TEST_CASE("cost: a count that would exceed 64 bits is an error naming the node, not a negative number") {
    const std::int64_t k20 = std::int64_t{1} << 20, k30 = std::int64_t{1} << 30;
    // every tensor fits easily (at most 2^52 bytes), and so do the MACs: 2^30 outputs x 2^20
    graph::Graph fits("fits");
    fits.add_op("MatMul", "mm", {fits.add_input("a", {k20, k20}), fits.add_input("b", {k20, 1024})}, {k20, 1024});
    CHECK(cost::node_cost(fits, 0).macs == k30 * k20);
    CHECK(cost::total_cost(fits).flops == 2 * k30 * k20);
    // 2^40 outputs x 2^30 = 2^70 MACs
    graph::Graph big("big");
    big.add_op("MatMul", "mm", {big.add_input("a", {k20, k30}), big.add_input("b", {k30, k20})}, {k20, k20});
    CHECK_NOTHROW(big.validate());
    CHECK_THROWS_WITH_AS(cost::node_cost(big, 0), doctest::Contains("node 'mm' (MatMul)"), shape_error);
    CHECK_THROWS_AS(cost::total_cost(big), shape_error);
    // sums over nodes are checked too
    cost::NodeCost a, one;
    a.macs = std::numeric_limits<std::int64_t>::max();
    one.macs = 1;
    cost::NodeCost c = one;
    c.flops = 5;
    CHECK_THROWS_AS(c += a, shape_error);
    CHECK(c.macs == 1);  // unchanged by the failed sum
    CHECK(c.flops == 5);
    CHECK_THROWS_AS(a += one, shape_error);
    cost::NodeCost b;
    b.input_bytes = b.output_bytes = std::numeric_limits<std::int64_t>::max() / 2 + 1;
    CHECK_THROWS_AS((void)b.bytes(), shape_error);
}

TEST_CASE("cost: node_arithmetic on a flat view gives node_cost's MACs and FLOPs, and its errors") {
    const auto same = [](const graph::Graph& g) {
        graph::FlatView v;
        v.rebuild(g);
        for (std::size_t i = 0; i < g.num_nodes(); ++i) {
            const int n = static_cast<int>(i);
            const auto want = cost::node_cost(g, n);
            const auto got = cost::node_arithmetic(v, n, cost::cost_rule_of(g.node(n).op_type));
            CHECK(got.macs == want.macs);
            CHECK(got.flops == want.flops);
        }
    };
    nb201::Nb201Options o;
    same(nb201::build_graph("|nor_conv_3x3~0|+|nor_conv_1x1~0|avg_pool_3x3~1|+|none~0|skip_connect~1|none~2|", o));
    graph::Graph other("other");
    const int x = other.add_input("x", {2, 8});
    other.add_op("Mystery", "m", {x}, {2, 8});  // no rule of its own: one FLOP per output element
    other.add_op("Gemm", "fc", {x, other.add_weight("w", {4, 8}), other.add_weight("b", {4})}, {2, 4},
                 {{"transB", std::int64_t{1}}});
    same(other);
    // a tensor of unknown shape, or byte counts whose sum exceeds 64 bits: node_cost's own errors
    graph::Graph unknown("unknown");
    unknown.add_op("Relu", "r", {unknown.add_input("u", {1, -4})}, {1, 4});
    graph::FlatView v;
    v.rebuild(unknown);
    CHECK_THROWS_WITH_AS(cost::node_arithmetic(v, 0, cost::cost_rule_of("Relu")), doctest::Contains("unknown shape"),
                         shape_error);
    const std::int64_t k30 = std::int64_t{1} << 30;
    graph::Graph wide("wide");  // each input holds 2^62 bytes, the two together more than 64 bits count
    wide.add_op("Add", "add", {wide.add_input("a", {k30, k30}), wide.add_input("b", {k30, k30})}, {1});
    v.rebuild(wide);
    CHECK_THROWS_WITH_AS(cost::node_arithmetic(v, 0, cost::cost_rule_of("Add")), doctest::Contains("node 'add' (Add)"),
                         shape_error);
    CHECK_THROWS_WITH_AS(cost::node_cost(wide, 0), doctest::Contains("node 'add' (Add)"), shape_error);
}

TEST_CASE("cost: graphs that were never validated get errors, not negative or NaN costs") {
    graph::Graph g("unvalidated");
    const int x = g.add_input("x", {1, -4});
    g.add_op("Relu", "r", {x}, {1, -4});
    CHECK_THROWS_WITH_AS(cost::annotate(g), doctest::Contains("unknown shape"), shape_error);
    graph::Graph h("no_outputs");
    const int y = h.add_input("y", {1, 8});
    h.add_node("BatchNormalization", "bn", {y}, {});
    CHECK_THROWS_WITH_AS(cost::annotate(h), doctest::Contains("no outputs"), shape_error);
    graph::Graph ok("ok");
    ok.add_op("Relu", "r", {ok.add_input("z", {1, 8})}, {1, 8});
    cost::DeviceSpec d{.name = "dev", .peak_flops = 1e9, .bandwidth = 1e9};
    d.per_op_overhead_s = std::numeric_limits<double>::quiet_NaN();
    CHECK_THROWS_AS(cost::roofline(ok, d), config_error);
    d.per_op_overhead_s = -1;
    CHECK_THROWS_AS(cost::roofline(ok, d), config_error);
}
