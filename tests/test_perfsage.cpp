// PerfSAGE: the per-type input transform and the hybrid loss against finite differences, the
// operator kinds of hand-made convolutions, upsampling counts worked out by hand, and the
// estimator learning two targets at once, saved and loaded.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "gradcheck.hpp"

#include <dnncost/cost/memory.hpp>
#include <dnncost/estimators/additive.hpp>
#include <dnncost/estimators/perfsage.hpp>
#include <dnncost/estimators/registry.hpp>
#include <dnncost/features/op_aggregates.hpp>
#include <dnncost/features/op_kind.hpp>
#include <dnncost/nn/loss/losses.hpp>
#include <dnncost/nn/typed_input.hpp>
#include <dnncost/spaces/kws.hpp>
#include <dnncost/spaces/registry.hpp>
#include <dnncost/train/metrics.hpp>
#include <dnncost/train/upsample.hpp>

using namespace dnncost;

TEST_CASE("gradcheck: TypedInput, with every type and the unknown slot") {
    test::TestBatch tb(5);  // 16 nodes
    Rng rng(3);
    nn::TypedInput<double> layer(5, 3, 4, 6, rng);
    std::vector<int> types;
    for (int v = 0; v < tb.batch.num_nodes(); ++v) types.push_back(v % 4);  // 3 = unknown
    layer.set_types(types);
    nn::Context<double> ctx{&tb.batch, true, nullptr, nullptr};
    test::gradcheck(layer, tb.batch.x, ctx);
    CHECK_THROWS_AS(layer.set_types(std::vector<int>{4}), config_error);
}

TEST_CASE("TypedInput: a node's output uses its own type's weight, bias and embedding") {
    Rng rng(5);
    nn::TypedInput<double> layer(2, 2, 1, 1, rng);
    auto params = layer.parameters();  // embedding, w0, b0, w1, b1
    params[0]->value << 10, 20;
    params[1]->value << 1, 2, 3;
    params[2]->value << 0.5;
    params[3]->value << -1, 0, 1;
    params[4]->value << 7;
    Mat<double> x(3, 2);
    x << 1, 1, 2, 0, 0, 3;
    layer.set_types(std::vector<int>{0, 1, 2});
    nn::Context<double> ctx{};
    const auto& y = layer.forward(x, ctx);
    CHECK(y(0, 0) == doctest::Approx(1 + 2 + 3 * 10 + 0.5));
    CHECK(y(1, 0) == doctest::Approx(-2 + 20 + 7));
    // unknown: mean weight (0, 1, 2), mean bias 3.75, mean embedding 15
    CHECK(y(2, 0) == doctest::Approx(3 * 1 + 2 * 15 + 3.75));
}

TEST_CASE("gradcheck: MAPE + alpha RMSE over several targets") {
    Rng rng(11);
    Mat<double> p(5, 2), y(5, 2);
    for (Index i = 0; i < p.size(); ++i) {
        y.data()[i] = rng.uniform(0.5, 2.0);
        p.data()[i] = y.data()[i] * rng.uniform(0.6, 1.4);
    }
    Mat<double> grad, unused;
    const double alpha = 10.0;
    const double loss = nn::mape_rmse_loss(p, y, grad, alpha);
    double mape = 0, se = 0;
    for (Index i = 0; i < p.size(); ++i) {
        mape += std::abs(p.data()[i] - y.data()[i]) / y.data()[i];
        se += (p.data()[i] - y.data()[i]) * (p.data()[i] - y.data()[i]);
    }
    CHECK(loss == doctest::Approx(mape / 10 + alpha * std::sqrt(se / 10)));
    for (Index i = 0; i < p.size(); ++i) {
        const double keep = p.data()[i], eps = 1e-6;
        p.data()[i] = keep + eps;
        const double lp = nn::mape_rmse_loss(p, y, unused, alpha);
        p.data()[i] = keep - eps;
        const double lm = nn::mape_rmse_loss(p, y, unused, alpha);
        p.data()[i] = keep;
        CHECK((lp - lm) / (2 * eps) == doctest::Approx(grad.data()[i]).epsilon(1e-5));
    }
}

namespace {
/// x (1 x cin x 8 x 8) -> Conv with the given weight shape and group -> y
graph::Graph one_conv(std::int64_t cin, std::int64_t cout, std::int64_t k, std::int64_t group,
                      bool kernel_attr = true) {
    graph::Graph g("conv");
    const int x = g.add_input("x", {1, cin, 8, 8});
    const int w = g.add_weight("w", {cout, cin / group, k, k});
    std::vector<graph::Attribute> attrs{{"group", graph::AttrValue(group)}};
    if (kernel_attr) attrs.push_back({"kernel_shape", graph::AttrValue(std::vector<std::int64_t>{k, k})});
    attrs.push_back({"pads", graph::AttrValue(std::vector<std::int64_t>{k / 2, k / 2, k / 2, k / 2})});
    const int y = g.add_tensor("y", {1, cout, 8, 8});
    g.add_node("Conv", "c", {x, w}, {y}, attrs);
    g.mark_output(y);
    return g;
}
std::string kind_of(const graph::Graph& g) { return features::op_kind(g, g.nodes()[0]); }
}  // namespace

TEST_CASE("operator kinds: depthwise, grouped, pointwise and other convolutions") {
    CHECK(kind_of(one_conv(16, 16, 3, 16)) == "DepthwiseConv");
    CHECK(kind_of(one_conv(16, 32, 5, 16)) == "DepthwiseConv");  // channel multiplier 2
    CHECK(kind_of(one_conv(16, 16, 3, 4)) == "GroupConv");
    CHECK(kind_of(one_conv(16, 16, 1, 2)) == "GroupConv");  // a grouped 1x1 is grouped, not pointwise
    CHECK(kind_of(one_conv(16, 32, 1, 1)) == "PointwiseConv");
    CHECK(kind_of(one_conv(16, 32, 1, 1, false)) == "PointwiseConv");  // kernel from the weight's shape
    CHECK(kind_of(one_conv(16, 32, 3, 1)) == "Conv");
    CHECK(kind_of(one_conv(16, 32, 3, 1, false)) == "Conv");
    const auto g = one_conv(16, 32, 1, 1);
    CHECK(features::op_kind(g, g.nodes()[0], false) == "Conv");
}

TEST_CASE("operator kinds: the additive baseline counts each kind apart, old models keep one Conv") {
    Rng rng(1);
    const auto kws = spaces::find_space("kws").build_graph(spaces::find_space("kws").sample(rng), {});
    std::map<std::string, int> kinds;
    for (const auto& n : kws.nodes()) ++kinds[features::op_kind(kws, n)];
    CHECK(kinds["DepthwiseConv"] >= 2);  // depthwise-separable blocks
    CHECK(kinds["PointwiseConv"] == kinds["DepthwiseConv"]);
    CHECK(kinds.count("Conv") == 1);  // the first, non-square convolution
    features::OpAggregates agg;
    const graph::Graph* gp = &kws;
    agg.fit(std::span<const graph::Graph* const>(&gp, 1));
    CHECK(std::binary_search(agg.vocabulary.begin(), agg.vocabulary.end(), "DepthwiseConv"));
    const auto raw = features::OpAggregates::raw(kws, agg.vocabulary);
    const auto dw = static_cast<std::size_t>(
        std::lower_bound(agg.vocabulary.begin(), agg.vocabulary.end(), "DepthwiseConv") - agg.vocabulary.begin());
    CHECK(raw[dw * 3] == kinds["DepthwiseConv"]);
    const auto old = features::OpAggregates::raw(kws, {"Conv"}, false, false);
    CHECK(old[0] == kinds["DepthwiseConv"] + kinds["PointwiseConv"] + 1);
}

TEST_CASE("upsampling: counts worked out by hand") {
    // 90/5/5: raising both small groups to ceil(0.1 T) settles at 12 each (T = 114; 11 would give 11 < 11.2)
    CHECK(train::upsampled_counts({90, 5, 5}, 0.10) == std::vector<std::size_t>{90, 12, 12});
    CHECK(train::upsampled_counts({50, 50}, 0.10) == std::vector<std::size_t>{50, 50});
    CHECK(train::upsampled_counts({100, 1}, 0.10) ==
          std::vector<std::size_t>{100, 12});  // 12 / 112 >= 0.1, 11 / 111 < 0.1
    CHECK(train::upsampled_counts({100, 10}, 0.10) == std::vector<std::size_t>{100, 12});  // 11/111 < 0.1
    CHECK_THROWS_AS(train::upsampled_counts({1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, 0.10), config_error);
    std::vector<std::string> group(90, "fbnet");
    for (int i = 0; i < 5; ++i) group.push_back("kws");
    for (int i = 0; i < 5; ++i) group.push_back("vit");
    const auto items = train::upsample(group, 0.10, 3);
    REQUIRE(items.size() == 114);
    std::map<std::string, int> per_group;
    std::map<std::size_t, int> copies;
    for (auto i : items) {
        ++per_group[group[i]];
        ++copies[i];
    }
    CHECK(per_group["fbnet"] == 90);
    CHECK(per_group["kws"] == 12);
    CHECK(per_group["vit"] == 12);
    for (auto& [i, c] : copies) {
        if (group[i] == "fbnet")
            CHECK(c == 1);
        else
            CHECK((c == 2 || c == 3));  // 12 = 2 x 5 + 2 drawn once more
    }
    CHECK(train::upsample(group, 0.10, 3) == items);  // seeded
}

TEST_CASE("PerfSAGE: learns latency-like and peak-memory targets at once, saves and loads") {
    const auto& space = spaces::find_space("kws");
    Rng rng(7);
    std::vector<graph::Graph> graphs;
    for (int i = 0; i < 48; ++i) graphs.push_back(space.build_graph(space.sample(rng), {}));
    std::vector<const graph::Graph*> ptrs;
    for (const auto& g : graphs) ptrs.push_back(&g);
    std::vector<double> macs, mem;
    for (const auto& g : graphs) {
        macs.push_back(1e-6 * static_cast<double>(cost::total_cost(g).macs) + 0.05 * g.num_nodes());
        mem.push_back(static_cast<double>(cost::peak_memory(g).total_bytes()));
    }
    const std::span<const graph::Graph* const> all(ptrs);
    train::MultiTrainData tr{{ptrs.begin(), ptrs.begin() + 32}, {}, {"latency", "memory"}};
    tr.targets = {{macs.begin(), macs.begin() + 32}, {mem.begin(), mem.begin() + 32}};
    train::MultiTrainData va{{ptrs.begin() + 32, ptrs.end()}, {}, {"latency", "memory"}};
    va.targets = {{macs.begin() + 32, macs.end()}, {mem.begin() + 32, mem.end()}};
    estimators::PerfSageEstimator est;
    est.set_options({.precision = nn::Precision::fp32});
    estimators::FitOptions fo;
    fo.seed = 1;
    fo.max_epochs = 12;
    fo.threads = 1;
    const auto fit = est.fit_targets(tr, va, fo);
    CHECK(fit.epochs >= 1);
    const auto p = estimators::predict_targets(est, all.subspan(32));
    REQUIRE(p.size() == 2);
    CHECK(train::spearman(p[0], va.targets[0]) > 0.7);
    CHECK(train::spearman(p[1], va.targets[1]) > 0.7);
    CHECK(est.target_names() == std::vector<std::string>{"latency", "memory"});
    const auto bytes = est.serialize();
    const auto back = estimators::load_estimator(bytes, "mem");
    CHECK(back->preset() == "perfsage");
    CHECK(estimators::predict_targets(*back, all.subspan(32)) == p);
    CHECK(estimators::max_targets(*back) > 1);
    CHECK(estimators::target_names(*back) == std::vector<std::string>{"latency", "memory"});
    // one-target presets refuse two targets with a message naming the preset
    auto additive = estimators::make_estimator("additive");
    CHECK_THROWS_WITH_AS(estimators::fit_targets(*additive, tr, va, fo), doctest::Contains("'additive' learns one quantity"),
                         config_error);
    auto corrupt = bytes;
    corrupt[corrupt.size() / 2] ^= 0x5a;
    CHECK_THROWS_AS(estimators::load_estimator(corrupt, "corrupt"), parse_error);
}
