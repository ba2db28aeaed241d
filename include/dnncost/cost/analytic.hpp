#pragma once
/// @file analytic.hpp
/// Analytic per-node cost: MACs, FLOPs, parameters and memory traffic, plus a roofline latency
/// model `max(FLOPs / peak, bytes / bandwidth)` for a user-supplied device.
///
/// Conventions (so that whole-model figures compare with published torchvision numbers):
/// - MACs count the multiply-accumulates of the linear-algebra operators only (Conv,
///   ConvTranspose, Gemm, MatMul, Einsum-like). Elementwise, normalisation, pooling and
///   activation operators have MACs = 0 but non-zero FLOPs.
/// - FLOPs = 2 x MACs for linear algebra (+1 per output for a bias), and a per-element count
///   for everything else (documented per operator below).
/// - Memory traffic = bytes of every activation input + every output + every weight read once.
#include <cstdint>
#include <string>
#include <vector>

#include <dnncost/core/error.hpp>
#include <dnncost/graph/graph.hpp>

namespace dnncost::cost {

/// Cost of one operator.
struct NodeCost {
    std::int64_t macs = 0;
    std::int64_t flops = 0;
    std::int64_t params = 0;
    std::int64_t input_bytes = 0;   ///< activation inputs (graph inputs and computed tensors)
    std::int64_t output_bytes = 0;
    std::int64_t weight_bytes = 0;  ///< initializers read by the node
    std::int64_t bytes() const { return input_bytes + output_bytes + weight_bytes; }
    NodeCost& operator+=(const NodeCost& o) {
        macs += o.macs; flops += o.flops; params += o.params;
        input_bytes += o.input_bytes; output_bytes += o.output_bytes; weight_bytes += o.weight_bytes;
        return *this;
    }
};

/// Operators whose cost is zero by construction (they only relabel memory in a runtime that
/// can alias): they still appear in the graph and still count their memory traffic.
inline bool is_shape_only(const std::string& op) {
    return op == "Reshape" || op == "Flatten" || op == "Squeeze" || op == "Unsqueeze" || op == "Identity" ||
           op == "Shape" || op == "Constant" || op == "Dropout";
}

namespace detail {
inline std::int64_t out_elems(const graph::Graph& g, const graph::Node& n) {
    std::int64_t e = 0;
    for (int t : n.outputs) e += g.tensor(t).elements();
    return e;
}
inline const graph::Shape& in_shape(const graph::Graph& g, const graph::Node& n, std::size_t slot) {
    if (slot >= n.inputs.size() || n.inputs[slot] < 0)
        raise<shape_error>("cost: node '", n.name, "' (", n.op_type, ") lacks input ", slot);
    return g.tensor(n.inputs[slot]).shape;
}
inline bool has_input(const graph::Node& n, std::size_t slot) { return slot < n.inputs.size() && n.inputs[slot] >= 0; }
}  // namespace detail

/// Cost of node `id` of `g`. Unknown operator types get MACs = 0 and FLOPs = one per output
/// element (an elementwise guess), so a new operator never makes a model unusable; use
/// `is_known_operator` to find out.
inline NodeCost node_cost(const graph::Graph& g, int id) {
    using detail::out_elems;
    const auto& n = g.node(id);
    NodeCost c;
    for (int t : n.inputs) {
        if (t < 0) continue;
        const auto& ten = g.tensor(t);
        if (ten.kind == graph::TensorKind::weight) {
            c.weight_bytes += ten.bytes();
            c.params += ten.elements();
        } else {
            c.input_bytes += ten.bytes();
        }
    }
    for (int t : n.outputs) c.output_bytes += g.tensor(t).bytes();
    const std::string& op = n.op_type;
    const std::int64_t out = out_elems(g, n);

    if (op == "Conv") {
        const auto& w = detail::in_shape(g, n, 1);  // [M, C/group, k...]
        std::int64_t per_out = 1;
        for (std::size_t i = 1; i < w.size(); ++i) per_out *= w[i];
        c.macs = out * per_out;
        c.flops = 2 * c.macs + (detail::has_input(n, 2) ? out : 0);
    } else if (op == "ConvTranspose") {
        // every input element is multiplied by the (M/group) x k... slice of the kernel
        const auto& x = detail::in_shape(g, n, 0);
        const auto& w = detail::in_shape(g, n, 1);  // [C, M/group, k...]
        std::int64_t per_in = 1;
        for (std::size_t i = 1; i < w.size(); ++i) per_in *= w[i];
        c.macs = graph::numel(x) * per_in;
        c.flops = 2 * c.macs + (detail::has_input(n, 2) ? out : 0);
    } else if (op == "Gemm") {
        const auto& a = detail::in_shape(g, n, 0);
        const std::int64_t k = n.attr_int("transA", 0) ? a[0] : a[1];
        c.macs = out * k;
        c.flops = 2 * c.macs + (detail::has_input(n, 2) ? out : 0);
    } else if (op == "MatMul") {
        const auto& a = detail::in_shape(g, n, 0);
        c.macs = out * (a.empty() ? 1 : a.back());
        c.flops = 2 * c.macs;
    } else if (op == "BatchNormalization") {
        c.flops = 2 * out;  // inference: per-channel scale and shift
    } else if (op == "Relu" || op == "LeakyRelu" || op == "Clip" || op == "Abs" || op == "Neg" || op == "Sign") {
        c.flops = out;
    } else if (op == "AveragePool" || op == "MaxPool") {
        std::int64_t k = 1;
        for (auto d : n.attr_ints("kernel_shape")) k *= d;
        c.flops = out * k;
    } else if (op == "GlobalAveragePool" || op == "GlobalMaxPool" || op == "ReduceMean" || op == "ReduceSum" ||
               op == "ReduceMax" || op == "ReduceMin") {
        c.flops = c.input_bytes / std::max<std::int64_t>(1, static_cast<std::int64_t>(
                                                              graph::element_size(g.tensor(n.inputs[0]).dtype)));
    } else if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div" || op == "Sum" || op == "Max" ||
               op == "Min" || op == "Pow") {
        c.flops = out * std::max<std::int64_t>(1, static_cast<std::int64_t>(n.inputs.size()) - 1);
    } else if (op == "Sigmoid" || op == "Tanh" || op == "Exp" || op == "Log" || op == "Sqrt" || op == "Erf" ||
               op == "HardSigmoid" || op == "HardSwish" || op == "Elu" || op == "Selu" || op == "Softplus") {
        c.flops = 4 * out;
    } else if (op == "Softmax" || op == "LogSoftmax") {
        c.flops = 5 * out;  // max, subtract, exp, sum, divide
    } else if (is_shape_only(op) || op == "Transpose" || op == "Concat" || op == "Split" || op == "Slice" ||
               op == "Gather" || op == "Pad" || op == "Expand" || op == "Tile") {
        c.flops = 0;
    } else {
        c.flops = out;
    }
    return c;
}

/// Cost of every node, indexed like g.nodes().
inline std::vector<NodeCost> annotate(const graph::Graph& g) {
    std::vector<NodeCost> r;
    r.reserve(g.num_nodes());
    for (std::size_t i = 0; i < g.num_nodes(); ++i) r.push_back(node_cost(g, static_cast<int>(i)));
    return r;
}

/// Sum over all nodes. Parameters are counted once per weight tensor (shared weights once).
inline NodeCost total_cost(const graph::Graph& g) {
    NodeCost t;
    for (const auto& c : annotate(g)) t += c;
    t.params = g.parameter_count();
    return t;
}

/// A device for the roofline model.
struct DeviceSpec {
    std::string name = "device";
    double peak_flops = 1e12;        ///< FLOP/s
    double bandwidth = 1e11;         ///< bytes/s
    double per_op_overhead_s = 0.0;  ///< fixed launch/dispatch cost per operator
};

/// Roofline latency of one node, seconds.
inline double roofline_seconds(const NodeCost& c, const DeviceSpec& d) {
    if (!(d.peak_flops > 0) || !(d.bandwidth > 0))
        raise<config_error>("roofline: device '", d.name, "' needs positive peak_flops and bandwidth");
    const double compute = static_cast<double>(c.flops) / d.peak_flops;
    const double memory = static_cast<double>(c.bytes()) / d.bandwidth;
    return std::max(compute, memory) + d.per_op_overhead_s;
}

/// Per-node roofline latencies (seconds) and their sum.
struct RooflineResult {
    std::vector<double> per_node;
    double total = 0.0;
};
inline RooflineResult roofline(const graph::Graph& g, const DeviceSpec& d) {
    RooflineResult r;
    for (const auto& c : annotate(g)) {
        r.per_node.push_back(roofline_seconds(c, d));
        r.total += r.per_node.back();
    }
    return r;
}

}  // namespace dnncost::cost
