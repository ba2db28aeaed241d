#pragma once
/// @file analytic_impl.hpp
/// The definitions of analytic.hpp: compiled once into dnncost::compiled in compiled mode
/// (core/config.hpp), included by analytic.hpp in header-only mode.
#include <dnncost/cost/analytic.hpp>

DNNCOST_FUNC auto dnncost::cost::detail::elems(const graph::Node& n, const graph::Tensor& t) -> std::int64_t {
    std::int64_t e = 1;
    for (auto d : t.shape) {
        if (d < 0)  // a graph that was never validated: no cost for a shape that is not known
            raise<shape_error>("cost: node '", n.name, "' (", n.op_type, "): tensor '", t.name, "' has unknown shape ",
                               graph::to_string(t.shape));
        e = mul(n, e, d);
    }
    return e;
}

DNNCOST_FUNC auto dnncost::cost::detail::conv(const graph::Graph& g, const graph::Node& n, NodeCost& c) -> void {
    // weight [M, C/group, k...]: every output element is a dot product of C/group * prod(k)
    const auto& w = in_shape(g, n, 1);
    std::int64_t per_out = 1;
    for (std::size_t i = 1; i < w.size(); ++i) per_out = mul(n, per_out, w[i]);
    c.macs = mul(n, first_out_elems(g, n), per_out);
    linear_bias(g, n, c, 2);
}

DNNCOST_FUNC auto dnncost::cost::detail::conv_transpose(const graph::Graph& g, const graph::Node& n, NodeCost& c)
    -> void {
    // weight [C, M/group, k...]: every input element is scattered through M/group * prod(k)
    const auto& w = in_shape(g, n, 1);
    std::int64_t per_in = 1;
    for (std::size_t i = 1; i < w.size(); ++i) per_in = mul(n, per_in, w[i]);
    c.macs = mul(n, in_elems(g, n, 0), per_in);
    linear_bias(g, n, c, 2);
}

DNNCOST_FUNC auto dnncost::cost::detail::gemm(const graph::Graph& g, const graph::Node& n, NodeCost& c) -> void {
    const auto& a = in_shape(g, n, 0);
    if (a.size() != 2) raise<shape_error>("cost: Gemm node '", n.name, "' input is not 2-D");
    const std::int64_t k = n.attr_int("transA", 0) ? a[0] : a[1];
    c.macs = mul(n, first_out_elems(g, n), k);
    linear_bias(g, n, c, 2);
}

DNNCOST_FUNC auto dnncost::cost::detail::einsum(const graph::Graph& g, const graph::Node& n, NodeCost& c) -> void {
    // every output element sums over the contracted labels (on the operands, not the output):
    // out x prod(contracted extents) products per extra operand; one operand only adds
    std::string equation = n.attr_string("equation", "");
    equation.erase(std::remove(equation.begin(), equation.end(), ' '), equation.end());
    const auto arrow = equation.find("->");
    const std::string lhs = equation.substr(0, arrow);
    std::int64_t extent[128];
    std::fill(std::begin(extent), std::end(extent), 1);
    int uses[128] = {};
    std::size_t operand = 0, operands = 1;
    std::string term;
    const auto read_term = [&] {
        if (operand >= n.inputs.size()) return;
        const auto& shape = in_shape(g, n, operand);
        const auto dots = term.find("...");
        const std::size_t labels = term.size() - (dots == std::string::npos ? 0 : 3);
        std::size_t axis = 0;
        for (std::size_t k = 0; k < term.size(); ++k) {
            if (term.compare(k, 3, "...") == 0) {
                axis += shape.size() >= labels ? shape.size() - labels : 0;
                k += 2;
                continue;
            }
            const auto label = static_cast<unsigned char>(term[k]);
            if (label < 128 && axis < shape.size()) {
                extent[label] = std::max(extent[label], shape[axis]);
                ++uses[label];
            }
            ++axis;
        }
    };
    for (char ch : lhs) {
        if (ch == ',') {
            read_term();
            term.clear();
            ++operand;
            ++operands;
        } else {
            term += ch;
        }
    }
    read_term();
    bool in_output[128] = {};
    if (arrow != std::string::npos) {
        for (char ch : equation.substr(arrow + 2))
            if (static_cast<unsigned char>(ch) < 128) in_output[static_cast<unsigned char>(ch)] = true;
    } else {
        for (int label = 0; label < 128; ++label) in_output[label] = uses[label] == 1;
    }
    if (operands < 2) {
        c.flops = has_input(n, 0) ? in_elems(g, n, 0) : 0;
        return;
    }
    std::int64_t contracted = 1;
    for (int label = 0; label < 128; ++label)
        if (uses[label] > 0 && !in_output[label]) contracted = mul(n, contracted, extent[label]);
    c.macs = mul(n, mul(n, first_out_elems(g, n), contracted), static_cast<std::int64_t>(operands - 1));
    c.flops = mul(n, 2, c.macs);
}

DNNCOST_FUNC auto dnncost::cost::detail::recurrent(const graph::Graph& g, const graph::Node& n, NodeCost& c) -> void {
    // X [seq, batch, input] (layout 0) or [batch, seq, input] (layout 1); W [dirs, G*H, input],
    // R [dirs, G*H, H]: per step and batch row every gate row is one dot product with x and h.
    const auto& x = in_shape(g, n, 0);
    if (x.size() != 3) raise<shape_error>("cost: ", n.op_type, " node '", n.name, "' input is not 3-D");
    const std::int64_t steps_times_batch = mul(n, x[0], x[1]);
    c.macs = mul(n, steps_times_batch, add(n, in_elems(g, n, 1), in_elems(g, n, 2)));
    const auto& w = in_shape(g, n, 1);
    const std::int64_t gate_rows = w.size() == 3 ? mul(n, w[0], w[1]) : 0;
    // gate nonlinearities and the state update: ~4 FLOPs per gate element and step
    c.flops = add(n, mul(n, 2, c.macs), mul(n, 4, mul(n, steps_times_batch, gate_rows)));
}

DNNCOST_FUNC auto dnncost::cost::detail::resize(const graph::Graph& g, const graph::Node& n, NodeCost& c) -> void {
    // nearest: a gather (0 FLOPs); linear: 2 FLOPs per neighbour, 2^d neighbours over the d
    // resized (spatial) axes; cubic: 4^d neighbours.
    const std::string mode = n.attr_string("mode", "nearest");
    if (n.outputs.empty()) raise<shape_error>("cost: node '", n.name, "' (", n.op_type, ") has no outputs");
    const auto& out = g.tensor(n.outputs[0]).shape;
    const std::int64_t d = std::max<std::int64_t>(0, static_cast<std::int64_t>(out.size()) - 2);
    std::int64_t neighbours = 1;
    if (mode == "linear" || mode == "bilinear" || mode == "trilinear")
        for (std::int64_t i = 0; i < d; ++i) neighbours = mul(n, neighbours, 2);
    else if (mode == "cubic" || mode == "bicubic")
        for (std::int64_t i = 0; i < d; ++i) neighbours = mul(n, neighbours, 4);
    else
        neighbours = 0;
    c.flops = mul(n, mul(n, 2, neighbours), first_out_elems(g, n));
}

DNNCOST_FUNC auto dnncost::cost::node_cost(const graph::Graph& g, int id, detail::CostRule rule) -> NodeCost {
    const auto& n = g.node(id);
    NodeCost c;
    for (int t : n.inputs) {
        if (t < 0) continue;
        const auto& ten = g.tensor(t);
        if (ten.kind == graph::TensorKind::weight) {
            c.weight_bytes = detail::add(n, c.weight_bytes, detail::bytes(n, ten));
            c.params = detail::add(n, c.params, detail::elems(n, ten));
        } else {
            c.input_bytes = detail::add(n, c.input_bytes, detail::bytes(n, ten));
        }
    }
    for (int t : n.outputs) c.output_bytes = detail::add(n, c.output_bytes, detail::bytes(n, g.tensor(t)));
    (void)detail::add(n, detail::add(n, c.input_bytes, c.output_bytes), c.weight_bytes);  // bytes() must fit too
    rule(g, n, c);
    return c;
}

DNNCOST_FUNC auto dnncost::cost::node_arithmetic(const graph::FlatView& view, int id, detail::CostRule rule)
    -> NodeCost {
    // node_cost's sums, in its order; a size or a sum out of range leaves the checking to it
    std::int64_t weight_bytes = 0, params = 0, input_bytes = 0, output_bytes = 0, total = 0;
    bool in_range = true;
    const auto sum = [&](std::int64_t& into, std::int64_t x) {
        if (__builtin_add_overflow(into, x, &into)) in_range = false;
    };
    for (int t : view.inputs(id)) {
        if (t < 0) continue;
        if (!view.sized(t)) {
            in_range = false;
        } else if (view.is_weight(t)) {
            sum(weight_bytes, view.bytes(t));
            sum(params, view.elements(t));
        } else {
            sum(input_bytes, view.bytes(t));
        }
    }
    for (int t : view.outputs(id)) {
        if (view.sized(t))
            sum(output_bytes, view.bytes(t));
        else
            in_range = false;
    }
    sum(total, input_bytes);
    sum(total, output_bytes);
    sum(total, weight_bytes);
    NodeCost c;
    if (!in_range) {
        const auto full = node_cost(view.graph(), id, rule);
        c.macs = full.macs;
        c.flops = full.flops;
        return c;
    }
    rule(view.graph(), view.graph().node(id), c);
    return c;
}

DNNCOST_FUNC auto dnncost::cost::roofline_seconds(double flops, double bytes, const DeviceSpec& d) -> double {
    if (!(d.peak_flops > 0) || !(d.bandwidth > 0))
        raise<config_error>("roofline: device '", d.name, "' needs positive peak_flops and bandwidth");
    if (!(d.per_op_overhead_s >= 0) || !std::isfinite(d.per_op_overhead_s))
        raise<config_error>("roofline: device '", d.name, "' needs a finite, non-negative per_op_overhead_s, got ",
                            d.per_op_overhead_s);
    if (!(flops >= 0) || !(bytes >= 0) || !std::isfinite(flops) || !std::isfinite(bytes))
        raise<config_error>("roofline: device '", d.name, "': ", flops, " FLOPs and ", bytes,
                            " bytes must be finite and non-negative");
    const double compute = flops / d.peak_flops;
    const double memory = bytes / d.bandwidth;
    return std::max(compute, memory) + d.per_op_overhead_s;
}

DNNCOST_FUNC auto dnncost::cost::roofline(const graph::Graph& g, const DeviceSpec& d) -> RooflineResult {
    RooflineResult r;
    for (const auto& c : annotate(g)) {
        r.per_node.push_back(roofline_seconds(c, d));
        r.total += r.per_node.back();
    }
    return r;
}

namespace dnncost::cost::detail {

DNNCOST_FUNC const std::unordered_map<std::string_view, CostRule>& cost_rules() {
    static const std::unordered_map<std::string_view, CostRule> rules = [] {
        std::unordered_map<std::string_view, CostRule> r;
        r["Conv"] = conv;
        r["ConvTranspose"] = conv_transpose;
        r["Gemm"] = gemm;
        r["MatMul"] = matmul;
        r["Einsum"] = einsum;
        r["LSTM"] = recurrent;
        r["GRU"] = recurrent;
        r["RNN"] = recurrent;
        for (const char* op : {"AveragePool", "MaxPool", "LpPool"}) r[op] = pool;
        r["BatchNormalization"] = batch_norm;
        for (const char* op : {"LayerNormalization", "InstanceNormalization", "GroupNormalization", "LpNormalization",
                               "MeanVarianceNormalization"})
            r[op] = normalization;
        r["Resize"] = resize;
        r["Upsample"] = resize;
        // reductions: one operation per input element
        for (const char* op :
             {"GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool", "ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin",
              "ReduceProd", "ReduceL1", "ReduceSumSquare", "ArgMax", "ArgMin", "CumSum"})
            r[op] = per_input<1>;
        for (const char* op : {"ReduceL2", "ReduceLogSum", "ReduceLogSumExp"}) r[op] = per_input<2>;
        // binary and variadic elementwise
        for (const char* op : {"Add",
                               "Sub",
                               "Mul",
                               "Div",
                               "Sum",
                               "Max",
                               "Min",
                               "Pow",
                               "Mod",
                               "Mean",
                               "PRelu",
                               "And",
                               "Or",
                               "Xor",
                               "Equal",
                               "Less",
                               "Greater",
                               "LessOrEqual",
                               "GreaterOrEqual",
                               "BitShift",
                               "Where"})
            r[op] = variadic;
        // cheap unary: one operation per element
        for (const char* op : {"Relu", "LeakyRelu", "Abs", "Neg", "Sign", "Not", "Floor", "Ceil", "Round", "Reciprocal",
                               "ThresholdedRelu", "IsNaN", "IsInf"})
            r[op] = per_output<1>;
        r["Clip"] = per_output<2>;  // a min and a max
        // transcendental unary: ~4 FLOPs per element (an exp/log/sqrt costs several instructions)
        for (const char* op :
             {"Sigmoid", "Tanh", "Exp",      "Log",      "Sqrt",  "Erf",   "HardSigmoid", "HardSwish", "Elu",
              "Selu",    "Celu", "Softplus", "Softsign", "Sin",   "Cos",   "Tan",         "Asin",      "Acos",
              "Atan",    "Sinh", "Cosh",     "Asinh",    "Acosh", "Atanh", "Mish",        "Shrink"})
            r[op] = per_output<4>;
        r["Gelu"] = per_output<8>;  // erf or tanh approximation plus 3 multiplies and an add
        // Softmax: max, subtract, exp (4), sum, divide = 8 per element
        for (const char* op : {"Softmax", "LogSoftmax", "Hardmax"}) r[op] = per_output<8>;
        // data movement only: no arithmetic (memory traffic still counted)
        for (const char* op : {"Reshape",
                               "Flatten",
                               "Squeeze",
                               "Unsqueeze",
                               "Identity",
                               "Shape",
                               "Size",
                               "Constant",
                               "ConstantOfShape",
                               "Dropout",
                               "Transpose",
                               "Concat",
                               "Split",
                               "Slice",
                               "Gather",
                               "GatherElements",
                               "GatherND",
                               "ScatterElements",
                               "ScatterND",
                               "Pad",
                               "Expand",
                               "Tile",
                               "Cast",
                               "CastLike",
                               "DepthToSpace",
                               "SpaceToDepth",
                               "Range",
                               "OneHot",
                               "NonZero",
                               "TopK",
                               "Trilu",
                               "ReverseSequence",
                               "EyeLike"})
            r[op] = zero_cost;
        return r;
    }();
    return rules;
}

}  // namespace dnncost::cost::detail
