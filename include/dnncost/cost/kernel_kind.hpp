#pragma once
/// @file kernel_kind.hpp
/// The kernel kind key: groups the kernels of cost::KernelGraph so that one latency regressor
/// per kind makes sense.
///
/// A kind key is the family of the kernel's first executed unit (Conv, DepthwiseConv, Gemm,
/// MatMul, Pool, Elementwise, LayerNorm, ...) followed by what it fused: "+Add" for a binary
/// element-wise operator, "+Act" for activations. Folded operators (BatchNorm into Conv) add
/// nothing: they execute nothing. So "Conv+Add+Act" is a convolution with a residual add and an
/// activation, whatever activation it is (which one is a kernel feature). An operator the model
/// has never seen is priced by the nearest known family (by the operands it reads and the shape
/// it writes) and the key comes with a warning for the caller to report; nothing is dropped.
#include <algorithm>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include <dnncost/cost/kernel_graph.hpp>
#include <dnncost/graph/graph.hpp>

namespace dnncost::cost {

/// The families a kernel's first executed operator falls in.
inline const std::vector<std::string>& kernel_families() {
    static const std::vector<std::string> f{"Conv",        "DepthwiseConv", "ConvTranspose", "Gemm",     "MatMul",
                                            "Pool",        "GlobalPool",    "Elementwise",   "Activation",
                                            "BatchNorm",   "LayerNorm",     "Softmax",       "Reduce",   "Concat",
                                            "Resize",      "DataMovement",  "Reorder"};
    return f;
}

/// Every kind key the kernel model knows: a family, or a family with the fusions a runtime
/// performs behind it.
inline const std::vector<std::string>& known_kernel_kinds() {
    static const std::vector<std::string> k = [] {
        std::vector<std::string> out;
        for (const auto& f : kernel_families()) {
            out.push_back(f);
            if (f == "Conv" || f == "DepthwiseConv" || f == "ConvTranspose") {
                out.push_back(f + "+Act");
                out.push_back(f + "+Add");
                out.push_back(f + "+Add+Act");
            } else if (f == "Gemm" || f == "MatMul" || f == "Elementwise" || f == "BatchNorm" || f == "LayerNorm" ||
                       f == "Pool") {
                out.push_back(f + "+Act");
            }
            if (f == "MatMul") out.push_back("MatMul+Add");
        }
        return out;
    }();
    return k;
}

inline bool is_known_kernel_kind(std::string_view key) {
    const auto& k = known_kernel_kinds();
    return std::find(k.begin(), k.end(), key) != k.end();
}

namespace detail {

inline bool in(std::string_view op, std::initializer_list<std::string_view> set) {
    return std::find(set.begin(), set.end(), op) != set.end();
}
inline bool is_activation(std::string_view op) {
    return in(op, {"Relu", "Clip", "Sigmoid", "HardSigmoid", "HardSwish", "Tanh", "LeakyRelu", "Elu", "Selu",
                   "PRelu", "Gelu", "FastGelu", "BiasGelu", "Mish", "Softplus", "Swish", "QuickGelu", "Erf", "Exp",
                   "Log", "Sqrt", "Reciprocal", "Neg", "Abs", "Floor", "Ceil", "Round", "Sign", "Not", "Cast",
                   "Celu", "ThresholdedRelu", "Softsign", "Gelu_pattern"});
}
inline bool is_binary(std::string_view op) {
    return in(op, {"Add", "Sub", "Mul", "Div", "Sum", "Max", "Min", "Pow", "Mean", "Where", "Equal", "Greater",
                   "Less", "And", "Or"});
}

/// The family of operator kind `op` (an ONNX op type or a pattern name), or "" when unknown.
inline std::string_view family_of_op(std::string_view op) {
    if (op == "Conv") return "Conv";
    if (op == "ConvTranspose") return "ConvTranspose";
    if (in(op, {"Gemm", "FusedGemm"})) return "Gemm";
    if (in(op, {"MatMul", "FusedMatMul", "Einsum"})) return "MatMul";
    if (in(op, {"MaxPool", "AveragePool", "LpPool"})) return "Pool";
    if (in(op, {"GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool"})) return "GlobalPool";
    if (is_binary(op)) return "Elementwise";
    if (is_activation(op)) return "Activation";
    if (op == "BatchNormalization") return "BatchNorm";
    if (in(op, {"LayerNormalization", "InstanceNormalization", "GroupNormalization", "LpNormalization",
                "SimplifiedLayerNormalization", "SkipLayerNormalization"}) ||
        op.substr(0, 9) == "LayerNorm")
        return "LayerNorm";
    if (in(op, {"Softmax", "LogSoftmax", "Hardmax"})) return "Softmax";
    if (op.substr(0, 6) == "Reduce" || in(op, {"ArgMax", "ArgMin"})) return "Reduce";
    if (op == "Concat") return "Concat";
    if (in(op, {"Resize", "Upsample"})) return "Resize";
    if (in(op, {"Transpose", "Slice", "Gather", "Pad", "Split", "Tile", "Expand", "GatherElements", "ScatterND",
                "DepthToSpace", "SpaceToDepth", "Range", "ConstantOfShape", "TopK", "CumSum"}))
        return "DataMovement";
    if (op.substr(0, 4) == "Gelu") return "Activation";
    return "";
}

/// The nearest known family of an operator the model does not know, judged by what it reads
/// (a rank-4 or rank-2 weight, one or two activations) and whether it keeps its input's shape.
inline std::string_view nearest_family(const graph::Graph& g, const graph::Node& n,
                                       const std::vector<NodeRole>& roles) {
    int activations = 0, weight_rank = -1;
    for (int t : n.inputs) {
        if (t < 0) continue;
        if (is_constant_tensor(g, roles, t))
            weight_rank = std::max(weight_rank, static_cast<int>(g.tensor(t).shape.size()));
        else
            ++activations;
    }
    if (weight_rank >= 4) return "Conv";
    if (weight_rank >= 2) return "MatMul";
    if (activations >= 2) return "Elementwise";
    const bool same_shape = !n.inputs.empty() && n.inputs[0] >= 0 && !n.outputs.empty() &&
                            g.tensor(n.inputs[0]).shape == g.tensor(n.outputs[0]).shape;
    return same_shape ? "Activation" : "DataMovement";
}

inline bool is_depthwise(const graph::Graph& g, const graph::Node& n) {
    if (n.op_type != "Conv" || n.inputs.empty() || n.inputs[0] < 0 || n.outputs.empty()) return false;
    const auto group = n.attr_int("group", 1);
    const auto& x = g.tensor(n.inputs[0]).shape;
    return group > 1 && x.size() >= 2 && x[1] == group;
}

}  // namespace detail

/// A kernel's kind key, and why it is approximate when it is.
struct KernelKind {
    std::string key;
    std::string warning;  ///< empty, or which operator was priced as which kind
};

/// The kind key of kernel `k` of `kg` (a kernel graph of `g`).
inline KernelKind kernel_kind(const graph::Graph& g, const KernelGraph& kg, const Kernel& k) {
    KernelKind out;
    if (k.is_reorder()) {
        out.key = "Reorder";
        return out;
    }
    const auto note = [&](const graph::Node& n, std::string_view as) {
        out.warning += std::string(out.warning.empty() ? "" : "; ") + "operator '" + n.name + "' of kind '" +
                       n.op_type + "' is not known to the kernel model; priced as '" + std::string(as) + "'";
    };
    const auto& first = g.node(k.nodes.front());
    // the kernel's kind is its executed units' kinds joined by '+': the first unit (an operator
    // or a pattern), then what it fused
    std::vector<std::string_view> units;
    for (std::size_t s = 0; s <= k.kind.size();) {
        const auto e = std::min(k.kind.find('+', s), k.kind.size());
        units.push_back(std::string_view(k.kind).substr(s, e - s));
        s = e + 1;
    }
    std::string_view fam = detail::family_of_op(units.front());
    if (fam.empty()) {
        fam = detail::nearest_family(g, first, kg.roles);
        note(first, fam);
    }
    std::string base(fam);
    if (base == "Conv" && detail::is_depthwise(g, first)) base = "DepthwiseConv";
    bool add = false, act = false;
    for (std::size_t i = 1; i < units.size(); ++i) {
        const auto f = detail::family_of_op(units[i]);
        if (f == "Activation") {
            act = true;
        } else if (f == "Elementwise") {
            add = true;
        } else {
            // an unknown or unusual fused unit: the nearest epilogue by what its first node reads
            std::string_view near = "Activation";
            for (int v : k.nodes)
                if (g.node(v).op_type == units[i]) {
                    near = detail::nearest_family(g, g.node(v), kg.roles);
                    break;
                }
            const bool as_add = near == "Elementwise";
            (as_add ? add : act) = true;
            out.warning += std::string(out.warning.empty() ? "" : "; ") + "fused operator kind '" +
                           std::string(units[i]) + "' is not a known epilogue; priced as '" +
                           (as_add ? "+Add" : "+Act") + "'";
        }
    }
    const auto with = [&](bool a, bool b) {
        std::string s = base;
        if (a) s += "+Add";
        if (b) s += "+Act";
        return s;
    };
    out.key = with(add, act);
    if (!is_known_kernel_kind(out.key)) {
        // the nearest known key: drop the Add, then the activation
        std::string near = with(false, act);
        if (!is_known_kernel_kind(near)) near = base;
        out.warning += std::string(out.warning.empty() ? "" : "; ") + "kernel kind '" + out.key +
                       "' is not known to the kernel model; priced as '" + near + "'";
        out.key = near;
    }
    return out;
}

}  // namespace dnncost::cost
