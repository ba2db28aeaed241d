// Fusion rule discovery against a fake device whose latencies come from a planted kernel model
// (its own fusion rules, layout block and noise, written here independently of the kernel pass):
// the discovery must recover the planted rules and block, stay within its budget and report what
// it could not measure.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <dnncost/core/rng.hpp>
#include <dnncost/cost/analytic.hpp>
#include <dnncost/device/fusion_discovery.hpp>

#include "kernel_graph_fixtures.hpp"

using namespace dnncost;
using namespace kg_fixtures;

namespace {

/// The planted device. A node is a kernel of its own (launch + FLOPs + bytes) unless it reads
/// the sole output of a producer under a planted pair (producer kind as the runtime sees it,
/// consumer kind, operand class, kind that starts the producer's kernel): then it only adds its
/// FLOPs, or nothing when folded. A decomposed LayerNorm is one kernel when planted. A Conv
/// whose channel counts are multiples of the block is 1.6x cheaper per FLOP and starts a blocked
/// kernel: a value entering it as the Conv's data input from outside a blocked kernel, or leaving
/// a blocked kernel as the data input of an operator outside one, pays a reorder (reading and
/// writing it once).
struct FakeDevice {
    struct Pair {
        std::string producer, consumer;
        char operands;  // 'n' none, 'c' constant, 'a' activation
        bool fold;
        std::string after;
    };
    std::vector<Pair> pairs{{"Conv", "BatchNormalization", 'c', true, ""},
                            {"Conv", "Relu", 'n', false, ""},
                            {"Conv", "Add", 'a', false, ""},
                            {"Add", "Relu", 'n', false, "Conv"},
                            {"Gemm", "Relu", 'n', false, ""},
                            {"MatMul", "Add", 'c', false, ""}};
    std::int64_t block = 16;
    bool layer_norm = true;
    double noise = 0.02;
    Rng rng{42};
    std::size_t calls = 0;

    static constexpr double overhead_ms = 0.02, launch_ms = 0.004, ms_per_flop = 2e-8, ms_per_byte = 5e-8;

    char operands(const Graph& g, int v, int t) const {
        char c = 'n';
        for (int in : g.node(v).inputs) {
            if (in < 0 || in == t) continue;
            if (g.tensor(in).kind != graph::TensorKind::weight) return 'a';
            c = 'c';
        }
        return c;
    }
    bool aligned_conv(const Graph& g, const graph::Node& n) const {
        if (n.op_type != "Conv" || block == 0) return false;
        return g.tensor(n.inputs[0]).shape[1] % block == 0 && g.tensor(n.outputs[0]).shape[1] % block == 0;
    }
    bool is_layer_norm(const Graph& g) const {
        std::multiset<std::string> ops,
            ln{"ReduceMean", "Sub", "Pow", "ReduceMean", "Add", "Sqrt", "Div", "Mul", "Add"};
        for (const auto& n : g.nodes())
            if (n.op_type != "ReduceMax") ops.insert(n.op_type);
        return layer_norm && ops == ln;
    }

    double operator()(const Graph& g) {
        ++calls;
        double ms = overhead_ms;
        const auto costs = cost::annotate(g);
        if (is_layer_norm(g)) {
            // one kernel: every FLOP, the data in and out, the constants
            std::int64_t flops = 0, weights = 0;
            for (std::size_t i = 0; i < g.num_nodes(); ++i)
                if (g.node(static_cast<int>(i)).op_type != "ReduceMax") {
                    flops += costs[i].flops;
                    weights += costs[i].weight_bytes;
                }
            const auto x = g.tensor(g.inputs()[0]).bytes();
            ms += launch_ms + ms_per_flop * static_cast<double>(flops) +
                  ms_per_byte * static_cast<double>(2 * x + weights);
            for (std::size_t i = 0; i < g.num_nodes(); ++i)  // the sinks
                if (g.node(static_cast<int>(i)).op_type == "ReduceMax")
                    ms += launch_ms + ms_per_flop * static_cast<double>(costs[i].flops) +
                          ms_per_byte * static_cast<double>(costs[i].bytes());
            return ms * (1 + noise * rng.uniform(-1, 1));
        }
        std::vector<std::string> eff(g.num_nodes()), anchor(g.num_nodes());
        std::vector<char> blocked(g.num_nodes(), 0);
        for (int v : g.topological_order()) {
            const auto vi = static_cast<std::size_t>(v);
            const auto& n = g.node(v);
            const auto& c = costs[vi];
            eff[vi] = anchor[vi] = n.op_type;
            const Pair* absorbed = nullptr;
            int fused_input = -1;
            for (int t : n.inputs) {
                if (t < 0 || absorbed) continue;
                const auto& ten = g.tensor(t);
                if (ten.producer < 0 || ten.consumers.size() != 1 || ten.is_output) continue;
                const auto u = static_cast<std::size_t>(ten.producer);
                for (const auto& p : pairs)
                    if (p.producer == eff[u] && p.consumer == n.op_type && p.operands == operands(g, v, t) &&
                        (p.after.empty() || p.after == anchor[u])) {
                        absorbed = &p;
                        fused_input = t;
                        eff[vi] = p.fold ? eff[u] : n.op_type;
                        anchor[vi] = anchor[u];
                        blocked[vi] = blocked[u];
                        break;
                    }
            }
            if (!absorbed) blocked[vi] = aligned_conv(g, n);
            for (int t : n.inputs) {  // a data input crossing between layouts is reordered
                if (t < 0 || t == fused_input || t != n.inputs[0] || g.tensor(t).kind == graph::TensorKind::weight)
                    continue;
                const int p = g.tensor(t).producer;
                if ((p >= 0 && blocked[static_cast<std::size_t>(p)]) != static_cast<bool>(blocked[vi]))
                    ms += 2 * ms_per_byte * static_cast<double>(g.tensor(t).bytes());
            }
            if (absorbed) {
                if (!absorbed->fold) ms += ms_per_flop * static_cast<double>(c.flops);
                continue;
            }
            const double per_flop = n.op_type == "Conv" && block > 0 && !blocked[vi] ? 1.6 * ms_per_flop : ms_per_flop;
            ms += launch_ms + per_flop * static_cast<double>(c.flops) + ms_per_byte * static_cast<double>(c.bytes());
        }
        return ms * (1 + noise * rng.uniform(-1, 1));
    }
};

// A residual block with a classifier head, and a transformer-style piece with a decomposed LayerNorm.
std::vector<Graph> networks() {
    Graph a("resnet-like");
    const int x = a.add_input("x", {1, 32, 16, 16});
    const int r1 = same(a, "Relu", "relu1", {batch_norm(a, "bn1", conv(a, "conv1", x, 32, 3))});
    const int b2 = batch_norm(a, "bn2", conv(a, "conv2", r1, 32, 3));
    const int r2 = same(a, "Relu", "relu2", {same(a, "Add", "add", {b2, x})});
    const int mp =
        a.add_op("MaxPool", "pool", {r2}, {1, 32, 8, 8}, {{"kernel_shape", Ints{2, 2}}, {"strides", Ints{2, 2}}});
    const int gap = a.add_op("GlobalAveragePool", "gap", {mp}, {1, 32, 1, 1});
    const int flat = a.add_op("Flatten", "flatten", {gap}, {1, 32});
    const int h =
        same(a, "Relu", "relu3",
             {a.add_op("Gemm", "fc1", {flat, a.add_weight("w1", {32, 64}), a.add_weight("b1", {64})}, {1, 64})});
    a.mark_output(a.add_op("Gemm", "fc2", {h, a.add_weight("w2", {64, 10})}, {1, 10}));
    a.validate();

    Graph b("transformer-like");
    const int t = b.add_input("tokens", {1, 16, 64});
    const int ln = layer_norm_decomposed(b, "ln", t);
    const int mm = b.add_op("MatMul", "proj", {ln, b.add_weight("w", {64, 64})}, {1, 16, 64});
    b.mark_output(same(b, "Relu", "act", {same(b, "Add", "bias", {mm, b.add_weight("bias", {64})})}));
    b.validate();
    return {a, b};
}

const char* const planted_text = R"(dnncost-fusion-rules 1
pattern LayerNormalization ReduceMean Sub Pow ReduceMean Add Sqrt Div Mul Add
fold Conv BatchNormalization operands=constant
fuse Conv Relu operands=none
fuse Conv Add operands=activation
fuse Add Relu operands=none after=Conv
fuse Gemm Relu operands=none
fuse MatMul Add operands=constant
)";

/// The rule lines of a rule set, as a set (the order of discovery is not the planted order).
std::set<std::string> rule_lines(const device::FusionRules& r) {
    std::set<std::string> out;
    std::istringstream in(r.to_text());
    for (std::string line; std::getline(in, line);)
        if (line.rfind("fuse", 0) == 0 || line.rfind("fold", 0) == 0 || line.rfind("pattern", 0) == 0) out.insert(line);
    return out;
}

device::DiscoveryOptions options() {
    device::DiscoveryOptions o;
    o.repeats = 5;
    o.max_repeats = 20;
    o.device = "fake";
    o.candidate_patterns = device::FusionRules::parse(planted_text).patterns;
    return o;
}

}  // namespace

TEST_CASE("fusion discovery: recovers the planted rules, folds and layout block of a fake device") {
    FakeDevice device;
    const device::MeasureOne measure = [&](const Graph& g) { return device(g); };
    const auto res = device::discover_fusion_rules(networks(), measure, options());
    CHECK(rule_lines(res.rules) == rule_lines(device::FusionRules::parse(planted_text)));
    CHECK(res.rules.layout.block == 16);
    CHECK(res.layout.block == 16);
    CHECK(res.rules.device == "fake");
    CHECK(res.unmeasured == 0);
    CHECK(res.measurements == device.calls);
    CHECK(res.measurements <= options().max_measurements);
    // the evidence of a pair the device does not fuse: both parts and the whole measured
    const auto it = std::find_if(res.evidence.begin(), res.evidence.end(), [](const device::FusionEvidence& e) {
        return e.what == "pair" && e.kinds == std::vector<std::string>{"BatchNormalization", "Relu"};
    });
    REQUIRE(it != res.evidence.end());
    CHECK(it->measured);
    CHECK_FALSE(it->fused);
    CHECK(it->parts_ms.size() == 2);
    CHECK(it->occurrences == 1);
    // Add -> Relu alone is not fused; behind a Conv it is (a chain)
    int add_relu = 0;
    for (const auto& e : res.evidence)
        if (e.kinds.size() >= 2 && e.kinds[e.kinds.size() - 2] == "Add" && e.kinds.back() == "Relu")
            add_relu += e.fused ? 10 : 1;
    CHECK(add_relu == 10 + 1 + 1);  // fused behind Conv; not alone; not behind MatMul
    const auto json = res.to_json();
    CHECK(json.front() == '{');
    CHECK(json.back() == '}');
    CHECK(json.find("\"block\": 16") != std::string::npos);

    SUBCASE("the discovered rules price the networks as the planted ones do") {
        const auto planted = device::FusionRules::parse(planted_text);
        for (const auto& g : networks()) {
            auto with_layout = planted;
            with_layout.layout = res.rules.layout;
            CHECK(device::kernel_graph(g, res.rules).to_json(g) == device::kernel_graph(g, with_layout).to_json(g));
        }
    }
}

TEST_CASE("fusion discovery: the layout probe finds block 8, and no block on a device without one") {
    for (const std::int64_t block : {std::int64_t{8}, std::int64_t{0}}) {
        CAPTURE(block);
        FakeDevice device;
        device.block = block;
        auto o = options();
        o.chain_rounds = 0;
        const device::MeasureOne measure = [&](const Graph& g) { return device(g); };
        const auto res = device::discover_fusion_rules(networks(), measure, o);
        CHECK(res.layout.measured);
        CHECK(res.layout.channels == std::vector<std::int64_t>{64, 56, 60});
        CHECK(res.layout.block == block);
        CHECK(res.rules.layout.block == block);
        CHECK(res.rules.layout.enabled() == (block > 0));
    }
}

TEST_CASE("fusion discovery: a device without fusion gives no rules") {
    FakeDevice device;
    device.pairs.clear();
    device.layer_norm = false;
    const device::MeasureOne measure = [&](const Graph& g) { return device(g); };
    const auto res = device::discover_fusion_rules(networks(), measure, options());
    CHECK(rule_lines(res.rules).empty());
    CHECK(res.unmeasured == 0);
}

TEST_CASE("fusion discovery: the budget caps the measurements and what is left is reported") {
    FakeDevice device;
    device.noise = 0;  // one measurement per graph: the budget, not the noise, is under test
    auto o = options();
    o.repeats = 1;
    o.max_measurements = 30;
    const device::MeasureOne measure = [&](const Graph& g) { return device(g); };
    const auto res = device::discover_fusion_rules(networks(), measure, o);
    CHECK(res.measurements <= 30);
    CHECK(res.measurements == device.calls);
    CHECK(res.unmeasured > 0);
    const auto planted = rule_lines(device::FusionRules::parse(planted_text));
    for (const auto& line : rule_lines(res.rules)) CHECK(planted.count(line) == 1);
    bool noted = false;
    for (const auto& e : res.evidence) noted = noted || e.note == "over the measurement budget";
    CHECK(noted);
}

TEST_CASE("fusion discovery: batches, failed graphs and broken measurements") {
    FakeDevice device;
    SUBCASE("a batch callback gets each pending graph once per repeat") {
        std::size_t batches = 0, graphs = 0;
        const device::MeasureBatch measure = [&](const std::vector<Graph>& gs) {
            ++batches;
            graphs += gs.size();
            std::vector<double> out;
            for (const auto& g : gs) out.push_back(device(g));
            return out;
        };
        const auto res = device::discover_fusion_rules(networks(), measure, options());
        CHECK(res.measurements == graphs);
        CHECK(batches % 5 == 0);  // options().repeats
        CHECK(graphs % 5 == 0);
        CHECK(rule_lines(res.rules) == rule_lines(device::FusionRules::parse(planted_text)));
    }
    SUBCASE("a graph that fails (NaN) leaves its candidates unmeasured") {
        const device::MeasureOne measure = [&](const Graph& g) {
            for (const auto& n : g.nodes())
                if (n.op_type == "Gemm") return std::nan("");
            return device(g);
        };
        auto o = options();
        o.chain_rounds = 0;
        const auto res = device::discover_fusion_rules(networks(), measure, o);
        for (const auto& e : res.evidence)
            if (std::find(e.kinds.begin(), e.kinds.end(), "Gemm") != e.kinds.end()) {
                CHECK_FALSE(e.measured);
                CHECK(e.note == "a graph could not be measured");
            }
        CHECK(res.rules.find("Gemm", "Relu", device::Operands::none, "Gemm") == nullptr);
        CHECK(res.rules.find("Conv", "BatchNormalization", device::Operands::constant, "Conv") != nullptr);
    }
    SUBCASE("a negative latency or a wrong count is an error naming the graph") {
        const device::MeasureOne negative = [](const Graph&) { return -1.0; };
        CHECK_THROWS_WITH_AS(device::discover_fusion_rules(networks(), negative, options()),
                             doctest::Contains("returned -1 ms"), config_error);
        const device::MeasureBatch short_batch = [](const std::vector<Graph>&) { return std::vector<double>{1.0}; };
        CHECK_THROWS_WITH_AS(device::discover_fusion_rules(networks(), short_batch, options()),
                             doctest::Contains("returned 1 latencies"), config_error);
    }
    SUBCASE("bad options") {
        const device::MeasureOne measure = [&](const Graph& g) { return device(g); };
        auto o = options();
        o.candidate_blocks = {24};
        CHECK_THROWS_WITH_AS(device::discover_fusion_rules(networks(), measure, o),
                             doctest::Contains("candidate block 24"), config_error);
        o = options();
        o.repeats = 0;
        CHECK_THROWS_AS(device::discover_fusion_rules(networks(), measure, o), config_error);
    }
}
