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
#include <dnncost/io/onnx/proto.hpp>  // ONNX messages, built and read here

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

TEST_CASE("onnx shapes: a ViT-like embedding with computed Reshape, Expand, Tile, ConstantOfShape and Range") {
    Builder b(17);
    b.input("image", {2, 3, 32, 32});
    auto& conv = b.node("Conv", "patches", {"image", b.weight("patch_w", {16, 3, 8, 8})}, {"patches"});
    Builder::attr(conv, "kernel_shape", Ints{8, 8});
    Builder::attr(conv, "strides", Ints{8, 8});
    const auto batch = b.dim("patches", 0, "batch");
    const auto tokens_shape = b.op_axis("Concat", "tokens_shape", {batch, b.dim("patches", 1, "width"), b.ints({-1})}, 0);
    const auto tokens = b.transpose("tokens", b.op("Reshape", "flat", {"patches", tokens_shape}), {0, 2, 1});
    // class token expanded to the batch, and the same through Tile
    const auto cls_shape = b.op_axis("Concat", "cls_shape", {batch, b.ints({1, 16})}, 0);
    const auto cls = b.op("Expand", "cls", {b.weight("cls_token", {1, 1, 16}), cls_shape});
    const auto repeats = b.op_axis("Concat", "repeats", {batch, b.ints({1, 1})}, 0);
    const auto cls_tiled = b.op("Tile", "cls_tiled", {b.weight("cls_token2", {1, 1, 16}), repeats});
    const auto sequence = b.op_axis("Concat", "sequence", {cls, tokens}, 1);
    // positions 0..16 from the sequence length, gathered from a table of 64
    const auto length = b.op("Squeeze", "length", {b.dim(sequence, 1, "seq_len"), b.ints({0})});
    const auto positions = b.op("Range", "positions", {b.ints({0}, true), length, b.ints({1}, true)});
    const auto position_rows = b.op_axis("Gather", "position_rows", {b.weight("pos_table", {64, 16}), positions}, 0);
    const auto embedded = b.op("Add", "embedded", {sequence, position_rows});
    // a float mask of the computed shape [batch, length]
    const auto mask_shape = b.op_axis("Concat", "mask_shape", {batch, b.dim(sequence, 1, "mask_len")}, 0);
    auto& mask = b.node("ConstantOfShape", "mask", {mask_shape}, {"mask"});
    auto& one = *mask.add_attribute();
    one.set_name("value");
    one.set_type(onnx::AttributeProto::TENSOR);
    one.mutable_t()->set_data_type(onnx::TensorProto::FLOAT);
    one.mutable_t()->add_dims(1);
    one.mutable_t()->add_float_data(1.0f);
    const auto mask3 = b.op("Unsqueeze", "mask3", {"mask", b.ints({2})});
    b.op("Mul", "masked", {embedded, mask3});
    b.op("Add", "with_tiled", {"masked", b.op_axis("Concat", "tiled_seq", {cls_tiled, tokens}, 1)});
    b.output("with_tiled");
    const auto g = io::import_onnx_bytes(b.bytes(), "vit_embedding.onnx");
    CHECK_NOTHROW(g.validate());
    CHECK(shape_of(g, "flat") == graph::Shape{2, 16, 16});
    CHECK(shape_of(g, "tokens") == graph::Shape{2, 16, 16});
    CHECK(shape_of(g, "cls") == graph::Shape{2, 1, 16});
    CHECK(shape_of(g, "cls_tiled") == graph::Shape{2, 1, 16});
    CHECK(shape_of(g, "sequence") == graph::Shape{2, 17, 16});
    CHECK(g.tensor(g.find_tensor("positions")).shape == graph::Shape{17});  // folded: 0, 1, ..., 16
    CHECK(g.tensor(g.find_tensor("positions")).kind == graph::TensorKind::weight);
    CHECK(shape_of(g, "position_rows") == graph::Shape{17, 16});
    CHECK(shape_of(g, "mask3") == graph::Shape{2, 17, 1});
    CHECK(shape_of(g, "with_tiled") == graph::Shape{2, 17, 16});
    CHECK(cost::total_cost(g).macs == 2 * 16 * 16 * 3 * 8 * 8);  // only the patch convolution
}

TEST_CASE("onnx shapes: opset 18-20 operators (ReduceMean axes input, Split, Gelu) and batched MatMul") {
    for (int opset : {17, 18, 20}) {
        CAPTURE(opset);
        Builder b(opset);
        b.input("x", {2, 5, 12});
        // LayerNorm written out: the axes of ReduceMean are an input from opset 18
        auto reduce_mean = [&](const std::string& out, const std::string& in) {
            if (opset >= 18) return b.op("ReduceMean", out, {in, b.ints({-1})});
            Builder::attr(b.node("ReduceMean", out, {in}, {out}), "axes", Ints{-1});
            return out;
        };
        const auto mean = reduce_mean("mean", "x");
        const auto centred = b.op("Sub", "centred", {"x", mean});
        const auto variance = reduce_mean("variance", b.op("Mul", "squared", {centred, centred}));
        const auto normed = b.op("Div", "normed", {centred, b.op("Sqrt", "std", {b.op("Add", "var_eps", {variance, b.real(1e-5f)})})});
        // q, k, v from one projection, split by a 'split' input (opset 13) or num_outputs (opset 18)
        const auto qkv = b.op("MatMul", "qkv", {normed, b.weight("w_qkv", {12, 36})});
        auto& split = b.node("Split", "split", {qkv}, {"q", "k", "v"});
        Builder::attr(split, "axis", std::int64_t{-1});
        if (opset >= 18)
            Builder::attr(split, "num_outputs", std::int64_t{3});
        else
            split.add_input(b.ints({12, 12, 12}));
        // 3 heads of 4: [2, 5, 12] -> [2, 3, 5, 4]; scores broadcast a [1, 3, 4, 5] key table
        const auto heads = [&](const std::string& x, const std::string& tag) {
            return b.transpose(tag, b.op("Reshape", tag + "_r", {x, b.ints({2, 5, 3, 4})}), {0, 2, 1, 3});
        };
        const auto q = heads("q", "qh");
        const auto scores = b.op("MatMul", "scores", {q, b.weight("keys", {1, 3, 4, 5})});
        const auto attention = b.op_axis("Softmax", "attention", {scores}, 1);  // not the last axis
        const auto context = b.op("MatMul", "context", {attention, heads("v", "vh")});
        const auto merged = b.op("Reshape", "merged", {b.transpose("ctx_t", context, {0, 2, 1, 3}), b.ints({2, 5, 12})});
        const auto hidden = b.op("MatMul", "fc1", {merged, b.weight("w1", {12, 24})});
        const auto activated = opset >= 20 ? b.op("Gelu", "gelu", {hidden}) : erf_gelu(b, hidden, "gelu");
        b.op("Add", "out", {b.op("MatMul", "fc2", {activated, b.weight("w2", {24, 12})}), "k"});
        b.output("out");
        const auto g = io::import_onnx_bytes(b.bytes(), "encoder.onnx");
        CHECK_NOTHROW(g.validate());
        CHECK(shape_of(g, "mean") == graph::Shape{2, 5, 1});
        CHECK(shape_of(g, "variance") == graph::Shape{2, 5, 1});
        CHECK(g.node(g.find_node("mean")).op_type == "ReduceMean");  // its real type, whatever the opset
        CHECK(shape_of(g, "q") == graph::Shape{2, 5, 12});
        CHECK(shape_of(g, "v") == graph::Shape{2, 5, 12});
        CHECK(shape_of(g, "scores") == graph::Shape{2, 3, 5, 5});
        CHECK(shape_of(g, "attention") == graph::Shape{2, 3, 5, 5});
        CHECK(shape_of(g, "context") == graph::Shape{2, 3, 5, 4});
        CHECK(shape_of(g, "gelu") == graph::Shape{2, 5, 24});
        CHECK(shape_of(g, "out") == graph::Shape{2, 5, 12});
        CHECK(node_cost_of(g, "qkv").macs == 2 * 5 * 36 * 12);
        CHECK(node_cost_of(g, "scores").macs == 2 * 3 * 5 * 5 * 4);  // key table broadcast over the batch
        CHECK(node_cost_of(g, "scores").weight_bytes == 3 * 4 * 5 * 4);
        CHECK(node_cost_of(g, "context").macs == 2 * 3 * 5 * 4 * 5);
        CHECK(node_cost_of(g, "mean").flops == 2 * 5 * 12);
        CHECK(node_cost_of(g, "split").output_bytes == 3 * 2 * 5 * 12 * 4);
    }
}

TEST_CASE("onnx shapes: Split-18 with a remainder, Pad-18 axes, Einsum, Trilu, Where and Expand of activations") {
    Builder b(18);
    b.input("x", {2, 7, 6});
    auto& split = b.node("Split", "split", {"x"}, {"s0", "s1", "s2"});
    Builder::attr(split, "axis", std::int64_t{1});
    Builder::attr(split, "num_outputs", std::int64_t{3});  // 7 = 3 + 3 + 1
    const auto padded = b.op("Pad", "padded", {"s2", b.ints({1, 2}), "", b.ints({-1})});  // last axis only
    const auto product = b.op("Einsum", "product", {"s0", b.weight("e", {6, 4})});
    auto& equation = *b.g.mutable_node(b.g.node_size() - 1)->add_attribute();
    equation.set_name("equation");
    equation.set_type(onnx::AttributeProto::STRING);
    equation.set_s("bij,jk->bik");
    const auto lower = b.op("Trilu", "lower", {"s1"});
    const auto picked = b.op("Where", "picked", {b.op("Greater", "positive", {lower, b.real(0.0f)}), lower, "s0"});
    const auto expanded = b.op("Expand", "expanded", {padded, b.op_axis("Concat", "to", {b.dim(picked, 0, "eb"), b.ints({3, 9})}, 0)});
    b.output(product);
    b.output(picked);
    b.output(expanded);
    const auto g = io::import_onnx_bytes(b.bytes(), "ops18.onnx");
    CHECK(shape_of(g, "s0") == graph::Shape{2, 3, 6});
    CHECK(shape_of(g, "s1") == graph::Shape{2, 3, 6});
    CHECK(shape_of(g, "s2") == graph::Shape{2, 1, 6});
    CHECK(shape_of(g, "padded") == graph::Shape{2, 1, 9});
    CHECK(shape_of(g, "product") == graph::Shape{2, 3, 4});
    CHECK(shape_of(g, "lower") == graph::Shape{2, 3, 6});
    CHECK(shape_of(g, "picked") == graph::Shape{2, 3, 6});
    CHECK(shape_of(g, "expanded") == graph::Shape{2, 3, 9});
    CHECK(node_cost_of(g, "product").macs == 2 * 3 * 6 * 4);  // every (b, i, j, k) once
}

TEST_CASE("onnx shapes: an operator libonnx does not know keeps its type when its shape can be had") {
    SUBCASE("declared shape, read by Shape and Reshape") {
        Builder b(17);
        b.input("x", {1, 4, 6});
        auto& custom = b.node("FancyNorm", "fancy", {"x"}, {"h"});
        custom.set_domain("org.example");
        auto* opset = b.model.add_opset_import();
        opset->set_domain("org.example");
        opset->set_version(1);
        auto& declared = *b.g.add_value_info();
        declared.set_name("h");
        declared.mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
        for (auto d : {1, 4, 6}) declared.mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(d);
        const auto target = b.op_axis("Concat", "target", {b.dim("h", 0, "hb"), b.ints({-1})}, 0);
        b.op("Reshape", "flat", {"h", target});
        b.output("flat");
        const auto g = io::import_onnx_bytes(b.bytes(), "custom.onnx");
        CHECK(g.node(g.find_node("fancy")).op_type == "FancyNorm");
        CHECK(shape_of(g, "flat") == graph::Shape{1, 24});
    }
    SUBCASE("no shape anywhere: the error names the node and operator, and a Shape reading it does not crash") {
        Builder b(17);
        b.input("x", {1, 4, 6});
        b.op("FancyNorm", "fancy", {"x"});
        const auto target = b.op_axis("Concat", "target", {b.dim("fancy", 0, "fb"), b.ints({-1})}, 0);
        b.op("Reshape", "flat", {"fancy", target});
        b.output("flat");
        CHECK_THROWS_WITH_AS(io::import_onnx_bytes(b.bytes(), "custom.onnx"),
                             doctest::Contains("node 'fancy' (FancyNorm): cannot determine the shape of output 'fancy'"),
                             onnx_import_error);
    }
    SUBCASE("Gelu and a com.microsoft GELU at opset 17") {
        Builder b(17);
        b.input("x", {3, 8});
        b.op("Gelu", "gelu", {"x"});
        b.node("FastGelu", "fast", {"gelu"}, {"fast"}).set_domain("com.microsoft");
        auto* opset = b.model.add_opset_import();
        opset->set_domain("com.microsoft");
        opset->set_version(1);
        b.op("Relu", "relu", {"fast"});
        b.output("relu");
        const auto g = io::import_onnx_bytes(b.bytes(), "gelu.onnx");
        CHECK(shape_of(g, "fast") == graph::Shape{3, 8});
        CHECK(g.node(g.find_node("fast")).op_type == "FastGelu");
    }
}

TEST_CASE("onnx shapes: bad shape arithmetic is an error naming the node, the input and the cause") {
    auto model = [](const std::string& op, std::int64_t operand) {
        Builder b(17);
        b.input("x", {2, 6, 4});
        const auto width = b.dim("x", 2, "width");
        const auto computed = b.op(op, "computed", {width, b.ints({operand})});
        const auto target = b.op_axis("Concat", "target", {b.dim("x", 0, "batch"), computed, b.ints({-1})}, 0);
        b.op("Reshape", "windows", {"x", target});
        b.output("windows");
        return b.bytes();
    };
    CHECK_NOTHROW(io::import_onnx_bytes(model("Div", 2), "ok.onnx"));
    CHECK_THROWS_WITH_AS(io::import_onnx_bytes(model("Div", 0), "div0.onnx"),
                         doctest::Contains("node 'windows' (Reshape): cannot determine the shape of output 'windows': "
                                           "the value of input 1 ('target') is not known at import time: "
                                           "node 'computed' (Div) divides 4 by zero"),
                         onnx_import_error);
    CHECK_THROWS_WITH_AS(io::import_onnx_bytes(model("Sub", 7), "negative.onnx"),
                         doctest::Contains("node 'windows' (Reshape): cannot determine the shape of output 'windows': "
                                           "the target shape gives the negative dimension -3"),
                         onnx_import_error);
    CHECK_THROWS_WITH_AS(io::import_onnx_bytes(model("Add", 1), "misfit.onnx"),
                         doctest::Contains("node 'windows' (Reshape)"), onnx_import_error);
    // 48 elements as [2, 5, -1]: no whole number fits
    CHECK_THROWS_WITH_AS(io::import_onnx_bytes(model("Add", 1), "misfit.onnx"),
                         doctest::Contains("cannot reshape [2,6,4] (48 elements) to [2,5,-1]"), onnx_import_error);
    // a shape read from a graph input is known only when the network runs
    Builder b(17);
    b.input("x", {2, 6});
    b.input("rows", {1}, onnx::TensorProto::INT64);
    b.op("Reshape", "reshaped", {"x", b.op_axis("Concat", "target", {"rows", b.ints({-1})}, 0)});
    b.output("reshaped");
    CHECK_THROWS_WITH_AS(io::import_onnx_bytes(b.bytes(), "input_shape.onnx"),
                         doctest::Contains("node 'reshaped' (Reshape): cannot determine the shape of output 'reshaped': "
                                           "the value of input 1 ('target') is not known at import time: it is graph "
                                           "input 'rows', whose values are known only when the network runs"),
                         onnx_import_error);
}

TEST_CASE("onnx shapes: hostile values in the own rules are errors, not overflows") {
    auto pad_model = [](std::int64_t pad) {
        Builder b(18);
        b.input("x", {2, 3});
        b.op("Pad", "padded", {"x", b.ints({pad, pad}), "", b.ints({1})});
        b.output("padded");
        return b.bytes();
    };
    CHECK(shape_of(io::import_onnx_bytes(pad_model(2), "pad.onnx"), "padded") == graph::Shape{2, 7});
    CHECK(shape_of(io::import_onnx_bytes(pad_model(-1), "crop.onnx"), "padded") == graph::Shape{2, 1});
    CHECK_THROWS_WITH_AS(io::import_onnx_bytes(pad_model(std::numeric_limits<std::int64_t>::max()), "huge.onnx"),
                         doctest::Contains("node 'padded' (Pad)"), onnx_import_error);
    CHECK_THROWS_WITH_AS(io::import_onnx_bytes(pad_model(-2), "negative.onnx"),
                         doctest::Contains("node 'padded' (Pad): cannot determine the shape of output 'padded': pads "
                                           "[-2,-2] make axis 1 of extent 3 negative"),
                         onnx_import_error);
}

TEST_CASE("onnx shapes: opset 23 reads with the importer's rules, a newer opset is refused by name") {
    auto model = [](int opset) {
        Builder b(opset);
        b.input("x", {2, 5, 8});
        b.op("RMSNormalization", "rms", {"x", b.weight("gamma", {8})});
        b.op("Relu", "relu", {"rms"});
        b.output("relu");
        return b.bytes();
    };
    const auto g = io::import_onnx_bytes(model(23), "rms.onnx");
    CHECK(shape_of(g, "rms") == graph::Shape{2, 5, 8});
    CHECK(g.node(g.find_node("rms")).op_type == "RMSNormalization");
    CHECK_THROWS_WITH_AS(io::import_onnx_bytes(model(24), "future.onnx"),
                         doctest::Contains("opset 24 is not supported (the importer reads opsets 1 to 23)"),
                         onnx_import_error);
}
