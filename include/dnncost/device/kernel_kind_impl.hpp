#pragma once
/// @file kernel_kind_impl.hpp
/// The definitions of kernel_kind.hpp's tables and of the kind of a kernel worked out from its
/// nodes: compiled once into dnncost::compiled in compiled mode (core/config.hpp), included by
/// kernel_kind.hpp in header-only mode.
#include <algorithm>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <dnncost/core/config.hpp>
#include <dnncost/device/kernel_graph.hpp>
#include <dnncost/device/kernel_kind.hpp>
#include <dnncost/device/kind_spec.hpp>
#include <dnncost/graph/graph.hpp>

namespace dnncost::device {

DNNCOST_FUNC const std::vector<std::string>& kernel_families() {
    static const std::vector<std::string> f{"Conv",         "DepthwiseConv", "ConvTranspose", "Gemm",       "MatMul",
                                            "Pool",         "GlobalPool",    "Elementwise",   "Activation", "BatchNorm",
                                            "LayerNorm",    "Softmax",       "Reduce",        "Concat",     "Resize",
                                            "DataMovement", "Reorder",       "Reshape"};
    return f;
}

DNNCOST_FUNC const std::vector<std::string>& known_kernel_kinds() {
    static const std::vector<std::string> k = [] {
        std::vector<std::string> out;
        const auto add = std::string(fused_add), act = std::string(fused_act);
        for (const auto& f : kernel_families()) {
            out.push_back(f);
            if (f == "Conv" || f == "DepthwiseConv" || f == "ConvTranspose") {
                out.push_back(KindSpec{f, {act}}.str());
                out.push_back(KindSpec{f, {add}}.str());
                out.push_back(KindSpec{f, {add, act}}.str());
            } else if (f == "Gemm" || f == "MatMul" || f == "Elementwise" || f == "BatchNorm" || f == "LayerNorm" ||
                       f == "Pool") {
                out.push_back(KindSpec{f, {act}}.str());
            }
            if (f == "MatMul") out.push_back(KindSpec{f, {add}}.str());
        }
        return out;
    }();
    return k;
}

}  // namespace dnncost::device

namespace dnncost::device {
namespace detail {

DNNCOST_FUNC const std::unordered_map<std::string_view, std::string_view>& op_families() {
    static const auto table = [] {
        std::unordered_map<std::string_view, std::string_view> t;
        const auto put = [&](std::string_view family, std::initializer_list<std::string_view> ops) {
            for (auto op : ops) t.emplace(op, family);
        };
        put("Conv", {"Conv"});
        put("ConvTranspose", {"ConvTranspose"});
        put("Gemm", {"Gemm", "FusedGemm"});
        put("MatMul", {"MatMul", "FusedMatMul", "Einsum"});
        put("Pool", {"MaxPool", "AveragePool", "LpPool"});
        put("GlobalPool", {"GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool"});
        put("Elementwise", {"Add", "Sub", "Mul", "Div", "Sum", "Max", "Min", "Pow", "Mean", "Where", "Equal", "Greater",
                            "Less", "And", "Or"});
        put("Activation",
            {"Relu",      "Clip",  "Sigmoid", "HardSigmoid", "HardSwish", "Tanh",       "LeakyRelu", "Elu",
             "Selu",      "PRelu", "Gelu",    "FastGelu",    "BiasGelu",  "Mish",       "Softplus",  "Swish",
             "QuickGelu", "Erf",   "Exp",     "Log",         "Sqrt",      "Reciprocal", "Neg",       "Abs",
             "Floor",     "Ceil",  "Round",   "Sign",        "Not",       "Cast",       "Celu",      "ThresholdedRelu",
             "Softsign"});
        put("BatchNorm", {"BatchNormalization"});
        put("LayerNorm", {"LayerNormalization", "InstanceNormalization", "GroupNormalization", "LpNormalization",
                          "SimplifiedLayerNormalization", "SkipLayerNormalization"});
        put("Softmax", {"Softmax", "LogSoftmax", "Hardmax"});
        put("Reduce", {"ArgMax", "ArgMin"});
        put("Concat", {"Concat"});
        put("Resize", {"Resize", "Upsample"});
        // views: ONNX Runtime's kernels for these reuse their input's buffer when they can
        put("Reshape", {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity"});
        put("DataMovement",
            {"Transpose", "Slice", "Gather", "Pad", "Split", "Tile", "Expand", "GatherElements", "ScatterND",
             "DepthToSpace", "SpaceToDepth", "Range", "ConstantOfShape", "TopK", "CumSum"});
        return t;
    }();
    return table;
}

DNNCOST_FUNC std::string_view nearest_family(const graph::Graph& g, const graph::Node& n,
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

DNNCOST_FUNC KernelKind kernel_kind_of_nodes(const graph::Graph& g, const KernelGraph& kg, const Kernel& k,
                                             bool depthwise, bool& by_name_only) {
    KernelKind out;
    by_name_only = true;
    const auto note = [&](const graph::Node& n, std::string_view as) {
        out.warning += std::string(out.warning.empty() ? "" : "; ") + "operator '" + n.name + "' of kind '" +
                       n.op_type + "' is not known to the kernel model; priced as '" + std::string(as) + "'";
    };
    const auto& first = g.node(k.nodes.front());
    // the kernel's kind string: its first executed unit (an operator or a pattern), then what it fused
    const auto kind = KindSpec::parse(k.kind);
    std::string_view fam = family_of_op(kind.anchor);
    if (fam.empty()) {
        fam = nearest_family(g, first, kg.roles);
        note(first, fam);
        by_name_only = false;
    }
    std::string base(fam);
    if (base == "Conv" && depthwise) base = "DepthwiseConv";
    bool add = false, act = false;
    for (const auto& unit : kind.fusions) {
        const auto f = family_of_op(unit);
        if (f == "Activation") {
            act = true;
        } else if (f == "Elementwise") {
            add = true;
        } else {
            // an unknown or unusual fused unit: the nearest epilogue by what its first node reads
            by_name_only = false;
            std::string_view near = "Activation";
            for (int v : k.nodes)
                if (g.node(v).op_type == unit) {
                    near = nearest_family(g, g.node(v), kg.roles);
                    break;
                }
            const bool as_add = near == "Elementwise";
            (as_add ? add : act) = true;
            out.warning += std::string(out.warning.empty() ? "" : "; ") + "fused operator kind '" + unit +
                           "' is not a known epilogue; priced as '" + (as_add ? "+Add" : "+Act") + "'";
        }
    }
    const auto with = [&](bool a, bool b) {
        KindSpec s{base, {}};
        if (a) s.fusions.emplace_back(fused_add);
        if (b) s.fusions.emplace_back(fused_act);
        return s.str();
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

}  // namespace detail
}  // namespace dnncost::device
