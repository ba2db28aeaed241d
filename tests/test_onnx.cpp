// ONNX import/export: the shared models, shape folding, exact round trips, bad input and a
// small fuzz test (truncated and byte-mutated fixtures must import or throw, never crash).
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <functional>
#include <limits>
#include <string>

#include <dnncost/core/rng.hpp>
#include <dnncost/cost/analytic.hpp>
#include <dnncost/io/file.hpp>
#include <dnncost/io/onnx.hpp>
#include <dnncost/io/onnx/proto.hpp>  // ONNX messages, built and read here
#include <dnncost/io/onnx/weight_values.hpp>
#include <dnncost/spaces/nb201.hpp>

using namespace dnncost;
namespace fs = std::filesystem;

namespace {

fs::path model_path(const std::string& f) { return fs::path(DNNCOST_DATA_DIR) / "onnx" / f; }

struct Published {
    const char* file;
    double gmacs;
};
// torchvision / the data README: whole-model multiply-accumulates at 224x224, batch 1
constexpr Published kModels[] = {{"resnet50.onnx", 4.09},
                                 {"mobilenet_v2.onnx", 0.30},
                                 {"squeezenet1_1.onnx", 0.35},
                                 {"resnet18-v1-7-no-weight.onnx", 1.81}};

int count_op(const graph::Graph& g, const std::string& op) {
    int n = 0;
    for (const auto& nd : g.nodes()) n += nd.op_type == op;
    return n;
}

fs::path temp_dir() {
    auto d = fs::path(DNNCOST_BINARY_DIR) / "test_onnx_tmp";
    fs::create_directories(d);
    return d;
}

// --- raw proto helpers for hand-built models
void set_type(onnx::ValueInfoProto& v, const std::string& name, int elem, const std::vector<std::int64_t>& dims) {
    v.set_name(name);
    auto* tt = v.mutable_type()->mutable_tensor_type();
    tt->set_elem_type(elem);
    if (dims.empty()) return;  // rank unknown: left to shape inference
    auto* sh = tt->mutable_shape();
    for (auto d : dims) sh->add_dim()->set_dim_value(d);
}
onnx::NodeProto& add_node(onnx::GraphProto& g, const std::string& op, const std::string& name,
                          std::vector<std::string> in, std::vector<std::string> out) {
    auto& n = *g.add_node();
    n.set_op_type(op);
    n.set_name(name);
    for (auto& i : in) n.add_input(i);
    for (auto& o : out) n.add_output(o);
    return n;
}
void add_int_attr(onnx::NodeProto& n, const std::string& name, std::int64_t v) {
    auto& a = *n.add_attribute();
    a.set_name(name);
    a.set_type(onnx::AttributeProto::INT);
    a.set_i(v);
}
void add_ints_attr(onnx::NodeProto& n, const std::string& name, std::vector<std::int64_t> v) {
    auto& a = *n.add_attribute();
    a.set_name(name);
    a.set_type(onnx::AttributeProto::INTS);
    for (auto x : v) a.add_ints(x);
}
void add_int64_init(onnx::GraphProto& g, const std::string& name, std::vector<std::int64_t> v, bool scalar = false) {
    auto& t = *g.add_initializer();
    t.set_name(name);
    t.set_data_type(onnx::TensorProto::INT64);
    if (!scalar) t.add_dims(static_cast<std::int64_t>(v.size()));
    for (auto x : v) t.add_int64_data(x);
}
onnx::ModelProto new_model(int opset) {
    onnx::ModelProto m;
    m.set_ir_version(7);
    auto* o = m.add_opset_import();
    o->set_domain("");
    o->set_version(opset);
    m.mutable_graph()->set_name("hand");
    return m;
}
std::string bytes_of(const onnx::ModelProto& m) {
    std::string s;
    REQUIRE(m.SerializeToString(&s));
    return s;
}

/// Shape computation as torch emits it for `x.view(x.size(0), -1)`:
/// Conv -> Shape -> Gather(0) -> Unsqueeze -> Concat(with [-1]) -> Reshape -> Gemm.
onnx::ModelProto flatten_chain_model(int opset) {
    auto m = new_model(opset);
    auto& g = *m.mutable_graph();
    set_type(*g.add_input(), "x", 1, {2, 3, 8, 8});
    set_type(*g.add_output(), "logits", 1, {2, 5});
    auto& w = *g.add_initializer();  // stripped weights: shape only
    w.set_name("w");
    w.set_data_type(onnx::TensorProto::FLOAT);
    for (auto d : {4, 3, 3, 3}) w.add_dims(d);
    auto& fw = *g.add_initializer();
    fw.set_name("fc_w");
    fw.set_data_type(onnx::TensorProto::FLOAT);
    for (auto d : {5, 144}) fw.add_dims(d);
    auto& conv = add_node(g, "Conv", "conv", {"x", "w"}, {"c"});
    add_ints_attr(conv, "kernel_shape", {3, 3});
    add_node(g, "Shape", "shape", {"c"}, {"s"});
    add_int64_init(g, "zero", {0}, true);
    add_node(g, "Gather", "gather", {"s", "zero"}, {"n"});
    if (opset >= 13) {
        add_int64_init(g, "axes0", {0});
        add_node(g, "Unsqueeze", "unsq", {"n", "axes0"}, {"n1"});
    } else {
        add_ints_attr(add_node(g, "Unsqueeze", "unsq", {"n"}, {"n1"}), "axes", {0});
    }
    add_int64_init(g, "minus1", {-1});
    add_int_attr(add_node(g, "Concat", "concat", {"n1", "minus1"}, {"target"}), "axis", 0);
    add_node(g, "Reshape", "reshape", {"c", "target"}, {"flat"});
    add_int_attr(add_node(g, "Gemm", "fc", {"flat", "fc_w"}, {"logits"}), "transB", 1);
    return m;
}

}  // namespace

TEST_CASE("onnx: the four shared models import, validate and match published MACs within 3%") {
    for (const auto& pm : kModels) {
        CAPTURE(pm.file);
        const auto g = io::import_onnx(model_path(pm.file));
        CHECK_NOTHROW(g.validate());
        CHECK(g.is_topologically_sorted());
        CHECK(g.outputs().size() == 1);
        CHECK(g.inputs().size() == 1);
        CHECK(g.tensor(g.inputs()[0]).shape == graph::Shape{1, 3, 224, 224});
        CHECK(g.tensor(g.outputs()[0]).shape == graph::Shape{1, 1000});
        // Identity-of-weight and Constant nodes are folded into weights, never operators.
        CHECK(count_op(g, "Identity") == 0);
        CHECK(count_op(g, "Constant") == 0);
        for (const auto& nd : g.nodes()) {
            CHECK_MESSAGE(cost::is_known_operator(nd.op_type), nd.op_type);
            for (int t : nd.outputs) {
                const auto& s = g.tensor(t).shape;
                CHECK_MESSAGE(!s.empty(), nd.name);
                for (auto d : s) CHECK_MESSAGE(d > 0, nd.name);
            }
        }
        const auto total = cost::total_cost(g);
        const double gmacs = static_cast<double>(total.macs) / 1e9;
        CHECK(std::abs(gmacs - pm.gmacs) / pm.gmacs < 0.03);
        CHECK(total.params > 1'000'000);
    }
    // node counts after folding: every Conv of the file survives
    const auto r50 = io::import_onnx(model_path("resnet50.onnx"));
    CHECK(count_op(r50, "Conv") == 53);
    CHECK(count_op(r50, "Gemm") == 1);
    CHECK(r50.num_nodes() == 169 - 47);  // 47 Identity nodes of shared weights folded
    const auto r18 = io::import_onnx(model_path("resnet18-v1-7-no-weight.onnx"));
    // opset 8: initializers listed as graph inputs are weights, not inputs
    CHECK(r18.weights().size() == 102);
    CHECK(r18.node(0).op_type == "Conv");
    CHECK(r18.node(0).attr_ints("kernel_shape") == std::vector<std::int64_t>{7, 7});
    CHECK(r18.node(1).attr_float("epsilon", 0) == 1e-5);  // float32 widened to the shortest decimal
}

TEST_CASE("onnx: a Shape->Gather->Unsqueeze->Concat->Reshape chain is folded (opsets 11, 13, 17)") {
    for (int opset : {11, 13, 17}) {
        CAPTURE(opset);
        const auto g = io::import_onnx_bytes(bytes_of(flatten_chain_model(opset)), "chain.onnx");
        REQUIRE(g.num_nodes() == 3);
        CHECK(g.node(0).op_type == "Conv");
        CHECK(g.node(1).op_type == "Reshape");
        CHECK(g.node(2).op_type == "Gemm");
        CHECK(g.tensor(g.find_tensor("c")).shape == graph::Shape{2, 4, 6, 6});
        CHECK(g.tensor(g.find_tensor("flat")).shape == graph::Shape{2, 144});
        // the folded shape value is a (tiny) constant input of the Reshape
        const int target = g.find_tensor("target");
        REQUIRE(target >= 0);
        CHECK(g.tensor(target).kind == graph::TensorKind::weight);
        CHECK(g.tensor(target).shape == graph::Shape{2});
        CHECK(g.find_node("shape") == -1);
        CHECK(cost::total_cost(g).macs == 2 * 4 * 36 * 27 + 2 * 5 * 144);
    }
    // Without folding the Reshape output would be unknown: a batch of 3 must change the result.
    io::OnnxImportOptions opt;
    opt.input_shapes["x"] = {3, 3, 8, 8};
    const auto g3 = io::import_onnx_bytes(bytes_of(flatten_chain_model(13)), "chain.onnx", opt);
    CHECK(g3.tensor(g3.find_tensor("flat")).shape == graph::Shape{3, 144});
    CHECK(g3.tensor(g3.outputs().at(0)).shape == graph::Shape{3, 5});
}

TEST_CASE("onnx: export passes the checker and re-imports to the same graph (shared models)") {
    for (const auto& pm : kModels) {
        CAPTURE(pm.file);
        const auto bytes = io::read_file(model_path(pm.file));
        const auto g = io::import_onnx_bytes(bytes, pm.file);
        io::OnnxExportOptions eo;
        eo.opset = io::onnx_opset(bytes);
        const auto out = io::export_onnx_bytes(g, eo);
        onnx::ModelProto m;
        REQUIRE(m.ParseFromString(out));
        CHECK_NOTHROW(onnx::checker::check_model(m));
        const auto back = io::import_onnx_bytes(out, "exported");
        CHECK(back == g);
        CHECK(cost::total_cost(back).macs == cost::total_cost(g).macs);
    }
    // resnet18's BatchNormalization carries opset-8 `spatial`: refused at opset 13, by name
    const auto r18 = io::import_onnx(model_path("resnet18-v1-7-no-weight.onnx"));
    CHECK_THROWS_WITH_AS(io::export_onnx_bytes(r18), doctest::Contains("spatial"), config_error);
}

TEST_CASE("onnx: 100 random NB201 architectures round trip exactly through a file") {
    Rng rng(2024);
    const auto dir = temp_dir();
    for (int i = 0; i < 100; ++i) {
        const auto idx = static_cast<std::int64_t>(rng.below(nb201::num_architectures));
        const auto arch = nb201::from_index(idx);
        nb201::Nb201Options opt;
        opt.prune = i % 2 == 1;
        const auto g = nb201::build_graph(arch, opt);
        CAPTURE(nb201::to_string(arch));
        CAPTURE(opt.prune);
        const auto path = dir / "nb201.onnx";
        io::export_onnx(g, path);
        onnx::ModelProto m;
        REQUIRE(m.ParseFromString(io::read_file(path)));
        CHECK_NOTHROW(onnx::checker::check_model(m));
        const auto back = io::import_onnx(path);
        CHECK(back == g);
        // the zero of `none` travels as an initializer with its value (what graph analysis reads)
        if (const int z = back.find_tensor("zero"); z >= 0) {
            CHECK(back.tensor(z).data == std::vector<double>{0.0});
            CHECK(std::any_of(m.graph().initializer().begin(), m.graph().initializer().end(),
                              [](const auto& t) { return t.name() == "zero"; }));
        }
    }
    // the pruned all-`none` network is a single Constant: it must survive too
    nb201::Nb201Options pruned;
    pruned.prune = true;
    const auto none = nb201::build_graph(nb201::from_index(0), pruned);
    REQUIRE(none.num_nodes() == 1);
    CHECK(io::import_onnx_bytes(io::export_onnx_bytes(none), "none") == none);
}

TEST_CASE("onnx: graph comparison after a round trip sees real differences") {
    const auto g =
        nb201::build_graph("|nor_conv_3x3~0|+|nor_conv_3x3~0|avg_pool_3x3~1|+|skip_connect~0|nor_conv_1x1~1|none~2|");
    const auto back = io::import_onnx_bytes(io::export_onnx_bytes(g), "x");
    REQUIRE(back == g);
    const int pool = g.find_node("stage0.cell0.edge21.pool");
    REQUIRE(pool >= 0);
    auto changed_attr = g;
    changed_attr.node(pool).set_attr("count_include_pad", std::int64_t{1});
    CHECK_FALSE(io::import_onnx_bytes(io::export_onnx_bytes(changed_attr), "x") == g);
    auto renamed = g;
    renamed.node(pool).name = "renamed_pool";
    CHECK_FALSE(io::import_onnx_bytes(io::export_onnx_bytes(renamed), "x") == g);
    // a stride that contradicts the recorded shapes is caught on import, not silently accepted
    auto inconsistent = g;
    inconsistent.node(g.find_node("stage0.cell0.edge10.conv")).set_attr("strides", std::vector<std::int64_t>{2, 2});
    CHECK_THROWS_WITH_AS(io::import_onnx_bytes(io::export_onnx_bytes(inconsistent), "x"),
                         doctest::Contains("stage0.cell0.edge10.conv"), onnx_import_error);
    // a zero stride or dilation would make ONNX's shape inference divide by zero (SIGFPE)
    for (const char* attr : {"strides", "dilations", "kernel_shape"}) {
        CAPTURE(attr);
        auto zero = g;
        zero.node(g.find_node("stage0.cell0.edge10.conv")).set_attr(attr, std::vector<std::int64_t>{0, 1});
        CHECK_THROWS_WITH_AS(io::import_onnx_bytes(io::export_onnx_bytes(zero), "x"),
                             doctest::Contains("non-positive value 0"), onnx_import_error);
    }
    auto changed_eps = g;
    changed_eps.node(1).set_attr("epsilon", 1e-3);
    CHECK_FALSE(io::import_onnx_bytes(io::export_onnx_bytes(changed_eps), "x") == g);
    auto changed_shape = g;
    changed_shape.set_shape(changed_shape.find_tensor("stem.conv.weight"), {16, 3, 3, 3, 1});
    CHECK_FALSE(changed_shape == g);
}

TEST_CASE("onnx: bad input gives io_error / onnx_import_error naming the file and node") {
    const auto dir = temp_dir();
    CHECK_THROWS_WITH_AS(io::import_onnx(dir / "missing.onnx"), doctest::Contains("missing.onnx"), io_error);
    // truncated
    const auto bytes = io::read_file(model_path("squeezenet1_1.onnx"));
    io::write_file_atomic(dir / "cut.onnx", bytes.substr(0, bytes.size() / 2));
    CHECK_THROWS_WITH_AS(io::import_onnx(dir / "cut.onnx"), doctest::Contains("cut.onnx"), onnx_import_error);
    // text and CSV
    io::write_file_atomic(dir / "notes.onnx", "this is not a model\nreally\n");
    CHECK_THROWS_WITH_AS(io::import_onnx(dir / "notes.onnx"), doctest::Contains("notes.onnx"), onnx_import_error);
    CHECK_THROWS_AS(io::import_onnx(fs::path(DNNCOST_DATA_DIR) / "nb201" / "latency_ms.csv"), onnx_import_error);
    io::write_file_atomic(dir / "empty.onnx", "");
    CHECK_THROWS_AS(io::import_onnx(dir / "empty.onnx"), onnx_import_error);

    SUBCASE("cycle") {
        auto m = new_model(13);
        auto& g = *m.mutable_graph();
        set_type(*g.add_input(), "x", 1, {1, 4});
        set_type(*g.add_output(), "z", 1, {1, 4});
        add_node(g, "Add", "a", {"x", "z"}, {"y"});
        add_node(g, "Relu", "b", {"y"}, {"z"});
        CHECK_THROWS_WITH_AS(io::import_onnx_bytes(bytes_of(m), "cyclic.onnx"),
                             doctest::Contains("cyclic.onnx': node 'a' (Add): the graph has a cycle"),
                             onnx_import_error);
    }
    SUBCASE("shape inference rejects the node") {
        auto m = new_model(13);
        auto& g = *m.mutable_graph();
        set_type(*g.add_input(), "x", 1, {1, 3, 8, 8});
        set_type(*g.add_output(), "y", 1, {});
        auto& w = *g.add_initializer();
        w.set_name("w");
        w.set_data_type(1);
        for (auto d : {4, 5, 3, 3}) w.add_dims(d);  // 5 input channels for a 3-channel input
        add_node(g, "Conv", "bad_conv", {"x", "w"}, {"y"});
        CHECK_THROWS_WITH_AS(io::import_onnx_bytes(bytes_of(m), "badconv.onnx"), doctest::Contains("'bad_conv' (Conv)"),
                             onnx_import_error);
    }
    SUBCASE("unknown operator with unknown output shape, and with a declared one") {
        auto m = new_model(13);
        auto& g = *m.mutable_graph();
        set_type(*g.add_input(), "x", 1, {1, 8});
        set_type(*g.add_output(), "y", 1, {1, 8});
        add_node(g, "FancyOp", "mystery", {"x"}, {"h"});
        add_node(g, "Relu", "relu", {"h"}, {"y"});
        CHECK_THROWS_WITH_AS(io::import_onnx_bytes(bytes_of(m), "custom.onnx"),
                             doctest::Contains("node 'mystery' (FancyOp): cannot determine the shape"),
                             onnx_import_error);
        set_type(*g.add_value_info(), "h", 1, {1, 8});  // declared shape: importable
        const auto ok = io::import_onnx_bytes(bytes_of(m), "custom.onnx");
        CHECK(ok.num_nodes() == 2);
        CHECK_FALSE(cost::is_known_operator(ok.node(0).op_type));
    }
    SUBCASE("undefined value, no graph, unsupported opset") {
        auto m = new_model(13);
        auto& g = *m.mutable_graph();
        set_type(*g.add_input(), "x", 1, {1, 8});
        set_type(*g.add_output(), "y", 1, {1, 8});
        add_node(g, "Add", "adder", {"x", "ghost"}, {"y"});
        CHECK_THROWS_WITH_AS(io::import_onnx_bytes(bytes_of(m), "ghost.onnx"), doctest::Contains("'ghost'"),
                             onnx_import_error);
        onnx::ModelProto nograph;
        nograph.set_ir_version(7);
        CHECK_THROWS_WITH_AS(io::import_onnx_bytes(bytes_of(nograph), "nograph.onnx"), doctest::Contains("no graph"),
                             onnx_import_error);
        m.mutable_opset_import(0)->set_version(99);
        CHECK_THROWS_WITH_AS(io::import_onnx_bytes(bytes_of(m), "future.onnx"), doctest::Contains("opset 99"),
                             onnx_import_error);
    }
    SUBCASE("dimensions whose product overflows") {
        auto m = new_model(13);
        auto& g = *m.mutable_graph();
        set_type(*g.add_input(), "x", 1, {1, 8});
        set_type(*g.add_output(), "y", 1, {});
        auto& w = *g.add_initializer();
        w.set_name("huge");
        w.set_data_type(1);
        for (auto d : {std::int64_t{1} << 40, std::int64_t{1} << 40}) w.add_dims(d);
        add_node(g, "MatMul", "mm", {"x", "huge"}, {"y"});
        CHECK_THROWS_WITH_AS(io::import_onnx_bytes(bytes_of(m), "huge.onnx"), doctest::Contains("implausible shape"),
                             onnx_import_error);
    }
    SUBCASE("symbolic non-batch dimension needs an explicit shape") {
        auto m = new_model(13);
        auto& g = *m.mutable_graph();
        auto& in = *g.add_input();
        set_type(in, "x", 1, {1, 8});
        in.mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(1)->set_dim_param("seq");
        in.mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(0)->set_dim_param("batch");
        set_type(*g.add_output(), "y", 1, {});
        add_node(g, "Relu", "r", {"x"}, {"y"});
        CHECK_THROWS_WITH_AS(io::import_onnx_bytes(bytes_of(m), "sym.onnx"), doctest::Contains("'seq'"),
                             onnx_import_error);
        io::OnnxImportOptions opt;
        opt.input_shapes["x"] = {4, 16};
        CHECK(io::import_onnx_bytes(bytes_of(m), "sym.onnx", opt).tensor(0).shape == graph::Shape{4, 16});
    }
}

TEST_CASE("onnx: fuzz - truncated and byte-mutated fixtures import or throw dnncost::error") {
    Rng rng(7);
    int imported = 0, rejected = 0;
    auto attempt = [&](const std::string& data) {
        try {
            const auto g = io::import_onnx_bytes(data, "fuzz.onnx");
            (void)cost::total_cost(g);
            ++imported;
        } catch (const dnncost::error&) {
            ++rejected;
        }
    };
    for (const auto& pm : kModels) {
        const auto bytes = io::read_file(model_path(pm.file));
        for (int k = 0; k < 40; ++k) attempt(bytes.substr(0, rng.below(bytes.size())));
        for (int k = 0; k < 40; ++k) {
            std::string mutated = bytes;
            const auto flips = 1 + rng.below(4);
            for (std::uint64_t f = 0; f < flips; ++f)
                mutated[rng.below(mutated.size())] = static_cast<char>(rng.below(256));
            attempt(mutated);
        }
    }
    CHECK(imported + rejected == 4 * 80);
    CHECK(rejected > 0);
    MESSAGE("fuzz: ", imported, " imported, ", rejected, " rejected");
}

TEST_CASE("onnx: shape-folding edge cases are errors or left unfolded, never UB or runaway memory") {
    // X [1,4] -> Reshape(X, S) with S computed from constants by the case's nodes
    const auto model = [](const std::function<void(onnx::GraphProto&)>& make_s) {
        auto m = new_model(13);
        auto& g = *m.mutable_graph();
        set_type(*g.add_input(), "X", 1, {1, 4});
        set_type(*g.add_output(), "Y", 1, {});
        make_s(g);
        add_node(g, "Reshape", "reshape", {"X", "S"}, {"Y"});
        return bytes_of(m);
    };
    const auto imports_or_throws = [](const std::string& bytes) {
        try {
            (void)io::import_onnx_bytes(bytes, "case.onnx");
        } catch (const dnncost::error&) {}
    };
    SUBCASE("Concat of two scalars") {
        imports_or_throws(model([](onnx::GraphProto& g) {
            add_int64_init(g, "a", {2}, true);
            add_int64_init(g, "b", {2}, true);
            add_int_attr(add_node(g, "Concat", "cat", {"a", "b"}, {"S"}), "axis", 0);
        }));
    }
    SUBCASE("Slice of a scalar") {
        imports_or_throws(model([](onnx::GraphProto& g) {
            add_int64_init(g, "a", {4}, true);
            add_int64_init(g, "st", {0});
            add_int64_init(g, "en", {1});
            add_node(g, "Slice", "sl", {"a", "st", "en"}, {"S"});
        }));
    }
    SUBCASE("Neg of INT64_MIN") {
        imports_or_throws(model([](onnx::GraphProto& g) {
            add_int64_init(g, "a", {std::numeric_limits<std::int64_t>::min()});
            add_node(g, "Neg", "neg", {"a"}, {"S"});
        }));
    }
    SUBCASE("a broadcast whose result would have 2^32 elements") {
        imports_or_throws(model([](onnx::GraphProto& g) {
            auto& a = *g.add_initializer();
            a.set_name("a");
            a.set_data_type(onnx::TensorProto::INT64);
            a.add_dims(65536);
            a.add_dims(1);
            for (int i = 0; i < 65536; ++i) a.add_int64_data(1);
            auto& b = *g.add_initializer();
            b.CopyFrom(a);
            b.set_name("b");
            b.clear_dims();
            b.add_dims(1);
            b.add_dims(65536);
            add_node(g, "Add", "add", {"a", "b"}, {"S"});
        }));
    }
    SUBCASE("a Reshape that changes the element count") {
        CHECK_THROWS_AS(io::import_onnx_bytes(model([](onnx::GraphProto& g) {
                                                  add_int64_init(g, "S", {3, 3});
                                              }),
                                              "case.onnx"),
                        dnncost::error);
    }
}

TEST_CASE("onnx: import options that cannot apply are errors, not silently ignored") {
    const auto bytes = bytes_of(flatten_chain_model(13));
    io::OnnxImportOptions misspelt;
    misspelt.input_shapes["X"] = {2, 3, 8, 8};  // the input is "x"
    CHECK_THROWS_WITH_AS(io::import_onnx_bytes(bytes, "m.onnx", misspelt),
                         doctest::Contains("'X', which is not a graph input"), onnx_import_error);
    io::OnnxImportOptions negative;
    negative.input_shapes["x"] = {2, -3, 8, 8};
    CHECK_THROWS_WITH_AS(io::import_onnx_bytes(bytes, "m.onnx", negative), doctest::Contains("negative dimension -3"),
                         onnx_import_error);
    io::OnnxImportOptions zero_batch;
    zero_batch.batch_size = 0;
    CHECK_THROWS_WITH_AS(io::import_onnx_bytes(bytes, "m.onnx", zero_batch),
                         doctest::Contains("batch_size must be at least 1"), onnx_import_error);
}

// ------------------------------------------------------------------ export with weight values
namespace {

struct ExportCase {
    std::string name;
    graph::Graph graph;
    int opset = 13;
};

/// The shared models and 20 random NB201 architectures (every other one pruned).
std::vector<ExportCase> export_cases() {
    std::vector<ExportCase> cases;
    for (const auto& pm : kModels) {
        const auto bytes = io::read_file(model_path(pm.file));
        cases.push_back({pm.file, io::import_onnx_bytes(bytes, pm.file), io::onnx_opset(bytes)});
    }
    Rng rng(19);
    for (int i = 0; i < 20; ++i) {
        const auto arch = nb201::from_index(static_cast<std::int64_t>(rng.below(nb201::num_architectures)));
        nb201::Nb201Options opt;
        opt.prune = i % 2 == 1;
        cases.push_back({nb201::to_string(arch) + (opt.prune ? " pruned" : ""), nb201::build_graph(arch, opt)});
    }
    return cases;
}

std::string export_with(const ExportCase& c, io::WeightData weights, std::uint64_t seed,
                        const io::WeightValues* values = nullptr) {
    io::OnnxExportOptions eo;
    eo.opset = c.opset;
    eo.weights = weights;
    eo.seed = seed;
    eo.weight_values = values;
    return io::export_onnx_bytes(c.graph, eo);
}

/// Initializer values as doubles (raw float32 data, as the exporter writes weights).
std::vector<double> float_values(const onnx::TensorProto& t) {
    REQUIRE(t.data_type() == onnx::TensorProto::FLOAT);
    REQUIRE(t.has_raw_data());
    std::vector<double> out(t.raw_data().size() / sizeof(float));
    for (std::size_t k = 0; k < out.size(); ++k) {
        float x;
        std::memcpy(&x, t.raw_data().data() + k * sizeof(float), sizeof(float));
        out[k] = x;
    }
    return out;
}

const onnx::TensorProto* find_initializer(const onnx::ModelProto& m, const std::string& name) {
    for (const auto& t : m.graph().initializer())
        if (t.name() == name) return &t;
    return nullptr;
}

/// A copy of `imported` without the constant values that `original` does not know (import keeps
/// the values of small initializers; the source graph had shapes only).
graph::Graph without_new_data(graph::Graph imported, const graph::Graph& original) {
    for (int t = 0; t < static_cast<int>(imported.num_tensors()); ++t) {
        const int o = original.find_tensor(imported.tensor(t).name);
        if (o >= 0 && original.tensor(o).data.empty() && imported.tensor(t).kind == graph::TensorKind::weight)
            imported.set_data(t, {});
    }
    return imported;
}

}  // namespace

TEST_CASE("onnx: export with random weights passes the checker and strict shape inference and re-imports") {
    for (const auto& c : export_cases()) {
        CAPTURE(c.name);
        const auto& g = c.graph;
        const auto bytes = export_with(c, io::WeightData::random, 1);
        onnx::ModelProto m;
        REQUIRE(m.ParseFromString(bytes));
        CHECK_NOTHROW(onnx::checker::check_model(m));
        onnx::ModelProto inferred = m;
        CHECK_NOTHROW(onnx::shape_inference::InferShapes(inferred, onnx::OpSchemaRegistry::Instance(),
                                                         onnx::ShapeInferenceOptions(true, 1, true)));
        // every weight is an initializer holding one value per element; no weight is a graph input
        CHECK(m.graph().input_size() == static_cast<int>(g.inputs().size()));
        CHECK(m.graph().initializer_size() == static_cast<int>(g.weights().size()));
        for (int w : g.weights()) {
            const auto& t = g.tensor(w);
            const auto* init = find_initializer(m, t.name);
            REQUIRE_MESSAGE(init, t.name);
            CHECK(init->data_type() == static_cast<int>(t.dtype));
            CHECK(graph::Shape(init->dims().begin(), init->dims().end()) == t.shape);
            const auto bytes_per_element = graph::element_size(t.dtype);
            CHECK_MESSAGE(init->raw_data().size() == static_cast<std::size_t>(t.elements()) * bytes_per_element,
                          t.name);
            if (!t.data.empty()) CHECK(float_values(*init) == t.data);  // known values stay exact
        }
        // BatchNormalization: variance positive, scale near 1, mean near 0
        int batch_norms = 0;
        for (const auto& nd : g.nodes()) {
            if (nd.op_type != "BatchNormalization") continue;
            ++batch_norms;
            CAPTURE(nd.name);
            const auto all_of = [&](int slot, const std::function<bool(double)>& holds) {
                const auto values = float_values(*find_initializer(m, g.tensor(nd.inputs[slot]).name));
                return !values.empty() && std::all_of(values.begin(), values.end(), holds);
            };
            CHECK(all_of(4, [](double variance) { return variance > 0.0; }));
            CHECK(all_of(1, [](double scale) { return std::abs(scale - 1.0) <= 0.1; }));
            CHECK(all_of(3, [](double mean) { return std::abs(mean) <= 0.05; }));
        }
        if (c.name.find("resnet18") != std::string::npos) CHECK(batch_norms == 20);
        // the same graph comes back; import keeps the (now known) values of small weights
        const auto back = io::import_onnx_bytes(bytes, "weighted.onnx");
        CHECK(without_new_data(back, g) == g);
        for (int w : back.weights()) {
            const auto& t = back.tensor(w);
            if (!t.data.empty()) CHECK(t.data == float_values(*find_initializer(m, t.name)));
        }
        // same seed, same bytes; another seed changes every random weight but no known value
        CHECK(export_with(c, io::WeightData::random, 1) == bytes);
        onnx::ModelProto other;
        REQUIRE(other.ParseFromString(export_with(c, io::WeightData::random, 2)));
        for (int w : g.weights()) {
            const auto& t = g.tensor(w);
            const auto a = find_initializer(m, t.name)->raw_data(), b = find_initializer(other, t.name)->raw_data();
            if (t.data.empty() && t.elements() > 1)
                CHECK_MESSAGE(a != b, t.name);
            else if (!t.data.empty())
                CHECK(a == b);
        }
        // the weight-free export stays the default
        CHECK(export_with(c, io::WeightData::none, 1) == io::export_onnx_bytes(g, io::OnnxExportOptions{c.opset}));
    }
}

TEST_CASE("onnx: random Conv and Gemm weights have the He-uniform variance 2 / fan-in") {
    const auto g = io::import_onnx(model_path("resnet50.onnx"));
    io::OnnxExportOptions eo;
    eo.weights = io::WeightData::random;
    onnx::ModelProto m;
    REQUIRE(m.ParseFromString(io::export_onnx_bytes(g, eo)));
    int checked = 0;
    for (const auto& nd : g.nodes()) {
        if (nd.op_type != "Conv" && nd.op_type != "Gemm") continue;
        const auto& w = g.tensor(nd.inputs[1]);
        if (w.elements() < 200'000) continue;  // enough samples for a 2% check
        const auto fan_in = nd.op_type == "Conv" ? w.elements() / w.shape[0] : w.shape[1];  // Gemm: transB = 1
        const auto values = float_values(*find_initializer(m, w.name));
        double sum = 0, sum_sq = 0;
        for (double v : values) {
            sum += v;
            sum_sq += v * v;
        }
        const double n = static_cast<double>(values.size());
        const double mean = sum / n, variance = sum_sq / n - mean * mean;
        CAPTURE(w.name);
        CHECK(std::abs(mean) < 0.01 * std::sqrt(2.0 / static_cast<double>(fan_in)) * 10);
        CHECK(variance == doctest::Approx(2.0 / static_cast<double>(fan_in)).epsilon(0.02));
        ++checked;
    }
    CHECK(checked >= 10);
}

TEST_CASE("onnx: the model's own weights survive import and export, missing ones fall back to random") {
    for (const auto& c : export_cases()) {
        CAPTURE(c.name);
        const auto weighted = export_with(c, io::WeightData::random, 7);
        io::WeightValues values;
        io::OnnxImportOptions io_opt;
        io_opt.weight_values = &values;
        const auto g = io::import_onnx_bytes(weighted, "weighted.onnx", io_opt);
        CHECK(without_new_data(g, c.graph) == c.graph);
        CHECK(values.size() == g.weights().size());
        for (int w : g.weights()) {
            const auto it = values.find(g.tensor(w).name);
            REQUIRE(it != values.end());
            CHECK(it->second.size() == static_cast<std::size_t>(g.tensor(w).elements()));
        }
        // written back with its own values: the same file, byte for byte, whatever the seed
        io::OnnxExportOptions eo;
        eo.opset = c.opset;
        eo.weights = io::WeightData::model;
        eo.seed = 8;
        eo.weight_values = &values;
        CHECK(io::export_onnx_bytes(c.graph, eo) == weighted);
        // without its values, one weight is random again (the others keep theirs)
        const auto weights = c.graph.weights();
        const int big = *std::max_element(weights.begin(), weights.end(), [&](int a, int b) {
            return c.graph.tensor(a).elements() < c.graph.tensor(b).elements();
        });
        const auto name = c.graph.tensor(big).name;
        values.erase(name);
        onnx::ModelProto original, fallback;
        REQUIRE(original.ParseFromString(weighted));
        REQUIRE(fallback.ParseFromString(io::export_onnx_bytes(c.graph, eo)));
        for (const auto& t : original.graph().initializer())
            CHECK((find_initializer(fallback, t.name())->raw_data() == t.raw_data()) == (t.name() != name));
    }
    io::OnnxExportOptions no_values;
    no_values.weights = io::WeightData::model;
    CHECK_THROWS_WITH_AS(io::export_onnx_bytes(nb201::build_graph(nb201::from_index(5)), no_values),
                         doctest::Contains("weight_values"), config_error);
}

TEST_CASE("onnx: kept weight values follow folded Transpose and Identity, in any float type") {
    auto m = new_model(13);
    auto& g = *m.mutable_graph();
    set_type(*g.add_input(), "x", 1, {1, 3});
    set_type(*g.add_input(), "ids", 7, {4});
    set_type(*g.add_output(), "y", 1, {});
    set_type(*g.add_output(), "e", 10, {});
    auto& w = *g.add_initializer();  // [[1,2,3],[4,5,6]] as float_data
    w.set_name("w");
    w.set_data_type(onnx::TensorProto::FLOAT);
    w.add_dims(2);
    w.add_dims(3);
    for (int k = 1; k <= 6; ++k) w.add_float_data(static_cast<float>(k));
    add_ints_attr(add_node(g, "Transpose", "tr", {"w"}, {"wt"}), "perm", {1, 0});
    add_node(g, "MatMul", "mm", {"x", "wt"}, {"y"});
    // a float16 table beyond the folder's element limit, read through an Identity
    constexpr int rows = 300, cols = 256;
    auto& table = *g.add_initializer();
    table.set_name("table");
    table.set_data_type(onnx::TensorProto::FLOAT16);
    table.add_dims(rows);
    table.add_dims(cols);
    std::string raw;
    for (int k = 0; k < rows * cols; ++k) {
        const float v = static_cast<float>(k % 64) / 32.0f - 1.0f;  // exact in float16
        const auto half = io::detail::onnx_impl::float_to_half(v);
        raw.append(reinterpret_cast<const char*>(&half), 2);
    }
    table.set_raw_data(raw);
    add_node(g, "Identity", "id", {"table"}, {"table_view"});
    add_int_attr(add_node(g, "Gather", "lookup", {"table_view", "ids"}, {"e"}), "axis", 0);

    io::WeightValues values;
    io::OnnxImportOptions io_opt;
    io_opt.weight_values = &values;
    const auto imported = io::import_onnx_bytes(bytes_of(m), "layout.onnx", io_opt);
    REQUIRE(imported.num_nodes() == 2);  // Transpose and Identity folded into weights
    REQUIRE(values.count("wt"));
    CHECK(values.at("wt").reals == std::vector<float>{1, 4, 2, 5, 3, 6});
    REQUIRE(values.count("table_view"));
    const auto& view = values.at("table_view").reals;
    REQUIRE(view.size() == static_cast<std::size_t>(rows * cols));
    for (int k : {0, 1, 63, 64, rows * cols - 1})
        CHECK(view[static_cast<std::size_t>(k)] == static_cast<float>(k % 64) / 32.0f - 1.0f);
    CHECK(values.size() == imported.weights().size());
    // the same values come back out, in the weights' own element types
    io::OnnxExportOptions eo;
    eo.weights = io::WeightData::model;
    eo.weight_values = &values;
    io::WeightValues again;
    io::OnnxImportOptions again_opt;
    again_opt.weight_values = &again;
    const auto back = io::import_onnx_bytes(io::export_onnx_bytes(imported, eo), "again.onnx", again_opt);
    CHECK(without_new_data(back, imported) == imported);
    CHECK(back.tensor(back.find_tensor("wt")).data == std::vector<double>{1, 4, 2, 5, 3, 6});
    CHECK(again == values);
}

TEST_CASE("onnx: integer constants are never random: known, read off the shapes, or an error naming them") {
    graph::Graph g("ints");
    const int x = g.add_input("x", {100, 8});
    const int idx = g.add_weight("idx", {70}, graph::DataType::int64);  // beyond the kept-data size, no values
    const int gathered = g.add_op("Gather", "gather", {x, idx}, {70, 8}, {{"axis", std::int64_t{0}}});
    const int target = g.add_weight("target", {2}, graph::DataType::int64);  // no values: the shapes fix them
    const int flat = g.add_op("Reshape", "reshape", {gathered, target}, {1, 560});
    g.mark_output(flat);
    io::OnnxExportOptions eo;
    eo.weights = io::WeightData::random;
    CHECK_THROWS_WITH_AS(io::export_onnx_bytes(g, eo), doctest::Contains("integer constant 'idx'"), config_error);
    CHECK_THROWS_WITH_AS(io::export_onnx_bytes(g, eo), doctest::Contains("node 'gather'"), config_error);
    io::WeightValues known;
    for (std::int64_t k = 0; k < 70; ++k) known["idx"].integers.push_back(99 - k);
    eo.weight_values = &known;  // integer values are used under WeightData::random too
    onnx::ModelProto m;
    REQUIRE(m.ParseFromString(io::export_onnx_bytes(g, eo)));
    CHECK_NOTHROW(onnx::checker::check_model(m));
    const auto* idx_init = find_initializer(m, "idx");
    REQUIRE(idx_init);
    REQUIRE(idx_init->raw_data().size() == 70 * sizeof(std::int64_t));
    std::int64_t first = 0, last = 0;
    std::memcpy(&first, idx_init->raw_data().data(), 8);
    std::memcpy(&last, idx_init->raw_data().data() + 69 * 8, 8);
    CHECK(first == 99);
    CHECK(last == 30);
    const auto* target_init = find_initializer(m, "target");
    REQUIRE(target_init);
    std::int64_t dims[2];
    REQUIRE(target_init->raw_data().size() == sizeof dims);
    std::memcpy(dims, target_init->raw_data().data(), sizeof dims);
    CHECK(dims[0] == 1);
    CHECK(dims[1] == 560);
    const auto back = io::import_onnx_bytes(io::export_onnx_bytes(g, eo), "ints.onnx");
    CHECK(back.tensor(back.find_tensor("target")).data == std::vector<double>{1, 560});
}

TEST_CASE("onnx: fuzz - mutated files with weight values import with their values kept or throw dnncost::error") {
    nb201::Nb201Options pruned;
    pruned.prune = true;
    io::OnnxExportOptions eo;
    eo.weights = io::WeightData::random;
    const auto bytes = io::export_onnx_bytes(
        nb201::build_graph("|nor_conv_1x1~0|+|none~0|avg_pool_3x3~1|+|skip_connect~0|none~1|nor_conv_3x3~2|", pruned),
        eo);
    Rng rng(11);
    int imported = 0, rejected = 0;
    auto attempt = [&](const std::string& data) {
        io::WeightValues values;
        io::OnnxImportOptions io_opt;
        io_opt.weight_values = &values;
        try {
            const auto g = io::import_onnx_bytes(data, "fuzz.onnx", io_opt);
            for (const auto& [name, v] : values) {
                const int t = g.find_tensor(name);
                REQUIRE(t >= 0);
                CHECK(v.size() == static_cast<std::size_t>(g.tensor(t).elements()));
            }
            ++imported;
        } catch (const dnncost::error&) {
            ++rejected;
        }
    };
    for (int k = 0; k < 40; ++k) attempt(bytes.substr(0, rng.below(bytes.size())));
    for (int k = 0; k < 60; ++k) {
        std::string mutated = bytes;
        const auto flips = 1 + rng.below(8);
        for (std::uint64_t f = 0; f < flips; ++f)
            mutated[rng.below(mutated.size())] = static_cast<char>(rng.below(256));
        attempt(mutated);
    }
    CHECK(imported + rejected == 100);
    CHECK(imported > 0);
    MESSAGE("fuzz with weight values: ", imported, " imported, ", rejected, " rejected");
}
