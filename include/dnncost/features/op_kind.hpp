#pragma once
/// @file op_kind.hpp
/// The operator kind a feature encoder counts or embeds: the ONNX op type, except that a Conv
/// is split by its structure into depthwise, grouped, pointwise and other convolutions. Their
/// costs per multiply-add differ by an order of magnitude on most hardware (a depthwise
/// convolution is memory-bound, a pointwise one a plain GEMM), so a lookup table or an embedding
/// that lumps them under "Conv" cannot tell a MobileNet block's cheap layer from its dear one.
#include <cstdint>
#include <string>
#include <string_view>

#include <dnncost/graph/graph.hpp>

namespace dnncost::features {

inline constexpr std::string_view depthwise_conv = "DepthwiseConv";
inline constexpr std::string_view grouped_conv = "GroupConv";
inline constexpr std::string_view pointwise_conv = "PointwiseConv";

/// The kind of node n of g:
/// - "DepthwiseConv": a Conv with group > 1 equal to its input channels (one filter group per
///   channel, whatever the channel multiplier);
/// - "GroupConv": a Conv with 1 < group < input channels;
/// - "PointwiseConv": an ungrouped Conv whose kernel is 1 in every spatial dimension;
/// - "Conv": any other Conv (also one whose input channels are unknown and group > 1);
/// - every other operator: its op type.
inline std::string op_kind(const graph::Graph& g, const graph::Node& n) {
    if (n.op_type != "Conv") return n.op_type;
    const std::int64_t group = n.attr_int("group", 1);
    std::int64_t cin = -1;
    if (!n.inputs.empty() && n.inputs[0] >= 0) {
        const auto& s = g.tensor(n.inputs[0]).shape;
        if (s.size() >= 2) cin = s[1];
    }
    if (group > 1) {
        if (cin == group) return std::string(depthwise_conv);
        if (cin > group) return std::string(grouped_conv);
        return n.op_type;
    }
    auto kernel = n.attr_ints("kernel_shape");
    if (kernel.empty() && n.inputs.size() >= 2 && n.inputs[1] >= 0) {  // from the weight's shape
        const auto& w = g.tensor(n.inputs[1]).shape;
        for (std::size_t d = 2; d < w.size(); ++d) kernel.push_back(w[d]);
    }
    if (kernel.empty()) return n.op_type;
    for (auto k : kernel)
        if (k != 1) return n.op_type;
    return std::string(pointwise_conv);
}

/// op_kind(g, n) with `split_convs`, else n's op type (models saved before the split).
inline std::string op_kind(const graph::Graph& g, const graph::Node& n, bool split_convs) {
    return split_convs ? op_kind(g, n) : n.op_type;
}

}  // namespace dnncost::features
