#pragma once
/// @file builder.hpp
/// Writing a network as an operator graph: one call per ONNX operator, each computing its
/// output shape, creating its weight tensors (named `<node>.weight`, `<node>.bias`, ...) and
/// using ONNX op types and attribute names, so that io::export_onnx writes a valid model.
/// Shared by the search-space builders (fbnet, ofa, vit, kws).
///
/// Tensors are created in the order an ONNX importer meets them (a weight just before the node
/// that first reads it, a node's outputs after its inputs), so that a graph exported and
/// imported again is identical, tensor indices included.
#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <dnncost/core/error.hpp>
#include <dnncost/graph/graph.hpp>

namespace dnncost::spaces {

/// Convolution geometry (2-D, NCHW). `pads` are ONNX's order: top, left, bottom, right.
struct ConvSpec {
    std::int64_t out_channels = 0;
    std::array<std::int64_t, 2> kernel{1, 1};
    std::array<std::int64_t, 2> stride{1, 1};
    std::array<std::int64_t, 4> pads{0, 0, 0, 0};
    std::int64_t group = 1;
    bool bias = false;
};

/// Padding (begin, end) that gives an output of ceil(in / stride), extra padding at the end
/// (TensorFlow's "SAME"; for an odd kernel at stride 1 it is k // 2 on both sides).
inline std::array<std::int64_t, 2> same_pads(std::int64_t in, std::int64_t kernel, std::int64_t stride) {
    const std::int64_t out = (in + stride - 1) / stride;
    const std::int64_t total = std::max<std::int64_t>(0, (out - 1) * stride + kernel - in);
    return {total / 2, total - total / 2};
}

/// The nearest float32 to `v`, as a double: constants travel through ONNX as float32, so a
/// value that is already a float survives an export/import round trip exactly.
inline double as_float32(double v) { return static_cast<double>(static_cast<float>(v)); }

class NetworkBuilder {
public:
    explicit NetworkBuilder(std::string name) : m_g(std::move(name)) {}

    const graph::Shape& shape(int t) const { return m_g.tensor(t).shape; }
    const graph::Graph& graph() const { return m_g; }

    int input(const std::string& name, graph::Shape s) { return m_g.add_input(name, std::move(s)); }
    int weight(const std::string& name, graph::Shape s) { return m_g.add_weight(name, std::move(s)); }

    /// A float32 scalar constant with a known value (shared by name: the first call creates it).
    int scalar(const std::string& name, double value) {
        if (auto it = m_scalars.find(name); it != m_scalars.end()) {
            if (m_g.tensor(it->second).data.front() != as_float32(value))
                raise<config_error>("NetworkBuilder: constant '", name, "' redefined with another value");
            return it->second;
        }
        const int t = m_g.add_weight(name, {});
        m_g.set_data(t, {as_float32(value)});
        m_scalars.emplace(name, t);
        return t;
    }
    /// An int64 vector constant with known values (shapes, axes, split sizes).
    int int64_vector(const std::string& name, const std::vector<std::int64_t>& values) {
        const int t = m_g.add_weight(name, {static_cast<std::int64_t>(values.size())}, graph::DataType::int64);
        std::vector<double> d(values.begin(), values.end());
        m_g.set_data(t, std::move(d));
        return t;
    }

    int conv(int x, const ConvSpec& c, const std::string& name) {
        const graph::Shape in = shape(x);  // a copy: adding weights may reallocate the tensor list
        if (in.size() != 4)
            raise<shape_error>("NetworkBuilder::conv '", name, "': input ", graph::to_string(in), " is not NCHW");
        if (c.group < 1 || in[1] % c.group != 0 || c.out_channels % c.group != 0)
            raise<shape_error>("NetworkBuilder::conv '", name, "': group ", c.group, " does not divide channels ",
                               in[1], " -> ", c.out_channels);
        std::array<std::int64_t, 2> out{};
        for (std::size_t i = 0; i < 2; ++i)
            out[i] = (in[2 + i] + c.pads[i] + c.pads[i + 2] - c.kernel[i]) / c.stride[i] + 1;
        std::vector<int> inputs{x,
                                weight(name + ".weight", {c.out_channels, in[1] / c.group, c.kernel[0], c.kernel[1]})};
        if (c.bias) inputs.push_back(weight(name + ".bias", {c.out_channels}));
        return m_g.add_op("Conv", name, std::move(inputs), {in[0], c.out_channels, out[0], out[1]},
                          {{"dilations", std::vector<std::int64_t>{1, 1}},
                           {"group", c.group},
                           {"kernel_shape", std::vector<std::int64_t>{c.kernel[0], c.kernel[1]}},
                           {"pads", std::vector<std::int64_t>(c.pads.begin(), c.pads.end())},
                           {"strides", std::vector<std::int64_t>{c.stride[0], c.stride[1]}}});
    }
    /// Square kernel k, stride s, padding k // 2, no bias (the common case).
    int conv(int x, std::int64_t out_channels, std::int64_t k, std::int64_t s, std::int64_t group,
             const std::string& name) {
        const std::int64_t p = k / 2;
        return conv(x, ConvSpec{out_channels, {k, k}, {s, s}, {p, p, p, p}, group, false}, name);
    }
    /// Inference batch normalisation: scale, bias, running mean and variance per channel.
    int batch_norm(int x, const std::string& name) {
        const auto c = shape(x).at(1);
        std::vector<int> in{x};
        for (const char* p : {".scale", ".bias", ".mean", ".var"}) in.push_back(weight(name + p, {c}));
        return m_g.add_op("BatchNormalization", name, std::move(in), shape(x), {{"epsilon", 1e-5}, {"momentum", 0.9}});
    }
    /// Any operator, with the output shape given by the caller.
    int op(const std::string& op_type, const std::string& name, std::vector<int> inputs, graph::Shape out,
           std::vector<graph::Attribute> attrs = {}) {
        return m_g.add_op(op_type, name, std::move(inputs), std::move(out), std::move(attrs));
    }
    /// An elementwise operator of one input.
    int unary(const std::string& op, int x, const std::string& name, std::vector<graph::Attribute> attrs = {}) {
        return m_g.add_op(op, name, {x}, shape(x), std::move(attrs));
    }
    /// An elementwise operator of two inputs with numpy broadcasting.
    int binary(const std::string& op, int a, int b, const std::string& name) {
        return m_g.add_op(op, name, {a, b}, broadcast(shape(a), shape(b), name));
    }
    int add(int a, int b, const std::string& name) { return binary("Add", a, b, name); }
    int mul(int a, int b, const std::string& name) { return binary("Mul", a, b, name); }

    int global_average_pool(int x, const std::string& name) {
        const auto s = shape(x);
        return m_g.add_op("GlobalAveragePool", name, {x}, {s[0], s[1], 1, 1});
    }
    /// AveragePool over the whole feature map with an explicit kernel (as TFLite's AVERAGE_POOL_2D).
    int average_pool_all(int x, const std::string& name) {
        const auto s = shape(x);
        return m_g.add_op("AveragePool", name, {x}, {s[0], s[1], 1, 1},
                          {{"kernel_shape", std::vector<std::int64_t>{s[2], s[3]}},
                           {"strides", std::vector<std::int64_t>{s[2], s[3]}}});
    }
    int flatten(int x, const std::string& name) {
        const auto s = shape(x);
        std::int64_t rest = 1;
        for (std::size_t i = 1; i < s.size(); ++i) rest *= s[i];
        return m_g.add_op("Flatten", name, {x}, {s[0], rest}, {{"axis", std::int64_t{1}}});
    }
    /// Fully connected layer on [N, in]: weight [out, in] (transB), optional bias.
    int gemm(int x, std::int64_t out, const std::string& name, bool bias = true) {
        const auto s = shape(x);
        std::vector<int> in{x, weight(name + ".weight", {out, s.at(1)})};
        if (bias) in.push_back(weight(name + ".bias", {out}));
        return m_g.add_op("Gemm", name, std::move(in), {s[0], out}, {{"transB", std::int64_t{1}}});
    }
    /// Batched matrix product (numpy semantics for the leading dimensions).
    int matmul(int a, int b, const std::string& name) {
        const auto sa = shape(a), sb = shape(b);
        if (sa.size() < 2 || sb.size() < 2 || sa.back() != sb[sb.size() - 2])
            raise<shape_error>("NetworkBuilder::matmul '", name, "': ", graph::to_string(sa), " x ",
                               graph::to_string(sb));
        graph::Shape lead_a(sa.begin(), sa.end() - 2), lead_b(sb.begin(), sb.end() - 2);
        graph::Shape out = broadcast(lead_a, lead_b, name);
        out.push_back(sa[sa.size() - 2]);
        out.push_back(sb.back());
        return m_g.add_op("MatMul", name, {a, b}, std::move(out));
    }
    /// x @ W + b with W [in, out], the transformer's linear layer on [..., in].
    int linear(int x, std::int64_t out, const std::string& name) {
        const int y = matmul(x, weight(name + ".weight", {shape(x).back(), out}), name + ".matmul");
        return add(y, weight(name + ".bias", {out}), name + ".add_bias");
    }
    int reshape(int x, graph::Shape to, const std::string& name) {
        const int s = int64_vector(name + ".shape", to);
        return m_g.add_op("Reshape", name, {x, s}, std::move(to));
    }
    int transpose(int x, const std::vector<std::int64_t>& perm, const std::string& name) {
        const auto s = shape(x);
        graph::Shape out;
        for (auto p : perm) out.push_back(s.at(static_cast<std::size_t>(p)));
        return m_g.add_op("Transpose", name, {x}, std::move(out), {{"perm", perm}});
    }
    /// ShuffleNet's channel shuffle on NCHW: Reshape to [N, groups, C / groups, H, W], swap the two
    /// channel axes, Reshape back (nodes `<name>.split`, `<name>.swap`, `<name>.merge`).
    int channel_shuffle(int x, std::int64_t groups, const std::string& name) {
        const graph::Shape s = shape(x);
        if (s.size() != 4 || groups < 1 || s[1] % groups != 0)
            raise<shape_error>("NetworkBuilder::channel_shuffle '", name, "': ", groups, " groups of input ",
                               graph::to_string(s));
        int t = reshape(x, {s[0], groups, s[1] / groups, s[2], s[3]}, name + ".split");
        t = transpose(t, {0, 2, 1, 3, 4}, name + ".swap");
        return reshape(t, s, name + ".merge");
    }
    /// Square MaxPool on NCHW (floor rounding). Without `pad` the node has no `pads` attribute
    /// (ONNX's default, no padding); with it, `pads` is written even when zero, as exporters do.
    int max_pool(int x, std::int64_t kernel, std::int64_t stride, std::optional<std::int64_t> pad,
                 const std::string& name) {
        graph::Shape out = shape(x);
        const std::int64_t p = pad.value_or(0);
        if (out.size() != 4)
            raise<shape_error>("NetworkBuilder::max_pool '", name, "': input ", graph::to_string(out), " is not NCHW");
        for (std::size_t i = 2; i < 4; ++i) {
            const std::int64_t span = out[i] + 2 * p - kernel;  // negative: the window does not fit
            if (span < 0 || stride < 1 || kernel < 1 || p < 0)
                raise<shape_error>("NetworkBuilder::max_pool '", name, "': kernel ", kernel, ", stride ", stride,
                                   ", padding ", p, " over input ", graph::to_string(shape(x)));
            out[i] = span / stride + 1;
        }
        std::vector<graph::Attribute> attrs{{"kernel_shape", std::vector<std::int64_t>{kernel, kernel}}};
        if (pad) attrs.push_back({"pads", std::vector<std::int64_t>{p, p, p, p}});
        attrs.push_back({"strides", std::vector<std::int64_t>{stride, stride}});
        return m_g.add_op("MaxPool", name, {x}, std::move(out), std::move(attrs));
    }
    int concat(const std::vector<int>& xs, std::int64_t axis, const std::string& name) {
        graph::Shape out = shape(xs.at(0));
        const auto ax = static_cast<std::size_t>(axis);
        for (std::size_t i = 1; i < xs.size(); ++i) out.at(ax) += shape(xs[i]).at(ax);
        return m_g.add_op("Concat", name, xs, std::move(out), {{"axis", axis}});
    }
    /// Split along `axis` into pieces of the given sizes (sizes as an input: opset 13 and later).
    std::vector<int> split(int x, std::int64_t axis, const std::vector<std::int64_t>& sizes, const std::string& name) {
        const int sz = int64_vector(name + ".split", sizes);
        std::vector<int> outs;
        for (std::size_t i = 0; i < sizes.size(); ++i) {
            graph::Shape s = shape(x);
            s.at(static_cast<std::size_t>(axis)) = sizes[i];
            outs.push_back(m_g.add_tensor(name + ":" + std::to_string(i), std::move(s)));
        }
        m_g.add_node("Split", name, {x, sz}, outs, {{"axis", axis}});
        return outs;
    }
    /// Element `index` along `axis` (the axis is removed).
    int gather(int x, std::int64_t axis, std::int64_t index, const std::string& name) {
        const int idx = m_g.add_weight(name + ".index", {}, graph::DataType::int64);
        m_g.set_data(idx, {static_cast<double>(index)});
        graph::Shape out = shape(x);
        out.erase(out.begin() + axis);
        return m_g.add_op("Gather", name, {x, idx}, std::move(out), {{"axis", axis}});
    }
    /// Mean over `axes` (an attribute: opsets before 18).
    int reduce_mean(int x, const std::vector<std::int64_t>& axes, bool keepdims, const std::string& name) {
        graph::Shape out;
        const auto& s = shape(x);
        const auto rank = static_cast<std::int64_t>(s.size());
        for (std::int64_t i = 0; i < rank; ++i) {
            bool reduced = false;
            for (auto a : axes) reduced = reduced || (a < 0 ? a + rank : a) == i;
            if (!reduced)
                out.push_back(s[static_cast<std::size_t>(i)]);
            else if (keepdims)
                out.push_back(1);
        }
        return m_g.add_op("ReduceMean", name, {x}, std::move(out),
                          {{"axes", axes}, {"keepdims", std::int64_t{keepdims ? 1 : 0}}});
    }
    int softmax(int x, const std::string& name) { return unary("Softmax", x, name, {{"axis", std::int64_t{-1}}}); }
    /// LayerNormalization (opset 17) over the last axis, with scale and bias.
    int layer_norm(int x, const std::string& name) {
        const auto d = shape(x).back();
        const int g = weight(name + ".scale", {d});
        const int b = weight(name + ".bias", {d});
        return m_g.add_op("LayerNormalization", name, {x, g, b}, shape(x),
                          {{"axis", std::int64_t{-1}}, {"epsilon", 1e-5}});
    }

    /// Marks the outputs, checks the graph and hands it over.
    graph::Graph finish(const std::vector<int>& outputs) {
        for (int t : outputs) m_g.mark_output(t);
        m_g.validate();
        return std::move(m_g);
    }

private:
    static graph::Shape broadcast(const graph::Shape& a, const graph::Shape& b, const std::string& name) {
        const std::size_t n = std::max(a.size(), b.size());
        graph::Shape out(n);
        for (std::size_t i = 0; i < n; ++i) {
            const std::int64_t x = i < n - a.size() ? 1 : a[i - (n - a.size())];
            const std::int64_t y = i < n - b.size() ? 1 : b[i - (n - b.size())];
            if (x != y && x != 1 && y != 1)
                raise<shape_error>("NetworkBuilder: '", name, "': shapes ", graph::to_string(a), " and ",
                                   graph::to_string(b), " do not broadcast");
            out[i] = x == 1 ? y : x;
        }
        return out;
    }

    graph::Graph m_g;
    std::map<std::string, int> m_scalars;
};

}  // namespace dnncost::spaces
