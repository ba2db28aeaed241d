// Channel pruning: the coupling analysis on small graphs built by hand (one per coupling kind,
// expected channel counts computed by hand), and on the shared real networks; every pruned
// graph is exported to ONNX and its shapes are inferred again by ONNX, strictly.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <dnncost/core/rng.hpp>
#include <dnncost/graph/hash.hpp>
#include <dnncost/io/onnx.hpp>
#include <dnncost/io/onnx/proto.hpp>  // ONNX messages, built and read here
#include <dnncost/search/compression/handover.hpp>
#include <dnncost/search/compression/prune.hpp>

using namespace dnncost;
namespace sc = dnncost::search::compression;
namespace fs = std::filesystem;

namespace {

using graph::Attribute;
using graph::Shape;

/// A small graph builder: NCHW activations, weights by shape.
struct Builder {
    graph::Graph g{"hand"};
    int input(std::int64_t c, std::int64_t hw = 8) { return g.add_input("x", {1, c, hw, hw}); }
    int conv(const std::string& name, int x, std::int64_t k, std::int64_t group = 1, std::int64_t kernel = 1,
             bool bias = true) {
        const auto xs = g.tensor(x).shape;  // a copy: adding the weights below may move the tensors
        const int w = g.add_weight(name + ".w", {k, xs[1] / group, kernel, kernel});
        std::vector<int> in{x, w};
        if (bias) in.push_back(g.add_weight(name + ".b", {k}));
        const std::int64_t p = kernel / 2;
        return g.add_op("Conv", name, in, {xs[0], k, xs[2], xs[3]},
                        {{"group", group},
                         {"kernel_shape", std::vector<std::int64_t>{kernel, kernel}},
                         {"pads", std::vector<std::int64_t>{p, p, p, p}}});
    }
    int bn(const std::string& name, int x) {
        const auto c = g.tensor(x).shape[1];
        std::vector<int> in{x};
        for (const char* p : {".scale", ".bias", ".mean", ".var"}) in.push_back(g.add_weight(name + p, {c}));
        return g.add_op("BatchNormalization", name, in, g.tensor(x).shape);
    }
    int unary(const std::string& op, const std::string& name, int x) {
        return g.add_op(op, name, {x}, g.tensor(x).shape);
    }
    int add(const std::string& name, int a, int b) { return g.add_op("Add", name, {a, b}, g.tensor(a).shape); }
    int concat(const std::string& name, std::vector<int> xs) {
        auto s = g.tensor(xs[0]).shape;
        s[1] = 0;
        for (int x : xs) s[1] += g.tensor(x).shape[1];
        return g.add_op("Concat", name, xs, s, {{"axis", std::int64_t{1}}});
    }
    /// Conv as the graph output (its channels stay whole).
    void head(int x, std::int64_t k) { g.mark_output(conv("head", x, k)); }
};

std::int64_t channels_of(const graph::Graph& g, const std::string& tensor) {
    return g.tensor(g.find_tensor(tensor)).shape.at(1);
}
Shape shape_of(const graph::Graph& g, const std::string& tensor) { return g.tensor(g.find_tensor(tensor)).shape; }

Shape shape_of(const onnx::ValueInfoProto& v) {
    Shape s;
    for (const auto& d : v.type().tensor_type().shape().dim()) s.push_back(d.has_dim_value() ? d.dim_value() : -1);
    return s;
}

/// Export (shapes only, or with random weights), check, then let ONNX infer every activation
/// shape from scratch, strictly, and compare with the pruned graph's.
void check_onnx(const graph::Graph& g, io::WeightData weights = io::WeightData::none) {
    CAPTURE(g.name());
    io::OnnxExportOptions eo;
    eo.weights = weights;
    std::string bytes;
    REQUIRE_NOTHROW(bytes = io::export_onnx_bytes(g, eo));
    onnx::ModelProto m;
    REQUIRE(m.ParseFromString(bytes));
    CHECK_NOTHROW(onnx::checker::check_model(m));
    m.mutable_graph()->clear_value_info();
    for (auto& o : *m.mutable_graph()->mutable_output()) o.mutable_type()->mutable_tensor_type()->clear_shape();
    REQUIRE_NOTHROW(onnx::shape_inference::InferShapes(m, onnx::OpSchemaRegistry::Instance(),
                                                       onnx::ShapeInferenceOptions(true, 1, true)));
    std::map<std::string, Shape> inferred;
    for (const auto& v : m.graph().value_info()) inferred[v.name()] = shape_of(v);
    for (const auto& v : m.graph().output()) inferred[v.name()] = shape_of(v);
    for (const auto& t : g.tensors()) {
        if (t.kind != graph::TensorKind::activation) continue;
        CAPTURE(t.name);
        const auto it = inferred.find(t.name);
        REQUIRE(it != inferred.end());
        CHECK(it->second == t.shape);
    }
}

fs::path model_path(const std::string& f) { return fs::path(DNNCOST_DATA_DIR) / "onnx" / f; }

}  // namespace

TEST_CASE("compress: keep-ratio steps") {
    CHECK(sc::keep_steps() == std::vector<double>{0.25, 0.375, 0.5, 0.625, 0.75, 0.875, 1.0});
    CHECK(sc::keep_steps(0.5, 1.0, 0.25) == std::vector<double>{0.5, 0.75, 1.0});
    CHECK(sc::keep_steps(0.3, 1.0, 0.3) == std::vector<double>{0.3, 0.6, 0.9, 1.0});
    CHECK_THROWS_AS(sc::keep_steps(0, 1, 0.1), config_error);
    CHECK_THROWS_AS(sc::keep_steps(0.5, 1.5, 0.1), config_error);
}

TEST_CASE("compress: a residual Add couples the layers it joins into one gene") {
    Builder b;
    const int x = b.input(3);
    const int c1 = b.unary("Relu", "r1", b.bn("bn1", b.conv("c1", x, 16, 1, 3, false)));
    const int c2 = b.bn("bn2", b.conv("c2", c1, 16));
    const int sum = b.unary("Relu", "r2", b.add("res", c2, c1));
    const int c3 = b.conv("c3", sum, 32);
    const int pooled = b.g.add_op("GlobalAveragePool", "gap", {c3}, {1, 32, 1, 1});
    const int flat = b.g.add_op("Flatten", "flat", {pooled}, {1, 32}, {{"axis", std::int64_t{1}}});
    const int fc_w = b.g.add_weight("fc.w", {10, 32}), fc_b = b.g.add_weight("fc.b", {10});
    b.g.mark_output(b.g.add_op("Gemm", "fc", {flat, fc_w, fc_b}, {1, 10}, {{"transB", std::int64_t{1}}}));

    sc::Pruner p(b.g);
    REQUIRE(p.num_groups() == 2);
    CHECK(p.groups()[0].name == "c1");
    CHECK(p.groups()[0].producers.size() == 2);  // c1 and c2 write the channels the Add joins
    CHECK(p.groups()[1].name == "c3");
    REQUIRE(p.analysis().fixed.size() == 1);  // the classifier writes the graph output
    CHECK(p.analysis().fixed[0].node == "fc");
    CHECK(p.analysis().fixed[0].reason == "graph output");

    const std::vector<double> r{0.5, 0.25};
    const auto h = p.apply(r);
    CHECK(shape_of(h, "c1.w") == Shape{8, 3, 3, 3});
    CHECK(shape_of(h, "c2.w") == Shape{8, 8, 1, 1});
    CHECK(shape_of(h, "bn2.var") == Shape{8});
    CHECK(channels_of(h, "res:0") == 8);
    CHECK(shape_of(h, "c3.w") == Shape{8, 8, 1, 1});
    CHECK(shape_of(h, "c3.b") == Shape{8});
    CHECK(shape_of(h, "flat:0") == Shape{1, 8});
    CHECK(shape_of(h, "fc.w") == Shape{10, 8});
    CHECK(shape_of(h, "fc:0") == Shape{1, 10});
    check_onnx(h);
    check_onnx(h, io::WeightData::random);
    // the unpruned genome gives the network back
    CHECK(p.apply(std::vector<double>{1.0, 1.0}) == b.g);
    CHECK(p.proxy_accuracy(std::vector<double>{1.0, 1.0}) == doctest::Approx(1.0));
    CHECK(p.proxy_accuracy(r) < p.proxy_accuracy(std::vector<double>{0.5, 0.5}));
}

TEST_CASE("compress: a depthwise convolution follows its input's channels") {
    Builder b;
    const int x = b.input(3);
    const int c1 = b.unary("Clip", "relu6", b.conv("c1", x, 16));
    const int dw = b.unary("Relu", "r", b.bn("bn", b.conv("dw", c1, 16, 16, 3)));
    b.head(b.conv("c2", dw, 24), 4);
    sc::Pruner p(b.g);
    REQUIRE(p.num_groups() == 2);
    CHECK(p.groups()[0].name == "c1");
    CHECK(p.groups()[0].producers.size() == 1);  // the depthwise layer writes no new channels
    const auto h = p.apply(std::vector<double>{0.5, 0.75});
    CHECK(shape_of(h, "dw.w") == Shape{8, 1, 3, 3});
    CHECK(h.node(h.find_node("dw")).attr_int("group", 0) == 8);
    CHECK(shape_of(h, "bn.scale") == Shape{8});
    CHECK(shape_of(h, "c2.w") == Shape{18, 8, 1, 1});
    CHECK(shape_of(h, "head.w") == Shape{4, 18, 1, 1});
    check_onnx(h);
}

TEST_CASE("compress: grouped convolutions keep channel counts that are multiples of the group count") {
    Builder b;
    const int x = b.input(3);
    const int c1 = b.conv("c1", x, 16);
    const int gc = b.conv("gc", c1, 32, 4, 3);
    b.head(gc, 8);
    sc::Pruner p(b.g);
    REQUIRE(p.num_groups() == 2);
    CHECK(p.groups()[0].multiple == 4);
    CHECK(p.groups()[1].multiple == 4);
    // 16 x 0.3 = 4.8 -> 4 (one multiple of 4); 32 x 0.3 = 9.6 -> 8; at least one multiple
    const auto h = p.apply(std::vector<double>{0.3, 0.3});
    CHECK(shape_of(h, "c1.w") == Shape{4, 3, 1, 1});
    CHECK(shape_of(h, "gc.w") == Shape{8, 1, 3, 3});
    CHECK(shape_of(h, "head.w") == Shape{8, 8, 1, 1});
    check_onnx(h);
    const auto l = p.apply(std::vector<double>{0.01, 0.01});
    CHECK(shape_of(l, "c1.w") == Shape{4, 3, 1, 1});
    CHECK(shape_of(l, "gc.w") == Shape{4, 1, 3, 3});
    check_onnx(l);
}

TEST_CASE("compress: a channel Concat sums its pruned parts") {
    Builder b;
    const int x = b.input(3);
    const int a = b.conv("a", x, 8);
    const int c = b.conv("c", x, 24, 1, 3);
    const int pool = b.g.add_op(
        "MaxPool", "pool", {x}, {1, 3, 8, 8},
        {{"kernel_shape", std::vector<std::int64_t>{3, 3}}, {"pads", std::vector<std::int64_t>{1, 1, 1, 1}}});
    const int cat = b.concat("cat", {a, c, pool});
    b.head(b.unary("Relu", "r", cat), 4);
    sc::Pruner p(b.g);
    REQUIRE(p.num_groups() == 2);
    const auto h = p.apply(std::vector<double>{0.5, 0.25});
    CHECK(channels_of(h, "cat:0") == 4 + 6 + 3);  // the input's channels stay whole
    CHECK(shape_of(h, "head.w") == Shape{4, 13, 1, 1});
    check_onnx(h);
}

TEST_CASE("compress: a concatenation joined with other channels stays whole, and so do its parts") {
    Builder b;
    const int x = b.input(3);
    const int cat = b.concat("cat", {b.conv("a", x, 8), b.conv("c", x, 8)});
    const int d = b.conv("d", x, 16);
    b.head(b.add("sum", cat, d), 4);
    sc::Pruner p(b.g);
    CHECK(p.num_groups() == 0);
    CHECK(p.analysis().fixed.size() == 4);  // a, c, d and the head
    check_onnx(p.apply(std::vector<double>{}));
}

TEST_CASE("compress: an equal channel Split prunes its parent in multiples of the piece count") {
    for (const bool sizes_input : {false, true}) {
        CAPTURE(sizes_input);
        Builder b;
        const int x = b.input(3);
        const int c1 = b.conv("c1", x, 16);
        const int s0 = b.g.add_tensor("s0", {1, 8, 8, 8}), s1 = b.g.add_tensor("s1", {1, 8, 8, 8});
        std::vector<int> in{c1};
        if (sizes_input) {
            const int sizes = b.g.add_weight("sizes", {2}, graph::DataType::int64);
            b.g.set_data(sizes, {8, 8});
            in.push_back(sizes);
        }
        b.g.add_node("Split", "split", in, {s0, s1}, {{"axis", std::int64_t{1}}});
        const int l = b.conv("l", s0, 8), r = b.conv("r", s1, 8);
        b.head(b.concat("cat", {l, r}), 4);
        sc::Pruner p(b.g);
        REQUIRE(p.num_groups() == 3);
        CHECK(p.groups()[0].multiple == 2);
        const auto h = p.apply(std::vector<double>{0.25, 0.5, 1.0});
        CHECK(channels_of(h, "s0") == 2);
        CHECK(shape_of(h, "l.w") == Shape{4, 2, 1, 1});
        CHECK(shape_of(h, "head.w") == Shape{4, 12, 1, 1});
        if (sizes_input) CHECK(h.tensor(h.find_tensor("sizes")).data == std::vector<double>{2, 2});
        check_onnx(h);
    }
}

TEST_CASE("compress: a Slice over channels leaves the layers it reads whole and says why") {
    Builder b;
    const int x = b.input(3);
    const int c1 = b.conv("c1", x, 16);
    const int starts = b.g.add_weight("starts", {1}, graph::DataType::int64);
    const int ends = b.g.add_weight("ends", {1}, graph::DataType::int64);
    const int axes = b.g.add_weight("axes", {1}, graph::DataType::int64);
    b.g.set_data(starts, {0});
    b.g.set_data(ends, {8});
    b.g.set_data(axes, {1});
    const int sl = b.g.add_op("Slice", "slice", {c1, starts, ends, axes}, {1, 8, 8, 8});
    b.head(b.conv("c2", sl, 8), 4);
    sc::Pruner p(b.g);
    REQUIRE(p.num_groups() == 1);
    CHECK(p.groups()[0].name == "c2");
    REQUIRE(!p.analysis().fixed.empty());
    CHECK(p.analysis().fixed[0].node == "c1");
    CHECK(p.analysis().fixed[0].reason.find("slice") != std::string::npos);
    check_onnx(p.apply(std::vector<double>{0.5}));
}

TEST_CASE("compress: real networks prune to consistent shapes that ONNX infers again") {
    for (const std::string file : {"mobilenet_v2.onnx", "resnet50.onnx", "inception_v3.onnx"}) {
        CAPTURE(file);
        const sc::Pruner p(io::import_onnx(model_path(file)));
        MESSAGE(file, ": ", p.num_groups(), " channel groups, ", p.analysis().fixed.size(), " layers left whole");
        REQUIRE(p.num_groups() > 10);
        const auto steps = sc::keep_steps();
        Rng rng(7);
        std::vector<int> genome(p.num_groups());
        for (auto& gene : genome) gene = static_cast<int>(rng.below(steps.size()));
        const auto h = p.apply_genome(genome, steps);
        CHECK(h.parameter_count() < p.graph().parameter_count());
        check_onnx(h);
        // the lowest ratio everywhere
        std::vector<int> low(p.num_groups(), 0);
        check_onnx(p.apply_genome(low, steps));
    }
}

// ------------------------------------------------------------------ the handover search

namespace {
/// A latency "device": 0.5 ms plus 1 ms per million parameters, counting its calls.
struct FakeDevice {
    std::size_t calls = 0, graphs = 0;
    std::map<std::string, int> seen;
    std::size_t fail_every = 0;  ///< every n-th graph fails (0: none)
    std::vector<std::optional<double>> operator()(std::span<const graph::Graph* const> gs) {
        ++calls;
        std::vector<std::optional<double>> out;
        for (const auto* g : gs) {
            ++graphs;
            ++seen[graph::canonical_hash(*g).hex()];
            if (fail_every && graphs % fail_every == 0)
                out.emplace_back(std::nullopt);
            else
                out.emplace_back(0.5 + static_cast<double>(g->parameter_count()) / 1e6);
        }
        return out;
    }
};
}  // namespace

TEST_CASE("compress: the handover search measures first, then estimates, and measures the final front") {
    const sc::Pruner p(io::import_onnx(model_path("squeezenet1_1.onnx")));
    FakeDevice device;
    sc::HandoverOptions o;
    o.population = 10;
    o.generations = 4;
    o.handover = 2;
    o.estimator = "additive";
    o.remeasure_budget = 3;
    o.seed = 5;
    sc::HandoverSearch search(p, o, std::ref(device), {});
    std::vector<sc::GenerationReport> reports;
    sc::HandoverSearch::Events ev;
    ev.on_generation = [&](const sc::GenerationReport& r) { reports.push_back(r); };
    const auto r = search.run(ev);
    REQUIRE(reports.size() == 4);
    CHECK(!reports[0].estimated);
    CHECK(!reports[1].estimated);
    CHECK(reports[2].estimated);
    CHECK(reports[3].estimated);
    CHECK(reports[0].measured == 10);
    // nothing measured twice; the measured count is what the device saw
    for (const auto& [key, n] : device.seen) CHECK(n == 1);
    CHECK(r.measured == device.graphs);
    CHECK(r.remeasured <= 3);
    CHECK(r.estimated >= 10);
    CHECK(r.measured + r.estimated >= r.all.size());
    REQUIRE(!r.front.empty());
    for (const auto& c : r.front) {
        CHECK(c.measured.has_value());
        CHECK(c.estimated.has_value());
        CHECK(c.accuracy > 0);
        CHECK(c.accuracy <= 1);
    }
    CHECK(std::isfinite(r.front_mape));
    CHECK(std::isfinite(r.validation_mape));
    // the additive baseline is the estimator here: no separate comparison
    CHECK(std::isnan(r.baseline_front_mape));
}

TEST_CASE("compress: failed measurements make candidates infeasible, never stop the search") {
    const sc::Pruner p(io::import_onnx(model_path("squeezenet1_1.onnx")));
    FakeDevice device;
    device.fail_every = 4;
    sc::HandoverOptions o;
    o.population = 8;
    o.generations = 3;
    o.handover = 3;  // measured all the way: no estimator
    o.seed = 1;
    sc::HandoverSearch search(p, o, std::ref(device), {});
    const auto r = search.run();
    CHECK(r.failed >= 4);
    CHECK(r.estimated == 0);
    REQUIRE(!r.front.empty());
    for (const auto& c : r.front) {
        CHECK(!c.failed);
        CHECK(c.measured.has_value());
        CHECK(!c.estimated.has_value());
    }
    CHECK(std::isnan(r.front_mape));
    // one generation: the initial population alone, measured
    o.generations = 1;
    o.handover = 1;
    FakeDevice once;
    sc::HandoverSearch single(p, o, std::ref(once), {});
    const auto s = single.run();
    CHECK(s.all.size() == 8);
    CHECK(once.graphs == 8);
}
