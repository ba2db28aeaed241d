// ONNX import of what transformer and windowed-attention exports contain: shapes computed by
// shape subgraphs (Pad, Reshape, Slice, Expand, Tile, ConstantOfShape, Range), opset 17-20
// operators (LayerNormalization, Gelu, ReduceMean with an axes input, Split), operators libonnx
// does not know, and clear errors when a shape cannot be determined. Every model is built here.
#include <doctest/doctest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <dnncost/cost/analytic.hpp>
#include <dnncost/io/onnx.hpp>

using namespace dnncost;

namespace {

using Ints = std::vector<std::int64_t>;

/// A small ONNX model builder over the protobuf API.
struct Builder {
    onnx::ModelProto model;
    onnx::GraphProto& g;
    int constants = 0;

    explicit Builder(int opset) : g(*model.mutable_graph()) {
        model.set_ir_version(8);
        auto* o = model.add_opset_import();
        o->set_domain("");
        o->set_version(opset);
        g.set_name("built");
    }
    void input(const std::string& name, const Ints& dims, int elem = onnx::TensorProto::FLOAT) {
        auto& v = *g.add_input();
        v.set_name(name);
        auto* tt = v.mutable_type()->mutable_tensor_type();
        tt->set_elem_type(elem);
        auto* sh = tt->mutable_shape();
        for (auto d : dims) sh->add_dim()->set_dim_value(d);
    }
    void output(const std::string& name) {
        auto& v = *g.add_output();
        v.set_name(name);
        v.mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
    }
    /// A float weight without values (shape only), as in stripped models.
    std::string weight(const std::string& name, const Ints& dims) {
        auto& t = *g.add_initializer();
        t.set_name(name);
        t.set_data_type(onnx::TensorProto::FLOAT);
        for (auto d : dims) t.add_dims(d);
        return name;
    }
    std::string ints(const Ints& values, bool scalar = false) {
        auto& t = *g.add_initializer();
        const std::string name = "const" + std::to_string(constants++);
        t.set_name(name);
        t.set_data_type(onnx::TensorProto::INT64);
        if (!scalar) t.add_dims(static_cast<std::int64_t>(values.size()));
        for (auto x : values) t.add_int64_data(x);
        return name;
    }
    std::string real(float value) {
        auto& t = *g.add_initializer();
        const std::string name = "const" + std::to_string(constants++);
        t.set_name(name);
        t.set_data_type(onnx::TensorProto::FLOAT);
        t.add_float_data(value);
        return name;
    }
    onnx::NodeProto& node(const std::string& op, const std::string& name, const std::vector<std::string>& in,
                          const std::vector<std::string>& out) {
        auto& n = *g.add_node();
        n.set_op_type(op);
        n.set_name(name);
        for (const auto& i : in) n.add_input(i);
        for (const auto& o : out) n.add_output(o);
        return n;
    }
    /// One-output node named after its output.
    std::string op(const std::string& op, const std::string& out, const std::vector<std::string>& in) {
        node(op, out, in, {out});
        return out;
    }
    static void attr(onnx::NodeProto& n, const std::string& name, std::int64_t v) {
        auto& a = *n.add_attribute();
        a.set_name(name);
        a.set_type(onnx::AttributeProto::INT);
        a.set_i(v);
    }
    static void attr(onnx::NodeProto& n, const std::string& name, const Ints& v) {
        auto& a = *n.add_attribute();
        a.set_name(name);
        a.set_type(onnx::AttributeProto::INTS);
        for (auto x : v) a.add_ints(x);
    }
    std::string op_axis(const std::string& op, const std::string& out, const std::vector<std::string>& in,
                        std::int64_t axis) {
        attr(node(op, out, in, {out}), "axis", axis);
        return out;
    }
    std::string transpose(const std::string& out, const std::string& in, const Ints& perm) {
        attr(node("Transpose", out, {in}, {out}), "perm", perm);
        return out;
    }
    /// Dimension k of `x` as a 1-element vector: Shape -> Gather(k) -> Unsqueeze(0).
    std::string dim(const std::string& x, std::int64_t k, const std::string& tag) {
        const auto s = op("Shape", tag + "_shape", {x});
        const auto d = op_axis("Gather", tag + "_gather", {s, ints({k}, true)}, 0);
        return op("Unsqueeze", tag, {d, ints({0})});
    }
    std::string bytes() const {
        std::string s;
        REQUIRE(model.SerializeToString(&s));
        return s;
    }
};

const graph::Shape& shape_of(const graph::Graph& g, const std::string& tensor) {
    const int t = g.find_tensor(tensor);
    REQUIRE_MESSAGE(t >= 0, "no tensor " << tensor);
    return g.tensor(t).shape;
}
const cost::NodeCost node_cost_of(const graph::Graph& g, const std::string& node) {
    const int n = g.find_node(node);
    REQUIRE_MESSAGE(n >= 0, "no node " << node);
    return cost::node_cost(g, n);
}

/// torch's F.pad(x, (0, 0, 0, pad_w, 0, pad_h)) on [B, H, W, C] as exported at opsets 11-17:
/// the pads are computed from the shapes (window 4), padded to 2 x rank with ConstantOfShape,
/// reshaped to pairs, reversed by a Slice with step -1, transposed and flattened.
std::string swin_pad(Builder& b, const std::string& x) {
    auto pad_of = [&](std::int64_t axis, const std::string& tag) {
        const auto extent = b.dim(x, axis, tag + "_extent");
        const auto rem = b.op("Mod", tag + "_mod", {extent, b.ints({4})});
        const auto missing = b.op("Sub", tag + "_sub", {b.ints({4}), rem});
        return b.op("Mod", tag, {missing, b.ints({4})});
    };
    const auto pad_w = pad_of(2, "pad_w"), pad_h = pad_of(1, "pad_h");
    const auto zero = b.ints({0});
    const auto torch_pads = b.op_axis("Concat", "torch_pads", {zero, zero, zero, pad_w, zero, pad_h}, 0);
    auto& fill = b.node("ConstantOfShape", "pads_fill", {b.ints({2})}, {"pads_fill"});
    auto& value = *fill.add_attribute();
    value.set_name("value");
    value.set_type(onnx::AttributeProto::TENSOR);
    value.mutable_t()->set_data_type(onnx::TensorProto::INT64);
    value.mutable_t()->add_dims(1);
    value.mutable_t()->add_int64_data(0);
    const auto all = b.op_axis("Concat", "pads_all", {torch_pads, "pads_fill"}, 0);
    const auto pairs = b.op("Reshape", "pads_pairs", {all, b.ints({-1, 2})});
    const auto reversed = b.op("Slice", "pads_reversed",
                               {pairs, b.ints({-1}), b.ints({std::numeric_limits<std::int64_t>::min() + 1}),
                                b.ints({0}), b.ints({-1})});
    const auto by_side = b.transpose("pads_by_side", reversed, {1, 0});
    const auto flat = b.op("Reshape", "pads_flat", {by_side, b.ints({-1})});
    auto& cast = b.node("Cast", "pads", {flat}, {"pads"});
    Builder::attr(cast, "to", std::int64_t{onnx::TensorProto::INT64});
    return b.op("Pad", "x_padded", {x, "pads"});
}

/// GELU as exported below opset 20: x * 0.5 * (1 + erf(x / sqrt(2))).
std::string erf_gelu(Builder& b, const std::string& x, const std::string& tag) {
    const auto scaled = b.op("Div", tag + "_div", {x, b.real(1.4142135f)});
    const auto erf = b.op("Erf", tag + "_erf", {scaled});
    const auto shifted = b.op("Add", tag + "_add", {erf, b.real(1.0f)});
    const auto product = b.op("Mul", tag + "_mul", {x, shifted});
    return b.op("Mul", tag, {product, b.real(0.5f)});
}

/// A Swin-like block on x [1, 7, 7, 8] (channels last), window 4, 2 heads: computed padding to
/// [1, 8, 8, 8], window partition through computed Reshapes to [4, 16, 8], LayerNormalization,
/// windowed multi-head attention (MatMul, Softmax), the window merge back and an MLP with GELU
/// (Erf pattern, or the Gelu operator at opset 20).
Builder swin_block(int opset) {
    Builder b(opset);
    b.input("x", {1, 7, 7, 8});
    const auto padded = swin_pad(b, "x");
    const auto batch = b.dim(padded, 0, "batch");
    const auto rows = b.op("Div", "rows", {b.dim(padded, 1, "height"), b.ints({4})});
    const auto cols = b.op("Div", "cols", {b.dim(padded, 2, "width"), b.ints({4})});
    const auto channels = b.dim(padded, 3, "channels");
    const auto four = b.ints({4});
    const auto grid_shape = b.op_axis("Concat", "grid_shape", {batch, rows, four, cols, four, channels}, 0);
    const auto grid = b.op("Reshape", "grid", {padded, grid_shape});
    const auto windows6 = b.transpose("windows6", grid, {0, 1, 3, 2, 4, 5});
    const auto count = b.op("Mul", "window_count", {b.op("Mul", "rows_cols", {rows, cols}), batch});
    const auto windows_shape = b.op_axis("Concat", "windows_shape", {count, b.ints({16}), channels}, 0);
    const auto windows = b.op("Reshape", "windows", {windows6, windows_shape});
    auto& norm = b.node("LayerNormalization", "norm1", {windows, b.weight("ln1_w", {8}), b.weight("ln1_b", {8})},
                        {"normed"});
    Builder::attr(norm, "axis", std::int64_t{-1});
    const auto qkv = b.op("MatMul", "qkv", {"normed", b.weight("qkv_w", {8, 24})});
    const auto qkv_shape =
        b.op_axis("Concat", "qkv_shape", {b.dim(qkv, 0, "qkv_b"), b.dim(qkv, 1, "qkv_n"), b.ints({3, 2, 4})}, 0);
    const auto heads = b.transpose("heads", b.op("Reshape", "qkv5", {qkv, qkv_shape}), {2, 0, 3, 1, 4});
    const auto q = b.op_axis("Gather", "q", {heads, b.ints({0}, true)}, 0);
    const auto k = b.op_axis("Gather", "k", {heads, b.ints({1}, true)}, 0);
    const auto v = b.op_axis("Gather", "v", {heads, b.ints({2}, true)}, 0);
    const auto scores = b.op("MatMul", "scores", {q, b.transpose("k_t", k, {0, 1, 3, 2})});
    const auto scaled = b.op("Mul", "scores_scaled", {scores, b.real(0.5f)});
    const auto attention = b.op_axis("Softmax", "attention", {scaled}, -1);
    const auto context = b.transpose("context_t", b.op("MatMul", "context", {attention, v}), {0, 2, 1, 3});
    const auto merged_shape = b.op_axis("Concat", "merged_shape", {count, b.ints({16}), channels}, 0);
    const auto merged = b.op("Reshape", "merged", {context, merged_shape});
    const auto projected = b.op("MatMul", "proj", {merged, b.weight("proj_w", {8, 8})});
    const auto hidden = b.op("MatMul", "fc1", {projected, b.weight("fc1_w", {8, 32})});
    const auto activated = opset >= 20 ? b.op("Gelu", "gelu", {hidden}) : erf_gelu(b, hidden, "gelu");
    b.op("MatMul", "fc2", {activated, b.weight("fc2_w", {32, 8})});
    b.output("fc2");
    return b;
}

}  // namespace

TEST_CASE("onnx shapes: a Swin-like block with computed padding and windows imports with exact shapes") {
    for (int opset : {13, 17, 20}) {
        CAPTURE(opset);
        const auto g = io::import_onnx_bytes(swin_block(opset).bytes(), "swin_block.onnx");
        CHECK_NOTHROW(g.validate());
        // (4 - 7 % 4) % 4 = 1 row and column of padding at the bottom and right
        CHECK(shape_of(g, "x_padded") == graph::Shape{1, 8, 8, 8});
        CHECK(g.tensor(g.find_tensor("pads")).kind == graph::TensorKind::weight);  // folded
        CHECK(g.tensor(g.find_tensor("pads")).data == std::vector<double>{0, 0, 0, 0, 0, 1, 1, 0});
        CHECK(shape_of(g, "grid") == graph::Shape{1, 2, 4, 2, 4, 8});
        CHECK(shape_of(g, "windows") == graph::Shape{4, 16, 8});
        CHECK(shape_of(g, "heads") == graph::Shape{3, 4, 2, 16, 4});
        CHECK(shape_of(g, "scores") == graph::Shape{4, 2, 16, 16});
        CHECK(shape_of(g, "merged") == graph::Shape{4, 16, 8});
        CHECK(shape_of(g, "fc2") == graph::Shape{4, 16, 8});
        CHECK(g.find_node("rows") == -1);  // shape arithmetic is folded away
        CHECK(g.find_node("pads_by_side") == -1);
        // hand-computed multiply-accumulates: 4 x 16 tokens, per-window attention over 2 heads
        CHECK(node_cost_of(g, "qkv").macs == 4 * 16 * 24 * 8);
        CHECK(node_cost_of(g, "scores").macs == 4 * 2 * 16 * 16 * 4);
        CHECK(node_cost_of(g, "context").macs == 4 * 2 * 16 * 4 * 16);
        CHECK(node_cost_of(g, "fc1").macs == 4 * 16 * 32 * 8);
        // LayerNormalization: no MACs, 6 FLOPs per element, reads x and 2 x 8 weights, writes y
        const auto ln = node_cost_of(g, "norm1");
        CHECK(ln.macs == 0);
        CHECK(ln.flops == 6 * 4 * 16 * 8);
        CHECK(ln.input_bytes == 4 * 16 * 8 * 4);
        CHECK(ln.weight_bytes == 2 * 8 * 4);
        CHECK(ln.output_bytes == 4 * 16 * 8 * 4);
        if (opset >= 20) {
            CHECK(shape_of(g, "gelu") == graph::Shape{4, 16, 32});
            CHECK(node_cost_of(g, "gelu").flops == 8 * 4 * 16 * 32);
        }
    }
}
