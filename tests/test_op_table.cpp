// Operator tables: grid readings (plane, step, multilinear) against hand-computed values,
// out-of-range behaviour, CSV validation, and the channel derivatives of the table and roofline
// costs against finite differences over rebuilt graphs.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include <dnncost/cost/graph_cost.hpp>
#include <dnncost/cost/interpolation.hpp>
#include <dnncost/cost/op_config.hpp>
#include <dnncost/cost/op_table.hpp>

using namespace dnncost;
using cost::Interpolation;

namespace {
// f(8,8)=1, f(16,8)=3, f(8,24)=5, f(16,24)=11
cost::Grid small_grid() {
    cost::Grid g({{8, 16}, {8, 24}});
    g.set_at({8, 8}, 1);
    g.set_at({16, 8}, 3);
    g.set_at({8, 24}, 5);
    g.set_at({16, 24}, 11);
    return g;
}
cost::QueryOptions mode(Interpolation m, bool extrapolate = false) {
    cost::QueryOptions o;
    o.mode = m;
    o.extrapolate = extrapolate;
    return o;
}

/// x [1,C,8,8] -> Conv 3x3 (K, bias) -> Relu: two operators with channel counts.
graph::Graph conv_relu(std::int64_t C, std::int64_t K) {
    graph::Graph g("conv_relu");
    const int x = g.add_input("x", {1, C, 8, 8});
    const int w = g.add_weight("w", {K, C, 3, 3});
    const int b = g.add_weight("b", {K});
    const int y = g.add_op("Conv", "conv", {x, w, b}, {1, K, 8, 8},
                           {{"kernel_shape", std::vector<std::int64_t>{3, 3}},
                            {"pads", std::vector<std::int64_t>{1, 1, 1, 1}},
                            {"strides", std::vector<std::int64_t>{1, 1}}});
    const int r = g.add_op("Relu", "relu", {y}, {1, K, 8, 8});
    g.mark_output(r);
    g.validate();
    return g;
}

std::filesystem::path write_temp(const std::string& name, const std::string& text) {
    const auto p = std::filesystem::temp_directory_path() / name;
    std::ofstream(p) << text;
    return p;
}
}  // namespace

TEST_CASE("grid readings match hand-computed values") {
    const auto g = small_grid();
    // (12,16) is the centre of the cell: t_c = t_k = 1/2
    const auto ml = g.query({12, 16}, mode(Interpolation::multilinear));
    CHECK(ml.value == doctest::Approx(5.0));          // (1+3+5+11)/4
    CHECK(ml.gradient[0] == doctest::Approx(0.5));    // ((3-1)/2 + (11-5)/2) / 8
    CHECK(ml.gradient[1] == doctest::Approx(0.375));  // ((5-1)/2 + (11-3)/2) / 16
    const auto pl = g.query({12, 16}, mode(Interpolation::plane));
    CHECK(pl.value == doctest::Approx(4.0));  // 1 + (3-1)/2 + (5-1)/2
    CHECK(pl.gradient[0] == doctest::Approx(0.25));
    CHECK(pl.gradient[1] == doctest::Approx(0.25));
    // on the top edge of C the plane is based on the upper corner: the line through (16,8) and (16,24)
    CHECK(g.query({16, 16}, mode(Interpolation::plane)).value == doctest::Approx(7.0));
    // step: 12 -> 16 channels; k 16 -> the next level up, 24
    CHECK(g.query({12, 16}, mode(Interpolation::step)).value == doctest::Approx(11.0));
    CHECK(g.query({8, 8}, mode(Interpolation::step)).value == doctest::Approx(1.0));
    CHECK(g.query({9, 8}, mode(Interpolation::step)).value == doctest::Approx(3.0));  // 9 channels take 2 chunks
    CHECK(g.query({16, 7.5}, mode(Interpolation::step)).value == doctest::Approx(3.0));
    // grid points read back exactly in every mode
    for (auto m : {Interpolation::multilinear, Interpolation::plane, Interpolation::step})
        CHECK(g.query({16, 24}, mode(m)).value == doctest::Approx(11.0));
}

TEST_CASE("multilinear interpolation is exact for a multilinear function in three dimensions") {
    const auto f = [](double x, double y, double z) { return 1 + 2 * x + 3 * y + 4 * z + x * y * z; };
    cost::Grid g({{0, 1}, {0, 2}, {0, 1, 3}});
    for (double x : {0.0, 1.0})
        for (double y : {0.0, 2.0})
            for (double z : {0.0, 1.0, 3.0}) g.set_at({x, y, z}, f(x, y, z));
    const auto r = g.query({0.3, 1.1, 2.2});
    CHECK(r.value == doctest::Approx(f(0.3, 1.1, 2.2)));
    CHECK(r.gradient[0] == doctest::Approx(2 + 1.1 * 2.2));
    CHECK(r.gradient[1] == doctest::Approx(3 + 0.3 * 2.2));
    CHECK(r.gradient[2] == doctest::Approx(4 + 0.3 * 1.1));
}

TEST_CASE("out-of-range queries fail or extrapolate, as chosen") {
    const auto g = small_grid();
    CHECK_THROWS_AS(g.query({20, 8}, mode(Interpolation::multilinear)), config_error);
    CHECK_THROWS_AS(g.query({4, 8}, mode(Interpolation::plane)), config_error);
    CHECK_THROWS_AS(g.query({12, 30}, mode(Interpolation::step)), config_error);
    // the edge cell continued: t_c = 1.5 along k = 8
    CHECK(g.query({20, 8}, mode(Interpolation::multilinear, true)).value == doctest::Approx(4.0));
    CHECK(g.query({4, 8}, mode(Interpolation::plane, true)).value == doctest::Approx(0.0));
    // step above the top level: rounded up to 24 channels, the top cell's slope (2 per 8) continued
    CHECK(g.query({20, 8}, mode(Interpolation::step, true)).value == doctest::Approx(5.0));
    // a missing grid point is named
    cost::Grid holes({{1, 2}});
    holes.set_at({1}, 1.0);
    CHECK_THROWS_WITH_AS(holes.query({1.5}), doctest::Contains("no value at grid point (2)"), config_error);
}

TEST_CASE("operator configurations and single-operator graphs") {
    const auto g = conv_relu(16, 32);
    const auto c = cost::op_config(g, 0);
    REQUIRE(c);
    CHECK(cost::to_string(c->key) == "Conv k3x3 s1x1 g1 8x8");
    CHECK(c->c == 16);
    CHECK(c->k == 32);
    const auto r = cost::op_config(g, 1);
    REQUIRE(r);
    CHECK(cost::to_string(r->key) == "Relu k- s- g1 8x8");
    CHECK(r->k == 32);
    const auto s = cost::single_op_graph(g, 0, 8, 24);
    CHECK(s.num_nodes() == 1);
    CHECK(s.tensor(s.node(0).inputs[1]).shape == graph::Shape{24, 8, 3, 3});
    CHECK(s.tensor(s.node(0).outputs[0]).shape == graph::Shape{1, 24, 8, 8});
    // a depthwise convolution spans one count and its groups follow it
    graph::Graph d("dw");
    const int x = d.add_input("x", {1, 32, 8, 8});
    const int w = d.add_weight("w", {32, 1, 3, 3});
    d.mark_output(d.add_op("Conv", "dw", {x, w}, {1, 32, 8, 8},
                           {{"group", std::int64_t{32}}, {"pads", std::vector<std::int64_t>{1, 1, 1, 1}}}));
    const auto dc = cost::op_config(d, 0);
    REQUIRE(dc);
    CHECK(dc->key.groups == cost::depthwise_groups);
    CHECK_FALSE(cost::spans_two_channel_counts(dc->key));
    const auto ds = cost::single_op_graph(d, 0, 8, 999);
    CHECK(ds.tensor(ds.node(0).inputs[1]).shape == graph::Shape{8, 1, 3, 3});
    CHECK(ds.node(0).attr_int("group", 0) == 8);
}

TEST_CASE("tables save and load, and malformed rows name the file and line") {
    cost::OpTable t;
    t.device = "test device";
    const cost::OpKey conv{"Conv", {3, 3}, {1, 1}, 1, {8, 8}};
    const cost::OpKey relu{"Relu", {}, {}, 1, {8, 8}};
    t.add({conv, 8, 8, 1});
    t.add({conv, 16, 8, 3});
    t.add({conv, 8, 24, 5});
    t.add({conv, 16, 24, 11});
    t.add({relu, 8, 8, 0.5});
    t.add({relu, 24, 24, 1.5});
    const auto p = write_temp("dnncost_test_table.csv", t.to_csv());
    const auto back = cost::OpTable::load(p);
    CHECK(back.device == "test device");
    CHECK(back.num_points() == 6);
    CHECK(back.query(conv, 12, 16).value == doctest::Approx(5.0));
    CHECK(back.query(relu, 16, 0).value == doctest::Approx(1.0));
    CHECK_THROWS_WITH_AS(back.query({"Conv", {5, 5}, {1, 1}, 1, {8, 8}}, 8, 8), doctest::Contains("no entry"),
                         config_error);

    const std::string header = "op,kernel,stride,groups,spatial,c,k,latency_ms\n";
    const std::string good = "Conv,3x3,1x1,1,8x8,8,8,1\n";
    const auto expect_error = [&](const std::string& bad_row, const char* what) {
        const auto f = write_temp("dnncost_test_bad_table.csv", header + good + bad_row);
        CAPTURE(bad_row);
        CHECK_THROWS_WITH_AS(cost::OpTable::load(f), doctest::Contains("dnncost_test_bad_table.csv:3"), parse_error);
        CHECK_THROWS_WITH_AS(cost::OpTable::load(f), doctest::Contains(what), parse_error);
    };
    expect_error("Conv,3x3,1x1,1,8x8,16,8,fast\n", "latency_ms");
    expect_error("Conv,3x3,1x1,1,8x8,16,8,-1\n", "negative");
    expect_error("Conv,3y3,1x1,1,8x8,16,8,1\n", "kernel");
    expect_error("Conv,3x3,1x1,0,8x8,16,8,1\n", "groups");
    expect_error("Relu,-,-,1,8x8,16,8,1\n", "must equal c");
    expect_error("Conv,3x3,1x1,1,8x8,8,8,2\n", "given twice");
    expect_error("Conv,3x3,1x1,1,8x8,16\n", "field");
    const auto nocol = write_temp("dnncost_test_bad_table.csv", "op,kernel,c\nConv,3x3,8\n");
    CHECK_THROWS_WITH_AS(cost::OpTable::load(nocol), doctest::Contains("no column 'stride'"), parse_error);
}

TEST_CASE("the table cost and its channel derivative against finite differences") {
    auto t = std::make_shared<cost::OpTable>();
    const cost::OpKey conv{"Conv", {3, 3}, {1, 1}, 1, {8, 8}};
    const cost::OpKey relu{"Relu", {}, {}, 1, {8, 8}};
    for (std::int64_t c : {8, 16})
        for (std::int64_t k : {8, 24, 40})
            t->add({conv, c, k,
                    0.1 * static_cast<double>(c) + 0.02 * static_cast<double>(k) + 0.003 * static_cast<double>(c * k)});
    t->add({relu, 8, 8, 0.2});
    t->add({relu, 40, 40, 1.0});
    for (auto m : {Interpolation::multilinear, Interpolation::plane}) {
        cost::TableCostOptions o;
        o.query.mode = m;
        const cost::TableCost tc(t, o);
        const std::int64_t C = 11, K = 29;
        const auto grad = tc.channel_gradient(conv_relu(C, K));
        REQUIRE(grad);
        REQUIRE(grad->size() == 2);
        // within one cell the readings are linear in C at fixed K and in K at fixed C, so a
        // central difference over rebuilt graphs is exact; K moves both the Conv and the Relu
        const double fd_c = (tc.cost(conv_relu(C + 1, K)).total_ms - tc.cost(conv_relu(C - 1, K)).total_ms) / 2;
        const double fd_k = (tc.cost(conv_relu(C, K + 1)).total_ms - tc.cost(conv_relu(C, K - 1)).total_ms) / 2;
        CHECK((*grad)[0].d_c == doctest::Approx(fd_c));
        CHECK((*grad)[0].d_k + (*grad)[1].d_c == doctest::Approx(fd_k));
        CHECK((*grad)[1].d_k == 0.0);
    }
    // the sum over operators, and what happens to an operator the table lacks
    const auto g = conv_relu(16, 24);
    const cost::TableCost tc(t, {});
    CHECK(tc.cost(g).total_ms == doctest::Approx(0.1 * 16 + 0.02 * 24 + 0.003 * 16 * 24 + 0.2 + 0.8 * 16 / 32));
    auto t2 = std::make_shared<cost::OpTable>();
    t2->add({relu, 8, 8, 0.2});
    t2->add({relu, 40, 40, 1.0});
    CHECK_THROWS_WITH_AS(cost::TableCost(t2, {}).cost(g), doctest::Contains("node 'conv'"), config_error);
    cost::TableCostOptions fb;
    fb.missing = cost::MissingEntry::roofline;
    const auto r = cost::TableCost(t2, fb).cost(g);
    CHECK(r.fallbacks.size() == 1);
    CHECK(r.per_node_ms[0] == doctest::Approx(1e3 * cost::roofline_seconds(cost::node_cost(g, 0), fb.fallback_device)));
    // outside the table: an error unless extrapolation is chosen
    CHECK_THROWS_WITH_AS(tc.cost(conv_relu(32, 24)), doctest::Contains("outside the table's range"), config_error);
}

TEST_CASE("the roofline cost's channel derivative against finite differences") {
    cost::DeviceSpec d;
    d.peak_flops = 1e9;  // the Conv is compute-bound, the Relu memory-bound
    d.bandwidth = 1e9;
    const cost::RooflineCost rc(d);
    const std::int64_t C = 12, K = 20;
    const auto grad = rc.channel_gradient(conv_relu(C, K));
    REQUIRE(grad);
    REQUIRE(grad->size() == 2);
    const double fd_c = (rc.cost(conv_relu(C + 1, K)).total_ms - rc.cost(conv_relu(C - 1, K)).total_ms) / 2;
    const double fd_k = (rc.cost(conv_relu(C, K + 1)).total_ms - rc.cost(conv_relu(C, K - 1)).total_ms) / 2;
    CHECK((*grad)[0].d_c == doctest::Approx(fd_c));
    CHECK((*grad)[0].d_k + (*grad)[1].d_c == doctest::Approx(fd_k));
    // by hand: Conv FLOPs = 2*64*K*9*C + 64*K, so d/dC = 2*64*K*9 FLOPs at 1 GFLOP/s, in ms
    CHECK((*grad)[0].d_c == doctest::Approx(1e3 * 2 * 64 * K * 9 / 1e9));
    // Relu bytes = 2 * 4 * 64 * C (input and output), so d/dC = 512 bytes at 1 GB/s, in ms
    CHECK((*grad)[1].d_c == doctest::Approx(1e3 * 512 / 1e9));
}
