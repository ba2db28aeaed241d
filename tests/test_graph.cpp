#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <dnncost/graph/flat_view.hpp>
#include <dnncost/graph/graph.hpp>

using namespace dnncost;
using graph::Graph;

namespace {
// x -> Conv -> Relu -> Add(relu, conv)   (a diamond with a multi-use tensor)
Graph diamond() {
    Graph g("diamond");
    const int x = g.add_input("x", {1, 3, 8, 8});
    const int w = g.add_weight("w", {4, 3, 3, 3});
    const int c =
        g.add_op("Conv", "conv", {x, w}, {1, 4, 8, 8},
                 {{"kernel_shape", std::vector<std::int64_t>{3, 3}}, {"pads", std::vector<std::int64_t>{1, 1, 1, 1}}});
    const int r = g.add_op("Relu", "relu", {c}, {1, 4, 8, 8});
    const int a = g.add_op("Add", "add", {r, c}, {1, 4, 8, 8});
    g.mark_output(a);
    return g;
}
}  // namespace

TEST_CASE("graph: building, edges, neighbours, parameters") {
    const Graph g = diamond();
    CHECK(g.num_nodes() == 3);
    CHECK(g.num_edges() == 3);  // conv->relu, relu->add, conv->add
    CHECK(g.predecessors(2) == std::vector<int>{1, 0});
    CHECK(g.successors(0) == std::vector<int>{1, 2});
    CHECK(g.parameter_count(0) == 4 * 3 * 3 * 3);
    CHECK(g.parameter_count(1) == 0);
    CHECK(g.parameter_count() == 108);
    CHECK(g.topological_order() == std::vector<int>{0, 1, 2});
    CHECK(g.outputs().size() == 1);
    CHECK_NOTHROW(g.validate());
    const Graph copy = g;
    CHECK(copy == g);
}

TEST_CASE("graph: multi-edges and self-consumption count per input slot") {
    Graph g("sq");
    const int x = g.add_input("x", {2, 2});
    const int y = g.add_op("Relu", "r", {x}, {2, 2});
    const int z = g.add_op("Mul", "m", {y, y}, {2, 2});
    g.mark_output(z);
    CHECK(g.num_edges() == 2);
    CHECK(g.predecessors(1) == std::vector<int>{0});
}

TEST_CASE("graph: topological order of nodes added out of order") {
    Graph g("ooo");
    const int x = g.add_input("x", {1});
    const int t1 = g.add_tensor("t1", {1});
    const int t2 = g.add_tensor("t2", {1});
    g.add_node("Relu", "second", {t1}, {t2});
    g.add_node("Relu", "first", {x}, {t1});
    g.mark_output(t2);
    CHECK(g.topological_order() == std::vector<int>{1, 0});
    CHECK_FALSE(g.is_topologically_sorted());
}

TEST_CASE("graph: validation names the offending node") {
    SUBCASE("cycle") {
        Graph g("cyc");
        const int t1 = g.add_tensor("t1", {1});
        const int t2 = g.add_tensor("t2", {1});
        g.add_node("Relu", "a", {t2}, {t1});
        g.add_node("Relu", "b", {t1}, {t2});
        CHECK_THROWS_WITH_AS(g.validate(), doctest::Contains("cycle"), shape_error);
    }
    SUBCASE("dangling input") {
        Graph g("dangle");
        const int t = g.add_tensor("nowhere", {1});
        g.add_op("Relu", "r", {t}, {1});
        CHECK_THROWS_WITH_AS(g.validate(), doctest::Contains("'nowhere'"), shape_error);
    }
    SUBCASE("shape mismatch in Add") {
        Graph g("bad_add");
        const int a = g.add_input("a", {1, 4});
        const int b = g.add_input("b", {1, 5});
        g.add_op("Add", "sum", {a, b}, {1, 4});
        CHECK_THROWS_WITH_AS(g.validate(), doctest::Contains("node 'sum'"), shape_error);
    }
    SUBCASE("conv channel mismatch") {
        Graph g("bad_conv");
        const int x = g.add_input("x", {1, 3, 8, 8});
        const int w = g.add_weight("w", {4, 2, 3, 3});
        g.add_op("Conv", "c", {x, w}, {1, 4, 6, 6});
        CHECK_THROWS_WITH_AS(g.validate(), doctest::Contains("input channels"), shape_error);
    }
    SUBCASE("conv output that does not follow from input, kernel, strides and pads") {
        Graph g("bad_conv_spatial");
        const int x = g.add_input("x", {1, 3, 8, 8});
        const int w = g.add_weight("w", {4, 3, 3, 3});
        g.add_op("Conv", "c", {x, w}, {1, 4, 8, 8});  // no padding: 6 x 6
        CHECK_THROWS_WITH_AS(g.validate(), doctest::Contains("should be 6"), shape_error);
        Graph ok("conv_spatial");
        const int x2 = ok.add_input("x", {1, 3, 9, 9});
        const int w2 = ok.add_weight("w", {4, 3, 3, 3});
        // (9 + 1 + 2 - 2 * (3 - 1) - 1) / 2 + 1 = 4 with asymmetric pads, stride 2, dilation 2
        ok.add_op("Conv", "c", {x2, w2}, {1, 4, 4, 4},
                  {{"strides", std::vector<std::int64_t>{2, 2}},
                   {"dilations", std::vector<std::int64_t>{2, 2}},
                   {"pads", std::vector<std::int64_t>{1, 1, 2, 2}}});
        CHECK_NOTHROW(ok.validate());
        Graph same("conv_same");
        const int x3 = same.add_input("x", {1, 3, 9, 9});
        const int w3 = same.add_weight("w", {4, 3, 3, 3});
        same.add_op("Conv", "c", {x3, w3}, {1, 4, 5, 5},
                    {{"strides", std::vector<std::int64_t>{2, 2}}, {"auto_pad", std::string("SAME_UPPER")}});
        CHECK_NOTHROW(same.validate());
    }
    SUBCASE("conv input smaller than its kernel, zero-sized input") {
        Graph g("tiny");
        const int x = g.add_input("x", {1, 3, 0, 0});
        const int w = g.add_weight("w", {64, 3, 7, 7});
        g.add_op("Conv", "stem", {x, w}, {1, 64, 1, 1},
                 {{"strides", std::vector<std::int64_t>{2, 2}}, {"pads", std::vector<std::int64_t>{3, 3, 3, 3}}});
        CHECK_THROWS_WITH_AS(g.validate(), doctest::Contains("smaller than the kernel extent 7"), shape_error);
    }
    SUBCASE("a Reshape that changes the element count") {
        Graph g("bad_reshape");
        const int x = g.add_input("x", {1, 4});
        g.add_op("Reshape", "r", {x, g.add_weight("s", {2})}, {3, 3});
        CHECK_THROWS_WITH_AS(g.validate(), doctest::Contains("has 4 elements, output [3,3] has 9"), shape_error);
    }
    SUBCASE("conv group that is not positive or overflows") {
        for (const std::int64_t group : {std::int64_t{0}, std::int64_t{8}}) {
            Graph g("bad_group");
            const int x = g.add_input("x", {1, 4, 8, 8});
            const int w = g.add_weight("w", {4, std::int64_t{1} << 62, 3, 3});
            g.add_op("Conv", "c", {x, w}, {1, 4, 6, 6}, {{"group", group}});
            CHECK_THROWS_WITH_AS(g.validate(), doctest::Contains("invalid group"), shape_error);
        }
    }
    SUBCASE("a tensor of more than 2^63 bytes") {
        Graph g("huge");
        const std::int64_t big = std::int64_t{1} << 40;
        const int x = g.add_input("x", {big, big});
        g.add_op("Relu", "r", {x}, {big, big});
        CHECK_THROWS_WITH_AS(g.validate(), doctest::Contains("more than 2^63 bytes"), shape_error);
    }
    SUBCASE("unknown dimension") {
        Graph g("unk");
        const int x = g.add_input("x", {1, 3});
        g.add_op("Relu", "r", {x}, {1, -1});
        CHECK_THROWS_WITH_AS(g.validate(), doctest::Contains("unknown shape"), shape_error);
    }
    SUBCASE("duplicate names and double producers are rejected at build time") {
        Graph g("dup");
        g.add_input("x", {1});
        CHECK_THROWS_AS(g.add_input("x", {1}), config_error);
        const int t = g.add_tensor("t", {1});
        g.add_node("Relu", "a", {0}, {t});
        CHECK_THROWS_AS(g.add_node("Relu", "b", {0}, {t}), config_error);
    }
}

TEST_CASE("graph: element and byte counts of a never-validated unknown or hostile shape are errors, not garbage") {
    Graph g("huge");
    const int x = g.add_input("x", {std::int64_t{1} << 40, std::int64_t{1} << 40});
    CHECK_THROWS_WITH_AS((void)g.tensor(x).elements(), doctest::Contains("[1099511627776,1099511627776]"), shape_error);
    CHECK_THROWS_AS((void)g.tensor(x).bytes(), shape_error);
    const int y = g.add_input("y", {std::int64_t{1} << 61});  // 2^61 elements fit, 2^63 bytes of float do not
    CHECK(g.tensor(y).elements() == std::int64_t{1} << 61);
    CHECK_THROWS_WITH_AS((void)g.tensor(y).bytes(), doctest::Contains("tensor 'y'"), shape_error);
    CHECK(graph::numel({2, 3, 4}) == 24);
    CHECK(graph::numel({}) == 1);
    // an unknown dimension has no element count (not a negative one)
    const int u = g.add_weight("u", {4, -1});
    CHECK_THROWS_WITH_AS((void)g.tensor(u).elements(), doctest::Contains("[4,-1] is unknown"), shape_error);
}

TEST_CASE("graph: attribute lists read in place agree with the copies") {
    const auto g = diamond();
    const auto& conv = g.node(0);
    REQUIRE(conv.op_type == "Conv");
    const auto view = conv.attr_ints_view("pads");
    CHECK(std::vector<std::int64_t>(view.begin(), view.end()) == conv.attr_ints("pads"));
    CHECK(view.data() == std::get<std::vector<std::int64_t>>(*conv.find_attr("pads")).data());  // no copy
    CHECK(conv.attr_ints_view("strides").empty());
    graph::Node n;
    n.name = "pool";
    n.op_type = "MaxPool";
    n.attributes = {{"axis", std::int64_t{2}}, {"mode", std::string("x")}};
    REQUIRE(n.attr_ints_view("axis").size() == 1);  // a single integer is a list of one
    CHECK(n.attr_ints_view("axis")[0] == 2);
    CHECK_THROWS_WITH_AS(n.attr_ints_view("mode"), doctest::Contains("node 'pool' (MaxPool): attribute 'mode'"),
                         parse_error);
}

TEST_CASE("graph: the flat view reads the windows of convolutions and pooling as their nodes do") {
    using Ints = std::vector<std::int64_t>;
    Graph g("windows");
    const int x = g.add_input("x", {1, 4, 8, 8});
    const int y = g.add_op("Conv", "dw", {x, g.add_weight("w", {4, 1, 3, 3})}, {1, 4, 8, 8},
                           {{"group", std::int64_t{4}},
                            {"kernel_shape", Ints{3, 3}},
                            {"strides", Ints{1, 1}},
                            {"group", std::int64_t{9}}});  // a second of one name: the first counts
    const int p = g.add_op("MaxPool", "pool", {y}, {1, 4, 4, 4},
                           {{"kernel_shape", std::int64_t{2}}, {"strides", Ints{2, 2}}, {"group", 1.0}});
    const int q = g.add_op("AveragePool", "odd", {p}, {1, 4, 4, 4},
                           {{"kernel_shape", Ints{1, 1}}, {"group", std::string("x")}});
    g.mark_output(g.add_op("Relu", "relu", {q}, {1, 4, 4, 4}, {{"group", std::int64_t{3}}}));
    graph::FlatView v;
    v.rebuild(g);
    const auto ints = [](std::span<const std::int64_t> s) { return Ints(s.begin(), s.end()); };
    CHECK(ints(v.kernel_shape(0)) == Ints{3, 3});
    CHECK(ints(v.strides(0)) == Ints{1, 1});
    CHECK(v.group(0) == 4);
    CHECK(ints(v.kernel_shape(1)) == Ints{2});  // a single integer is a list of one
    CHECK(ints(v.strides(1)) == Ints{2, 2});
    CHECK(v.group(1) == 1);
    // a group of another type: the node's own error; its other attributes as the node has them
    CHECK(ints(v.kernel_shape(2)) == Ints{1, 1});
    CHECK(v.strides(2).empty());
    CHECK_THROWS_WITH_AS((void)v.group(2), doctest::Contains("node 'odd' (AveragePool): attribute 'group'"),
                         parse_error);
    // not a window: asked of the node
    CHECK(v.group(3) == 3);
    CHECK(v.kernel_shape(3).empty());
    for (int n = 0; n < 4; ++n) {
        CHECK(ints(v.kernel_shape(n)) == g.node(n).attr_ints("kernel_shape"));
        CHECK(ints(v.strides(n)) == g.node(n).attr_ints("strides"));
    }
}

TEST_CASE("graph: the flat view describes its graph, and the next one over the same storage") {
    // every field of the view against the Graph's own objects
    const auto check_view = [](const Graph& g, const graph::FlatView& v) {
        REQUIRE(v.num_nodes() == g.num_nodes());
        REQUIRE(v.num_tensors() == g.num_tensors());
        CHECK(&v.graph() == &g);
        CHECK(v.sorted() == g.is_topologically_sorted());
        CHECK(v.outputs() == g.outputs());
        for (std::size_t i = 0; i < g.num_nodes(); ++i) {
            const int n = static_cast<int>(i);
            CHECK(v.op_names()[static_cast<std::size_t>(v.op(n))] == g.node(n).op_type);
            CHECK(v.find_op(g.node(n).op_type) == v.op(n));
            CHECK(std::vector<int>(v.inputs(n).begin(), v.inputs(n).end()) == g.node(n).inputs);
            CHECK(std::vector<int>(v.outputs(n).begin(), v.outputs(n).end()) == g.node(n).outputs);
        }
        for (std::size_t i = 0; i < g.num_tensors(); ++i) {
            const int t = static_cast<int>(i);
            const auto& ten = g.tensor(t);
            CHECK(v.producer(t) == ten.producer);
            CHECK(v.is_weight(t) == (ten.kind == graph::TensorKind::weight));
            CHECK(v.is_output(t) == ten.is_output);
            CHECK(graph::Shape(v.shape(t).begin(), v.shape(t).end()) == ten.shape);
            CHECK(v.elements(t) == ten.elements());
            CHECK(v.bytes(t) == ten.bytes());
            auto c = std::vector<int>(v.consumers(t).begin(), v.consumers(t).end());
            auto want = ten.consumers;
            std::sort(want.begin(), want.end());
            CHECK(std::is_sorted(c.begin(), c.end()));  // node order
            CHECK(c == want);
        }
    };
    Graph g("ooo");
    const int x = g.add_input("x", {1, 3, 8, 8});
    const int w = g.add_weight("w", {4, 3, 3, 3}, graph::DataType::float16);
    const int t1 = g.add_tensor("t1", {1, 4, 6, 6});
    const int t2 = g.add_tensor("t2", {1, 4, 6, 6});
    const int t3 = g.add_tensor("t3", {1, 4, 6, 6});
    g.add_node("Mul", "square", {t1, t1}, {t2});  // before its producer, and a multi-edge
    g.add_node("Conv", "conv", {x, w, -1}, {t1});
    g.add_node("Relu", "relu", {t2}, {t3});
    g.mark_output(t3);
    g.mark_output(t1);
    graph::FlatView v;
    v.rebuild(g);
    check_view(g, v);
    CHECK_FALSE(v.sorted());
    CHECK(v.op_names() == std::vector<std::string_view>{"Mul", "Conv", "Relu"});
    CHECK(v.find_op("Gemm") == -1);
    CHECK(v.bytes(w) == 4 * 3 * 3 * 3 * 2);
    CHECK(std::vector<int>(v.consumers(t1).begin(), v.consumers(t1).end()) == std::vector<int>{0, 0});

    // a smaller graph over the same storage: nothing of the first one is left
    Graph h("sq");
    const int a = h.add_input("a", {2, 2});
    const int b = h.add_op("Relu", "r", {a}, {2, 2});
    h.mark_output(h.add_op("Mul", "m", {b, b}, {2, 2}));
    v.rebuild(h);
    check_view(h, v);
    CHECK(v.sorted());

    // a size beyond 64 bits: the tensor's own error, only when asked for
    Graph huge("huge");
    const int big = huge.add_input("big", {std::int64_t{1} << 40, std::int64_t{1} << 40});
    const int ok = huge.add_op("Relu", "r", {huge.add_input("small", {2})}, {2});
    v.rebuild(huge);
    CHECK(v.sized(ok));
    CHECK_FALSE(v.sized(big));
    CHECK(v.bytes(ok) == 8);
    CHECK_THROWS_AS((void)v.bytes(big), shape_error);
    CHECK_THROWS_AS((void)v.elements(big), shape_error);
}
