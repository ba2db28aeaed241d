#pragma once
/// @file op_config.hpp
/// An operator's configuration as an operator table sees it: a key (operator kind, kernel,
/// stride, groups, spatial size) that fixes everything but the channel counts, and the input and
/// output channel counts C and K that the table's grid spans. Also the single-operator graph of a
/// node at other channel counts: what a table build measures, and what the roofline derivative
/// with respect to channel counts is computed from.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <dnncost/core/error.hpp>
#include <dnncost/cost/analytic.hpp>
#include <dnncost/graph/graph.hpp>

namespace dnncost::cost {

/// groups value of a depthwise convolution (groups = C = K, which change together).
inline constexpr std::int64_t depthwise_groups = -1;

/// What fixes an operator's cost apart from its channel counts.
struct OpKey {
    std::string op;                     ///< ONNX op type
    std::vector<std::int64_t> kernel;   ///< empty: none
    std::vector<std::int64_t> stride;   ///< empty: none
    std::int64_t groups = 1;            ///< depthwise_groups for a depthwise convolution
    std::vector<std::int64_t> spatial;  ///< input dimensions after the channel axis (Gemm: the batch)
    friend bool operator==(const OpKey&, const OpKey&) = default;
    friend auto operator<=>(const OpKey&, const OpKey&) = default;
};

namespace detail {
inline std::string dims_string(const std::vector<std::int64_t>& v) {
    if (v.empty()) return "-";
    std::string s;
    for (std::size_t i = 0; i < v.size(); ++i) {
        if (i) s += 'x';
        s += std::to_string(v[i]);
    }
    return s;
}
}  // namespace detail

/// "kernel 3x3 stride 2x2 groups dw spatial 56x56" parts as written in table files.
inline std::string kernel_string(const OpKey& k) { return detail::dims_string(k.kernel); }
inline std::string stride_string(const OpKey& k) { return detail::dims_string(k.stride); }
inline std::string spatial_string(const OpKey& k) { return detail::dims_string(k.spatial); }
inline std::string groups_string(const OpKey& k) {
    return k.groups == depthwise_groups ? "dw" : std::to_string(k.groups);
}
/// "Conv k3x3 s2x2 g1 56x56": the key in messages.
inline std::string to_string(const OpKey& k) {
    return k.op + " k" + kernel_string(k) + " s" + stride_string(k) + " g" + groups_string(k) + " " + spatial_string(k);
}

/// True when the table of this key spans input and output channels (C, K); otherwise only C
/// (the output has as many channels as the input: depthwise convolutions, elementwise
/// operators, normalisation, pooling).
inline bool spans_two_channel_counts(const OpKey& k) {
    return k.groups != depthwise_groups && (k.op == "Conv" || k.op == "Gemm" || k.op == "MatMul");
}

/// An operator configuration: the key and its channel counts (K = C for one-count keys).
struct OpConfig {
    OpKey key;
    std::int64_t c = 0;
    std::int64_t k = 0;
};

/// Operators a table prices at zero: they only relabel memory (see is_shape_only).
inline bool is_free_operator(std::string_view op) { return is_shape_only(op); }

/// The configuration of node `id`, or nullopt with `why` set when the table cannot describe it
/// (an operator whose channel counts it cannot tell, or a free operator).
inline std::optional<OpConfig> op_config(const graph::Graph& g, int id, std::string* why = nullptr) {
    const auto& n = g.node(id);
    const auto no = [&](std::string reason) -> std::optional<OpConfig> {
        if (why) *why = std::move(reason);
        return std::nullopt;
    };
    if (is_free_operator(n.op_type)) return no("a free operator (relabels memory only)");
    if (n.inputs.empty() || n.inputs[0] < 0 || n.outputs.empty()) return no("no data input or output");
    const auto& x = g.tensor(n.inputs[0]);
    if (x.kind == graph::TensorKind::weight) return no("its first input is a constant");
    const auto& out = g.tensor(n.outputs[0]).shape;
    OpConfig c;
    c.key.op = n.op_type;
    if (n.op_type == "Gemm" || n.op_type == "MatMul") {
        if (x.shape.size() != 2 || n.inputs.size() < 2 || n.inputs[1] < 0) return no("not a 2-D product");
        const auto& w = g.tensor(n.inputs[1]);
        if (w.kind != graph::TensorKind::weight || w.shape.size() != 2) return no("the second operand is not a weight");
        if (n.attr_int("transA", 0) != 0) return no("transA is set");
        c.key.spatial = {x.shape[0]};
        c.c = x.shape[1];
        c.k = out.size() == 2 ? out[1] : -1;
        if (c.k <= 0) return no("unexpected output shape");
        return c;
    }
    if (x.shape.size() < 2) return no("input of rank < 2");
    c.key.spatial.assign(x.shape.begin() + 2, x.shape.end());
    c.c = x.shape[1];
    if (n.op_type == "Conv") {
        if (n.inputs.size() < 2 || n.inputs[1] < 0) return no("no weight");
        const auto& w = g.tensor(n.inputs[1]);
        if (w.kind != graph::TensorKind::weight || w.shape.size() != x.shape.size())
            return no("weight is not constant");
        c.k = w.shape[0];
        c.key.kernel.assign(w.shape.begin() + 2, w.shape.end());
        c.key.stride = n.attr_ints("strides", std::vector<std::int64_t>(c.key.kernel.size(), 1));
        const auto groups = n.attr_int("group", 1);
        c.key.groups = (groups > 1 && groups == c.c && groups == c.k) ? depthwise_groups : groups;
        return c;
    }
    // one channel count: the output keeps the input's channels
    if (out.size() < 2 || out[1] != c.c) return no("its output channels differ from its input's");
    for (std::size_t s = 1; s < n.inputs.size(); ++s) {
        if (n.inputs[s] < 0) continue;
        const auto& t = g.tensor(n.inputs[s]);
        if (t.kind != graph::TensorKind::weight && t.shape != x.shape)
            return no("a second data input of another shape");
    }
    c.k = c.c;
    c.key.kernel = n.attr_ints("kernel_shape");
    if (!c.key.kernel.empty()) c.key.stride = n.attr_ints("strides", std::vector<std::int64_t>(c.key.kernel.size(), 1));
    return c;
}

/// The operator that ends a measured single-operator model (see single_op_graph).
inline constexpr const char* sink_operator = "ReduceMax";

/// Append the sink to tensor `t` of `s`: a ReduceMax over all axes into a scalar graph output.
inline void add_sink(graph::Graph& s, int t) {
    s.mark_output(s.add_op(sink_operator, "sink", {t}, {}, {{"keepdims", std::int64_t{0}}}, s.tensor(t).dtype));
}

/// The sink alone on a data input of `shape`: what single_op_graph(..., sink = true) adds to the
/// operator, measured separately to be subtracted.
inline graph::Graph sink_graph(const graph::Shape& shape, graph::DataType dtype = graph::DataType::float32) {
    graph::Graph s("sink");
    add_sink(s, s.add_input("x", shape, dtype));
    s.validate();
    return s;
}

/// The graph of node `id` of `g` alone, with C input and K output channels (K ignored for
/// one-count keys; depthwise: groups follow C): data inputs become graph inputs, weights keep
/// their kind (shapes rescaled along the channel axes; values the graph knows are kept when the
/// shape is unchanged), attributes are copied.
///
/// With `sink`, the first output is not a graph output but feeds a ReduceMax to a scalar: a
/// runner hands graph outputs back to its host, which for a large activation can cost more
/// than the operator (a fresh buffer per run), while inside a network the activation stays in
/// the runtime's memory. The sink's own cost is measured on sink_graph and subtracted.
/// @throws config_error when the node has no configuration (see op_config) or C, K are invalid
inline graph::Graph single_op_graph(const graph::Graph& g, int id, std::int64_t C, std::int64_t K, bool sink = false) {
    std::string why;
    const auto cfg = op_config(g, id, &why);
    const auto& n = g.node(id);
    if (!cfg) raise<config_error>("node '", n.name, "' (", n.op_type, ") has no table configuration: ", why);
    const bool two = spans_two_channel_counts(cfg->key);
    if (!two) K = C;
    if (C < 1 || K < 1) raise<config_error>("single_op_graph: channel counts must be positive, got C=", C, " K=", K);
    if (cfg->key.groups > 1 && (C % cfg->key.groups || K % cfg->key.groups))
        raise<config_error>("single_op_graph: node '", n.name, "': C=", C, " and K=", K,
                            " must be multiples of groups ", cfg->key.groups);
    const std::int64_t c0 = cfg->c, k0 = cfg->k;
    graph::Graph s(n.name);
    std::vector<int> inputs;
    const auto& x = g.tensor(n.inputs[0]);
    for (std::size_t slot = 0; slot < n.inputs.size(); ++slot) {
        const int t = n.inputs[slot];
        if (t < 0) {
            inputs.push_back(-1);
            continue;
        }
        const auto& ten = g.tensor(t);
        auto shape = ten.shape;
        const std::string name = "in" + std::to_string(slot);
        if (ten.kind != graph::TensorKind::weight) {
            if (!inputs.empty() && t == n.inputs[0]) {  // the same tensor read twice
                inputs.push_back(inputs[0]);
                continue;
            }
            shape[1] = C;
            inputs.push_back(s.add_input(name, shape, ten.dtype));
            continue;
        }
        if (n.op_type == "Conv" && slot == 1) {
            shape[0] = K;
            shape[1] = cfg->key.groups == depthwise_groups ? 1 : C / std::max<std::int64_t>(1, cfg->key.groups);
        } else if (n.op_type == "Conv" && slot == 2) {
            shape[0] = K;
        } else if ((n.op_type == "Gemm" || n.op_type == "MatMul") && slot == 1) {
            const bool trans = n.op_type == "Gemm" && n.attr_int("transB", 0) != 0;
            shape = trans ? graph::Shape{K, C} : graph::Shape{C, K};
        } else if (n.op_type == "Gemm" && slot == 2) {
            for (auto& d : shape)
                if (d == k0) d = K;
        } else {
            // per-channel constants: the axis aligned with the data's channel axis (or a 1-D
            // tensor of C elements) scales with C
            const auto rank = static_cast<std::ptrdiff_t>(shape.size());
            const auto axis = rank == 1 ? std::ptrdiff_t{0} : rank - (static_cast<std::ptrdiff_t>(x.shape.size()) - 1);
            if (axis >= 0 && axis < rank && shape[static_cast<std::size_t>(axis)] == c0)
                shape[static_cast<std::size_t>(axis)] = C;
        }
        const int w = s.add_weight(name, shape, ten.dtype);
        if (!ten.data.empty() && shape == ten.shape) s.set_data(w, ten.data);
        inputs.push_back(w);
    }
    std::vector<int> outputs;
    for (std::size_t o = 0; o < n.outputs.size(); ++o) {
        const auto& ten = g.tensor(n.outputs[o]);
        auto shape = ten.shape;
        if (shape.size() >= 2) shape[1] = two ? K : C;
        const int t = s.add_tensor("out" + std::to_string(o), shape, ten.dtype);
        if (!(sink && o == 0)) s.mark_output(t);
        outputs.push_back(t);
    }
    auto attributes = n.attributes;
    if (cfg->key.groups == depthwise_groups)
        for (auto& a : attributes)
            if (a.name == "group") a.value = C;
    s.add_node(n.op_type, n.name, inputs, outputs, attributes);
    if (sink) add_sink(s, outputs[0]);
    s.validate();
    return s;
}

}  // namespace dnncost::cost
