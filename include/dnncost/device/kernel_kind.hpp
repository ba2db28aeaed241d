#pragma once
/// @file kernel_kind.hpp
/// The kernel kind key: groups the kernels of device::KernelGraph so that one latency regressor
/// per kind makes sense.
///
/// A kind key is the family of the kernel's first executed unit (Conv, DepthwiseConv, Gemm,
/// MatMul, Pool, Elementwise, LayerNorm, ...) followed by what it fused: "+Add" for a binary
/// element-wise operator, "+Act" for activations. Folded operators (BatchNorm into Conv) add
/// nothing: they execute nothing. So "Conv+Add+Act" is a convolution with a residual add and an
/// activation, whatever activation it is (which one is a kernel feature). An operator the model
/// has never seen is priced by the nearest known family (by the operands it reads and the shape
/// it writes) and the key comes with a warning for the caller to report; nothing is dropped.
///
/// The larger functions are defined in kernel_kind_impl.hpp: compiled into dnncost::compiled in
/// compiled mode (core/config.hpp), included at the end of this header otherwise.
#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <dnncost/core/config.hpp>
#include <dnncost/device/kernel_graph.hpp>
#include <dnncost/device/kind_spec.hpp>
#include <dnncost/graph/flat_view.hpp>
#include <dnncost/graph/graph.hpp>

namespace dnncost::device {

/// The fusions of a kind key: a binary element-wise operator, an activation.
inline constexpr std::string_view fused_add = "Add", fused_act = "Act";

/// The families a kernel's first executed operator falls in.
DNNCOST_FUNC const std::vector<std::string>& kernel_families();

/// Every kind key the kernel model knows: a family, or a family with the fusions a runtime
/// performs behind it.
DNNCOST_FUNC const std::vector<std::string>& known_kernel_kinds();

inline bool is_known_kernel_kind(std::string_view key) {
    static const std::unordered_set<std::string_view> known(known_kernel_kinds().begin(), known_kernel_kinds().end());
    return known.count(key) > 0;
}

namespace detail {

/// The families of the operator kinds the kernel model knows by name (looked up once per
/// kernel, so a hash table rather than a chain of comparisons).
DNNCOST_FUNC const std::unordered_map<std::string_view, std::string_view>& op_families();

}  // namespace detail

/// The family of operator kind `op` (an ONNX op type or a pattern name), or "" when unknown.
/// Pattern names are matched by prefix: "LayerNorm...", "Reduce...", "Gelu...".
inline std::string_view family_of_op(std::string_view op) {
    const auto& t = detail::op_families();
    if (const auto it = t.find(op); it != t.end()) return it->second;
    if (op.starts_with("LayerNorm")) return "LayerNorm";
    if (op.starts_with("Reduce")) return "Reduce";
    if (op.starts_with("Gelu")) return "Activation";
    return "";
}
/// Whether operator kind `op` is element-wise over two or more operands (its fusion is a "+Add").
inline bool is_elementwise_op(std::string_view op) { return family_of_op(op) == "Elementwise"; }

namespace detail {

/// The nearest known family of an operator the model does not know, judged by what it reads
/// (a rank-4 or rank-2 weight, one or two activations) and whether it keeps its input's shape.
DNNCOST_FUNC std::string_view nearest_family(const graph::Graph& g, const graph::Node& n,
                                             const std::vector<NodeRole>& roles);

}  // namespace detail

/// Whether node `n` of `g` is a depthwise convolution, its group already read.
inline bool is_depthwise(const graph::Graph& g, const graph::Node& n, std::int64_t group) {
    if (n.op_type != "Conv" || n.inputs.empty() || n.inputs[0] < 0 || n.outputs.empty()) return false;
    const auto& x = g.tensor(n.inputs[0]).shape;
    return group > 1 && x.size() >= 2 && x[1] == group;
}
inline bool is_depthwise(const graph::Graph& g, const graph::Node& n) {
    return n.op_type == "Conv" && is_depthwise(g, n, n.attr_int("group", 1));
}
/// is_depthwise() of node `v` of the graph of `view`, read from the view.
inline bool is_depthwise(const graph::FlatView& view, int v) {
    const auto in = view.inputs(v);
    if (view.op_names()[static_cast<std::size_t>(view.op(v))] != "Conv" || in.empty() || in[0] < 0 ||
        view.outputs(v).empty())
        return false;
    const auto group = view.group(v);
    const auto x = view.shape(in[0]);
    return group > 1 && x.size() >= 2 && x[1] == group;
}

/// A kernel's kind key, and why it is approximate when it is.
struct KernelKind {
    std::string key;
    std::string warning;  ///< empty, or which operator was priced as which kind
};

namespace detail {
/// kernel_kind() of a kernel that is not a reorder, `depthwise` telling whether its first node
/// is a depthwise convolution; `by_name_only` is cleared when the key or the warning depends on
/// the kernel's nodes beyond its kind string and `depthwise`.
DNNCOST_FUNC KernelKind kernel_kind_of_nodes(const graph::Graph& g, const KernelGraph& kg, const Kernel& k,
                                             bool depthwise, bool& by_name_only);

/// Kind keys already worked out, by kind string and depthwise-ness, for the kernels whose key
/// and warning follow from those alone (most): a pricing call meets the same few kinds again
/// and again. Bounded: cleared when it grows past what any real rule set produces.
struct KernelKindCache {
    std::unordered_map<std::string, KernelKind> known[2];  ///< [depthwise]
};
inline KernelKindCache& kernel_kind_cache() {
    thread_local KernelKindCache c;
    return c;
}
}  // namespace detail

/// Which kernels of one kind string share a kind key: 0 most, 1 those that start with a depthwise
/// convolution, 2 kernels without nodes (reorders, a rewrite's reshapes).
inline int kernel_kind_variant(const graph::Graph& g, const Kernel& k) {
    if (k.is_reorder()) return 2;
    // only a kernel that starts with a convolution can be depthwise (its kind string starts "Conv")
    return KindSpec::anchor_of(k.kind) == "Conv" && is_depthwise(g, g.node(k.nodes.front())) ? 1 : 0;
}
/// kernel_kind_variant() of a kernel of the graph of `view`, read from the view.
inline int kernel_kind_variant(const graph::FlatView& view, const Kernel& k) {
    if (k.is_reorder()) return 2;
    return KindSpec::anchor_of(k.kind) == "Conv" && is_depthwise(view, k.nodes.front()) ? 1 : 0;
}

/// The kind key of kernel `k` of `kg` (a kernel graph of `g`), its variant given
/// (kernel_kind_variant()). `shared` tells whether every kernel of the same kind string and
/// variant gets the same key and warning (most do; a warning that names an operator the model does
/// not know belongs to its kernel), so that a caller may work it out once for all of them.
inline KernelKind kernel_kind(const graph::Graph& g, const KernelGraph& kg, const Kernel& k, int variant,
                              bool& shared) {
    shared = true;
    // a rewrite's reshape is a view (its time a kernel's fixed cost, whatever its size), a reorder
    // copies its value
    if (variant == 2) return {k.kind == "Reshape" ? "Reshape" : "Reorder", {}};
    auto& known = detail::kernel_kind_cache().known[variant == 1 ? 1 : 0];
    if (const auto it = known.find(k.kind); it != known.end()) return it->second;
    auto out = detail::kernel_kind_of_nodes(g, kg, k, variant == 1, shared);
    if (shared) {
        if (known.size() >= 4096) known.clear();
        known.emplace(k.kind, out);
    }
    return out;
}

/// The kind key of kernel `k` of `kg` (a kernel graph of `g`).
inline KernelKind kernel_kind(const graph::Graph& g, const KernelGraph& kg, const Kernel& k) {
    bool shared = true;
    return kernel_kind(g, kg, k, kernel_kind_variant(g, k), shared);
}

}  // namespace dnncost::device

#if !defined(DNNCOST_COMPILED)
#include <dnncost/device/kernel_kind_impl.hpp>
#endif
