#pragma once
/// @file analysis_impl.hpp
/// The definitions of analysis.hpp: compiled once into dnncost::compiled in compiled mode
/// (core/config.hpp), included by analysis.hpp in header-only mode.
#include <dnncost/graph/analysis.hpp>

DNNCOST_FUNC auto dnncost::graph::detail::preserves_zero(std::string_view op) -> bool {
    return one_of(
        op,
        {"Relu",          "LeakyRelu", "PRelu",      "Tanh",      "Neg",          "Abs",          "Sin",
         "Sqrt",          "Elu",       "Selu",       "Softsign",  "AveragePool",  "MaxPool",      "GlobalAveragePool",
         "GlobalMaxPool", "LpPool",    "Flatten",    "Reshape",   "Transpose",    "Squeeze",      "Unsqueeze",
         "Identity",      "Dropout",   "Resize",     "Upsample",  "DepthToSpace", "SpaceToDepth", "Slice",
         "Gather",        "ReduceSum", "ReduceMean", "ReduceMax", "Cast",         "Expand",       "Tile"});
}

DNNCOST_FUNC auto dnncost::graph::analyse(const Graph& g) -> std::vector<NodeAnalysis> {
    const std::size_t n = g.num_nodes();
    std::vector<NodeAnalysis> out(n);
    // per tensor: constant? known zero?
    std::vector<char> t_const(g.num_tensors(), 0), t_zero(g.num_tensors(), 0);
    for (std::size_t t = 0; t < g.num_tensors(); ++t) {
        const auto& ten = g.tensors()[t];
        if (ten.kind != TensorKind::weight) continue;
        t_const[t] = 1;
        t_zero[t] =
            !ten.data.empty() && std::all_of(ten.data.begin(), ten.data.end(), [](double v) { return v == 0.0; });
    }
    const auto is_zero = [&](int t) { return t >= 0 && t_zero[static_cast<std::size_t>(t)]; };
    const auto is_const = [&](int t) { return t < 0 || t_const[static_cast<std::size_t>(t)]; };
    for (int v : g.topological_order()) {
        const auto& nd = g.node(v);
        auto& a = out[static_cast<std::size_t>(v)];
        const auto& in = nd.inputs;
        const std::string_view op = nd.op_type;
        a.constant = std::all_of(in.begin(), in.end(), is_const);
        const bool first_zero = !in.empty() && is_zero(in[0]);
        if (op == "Mul" || op == "MatMul") {
            a.zero = std::any_of(in.begin(), in.end(), is_zero);
        } else if (op == "Conv" || op == "ConvTranspose" || op == "Gemm") {
            const int bias = in.size() > 2 ? in[2] : -1;
            const bool weight_zero = in.size() > 1 && is_zero(in[1]);
            a.zero = (first_zero || weight_zero) && (bias < 0 || is_zero(bias));
        } else if (op == "Add" || op == "Sum" || op == "Sub" || op == "Concat" || op == "Max") {
            a.zero = !in.empty() && std::all_of(in.begin(), in.end(), is_zero);
            if (!a.constant && op != "Concat" && op != "Max") {
                // exactly one operand is not a known zero (for Sub: the first one) -> forwards it
                int others = 0;
                for (std::size_t s = 0; s < in.size(); ++s)
                    if (!is_zero(in[s])) ++others;
                a.identity_like = others == 1 && (op != "Sub" || !first_zero);
            }
        } else if (detail::preserves_zero(op)) {
            a.zero = first_zero;
        }
        if (a.zero) a.constant = true;
        if (!a.constant && (op == "Identity" || op == "Dropout")) a.identity_like = true;
        for (int t : nd.outputs) {
            t_const[static_cast<std::size_t>(t)] = a.constant;
            t_zero[static_cast<std::size_t>(t)] = a.zero;
        }
    }
    // live: non-constant and reaching a graph output through live operators
    const auto order = g.topological_order();
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
        const int v = *it;
        auto& a = out[static_cast<std::size_t>(v)];
        if (a.constant) continue;
        for (int t : g.node(v).outputs) {
            const auto& ten = g.tensor(t);
            if (ten.is_output) a.live = true;
            for (int c : ten.consumers)
                if (out[static_cast<std::size_t>(c)].live) a.live = true;
        }
    }
    return out;
}
