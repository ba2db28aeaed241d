#pragma once
/// @file analytic.hpp
/// Analytic per-node cost: MACs, FLOPs, parameters and memory traffic, plus a roofline latency
/// model `max(FLOPs / peak, bytes / bandwidth)` for a user-supplied device.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <dnncost/core/config.hpp>
#include <dnncost/core/error.hpp>
#include <dnncost/graph/flat_view.hpp>
#include <dnncost/graph/graph.hpp>

namespace dnncost::cost {

namespace detail {
/// a + b and a * b for cost counts; on overflow a shape_error "cost: <what> exceeds 64 bits
/// (implausible shape)" instead of a wrapped, negative count.
template <class... What>
std::int64_t add_or_raise(std::int64_t a, std::int64_t b, const What&... what) {
    std::int64_t r = 0;
    if (__builtin_add_overflow(a, b, &r)) raise<shape_error>("cost: ", what..., " exceeds 64 bits (implausible shape)");
    return r;
}
template <class... What>
std::int64_t mul_or_raise(std::int64_t a, std::int64_t b, const What&... what) {
    std::int64_t r = 0;
    if (__builtin_mul_overflow(a, b, &r)) raise<shape_error>("cost: ", what..., " exceeds 64 bits (implausible shape)");
    return r;
}
}  // namespace detail

/// Cost of one operator.
///
/// Conventions (so that whole-model figures compare with published torchvision numbers):
/// - MACs count the multiply-accumulates of the linear-algebra operators only (Conv,
///   ConvTranspose, Gemm, MatMul, Einsum-like). Elementwise, normalisation, pooling and
///   activation operators have MACs = 0 but non-zero FLOPs.
/// - FLOPs = 2 x MACs for linear algebra (+1 per output for a bias), and a per-element count
///   for everything else (documented at node_cost).
/// - Memory traffic = bytes of every activation input + every output + every weight read once.
struct NodeCost {
    std::int64_t macs = 0;
    std::int64_t flops = 0;
    std::int64_t params = 0;
    std::int64_t input_bytes = 0;  ///< activation inputs (graph inputs and computed tensors)
    std::int64_t output_bytes = 0;
    std::int64_t weight_bytes = 0;  ///< initializers read by the node
    std::int64_t bytes() const {
        return detail::add_or_raise(detail::add_or_raise(input_bytes, output_bytes, "byte count"), weight_bytes,
                                    "byte count");
    }
    /// Sums field by field. @throws shape_error when a sum exceeds 64 bits (implausible shapes);
    /// *this is then left unchanged.
    NodeCost& operator+=(const NodeCost& o) {
        const auto sum = [](std::int64_t a, std::int64_t b) {
            return detail::add_or_raise(a, b, "a sum over the graph");
        };
        NodeCost t;
        t.macs = sum(macs, o.macs);
        t.flops = sum(flops, o.flops);
        t.params = sum(params, o.params);
        t.input_bytes = sum(input_bytes, o.input_bytes);
        t.output_bytes = sum(output_bytes, o.output_bytes);
        t.weight_bytes = sum(weight_bytes, o.weight_bytes);
        return *this = t;
    }
};

/// Operators whose cost is zero by construction (they only relabel memory in a runtime that
/// can alias): they still appear in the graph and still count their memory traffic.
inline bool is_shape_only(std::string_view op) {
    return op == "Reshape" || op == "Flatten" || op == "Squeeze" || op == "Unsqueeze" || op == "Identity" ||
           op == "Shape" || op == "Constant" || op == "Dropout";
}

namespace detail {
/// Checked arithmetic for one node's counts: an absurd shape (e.g. a batch of 2^62) is a
/// shape_error naming the node.
inline std::int64_t mul(const graph::Node& n, std::int64_t a, std::int64_t b) {
    return mul_or_raise(a, b, "node '", n.name, "' (", n.op_type, "): operation or byte count");
}
inline std::int64_t add(const graph::Node& n, std::int64_t a, std::int64_t b) {
    return add_or_raise(a, b, "node '", n.name, "' (", n.op_type, "): operation or byte count");
}
/// Elements and bytes of a tensor, checked (shapes themselves are checked by Graph::validate).
DNNCOST_FUNC std::int64_t elems(const graph::Node& n, const graph::Tensor& t);
inline std::int64_t bytes(const graph::Node& n, const graph::Tensor& t) {
    return mul(n, elems(n, t), static_cast<std::int64_t>(graph::element_size(t.dtype)));
}
inline std::int64_t out_elems(const graph::Graph& g, const graph::Node& n) {
    std::int64_t e = 0;
    for (int t : n.outputs) e = add(n, e, elems(n, g.tensor(t)));
    return e;
}
inline std::int64_t first_out_elems(const graph::Graph& g, const graph::Node& n) {
    if (n.outputs.empty()) raise<shape_error>("cost: node '", n.name, "' (", n.op_type, ") has no outputs");
    return elems(n, g.tensor(n.outputs[0]));
}
inline const graph::Shape& in_shape(const graph::Graph& g, const graph::Node& n, std::size_t slot) {
    if (slot >= n.inputs.size() || n.inputs[slot] < 0)
        raise<shape_error>("cost: node '", n.name, "' (", n.op_type, ") lacks input ", slot);
    return g.tensor(n.inputs[slot]).shape;
}
inline bool has_input(const graph::Node& n, std::size_t slot) { return slot < n.inputs.size() && n.inputs[slot] >= 0; }
inline std::int64_t in_elems(const graph::Graph& g, const graph::Node& n, std::size_t slot) {
    (void)in_shape(g, n, slot);  // the slot must be present
    return elems(n, g.tensor(n.inputs[slot]));
}

/// One cost rule per operator type: fills macs and flops of `c` (params and bytes are common).
using CostRule = void (*)(const graph::Graph&, const graph::Node&, NodeCost&);

/// FLOPs = k per output element.
template <int K>
void per_output(const graph::Graph& g, const graph::Node& n, NodeCost& c) {
    c.flops = mul(n, K, out_elems(g, n));
}
/// FLOPs = k per element of input 0 (reductions: every input element is read and combined).
template <int K>
void per_input(const graph::Graph& g, const graph::Node& n, NodeCost& c) {
    c.flops = mul(n, K, has_input(n, 0) ? in_elems(g, n, 0) : 0);
}
/// Variadic elementwise (Sum, Max, ...): one operation per output element and extra operand.
inline void variadic(const graph::Graph& g, const graph::Node& n, NodeCost& c) {
    std::int64_t operands = 0;
    for (int t : n.inputs) operands += t >= 0;
    c.flops = mul(n, out_elems(g, n), std::max<std::int64_t>(1, operands - 1));
}
inline void zero_cost(const graph::Graph&, const graph::Node&, NodeCost& c) { c.flops = 0; }
/// An operator without a rule of its own: one FLOP per output element (an elementwise guess).
inline void elementwise_guess(const graph::Graph& g, const graph::Node& n, NodeCost& c) { c.flops = out_elems(g, n); }
inline void linear_bias(const graph::Graph& g, const graph::Node& n, NodeCost& c, std::size_t bias_slot) {
    c.flops = add(n, mul(n, 2, c.macs), has_input(n, bias_slot) ? out_elems(g, n) : 0);
}
DNNCOST_FUNC void conv(const graph::Graph& g, const graph::Node& n, NodeCost& c);
DNNCOST_FUNC void conv_transpose(const graph::Graph& g, const graph::Node& n, NodeCost& c);
DNNCOST_FUNC void gemm(const graph::Graph& g, const graph::Node& n, NodeCost& c);
inline void matmul(const graph::Graph& g, const graph::Node& n, NodeCost& c) {
    // the output already carries the broadcast batch dimensions; each element is a K-long dot
    const auto& a = in_shape(g, n, 0);
    c.macs = mul(n, first_out_elems(g, n), a.empty() ? 1 : a.back());
    c.flops = mul(n, 2, c.macs);
}
DNNCOST_FUNC void einsum(const graph::Graph& g, const graph::Node& n, NodeCost& c);
DNNCOST_FUNC void recurrent(const graph::Graph& g, const graph::Node& n, NodeCost& c);
inline void pool(const graph::Graph& g, const graph::Node& n, NodeCost& c) {
    std::int64_t k = 1;
    for (auto d : n.attr_ints_view("kernel_shape")) k = mul(n, k, d);
    c.flops = mul(n, out_elems(g, n), k);
}
inline void batch_norm(const graph::Graph& g, const graph::Node& n, NodeCost& c) {
    c.flops = mul(n, 2, first_out_elems(g, n));  // inference: per-channel scale and shift
}
inline void normalization(const graph::Graph& g, const graph::Node& n, NodeCost& c) {
    // statistics: sum and sum of squares (3 per element); normalise, scale, shift (3 per element)
    c.flops = mul(n, 6, in_elems(g, n, 0));
}
DNNCOST_FUNC void resize(const graph::Graph& g, const graph::Node& n, NodeCost& c);

/// The cost rules by op type, keyed by views of string literals: looked up by a node's op type
/// without a copy.
DNNCOST_FUNC const std::unordered_map<std::string_view, CostRule>& cost_rules();
}  // namespace detail

/// True if `op` has a dedicated cost rule (otherwise node_cost falls back to one FLOP per
/// output element).
inline bool is_known_operator(const std::string& op) { return detail::cost_rules().count(op) > 0; }

/// The cost rule node_cost() applies to op type `op` (its elementwise guess when `op` has none
/// of its own): looked up once per op type by a pass that prices many nodes of few types.
inline detail::CostRule cost_rule_of(std::string_view op) {
    const auto& rules = detail::cost_rules();
    const auto it = rules.find(op);
    return it != rules.end() ? it->second : detail::elementwise_guess;
}

/// node_cost() of node `id` with its op type's rule already looked up (cost_rule_of).
DNNCOST_FUNC NodeCost node_cost(const graph::Graph& g, int id, detail::CostRule rule);

/// Cost of node `id` of `g`. Unknown operator types get MACs = 0 and FLOPs = one per output
/// element (an elementwise guess), so a new operator never makes a model unusable; use
/// `is_known_operator` to find out.
/// Per-operator FLOPs: linear algebra 2 x MACs (+1 per output with a bias; Einsum's MACs are
/// its output elements times the extents it contracts, per extra operand); pooling one per
/// window element; BatchNormalization 2 per element; Layer/Instance/GroupNormalization 6 per
/// element; reductions one per input element; binary elementwise one per output and extra
/// operand; Relu-like one, Clip two, transcendental activations four, Gelu eight, Softmax eight
/// per element; Resize 2 per interpolation neighbour (0 for nearest); data movement zero.
/// @throws shape_error if a linear-algebra node lacks the inputs its cost depends on
inline NodeCost node_cost(const graph::Graph& g, int id) { return node_cost(g, id, cost_rule_of(g.node(id).op_type)); }

/// The MACs and FLOPs of node `id` of the graph of `view` as node_cost(view.graph(), id, rule)
/// gives them (its other counts left zero), with the same errors: the byte counts node_cost
/// checks are checked on the view's sizes, and node_cost itself runs only when one of them is out
/// of range, to raise its own error. For a pass that needs only the arithmetic of many nodes.
DNNCOST_FUNC NodeCost node_arithmetic(const graph::FlatView& view, int id, detail::CostRule rule);

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

/// A device for the roofline model: the one roofline device of the library (a compute unit of
/// the mapping search's roofline platform holds one too).
struct DeviceSpec {
    std::string name = "device";
    double peak_flops = 1e12;        ///< FLOP/s
    double bandwidth = 1e11;         ///< bytes/s
    double per_op_overhead_s = 0.0;  ///< fixed launch/dispatch cost per operator

    /// The device reaching only `efficiency` of its peak and bandwidth (a dataflow that suits
    /// an operator class less well); the overhead is unchanged.
    DeviceSpec derated(double efficiency) const {
        DeviceSpec d = *this;
        d.peak_flops = peak_flops * efficiency;
        d.bandwidth = bandwidth * efficiency;
        return d;
    }
};

/// The roofline formula, seconds: max(flops / peak, bytes / bandwidth) + the per-operator
/// overhead. Every roofline figure of the library comes from here.
/// @throws config_error for a peak or bandwidth that is not positive, a negative or non-finite
///         overhead, or negative or non-finite counts
DNNCOST_FUNC double roofline_seconds(double flops, double bytes, const DeviceSpec& d);

/// Roofline latency of one node, seconds.
inline double roofline_seconds(const NodeCost& c, const DeviceSpec& d) {
    return roofline_seconds(static_cast<double>(c.flops), static_cast<double>(c.bytes()), d);
}

/// Per-node roofline latencies (seconds) and their sum.
struct RooflineResult {
    std::vector<double> per_node;
    double total = 0.0;
};
DNNCOST_FUNC RooflineResult roofline(const graph::Graph& g, const DeviceSpec& d);

}  // namespace dnncost::cost

#if !defined(DNNCOST_COMPILED)
#include <dnncost/cost/analytic_impl.hpp>
#endif
