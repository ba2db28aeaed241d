#pragma once
/// @file kernel_features_impl.hpp
/// The definitions of kernel_features.hpp: compiled once into dnncost::compiled in compiled mode
/// (core/config.hpp), included by kernel_features.hpp in header-only mode.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <span>
#include <string>
#include <vector>

#include <dnncost/core/config.hpp>
#include <dnncost/core/error.hpp>
#include <dnncost/device/kernel_features.hpp>
#include <dnncost/device/kernel_graph.hpp>
#include <dnncost/device/kernel_kind.hpp>
#include <dnncost/graph/flat_view.hpp>
#include <dnncost/graph/graph.hpp>

namespace dnncost::device {

DNNCOST_FUNC const std::vector<std::string>& kernel_feature_names() {
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

DNNCOST_FUNC KernelDims kernel_dims(const graph::Shape& in, const graph::Shape& out) {
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

}  // namespace dnncost::device

namespace dnncost::device {
namespace detail {

DNNCOST_FUNC void write_kernel_features(const graph::Graph& g, const graph::FlatView* view, const KernelGraph& kg,
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

}  // namespace detail
}  // namespace dnncost::device
