// Exact peak memory: hand-computed small graphs (chain, residual diamond, fan-out, unread and
// graph outputs, schedules), and whole networks against an independent brute-force walk.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <dnncost/cost/memory.hpp>
#include <dnncost/spaces/fbnet.hpp>
#include <dnncost/spaces/kws.hpp>
#include <dnncost/spaces/nb201.hpp>
#include <dnncost/spaces/vit.hpp>
#include <dnncost/train/computed_targets.hpp>

using namespace dnncost;
using graph::Graph;

namespace {
// float32 tensors of n elements: 4 n bytes
int act(Graph& g, const std::string& name, std::int64_t n) { return g.add_tensor(name, {n}); }

// Brute force: for every step, list the tensors live during it from their lifetimes alone.
cost::PeakMemory brute_force(const Graph& g) {
    const auto order = g.topological_order();
    const int n = static_cast<int>(order.size());
    std::vector<int> step(g.num_nodes());
    for (int s = 0; s < n; ++s) step[static_cast<std::size_t>(order[static_cast<std::size_t>(s)])] = s;
    cost::PeakMemory r;
    for (const auto& t : g.tensors())
        if (t.kind == graph::TensorKind::weight && !t.consumers.empty()) r.weight_bytes += t.bytes();
    for (int s = 0; s < n; ++s) {
        std::int64_t live = 0;
        for (const auto& t : g.tensors()) {
            if (t.kind == graph::TensorKind::weight) continue;
            const int born = t.kind == graph::TensorKind::input ? -1 : step[static_cast<std::size_t>(t.producer)];
            int last = born;
            for (int c : t.consumers) last = std::max(last, step[static_cast<std::size_t>(c)]);
            if (t.is_output) last = std::numeric_limits<int>::max();
            if (t.kind == graph::TensorKind::input && t.consumers.empty() && !t.is_output) last = 0;
            if (born <= s && s <= last) live += t.bytes();
        }
        r.live_bytes.push_back(live);
        if (live > r.peak_activation_bytes) {
            r.peak_activation_bytes = live;
            r.peak_node = order[static_cast<std::size_t>(s)];
        }
    }
    return r;
}
}  // namespace

TEST_CASE("peak memory: a chain frees each tensor after its consumer") {
    Graph g("chain");
    const int x = g.add_input("x", {4});    // 16 bytes
    const int w = g.add_weight("w", {10});  // 40 bytes
    const int a = act(g, "a", 8), b = act(g, "b", 16), y = act(g, "y", 1);
    g.add_node("A", "A", {x, w}, {a});
    g.add_node("B", "B", {a}, {b});
    g.add_node("C", "C", {b}, {y});
    g.mark_output(y);
    const auto m = cost::peak_memory(g);
    // A: x + a = 48; B: a + b = 96; C: b + y = 68
    CHECK(m.live_bytes == std::vector<std::int64_t>{48, 96, 68});
    CHECK(m.peak_activation_bytes == 96);
    CHECK(m.peak_node == 1);
    CHECK(m.weight_bytes == 40);
    CHECK(m.total_bytes() == 136);
}

TEST_CASE("peak memory: a residual keeps the skipped tensor live until the add") {
    Graph g("diamond");
    const int x = g.add_input("x", {4});
    const int a = act(g, "a", 8), b = act(g, "b", 8), y = act(g, "y", 8);
    g.add_node("A", "A", {x}, {a});
    g.add_node("B", "B", {a}, {b});
    g.add_node("Add", "add", {a, b}, {y});
    g.mark_output(y);
    const auto m = cost::peak_memory(g);
    // A: 16 + 32; B: a + b = 64; add: a + b + y = 96
    CHECK(m.live_bytes == std::vector<std::int64_t>{48, 64, 96});
    CHECK(m.peak_activation_bytes == 96);
    CHECK(m.peak_node == 2);
    CHECK(m.weight_bytes == 0);
}

TEST_CASE("peak memory: fan-out keeps the input until its last reader, the schedule matters") {
    Graph g("fanout");
    const int x = g.add_input("x", {25});  // 100 bytes
    const int a = act(g, "a", 50), b = act(g, "b", 5), c = act(g, "c", 5), d = act(g, "d", 5), y = act(g, "y", 60);
    g.add_node("A", "A", {x}, {a});  // 200 bytes, read only at the end
    g.add_node("B", "B", {x}, {b});
    g.add_node("C", "C", {x}, {c});
    g.add_node("D", "D", {b, c}, {d});
    g.add_node("Concat", "cat", {a, d}, {y});
    g.mark_output(y);
    const auto m = cost::peak_memory(g);  // order A, B, C, D, cat
    // A: 100 + 200 = 300; B: +20 = 320; C: +20 = 340 (x freed after); D: a + b + c + d = 260;
    // cat: a + d + y (240) = 460
    CHECK(m.live_bytes == std::vector<std::int64_t>{300, 320, 340, 260, 460});
    CHECK(m.peak_activation_bytes == 460);
    // running A last shortens the life of its 200-byte output but not the peak at the concat;
    // the peak during the branch is lower
    const auto late = cost::peak_memory(g, {1, 2, 3, 0, 4});
    // B: 100 + 20; C: 140; D: b + c + d + x = 160; A: x + d + a = 320; cat: 460
    CHECK(late.live_bytes == std::vector<std::int64_t>{120, 140, 160, 320, 460});
    CHECK_THROWS_AS(cost::peak_memory(g, {3, 1, 2, 0, 4}), config_error);  // D before B
    CHECK_THROWS_AS(cost::peak_memory(g, {0, 1, 2, 3}), config_error);     // a node missing
    CHECK_THROWS_AS(cost::peak_memory(g, {0, 1, 1, 3, 4}), config_error);  // a node twice
}

TEST_CASE("peak memory: outputs stay to the end, unread outputs only during their producer") {
    Graph g("outputs");
    const int x = g.add_input("x", {1});
    const int early = act(g, "early", 100), unread = act(g, "unread", 50), a = act(g, "a", 1), y = act(g, "y", 1);
    g.add_node("A", "A", {x}, {early, unread, a});
    g.add_node("B", "B", {a}, {y});
    g.mark_output(early);
    g.mark_output(y);
    const auto m = cost::peak_memory(g);
    // A: x + early + unread + a = 4 + 400 + 200 + 4; B: early + a + y = 408
    CHECK(m.live_bytes == std::vector<std::int64_t>{608, 408});
    CHECK(m.peak_node == 0);
    // a graph input that is also an output is live throughout
    Graph h("passthrough");
    const int in = h.add_input("in", {10});
    const int o = act(h, "o", 1);
    h.add_node("A", "A", {in}, {o});
    h.mark_output(in);
    h.mark_output(o);
    CHECK(cost::peak_memory(h).live_bytes == std::vector<std::int64_t>{44});
}

TEST_CASE("peak memory: whole networks agree with a brute-force walk") {
    std::vector<Graph> graphs{
        nb201::build_graph("|nor_conv_3x3~0|+|nor_conv_3x3~0|avg_pool_3x3~1|+|skip_connect~0|nor_conv_1x1~1|none~2|"),
        fbnet::build_graph(
            "k5_e6-skip-k3_e1_g2-skip-k5_e1-skip-skip-skip-k5_e6-k5_e1-k3_e1_g2-k5_e1-k5_e6-k3_e6-k3_e3-k5_e6-k3_e6-"
            "k3_e3-k5_e1-k3_e3-k5_e1-k5_e1_g2"),
        vit::build_graph("p4-e128-cls-h4q32m2-h2q64m4-h8q16m1-h4q32m3-h6q48m2"),
        kws::build_graph("10x4s2x2c64-3x3c64-3x3c64-3x3c64-3x3c64")};
    for (const auto& g : graphs) {
        CAPTURE(g.name());
        const auto fast = cost::peak_memory(g);
        const auto slow = brute_force(g);
        CHECK(fast.live_bytes == slow.live_bytes);
        CHECK(fast.peak_activation_bytes == slow.peak_activation_bytes);
        CHECK(fast.peak_node == slow.peak_node);
        CHECK(fast.weight_bytes == slow.weight_bytes);
    }
}

TEST_CASE("peak memory: NB201 with skip cells by hand") {
    // Stem conv: image 12 KiB + 16x32x32 floats (64 KiB); stem BN: 64 + 64 KiB. In a cell of
    // skips, node 2 = Add(x, x) and node 3 = Add(Add(x, x), node 2): x, node 2 and the inner sum
    // are live together, three 64 KiB tensors, the most any step of the network holds.
    const auto g = nb201::build_graph(
        "|skip_connect~0|+|skip_connect~0|skip_connect~1|+|skip_connect~0|skip_connect~1|skip_connect~2|");
    const auto m = cost::peak_memory(g);
    const std::int64_t map = 16 * 32 * 32 * 4;
    CHECK(m.live_bytes.at(0) == 3 * 32 * 32 * 4 + map);
    CHECK(m.live_bytes.at(1) == 2 * map);
    CHECK(m.live_bytes.at(2) == 2 * map);
    CHECK(m.live_bytes.at(3) == 3 * map);
    CHECK(m.live_bytes.at(4) == 3 * map);
    CHECK(m.peak_activation_bytes == 3 * map);
    CHECK(g.node(m.peak_node).name == "stage0.cell0.node3.add1");
    CHECK(m.weight_bytes == 4 * g.parameter_count());  // float32 weights only
}

TEST_CASE("computed target ir_peak_memory_bytes: the exact peak of each network, no column in the file") {
    const std::string text =
        "arch,latency_ms\n"
        "|nor_conv_3x3~0|+|nor_conv_3x3~0|avg_pool_3x3~1|+|skip_connect~0|nor_conv_3x3~1|skip_connect~2|,1.5\n"
        "|none~0|+|none~0|none~1|+|none~0|none~1|none~2|,0.5\n";
    train::DatasetOptions opt;
    opt.space = "nb201";
    const std::vector<std::string> targets{"latency_ms", std::string(train::ir_peak_memory_target)};
    opt.columns = train::measured_columns(targets);
    REQUIRE(opt.columns == std::vector<std::string>{"latency_ms"});
    auto ds = train::load_dataset_text(text, "mem.csv", ".", opt);
    train::add_computed_targets(ds, targets);
    REQUIRE(ds.has_column(train::ir_peak_memory_target));
    const auto& col = ds.column(train::ir_peak_memory_target);
    for (std::size_t i = 0; i < ds.size(); ++i) {
        const auto g = nb201::build_graph(ds.key(i));
        CHECK(col[i] == static_cast<double>(cost::peak_memory(g).total_bytes()));
        CHECK(col[i] == static_cast<double>(brute_force(g).total_bytes()));
    }
    CHECK(col[0] > col[1]);  // three 3x3 convolutions hold more weights than an empty cell
    // a second call adds nothing; a caller's column must fit the data set
    train::add_computed_targets(ds, targets);
    CHECK(ds.columns().size() == 2);
    CHECK_THROWS_AS(ds.add_column("latency_ms", {1.0, 2.0}), config_error);
    CHECK_THROWS_AS(ds.add_column("x", {1.0}), config_error);
    CHECK_THROWS_AS(ds.add_column("x", {1.0, std::nan("")}), config_error);
    CHECK_THROWS_AS(train::computed_target("peak_memory_bytes", nb201::build_graph(ds.key(0))), config_error);
}
