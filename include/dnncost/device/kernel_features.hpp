#pragma once
/// @file kernel_features.hpp
/// The feature vector of one kernel of a device::KernelGraph, and the kernel kind key that groups
/// kernels so that one latency regressor per kind makes sense.
///
/// The kind key (device/kernel_kind.hpp) says which regressor prices a kernel.
///
/// Features are the same for every kind (one fixed vector, named by kernel_feature_names()); a
/// size that spans orders of magnitude enters as log2(1 + x).
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <dnncost/core/error.hpp>
#include <dnncost/device/kernel_graph.hpp>
#include <dnncost/device/kernel_kind.hpp>
#include <dnncost/graph/flat_view.hpp>
#include <dnncost/graph/graph.hpp>

namespace dnncost::device {

namespace detail {
/// log2(1 + x) of an x that is not a whole number below 1024 (log2p() reads those from a
/// table): larger ones (MACs, bytes) recur from kernel to kernel and network to network, and are
/// remembered by their bits in a small cache of the thread: bit for bit what the call would give.
inline double log2p_remembered(double x) {
    // direct-mapped by the bits' hash; the empty slot's bits (those of +0.0) never get here
    struct Slot {
        std::uint64_t bits;
        double value;
    };
    thread_local std::array<Slot, 512> memo{};
    std::uint64_t bits;
    std::memcpy(&bits, &x, sizeof bits);
    auto& slot = memo[static_cast<std::size_t>((bits * 0x9e3779b97f4a7c15ull) >> 55)];
    if (slot.bits != bits) slot = {bits, std::log2(1.0 + std::max(0.0, x))};
    return slot.value;
}
/// log2(1 + x) for x >= 0 (0 below). Dimensions and counts are mostly small whole numbers,
/// read from a table of the same function's values; small enough to inline, as a kernel's
/// features ask for it some twenty times.
inline double log2p(double x) {
    static const auto small = [] {
        std::array<double, 1024> t{};
        for (std::size_t i = 0; i < t.size(); ++i) t[i] = std::log2(1.0 + static_cast<double>(i));
        return t;
    }();
    if (x >= 0 && x < static_cast<double>(small.size())) {
        const auto i = static_cast<std::size_t>(x);
        if (static_cast<double>(i) == x) return small[i];
    }
    return log2p_remembered(x);
}
}  // namespace detail

/// The names of the features kernel_features() returns, in order.
inline const std::vector<std::string>& kernel_feature_names() {
    static const std::vector<std::string> n{"log_batch",
                                            "log_in_channels",
                                            "log_in_height",
                                            "log_in_width",
                                            "log_out_channels",
                                            "log_out_height",
                                            "log_out_width",
                                            "kernel_h",
                                            "kernel_w",
                                            "stride_h",
                                            "stride_w",
                                            "log_groups",
                                            "depthwise",
                                            "grouped",
                                            "log_macs",
                                            "log_flops",
                                            "log_input_bytes",
                                            "log_output_bytes",
                                            "log_weight_bytes",
                                            "log_params",
                                            "log_intensity",
                                            "blocked",
                                            "log_block",
                                            "in_channels_misaligned",
                                            "out_channels_misaligned",
                                            "reorder",
                                            "reorder_to_blocked",
                                            "inputs",
                                            "executed_ops",
                                            "folded_ops",
                                            "fused_add",
                                            "fused_relu",
                                            "fused_clip",
                                            "fused_sigmoid",
                                            "fused_hard",
                                            "fused_other_act",
                                            "weighted_operand",
                                            "approximate_kind"};
    return n;
}

/// A kernel's kind and features (kernel_feature_names() order).
struct KernelFeatures {
    KernelKind kind;
    std::vector<double> values;
};

/// The canonical dimensions of a kernel: batch N, input channels C and spatial H x W (for a
/// token tensor [B, T, D]: C = D, H = T, W = 1; for a matrix product [.., M, K] x [K, N]:
/// C = K, H = M, W = 1, out channels = N), out channels and out spatial size.
struct KernelDims {
    std::int64_t n = 1, c = 1, h = 1, w = 1, k = 1, oh = 1, ow = 1;
};

inline KernelDims kernel_dims(const graph::Shape& in, const graph::Shape& out) {
    KernelDims d;
    const auto split = [](const graph::Shape& s, std::int64_t& n, std::int64_t& c, std::int64_t& h, std::int64_t& w) {
        n = c = h = w = 1;
        if (s.size() >= 4) {
            for (std::size_t i = 0; i + 3 < s.size(); ++i) n *= s[i];
            c = s[s.size() - 3];
            h = s[s.size() - 2];
            w = s[s.size() - 1];
        } else if (s.size() == 3) {
            n = s[0];
            h = s[1];
            c = s[2];
        } else if (s.size() == 2) {
            h = s[0];
            c = s[1];
        } else if (s.size() == 1) {
            c = s[0];
        }
    };
    split(in, d.n, d.c, d.h, d.w);
    std::int64_t n2 = 1;
    split(out, n2, d.k, d.oh, d.ow);
    return d;
}

namespace detail {
/// The features of kernel `k` of `kg` (a kernel graph of `g`) of kind `kind`, written to
/// `values` (as many as kernel_feature_names()); windows read from `view` (of `g`) when given.
inline void write_kernel_features(const graph::Graph& g, const graph::FlatView* view, const KernelGraph& kg,
                                  const Kernel& k, std::int64_t block, const KernelKind& kind,
                                  std::span<double> values) {
    static const graph::Shape none{};
    const auto& in = k.input_shapes.empty() ? none : k.input_shapes.front();
    const auto& o = k.output_shapes.empty() ? none : k.output_shapes.front();
    auto d = kernel_dims(in, o);
    std::int64_t kh = 1, kw = 1, sh = 1, sw = 1, groups = 1;
    bool depthwise = false, weighted = false;
    int add = 0, relu = 0, clip = 0, sigmoid = 0, hard = 0, other = 0;
    if (!k.is_reorder()) {
        // nodes and tensors read from the view when there is one: in the graph, each is a heap
        // block of its own
        const auto op_of = [&](int v) -> std::string_view {
            return view ? view->op_names()[static_cast<std::size_t>(view->op(v))] : std::string_view(g.node(v).op_type);
        };
        const auto shape_of = [&](int t) -> std::span<const std::int64_t> {
            return view ? view->shape(t) : std::span<const std::int64_t>(g.tensor(t).shape);
        };
        const auto is_constant = [&](int t) {
            if (!view) return is_constant_tensor(g, kg.roles, t);
            const int p = view->producer(t);
            return view->is_weight(t) || (p >= 0 && kg.roles[static_cast<std::size_t>(p)] == NodeRole::constant);
        };
        const int first = k.nodes.front();
        const auto inputs = view ? view->inputs(first) : std::span<const int>(g.node(first).inputs);
        const std::string_view a_op = op_of(first);  // compared by size first, then inline
        if (graph::is_window_operator(a_op)) {
            const auto ks = view ? view->kernel_shape(first) : g.node(first).attr_ints_view("kernel_shape");
            if (ks.size() >= 2) {
                kh = ks[ks.size() - 2];
                kw = ks[ks.size() - 1];
            } else if (ks.size() == 1) {
                kw = ks[0];
            } else if (a_op != "MaxPool" && a_op != "AveragePool" && inputs.size() > 1 && inputs[1] >= 0) {
                const auto ws = shape_of(inputs[1]);
                if (ws.size() >= 4) kh = ws[ws.size() - 2], kw = ws[ws.size() - 1];
            }
            const auto st = view ? view->strides(first) : g.node(first).attr_ints_view("strides");
            if (st.size() >= 2) sh = st[st.size() - 2], sw = st[st.size() - 1];
            groups = view ? view->group(first) : g.node(first).attr_int("group", 1);
            depthwise = view ? is_depthwise(*view, first) : is_depthwise(g, g.node(first), groups);
        }
        for (int t : inputs)
            if (t >= 0 && is_constant(t) && shape_of(t).size() >= 2) weighted = true;
        if (a_op == "MatMul" || a_op == "Gemm") {
            // [.., M, K] x [K, N]: K is the inner size, N the output's last dimension
            if (!in.empty()) d.c = in.back();
            if (!o.empty()) d.k = o.back();
            d.h = in.size() >= 2 ? in[in.size() - 2] : 1;
            d.oh = o.size() >= 2 ? o[o.size() - 2] : 1;
            d.w = d.ow = 1;
            d.n = 1;
            for (std::size_t i = 0; i + 2 < o.size(); ++i) d.n *= o[i];
        }
        for (std::size_t i = 1; i < k.nodes.size(); ++i) {
            const std::string_view op = op_of(k.nodes[i]);
            // the named activations first: none of them is binary, and a name costs less than a
            // family lookup
            if (op == "Relu")
                ++relu;
            else if (op == "Clip")
                ++clip;
            else if (op == "Sigmoid")
                ++sigmoid;
            else if (op == "HardSigmoid" || op == "HardSwish")
                ++hard;
            else if (is_elementwise_op(op))
                ++add;
            else
                ++other;
        }
    }
    const auto misaligned = [&](std::int64_t c) {
        return block > 0 ? static_cast<double>(block_remainder(c, block)) / static_cast<double>(block) : 0.0;
    };
    const double bytes = static_cast<double>(k.cost.bytes());
    const double flops = static_cast<double>(k.cost.flops);
    const auto L = [](double x) { return detail::log2p(x); };
    const double v[] = {L(static_cast<double>(d.n)),
                        L(static_cast<double>(d.c)),
                        L(static_cast<double>(d.h)),
                        L(static_cast<double>(d.w)),
                        L(static_cast<double>(d.k)),
                        L(static_cast<double>(d.oh)),
                        L(static_cast<double>(d.ow)),
                        static_cast<double>(kh),
                        static_cast<double>(kw),
                        static_cast<double>(sh),
                        static_cast<double>(sw),
                        L(static_cast<double>(groups)),
                        depthwise ? 1.0 : 0.0,
                        groups > 1 && !depthwise ? 1.0 : 0.0,
                        L(static_cast<double>(k.cost.macs)),
                        L(flops),
                        L(static_cast<double>(k.cost.input_bytes)),
                        L(static_cast<double>(k.cost.output_bytes)),
                        L(static_cast<double>(k.cost.weight_bytes)),
                        L(static_cast<double>(k.cost.params)),
                        L(bytes > 0 ? flops / bytes : 0.0),
                        k.layout.blocked() ? 1.0 : 0.0,
                        L(static_cast<double>(k.layout.blocked() ? k.layout.block : block)),
                        misaligned(d.c),
                        misaligned(d.k),
                        k.is_reorder() ? 1.0 : 0.0,
                        k.is_reorder() && k.layout.blocked() ? 1.0 : 0.0,
                        static_cast<double>(k.inputs.size()),
                        static_cast<double>(k.nodes.size()),
                        static_cast<double>(k.folded.size()),
                        static_cast<double>(add),
                        static_cast<double>(relu),
                        static_cast<double>(clip),
                        static_cast<double>(sigmoid),
                        static_cast<double>(hard),
                        static_cast<double>(other),
                        weighted ? 1.0 : 0.0,
                        kind.warning.empty() ? 0.0 : 1.0};
    static_assert(std::size(v) == 38, "one value per name of kernel_feature_names()");
    std::copy(std::begin(v), std::end(v), values.begin());
}

inline void check_kernel_features_call(const KernelGraph& kg, std::size_t index, std::span<double> values) {
    if (index >= kg.kernels.size())
        raise<config_error>("kernel_features: kernel ", index, " of ", kg.kernels.size(), " does not exist");
    if (values.size() != kernel_feature_names().size())
        raise<shape_error>("kernel_features: room for ", values.size(), " features, there are ",
                           kernel_feature_names().size());
}
}  // namespace detail

/// The features of kernel `index` of `kg` (a kernel graph of `g`) written to `values`
/// (kernel_feature_names() order, as many), and its kind: kernel_features() without a vector of
/// its own, for a caller that prices many kernels. `block` as for kernel_features().
/// @throws config_error for an index out of range; shape_error for `values` of another size
inline KernelKind kernel_features_into(const graph::Graph& g, const KernelGraph& kg, std::size_t index,
                                       std::int64_t block, std::span<double> values) {
    detail::check_kernel_features_call(kg, index, values);
    const auto& k = kg.kernels[index];
    KernelKind kind = kernel_kind(g, kg, k);
    detail::write_kernel_features(g, nullptr, kg, k, block, kind, values);
    return kind;
}

/// kernel_features_into() of a kernel of the graph of `view` whose kind is known (kernel_kind()
/// of it), its windows read from the view: for a caller that prices many kernels and works out
/// a kind once for the many kernels that share it.
/// @throws as kernel_features_into()
inline void kernel_features_into(const graph::FlatView& view, const KernelGraph& kg, std::size_t index,
                                 std::int64_t block, const KernelKind& kind, std::span<double> values) {
    detail::check_kernel_features_call(kg, index, values);
    detail::write_kernel_features(view.graph(), &view, kg, kg.kernels[index], block, kind, values);
}

/// The features of kernel `index` of `kg` (a kernel graph of `g`). `block` is the device's
/// layout block (its rule set's), used to judge channel alignment even for a kernel that runs
/// in the plain layout (0: no blocked layout).
/// @throws config_error for an index out of range
inline KernelFeatures kernel_features(const graph::Graph& g, const KernelGraph& kg, std::size_t index,
                                      std::int64_t block) {
    KernelFeatures out;
    out.values.resize(kernel_feature_names().size());
    out.kind = kernel_features_into(g, kg, index, block, out.values);
    return out;
}

}  // namespace dnncost::device
