// The kernel sampler and kernel features: draws cover the ranges real networks need, every
// sample is one kernel of its kind under a realistic rule set, draws repeat under a seed, the
// adaptive budget goes where the error is, and unknown operators are priced by a named nearest
// kind with a warning.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <dnncost/device/kernel_features.hpp>
#include <dnncost/device/kernel_kind_table.hpp>
#include <dnncost/device/kernel_sampler.hpp>
#include <dnncost/spaces/nb201.hpp>

#include "kernel_graph_fixtures.hpp"

using namespace dnncost;
using namespace kg_fixtures;

namespace {

// the rule set of docs/device_model.md's example
device::FusionRules doc_rules() {
    return device::FusionRules::parse(
        "dnncost-fusion-rules 1\n"
        "device ort-cpu-all-1t\n"
        "pattern LayerNormalization ReduceMean Sub Pow ReduceMean Add Sqrt Div Mul Add\n"
        "fold Conv BatchNormalization operands=constant\n"
        "fuse Conv Relu operands=none\n"
        "fuse Conv Clip\n"
        "fuse Conv Sigmoid\n"
        "fuse Conv HardSwish\n"
        "fuse Conv Tanh\n"
        "fuse Conv Add operands=activation\n"
        "fuse Add Relu operands=none after=Conv\n"
        "fuse Add Clip after=Conv\n"
        "fuse Add Sigmoid after=Conv\n"
        "fuse Add HardSwish after=Conv\n"
        "fuse Add Tanh after=Conv\n"
        "fuse Gemm Relu consumers=shared\n"
        "fuse MatMul Add operands=constant\n"
        "layout NCHWc 16 anchors=Conv followers=MaxPool,AveragePool,Add,Relu narrow-input=yes\n");
}

int feature(const std::string& name) {
    const auto& n = device::kernel_feature_names();
    const auto it = std::find(n.begin(), n.end(), name);
    REQUIRE(it != n.end());
    return static_cast<int>(it - n.begin());
}

}  // namespace

TEST_CASE("kernel kinds: keys of hand-built kernels, depthwise apart, unknown ones nearest with a warning") {
    const auto rules = doc_rules();
    Graph g("net");
    const int x = g.add_input("x", {1, 16, 8, 8});
    const int a = same(g, "Relu", "r1", {batch_norm(g, "bn1", conv(g, "c1", x, 16, 3))});
    const int d = same(g, "Relu", "r2", {conv(g, "dw", a, 16, 3, 1, 16)});
    const int s = same(g, "Add", "add", {conv(g, "c2", d, 16, 1), a});
    const int u = same(g, "Frobnicate", "odd", {s});
    g.mark_output(same(g, "Relu", "r3", {u}));
    g.validate();
    const auto kg = device::kernel_graph(g, rules);
    std::vector<std::string> keys, warnings;
    for (const auto& k : kg.kernels) {
        const auto kind = device::kernel_kind(g, kg, k);
        keys.push_back(kind.key);
        warnings.push_back(kind.warning);
    }
    const auto has = [&](const std::string& key) { return std::count(keys.begin(), keys.end(), key); };
    CHECK(has("Conv+Act") == 1);
    CHECK(has("DepthwiseConv+Act") == 1);
    CHECK(has("Conv+Add") == 1);
    CHECK(has("Activation") == 2);  // the unknown operator (one activation in, same shape out) and r3
    std::size_t warned = 0;
    for (const auto& w : warnings)
        if (!w.empty()) {
            ++warned;
            CHECK(w.find("Frobnicate") != std::string::npos);
            CHECK(w.find("'Activation'") != std::string::npos);
        }
    CHECK(warned == 1);

    // an unknown operator with a 4-D weight is priced as a convolution; with two activations as
    // an element-wise one
    Graph h("odd");
    const int y = h.add_input("y", {1, 8, 4, 4});
    const int z = h.add_input("z", {1, 8, 4, 4});
    const int p = h.add_op("Deform", "deform", {y, h.add_weight("deform.w", {8, 8, 3, 3})}, {1, 8, 4, 4});
    h.mark_output(h.add_op("Blend", "blend", {p, z}, {1, 8, 4, 4}));
    h.validate();
    const auto hk = device::kernel_graph(h, device::FusionRules{});
    REQUIRE(hk.kernels.size() == 2);
    CHECK(device::kernel_kind(h, hk, hk.kernels[0]).key == "Conv");
    CHECK(device::kernel_kind(h, hk, hk.kernels[1]).key == "Elementwise");
    CHECK(device::kernel_kind(h, hk, hk.kernels[1]).warning.find("Blend") != std::string::npos);
}

TEST_CASE("kernel kind table: each kernel's kind as kernel_kind() gives it, a shared kind worked out once") {
    Graph g("net");
    const int x = g.add_input("x", {1, 16, 8, 8});
    const int a = same(g, "Relu", "r1", {batch_norm(g, "bn1", conv(g, "c1", x, 16, 3))});
    const int d = same(g, "Relu", "r2", {conv(g, "dw", a, 16, 3, 1, 16)});
    const int s = same(g, "Add", "add", {conv(g, "c2", d, 16, 1), a});
    const int u = same(g, "Frobnicate", "odd", {same(g, "Frobnicate", "odd2", {s})});
    g.mark_output(same(g, "Relu", "r3", {u}));
    g.validate();
    const auto kg = device::kernel_graph(g, doc_rules());
    graph::FlatView view;
    view.rebuild(g);
    device::KernelKindTable<int> table;
    int asked = 0;
    for (int round = 0; round < 2; ++round) {  // the same graph twice: its numbers forgotten, its kinds not
        table.next_graph();
        for (const auto& k : kg.kernels) {
            const auto want = device::kernel_kind(g, kg, k);
            const auto& got = table.find(view, kg, k, [&](const device::KernelKind&) { return ++asked; });
            CHECK(got.kind.key == want.key);
            CHECK(got.kind.warning == want.warning);  // an unknown operator's names that operator
        }
    }
    std::set<std::pair<std::string, int>> shared;
    int own = 0;
    for (const auto& k : kg.kernels) {
        if (k.kind.find("Frobnicate") != std::string::npos)
            ++own;
        else
            shared.emplace(k.kind, device::kernel_kind_variant(g, k));
    }
    CHECK(own == 2);
    CHECK(shared.size() >= 4);  // Conv+Relu, its depthwise variant, Conv+Add, Relu
    CHECK(asked == static_cast<int>(shared.size()) + 2 * own);
}

TEST_CASE("kernel features: hand-computed values of a strided convolution with a folded BatchNorm") {
    Graph g("conv");
    const int x = g.add_input("x", {1, 24, 16, 16});
    g.mark_output(same(g, "Relu", "relu", {batch_norm(g, "bn", conv(g, "conv", x, 40, 3, 2))}));
    g.validate();
    const auto kg = device::kernel_graph(g, doc_rules());
    REQUIRE(kg.kernels.size() == 1);  // 24 and 40 channels do not fit the block: plain layout
    const auto f = device::kernel_features(g, kg, 0, 16);
    REQUIRE(f.values.size() == device::kernel_feature_names().size());
    CHECK(f.kind.key == "Conv+Act");
    const auto v = [&](const char* n) { return f.values[static_cast<std::size_t>(feature(n))]; };
    CHECK(v("log_in_channels") == doctest::Approx(std::log2(25.0)));
    CHECK(v("log_out_channels") == doctest::Approx(std::log2(41.0)));
    CHECK(v("log_out_height") == doctest::Approx(std::log2(9.0)));
    CHECK(v("kernel_h") == 3);
    CHECK(v("stride_w") == 2);
    const double macs = 8.0 * 8 * 40 * 24 * 9;
    CHECK(v("log_macs") == doctest::Approx(std::log2(1 + macs)));
    CHECK(v("log_params") == doctest::Approx(std::log2(1.0 + 40 * 24 * 9)));  // the BN's folded constants are not read
    CHECK(v("in_channels_misaligned") == doctest::Approx(8.0 / 16));
    CHECK(v("out_channels_misaligned") == doctest::Approx(8.0 / 16));
    CHECK(v("blocked") == 0);
    CHECK(v("folded_ops") == 1);
    CHECK(v("fused_relu") == 1);
    CHECK(v("depthwise") == 0);
    CHECK_THROWS_AS(device::kernel_features(g, kg, 1, 16), config_error);
}

TEST_CASE("kernel sampler: a large draw covers the ranges of real networks") {
    device::KernelSampler sampler(doc_rules());
    Rng rng(7);
    std::map<std::string, std::int64_t> lo, hi;
    const auto see = [&](const std::string& d, std::int64_t v) {
        lo[d] = lo.count(d) ? std::min(lo[d], v) : v;
        hi[d] = hi.count(d) ? std::max(hi[d], v) : v;
    };
    bool non_square = false, grouped = false, unaligned = false, depthwise = false, attention = false;
    for (const char* kind : {"Conv", "Conv+Act", "DepthwiseConv+Act", "MatMul", "Gemm", "LayerNorm", "Softmax"}) {
        const auto samples = sampler.draw(kind, 400, rng);
        CHECK(samples.size() == 400);
        for (const auto& s : samples) {
            const auto& c = s.config;
            const std::string base = std::string(kind).substr(0, std::string(kind).find('+'));
            if (base == "Conv" || base == "DepthwiseConv") {
                see("spatial", c.h);
                see("channels", c.c);
                see("channels", c.k);
                see("kernel", c.kh);
                see("kernel", c.kw);
                see("stride", c.sh);
                non_square = non_square || c.kh != c.kw;
                grouped = grouped || (base == "Conv" && c.groups > 1);
                depthwise = depthwise || (base == "DepthwiseConv" && c.groups == c.c && c.c == c.k);
                unaligned = unaligned || (c.c % 8 != 0 && c.c > 16);
            } else if (base == "MatMul" || base == "LayerNorm" || base == "Softmax") {
                see("tokens", c.h);
                attention = attention || (base == "MatMul" && !c.weight_operand);
            } else {
                see("gemm", c.c);
            }
        }
    }
    CHECK(lo["spatial"] == 1);
    CHECK(hi["spatial"] == 224);
    CHECK(lo["channels"] <= 4);
    CHECK(hi["channels"] >= 1500);
    CHECK(hi["channels"] <= 2048);
    CHECK(lo["kernel"] == 1);
    CHECK(hi["kernel"] == 7);
    CHECK(lo["stride"] == 1);
    CHECK(hi["stride"] == 2);
    CHECK(lo["tokens"] == 1);
    CHECK(hi["tokens"] == 1024);
    CHECK(hi["gemm"] >= 3072);
    CHECK(non_square);
    CHECK(grouped);
    CHECK(depthwise);
    CHECK(unaligned);
    CHECK(attention);
}

TEST_CASE("kernel sampler: every sample is one kernel of its kind, unique, and repeats under a seed") {
    const auto rules = doc_rules();
    device::KernelSampler a(rules), b(rules);
    const auto kinds = a.kinds();
    for (const char* k : {"Conv", "Conv+Act", "Conv+Add", "Conv+Add+Act", "DepthwiseConv+Act", "Gemm", "Gemm+Act",
                          "MatMul", "MatMul+Add", "Pool", "Elementwise", "LayerNorm", "Softmax"})
        CHECK_MESSAGE(std::count(kinds.begin(), kinds.end(), k) == 1, std::string(k));
    // Add -> Relu fuses only behind a Conv here: an element-wise kernel with an activation is not a kind
    CHECK(std::count(kinds.begin(), kinds.end(), "Elementwise+Act") == 0);
    Rng ra(11), rb(11);
    const auto sa = a.draw_all(6, ra);
    const auto sb = b.draw_all(6, rb);
    REQUIRE(sa.size() == sb.size());
    CHECK(sa.size() == 6 * kinds.size());
    std::set<std::string> keys;
    for (std::size_t i = 0; i < sa.size(); ++i) {
        CHECK(sa[i].key == sb[i].key);
        CHECK(sa[i].config == sb[i].config);
        keys.insert(sa[i].key);
        const auto kg = device::kernel_graph(sa[i].graph, rules);
        int found = 0;
        for (std::size_t k = 0; k < kg.kernels.size(); ++k) {
            if (kg.kernels[k].is_reorder()) continue;
            ++found;
            const auto f = device::kernel_features(sa[i].graph, kg, k, 16);
            CHECK(f.kind.key == sa[i].config.kind);
            CHECK(f.kind.warning.empty());
            for (double x : f.values) CHECK(std::isfinite(x));
        }
        CHECK(found == 1);
    }
    CHECK(keys.size() == sa.size());
    // a later draw never repeats an earlier sample
    const auto more = a.draw("Conv", 50, ra);
    for (const auto& s : more) CHECK(keys.count(s.key) == 0);
}

TEST_CASE("kernel sampler: the prior holds the layers of given graphs and is drawn from") {
    const auto rules = doc_rules();
    device::KernelSampler sampler(rules, {.prior_share = 1.0});
    const auto g = nb201::build_graph("|nor_conv_3x3~0|+|nor_conv_1x1~0|avg_pool_3x3~1|+|skip_connect~0|nor_conv_3x3~1|nor_conv_1x1~2|");
    CHECK(sampler.add_prior(g) > 10);
    const auto& prior = sampler.prior();
    REQUIRE(prior.count("Conv") + prior.count("Conv+Act") + prior.count("Conv+Add") > 0);
    std::set<std::int64_t> channels;
    for (const auto& [kind, configs] : prior)
        for (const auto& c : configs) channels.insert(c.c);
    Rng rng(3);
    for (const auto& [kind, configs] : prior) {
        if (!device::sampleable_family(kind.substr(0, kind.find('+')))) continue;
        for (const auto& s : sampler.draw(kind, 3, rng)) CHECK(channels.count(s.config.c) == 1);
    }
}

TEST_CASE("kernel sampler: the prior of the five search spaces") {
    device::KernelSampler sampler(doc_rules());
    Rng rng(8);
    CHECK(device::add_space_prior(sampler, 2, rng) > 100);
    const auto& prior = sampler.prior();
    // convolutions (NB201, FBNet, OFA, KWS), depthwise ones (FBNet, OFA) and transformer layers (ViT)
    std::string kinds;
    for (const auto& [kind, configs] : prior) kinds += kind + " ";
    for (const char* kind : {"DepthwiseConv+Act", "MatMul+Add", "LayerNorm", "Softmax"})
        CHECK_MESSAGE(prior.count(kind) == 1, (std::string(kind) + " not in " + kinds));
    std::size_t convs = 0;
    for (const auto& [kind, configs] : prior)
        if (kind.starts_with("Conv")) convs += configs.size();
    CHECK(convs > 20);
}

TEST_CASE("adaptive rounds: the budget goes to kinds above the error threshold, more to larger errors") {
    const std::map<std::string, double> errors{
        {"Conv", 0.30}, {"Gemm", 0.15}, {"Pool", 0.05}, {"MatMul", 0.10}, {"Softmax", std::nan("")}};
    const auto n = device::allocate_samples(errors, 100);
    std::size_t total = 0;
    for (const auto& [k, v] : n) total += v;
    CHECK(total == 100);
    CHECK(n.count("Pool") == 0);
    CHECK(n.count("MatMul") == 0);  // exactly at the threshold: not above it
    CHECK(n.at("Conv") > n.at("Gemm"));
    CHECK(n.at("Conv") == 40);  // 100 x 0.30 / (0.30 + 0.15 + 0.30): NaN counts as the worst
    CHECK(n.at("Softmax") == 40);
    CHECK(n.at("Gemm") == 20);
    CHECK(device::allocate_samples({{"Conv", 0.05}}, 50).empty());
    CHECK_THROWS_AS(device::allocate_samples(errors, 10, -1), config_error);

    device::KernelSampler sampler(doc_rules());
    Rng rng(5);
    std::vector<device::KernelSample> samples;
    for (const char* k : {"Conv", "Gemm", "Pool"})
        for (auto& s : sampler.draw(k, 4, rng)) samples.push_back(std::move(s));
    std::size_t calls = 0;
    const device::KindErrors evaluate = [&](const std::vector<device::KernelSample>& s) {
        ++calls;
        CHECK(s.size() == samples.size());
        return std::map<std::string, double>{{"Conv", 0.4}, {"Gemm", 0.2}, {"Pool", 0.01}};
    };
    (void)device::adaptive_round(sampler, samples, evaluate, 30, rng);
    CHECK(calls == 1);
    std::map<std::string, std::size_t> per;
    for (const auto& s : samples) ++per[s.config.kind];
    CHECK(per["Conv"] == 4 + 20);
    CHECK(per["Gemm"] == 4 + 10);
    CHECK(per["Pool"] == 4);
}

TEST_CASE("kernel sampler: a kernel inside a network hands a reduced output on, its own output staying inside") {
    const auto rules = doc_rules();
    device::KernelConfig c;
    c.kind = "Conv+Act";
    c.n = 2, c.c = 8, c.h = 10, c.w = 12, c.k = 16, c.kh = 3, c.kw = 3;
    const auto alone = device::kernel_sample_graph(c);
    const auto inside = device::kernel_sample_graph(c, true);
    REQUIRE(inside.nodes().size() == alone.nodes().size() + 1);
    const auto& last = inside.nodes().back();
    CHECK(last.op_type == "ReduceMean");
    const auto& out = inside.tensor(last.outputs.at(0));
    CHECK(out.is_output);
    CHECK(out.shape == graph::Shape{2, 1, 1, 1});
    // the reduction reads the kernel's output, which is no longer an output of the graph
    const auto& kernel_out = inside.tensor(last.inputs.at(0));
    CHECK_FALSE(kernel_out.is_output);
    CHECK(kernel_out.shape == graph::Shape{2, 16, 10, 12});
    // the kernel pass finds the same kernel, and the reduction as one more
    const auto ka = device::kernel_graph(alone, rules), ki = device::kernel_graph(inside, rules);
    REQUIRE(ki.kernels.size() == ka.kernels.size() + 1);
    CHECK(device::kernel_kind(inside, ki, ki.kernels.front()).key == device::kernel_kind(alone, ka, ka.kernels.front()).key);
}
