// The pricing interface (cost/source.hpp): a kernel breakdown that adds up to the total, the
// checks every source's figures go through, the roofline through the one device description
// against hand-computed figures, and trained estimators through the adapter (total only, or
// their own breakdown when they price kernels).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <dnncost/cost/graph_cost.hpp>
#include <dnncost/estimators/estimator.hpp>
#include <dnncost/estimators/estimator_cost.hpp>

using namespace dnncost;

namespace {

/// x [1,C,8,8] -> Conv 3x3 (K, bias) -> Relu.
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

/// A small kernel-level model: a Conv whose only consumer is a Relu runs with it as one kernel
/// "Conv+Relu" (the activation applied before the result is stored, so the Conv's output is
/// never written and read back); every other node is a kernel of its own. Each kernel is priced
/// by the roofline of its FLOPs and the bytes it moves.
class FusingRoofline : public cost::CostSource {
public:
    explicit FusingRoofline(cost::DeviceSpec d) : m_device(std::move(d)) {}
    std::string name() const override { return "fusing roofline"; }

protected:
    cost::GraphCost price(const graph::Graph& g) const override {
        cost::GraphCost r;
        std::vector<bool> done(g.num_nodes(), false);
        for (std::size_t i = 0; i < g.num_nodes(); ++i) {
            if (done[i]) continue;
            const int id = static_cast<int>(i);
            const auto& n = g.node(id);
            const auto c = cost::node_cost(g, id);
            cost::KernelCost k{n.op_type, {id}, 0};
            double flops = static_cast<double>(c.flops), bytes = static_cast<double>(c.bytes());
            const auto& consumers = g.tensor(n.outputs[0]).consumers;
            if (n.op_type == "Conv" && consumers.size() == 1 && g.node(consumers[0]).op_type == "Relu") {
                const int relu = consumers[0];
                const auto rc = cost::node_cost(g, relu);
                k.name = "Conv+Relu";
                k.nodes.push_back(relu);
                flops += static_cast<double>(rc.flops);
                bytes = static_cast<double>(c.input_bytes + c.weight_bytes + rc.output_bytes);
                done[static_cast<std::size_t>(relu)] = true;
            }
            k.ms = 1e3 * cost::roofline_seconds(flops, bytes, m_device);
            r.total_ms += k.ms;
            r.kernels.push_back(std::move(k));
        }
        return r;
    }

private:
    cost::DeviceSpec m_device;
};

/// Returns whatever it was given: a source that misbehaves on purpose.
class Planted : public cost::CostSource {
public:
    explicit Planted(cost::GraphCost c) : m_cost(std::move(c)) {}
    std::string name() const override { return "planted"; }

protected:
    cost::GraphCost price(const graph::Graph&) const override { return m_cost; }

private:
    cost::GraphCost m_cost;
};

/// An estimator that predicts a planted latency for every graph.
class FixedEstimator : public estimators::Estimator {
public:
    explicit FixedEstimator(double ms) : m_ms(ms) {}
    std::string preset() const override { return "fixed"; }
    estimators::FitResult fit(const train::TrainData&, const train::TrainData&,
                              const estimators::FitOptions&) override {
        raise<not_implemented>("FixedEstimator::fit");
    }
    std::string serialize() const override { return {}; }

protected:
    std::vector<estimators::Prediction> compute(std::span<const graph::Graph* const> graphs) const override {
        return std::vector<estimators::Prediction>(graphs.size(), {m_ms, 0.0});
    }

private:
    double m_ms;
};

/// An estimator that prices kernels (what a device model does): it is a cost source too.
class KernelEstimator : public estimators::Estimator, public FusingRoofline {
public:
    explicit KernelEstimator(cost::DeviceSpec d) : FusingRoofline(std::move(d)) {}
    std::string preset() const override { return "kernels"; }
    estimators::FitResult fit(const train::TrainData&, const train::TrainData&,
                              const estimators::FitOptions&) override {
        raise<not_implemented>("KernelEstimator::fit");
    }
    std::string serialize() const override { return {}; }
    std::optional<std::vector<cost::ChannelGradient>> channel_gradient(const graph::Graph&) const override {
        return std::vector<cost::ChannelGradient>{{0, 4, 8, 0.25, 0.5}};
    }

protected:
    std::vector<estimators::Prediction> compute(std::span<const graph::Graph* const> graphs) const override {
        std::vector<estimators::Prediction> r;
        for (const auto* g : graphs) r.push_back({cost(*g).total_ms, 0.0});
        return r;
    }
};

// The device of the hand computations below: 1 GFLOP/s, 1 GB/s, 1 us per operator.
const cost::DeviceSpec device{"hand", 1e9, 1e9, 1e-6};

}  // namespace

TEST_CASE("the roofline through the one device description, against hand-computed figures") {
    // conv_relu(4, 8): the Conv has 8*8*8 = 512 outputs of 4*9 = 36 MACs, so 2*18432 + 512 (bias)
    // = 37376 FLOPs, and moves 4*(4*64) input + 4*512 output + 4*(8*4*9 + 8) weight = 4256 bytes:
    // compute-bound, 37.376 us + 1 us. The Relu: 512 FLOPs, 2048 + 2048 bytes: memory-bound,
    // 4.096 us + 1 us.
    const auto g = conv_relu(4, 8);
    const cost::RooflineCost roof(device);
    const auto c = roof.cost(g);
    CHECK(c.breakdown() == cost::Breakdown::nodes);
    REQUIRE(c.per_node_ms.size() == 2);
    CHECK(c.per_node_ms[0] == doctest::Approx(0.038376).epsilon(1e-12));
    CHECK(c.per_node_ms[1] == doctest::Approx(0.005096).epsilon(1e-12));
    CHECK(c.total_ms == doctest::Approx(0.043472).epsilon(1e-12));
    // the formula on counts, on a node's cost, and on a derated device
    CHECK(cost::roofline_seconds(37376.0, 4256.0, device) == doctest::Approx(38.376e-6).epsilon(1e-12));
    CHECK(cost::roofline_seconds(cost::node_cost(g, 0), device) == cost::roofline_seconds(37376.0, 4256.0, device));
    const auto half = device.derated(0.5);
    CHECK(half.peak_flops == 0.5e9);
    CHECK(half.bandwidth == 0.5e9);
    CHECK(half.per_op_overhead_s == 1e-6);
    CHECK(cost::roofline_seconds(37376.0, 4256.0, half) == doctest::Approx(75.752e-6).epsilon(1e-12));
    CHECK(cost::roofline_seconds(512.0, 4096.0, half) == doctest::Approx(9.192e-6).epsilon(1e-12));
    CHECK_THROWS_WITH_AS(cost::roofline_seconds(-1.0, 0.0, device), doctest::Contains("non-negative"), config_error);
    CHECK_THROWS_AS(cost::roofline_seconds(std::nan(""), 0.0, device), config_error);
    CHECK_THROWS_AS(cost::roofline_seconds(1.0, 1.0, device.derated(0.0)), config_error);
    // a node-by-node breakdown seen as kernels: one per node, named by its operator
    const auto k = c.by_kernel(g);
    REQUIRE(k.size() == 2);
    CHECK(k[0].name == "Conv");
    CHECK(k[0].nodes == std::vector<int>{0});
    CHECK(k[0].ms == c.per_node_ms[0]);
    CHECK(k[1].name == "Relu");
}

TEST_CASE("a source that prices kernels: a kernel spans several nodes and the kernels add up to the total") {
    const auto g = conv_relu(4, 8);
    const FusingRoofline fused(device);
    const auto c = fused.cost(g);
    CHECK(c.breakdown() == cost::Breakdown::kernels);
    CHECK(c.per_node_ms.empty());
    REQUIRE(c.kernels.size() == 1);
    CHECK(c.kernels[0].name == "Conv+Relu");
    CHECK(c.kernels[0].nodes == std::vector<int>{0, 1});
    // by hand: 37376 + 512 FLOPs; 1024 input + 1184 weight + 2048 output bytes; compute-bound,
    // 37.888 us + one overhead of 1 us, less than the two nodes apart (43.472 us)
    CHECK(c.kernels[0].ms == doctest::Approx(0.038888).epsilon(1e-12));
    double sum = 0;
    for (const auto& k : c.kernels) sum += k.ms;
    CHECK(sum == doctest::Approx(c.total_ms).epsilon(1e-15));
    CHECK(c.total_ms < cost::RooflineCost(device).cost(g).total_ms);
    CHECK(c.by_kernel(g).size() == 1);
    // a Conv without a Relu after it is a kernel of its own
    graph::Graph lone("lone");
    const int x = lone.add_input("x", {1, 4, 8, 8});
    const int w = lone.add_weight("w", {8, 4, 1, 1});
    const int y =
        lone.add_op("Conv", "conv", {x, w}, {1, 8, 8, 8}, {{"kernel_shape", std::vector<std::int64_t>{1, 1}}});
    const int s = lone.add_op("Sigmoid", "sig", {y}, {1, 8, 8, 8});
    lone.mark_output(s);
    lone.validate();
    const auto cl = fused.cost(lone);
    REQUIRE(cl.kernels.size() == 2);
    CHECK(cl.total_ms == doctest::Approx(cl.kernels[0].ms + cl.kernels[1].ms).epsilon(1e-15));
    CHECK(cl.total_ms == doctest::Approx(cost::RooflineCost(device).cost(lone).total_ms).epsilon(1e-12));
}

TEST_CASE("every source's figures are checked: what does not add up is an error naming the source and graph") {
    const auto g = conv_relu(4, 8);
    const auto figures = [](double total, std::vector<double> nodes, std::vector<cost::KernelCost> kernels) {
        cost::GraphCost c;
        c.total_ms = total;
        c.per_node_ms = std::move(nodes);
        c.kernels = std::move(kernels);
        return c;
    };
    const auto bad = [&](cost::GraphCost c, const char* what) {
        const std::string message = std::string("cost source 'planted' pricing graph 'conv_relu': ") + what;
        CHECK_THROWS_WITH_AS(Planted(std::move(c)).cost(g), doctest::Contains(message.c_str()), error);
    };
    bad(figures(-1.0, {}, {}), "latency -1 ms is negative");
    bad(figures(std::numeric_limits<double>::infinity(), {}, {}), "latency inf ms is negative or not finite");
    bad(figures(3.0, {1.0, 1.0}, {}), "the breakdown adds up to 2 ms, not the total 3 ms");
    bad(figures(1.0, {1.0}, {}), "1 per-node figures for 2 nodes");
    bad(figures(1.0, {2.0, -1.0}, {}), "node 'relu' costs -1 ms");
    bad(figures(2.0, {1.0, 1.0}, {{"Conv", {0}, 2.0}}), "both a per-node and a per-kernel breakdown");
    bad(figures(2.0, {}, {{"Conv+Relu", {0, 1}, 1.0}, {"Relu", {1}, 1.0}}),
        "node 'relu' is in kernel 0 and in kernel 1 'Relu'");
    bad(figures(1.0, {}, {{"ghost", {2}, 1.0}}), "kernel 0 'ghost' names node 2 of 2");
    bad(figures(1.0, {}, {{"empty", {}, 1.0}}), "kernel 0 'empty' runs no node");
    bad(figures(1.0, {}, {{"Conv", {0}, std::nan("")}}), "kernel 0 'Conv' costs nan ms");
    bad(figures(5.0, {}, {{"Conv+Relu", {0, 1}, 4.0}}), "the breakdown adds up to 4 ms, not the total 5 ms");
    // what is consistent passes, including nodes in no kernel (folded away, free)
    CHECK(Planted(figures(4.0, {}, {{"Conv", {0}, 4.0}})).cost(g).total_ms == 4.0);
    CHECK(Planted(figures(0.5, {}, {})).cost(g).breakdown() == cost::Breakdown::none);
}

TEST_CASE("a trained estimator as a cost source: its total, or its own kernels when it prices kernels") {
    const auto g = conv_relu(4, 8);
    const estimators::EstimatorCost plain(std::make_shared<FixedEstimator>(2.5));
    CHECK(plain.name() == "fixed");
    const auto c = plain.cost(g);
    CHECK(c.total_ms == 2.5);
    CHECK(c.breakdown() == cost::Breakdown::none);
    CHECK(c.by_kernel(g).empty());
    CHECK_FALSE(plain.channel_gradient(g).has_value());
    // a negative prediction is an error naming the estimator and the graph, not a price (the
    // estimator's own check catches it before the cost source's)
    CHECK_THROWS_WITH_AS(estimators::EstimatorCost(std::make_shared<FixedEstimator>(-3.0)).cost(g),
                         doctest::Contains("fixed model: predicts -3 for network 'conv_relu'"), error);
    CHECK_THROWS_AS(estimators::EstimatorCost(nullptr), config_error);

    const auto model = std::make_shared<KernelEstimator>(device);
    const estimators::EstimatorCost kernels(model);
    CHECK(kernels.name() == "kernels");
    const auto ck = kernels.cost(g);
    CHECK(ck.breakdown() == cost::Breakdown::kernels);
    REQUIRE(ck.kernels.size() == 1);
    CHECK(ck.kernels[0].nodes == std::vector<int>{0, 1});
    CHECK(ck.total_ms == doctest::Approx(0.038888).epsilon(1e-12));
    const graph::Graph* one[] = {&g};
    CHECK(ck.total_ms == model->predict(one).at(0).mean);
    const auto grad = kernels.channel_gradient(g);
    REQUIRE(grad.has_value());
    REQUIRE(grad->size() == 1);
    CHECK((*grad)[0].d_k == 0.5);
}
