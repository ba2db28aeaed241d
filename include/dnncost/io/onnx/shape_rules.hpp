#pragma once
/// @file shape_rules.hpp
/// The importer's own output-shape rules, for what libonnx's shape inference does not cover:
/// operators newer than the libonnx at hand (Gelu, GroupNormalization, Mish, ...), operators
/// whose inputs or attributes changed after libonnx's newest opset (ReduceMean's axes input and
/// Split's num_outputs at opset 18, ...), and the value-driven operators (Reshape, Pad, Slice,
/// Expand, Tile, ConstantOfShape, Range) when libonnx gives no shape: there the rule either
/// computes it or says why it cannot, naming the input whose shape or value is missing or bad.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <iterator>
#include <limits>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <dnncost/graph/graph.hpp>
#include <dnncost/io/onnx/fold_kernels.hpp>
#include <dnncost/io/onnx/proto.hpp>
#include <dnncost/io/onnx/tensor_data.hpp>

namespace dnncost::io::detail::onnx_impl {

/// Newest opset of the default domain the importer reads: opsets past libonnx's own are read
/// with libonnx's newest schemas plus the rules here for every operator that changed since.
inline constexpr int newest_readable_opset = 23;

/// The newest default-domain opset libonnx knows.
inline int libonnx_opset() {
    return ::onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map().at(::onnx::ONNX_DOMAIN).second;
}

/// A change of an operator after opset 17 (ONNX 1.13-1.18): a model of a later opset may use
/// the new form, which libonnx's older schema would reject (new inputs or attributes) and, when
/// `shapes`, infer wrongly (ReduceMean-18 reads its axes from an input, which ReduceMean-13 would
/// ignore and reduce everything). Changes of element types only are absent.
struct OpChange {
    int since = 0;
    bool shapes = false;
};
inline std::optional<OpChange> op_change(std::string_view op) {
    static const std::unordered_map<std::string_view, OpChange> changes{
        {"ReduceL1", {18, true}},        {"ReduceL2", {18, true}},        {"ReduceLogSum", {18, true}},
        {"ReduceLogSumExp", {18, true}}, {"ReduceMax", {18, true}},       {"ReduceMean", {18, true}},
        {"ReduceMin", {18, true}},       {"ReduceProd", {18, true}},      {"ReduceSumSquare", {18, true}},
        {"Split", {18, true}},           {"Pad", {18, true}},             {"Resize", {18, true}},
        {"LpPool", {18, true}},          {"AveragePool", {19, true}},     {"ScatterElements", {18, false}},
        {"ScatterND", {18, false}},      {"Cast", {19, false}},           {"CastLike", {19, false}}};
    const auto it = changes.find(op);
    if (it == changes.end()) return std::nullopt;
    return it->second;
}

/// Why a rule gives no shape: input `input`'s shape (or, with `value`, its values) is not known,
/// or `why` says what is wrong with what is known.
struct cannot_infer {
    int input = -1;
    bool value = false;
    std::string why;
};

/// What a rule sees of one node: the shapes and constant values of its inputs.
struct ShapeQuery {
    const ::onnx::NodeProto& node;
    int opset = 0;
    std::vector<std::optional<graph::Shape>> shapes;  ///< fully known input shapes
    std::vector<const ConstantTensor*> values;        ///< inputs with known values, else null

    bool present(std::size_t k) const { return k < static_cast<std::size_t>(node.input_size()) && !node.input(static_cast<int>(k)).empty(); }
    const graph::Shape& shape(std::size_t k) const {
        if (!present(k) || k >= shapes.size() || !shapes[k]) throw cannot_infer{static_cast<int>(k), false, {}};
        return *shapes[k];
    }
    /// Values of input k as integers (axes, pads, shapes).
    std::vector<std::int64_t> ints(std::size_t k) const {
        if (!present(k) || k >= values.size() || !values[k] || !values[k]->has_data)
            throw cannot_infer{static_cast<int>(k), true, {}};
        try {
            return ints_of(*values[k]);
        } catch (const cannot_fold&) {
            throw cannot_infer{-1, false, "input '" + node.input(static_cast<int>(k)) + "' holds no integers"};
        }
    }
    std::vector<double> reals(std::size_t k) const {
        if (!present(k) || k >= values.size() || !values[k] || !values[k]->has_data)
            throw cannot_infer{static_cast<int>(k), true, {}};
        std::vector<double> r;
        for (std::int64_t e = 0; e < values[k]->size(); ++e) r.push_back(values[k]->real_at(static_cast<std::size_t>(e)));
        return r;
    }
    [[noreturn]] void invalid(const std::string& why) const { throw cannot_infer{-1, false, why}; }
    std::int64_t axis(std::int64_t a, std::size_t rank) const {
        const auto r = static_cast<std::int64_t>(rank);
        if (a < -r || a >= r) invalid("axis " + std::to_string(a) + " is outside a rank-" + std::to_string(r) + " input");
        return a < 0 ? a + r : a;
    }
    std::int64_t attr(std::string_view name, std::int64_t fallback) const { return attr_int(node, name, fallback); }
};

using ShapeRule = std::vector<graph::Shape> (*)(const ShapeQuery&);

namespace shape_rules {

inline std::string attr_string_value(const ::onnx::NodeProto& node, std::string_view name, std::string fallback) {
    const auto* a = find_attr(node, name);
    return a ? a->s() : fallback;
}

inline std::vector<graph::Shape> same_as_input(const ShapeQuery& q) { return {q.shape(0)}; }

inline std::vector<graph::Shape> broadcast_binary(const ShapeQuery& q) {
    const auto &a = q.shape(0), &b = q.shape(1);
    const std::size_t rank = std::max(a.size(), b.size());
    graph::Shape out(rank);
    for (std::size_t k = 0; k < rank; ++k) {
        const auto x = k + a.size() < rank ? 1 : a[k + a.size() - rank];
        const auto y = k + b.size() < rank ? 1 : b[k + b.size() - rank];
        if (x != y && x != 1 && y != 1)
            q.invalid("inputs " + graph::to_string(a) + " and " + graph::to_string(b) + " do not broadcast");
        out[k] = x == 1 ? y : x;
    }
    return {out};
}

/// a + b, or an error: hostile pads and kernels must not overflow.
inline std::int64_t checked_sum(const ShapeQuery& q, std::int64_t a, std::int64_t b) {
    std::int64_t r = 0;
    if (__builtin_add_overflow(a, b, &r)) q.invalid("an extent overflows 64-bit integers");
    return r;
}
/// A scaled extent as an integer, or an error when it is beyond any plausible tensor.
inline std::int64_t scaled_extent(const ShapeQuery& q, double x) {
    if (!(x >= 0 && x < 1e15)) q.invalid("a scaled extent " + std::to_string(x) + " is not a plausible dimension");
    return static_cast<std::int64_t>(x);
}

/// A non-negative dimension or an error naming it.
inline std::int64_t dimension(const ShapeQuery& q, std::int64_t d, const std::string& what) {
    if (d < 0) q.invalid(what + " gives the negative dimension " + std::to_string(d));
    return d;
}

inline std::vector<graph::Shape> reshape(const ShapeQuery& q) {
    const auto& in = q.shape(0);
    auto target = q.ints(1);
    const bool allow_zero = q.attr("allowzero", 0) != 0;
    std::int64_t known = 1;
    int inferred = -1;
    for (std::size_t k = 0; k < target.size(); ++k) {
        if (target[k] == 0 && !allow_zero) {
            if (k >= in.size()) q.invalid("target dimension " + std::to_string(k) + " copies an input dimension that does not exist");
            target[k] = in[k];
        }
        if (target[k] == -1) {
            if (inferred >= 0) q.invalid("the target shape has more than one -1");
            inferred = static_cast<int>(k);
            continue;
        }
        dimension(q, target[k], "the target shape");
        if (__builtin_mul_overflow(known, target[k], &known)) q.invalid("the target shape overflows");
    }
    const auto count = graph::checked_numel(in);
    if (!count) q.invalid("the input shape overflows");
    if (inferred >= 0) {
        if (known == 0 || *count % known != 0)
            q.invalid("cannot reshape " + graph::to_string(in) + " (" + std::to_string(*count) + " elements) to " +
                      graph::to_string(target));
        target[static_cast<std::size_t>(inferred)] = *count / known;
    } else if (known != *count) {
        q.invalid("cannot reshape " + graph::to_string(in) + " (" + std::to_string(*count) + " elements) to " +
                  graph::to_string(target) + " (" + std::to_string(known) + " elements)");
    }
    return {target};
}

inline std::vector<graph::Shape> expand(const ShapeQuery& q) {
    const auto& in = q.shape(0);
    const auto target = q.ints(1);
    const std::size_t rank = std::max(in.size(), target.size());
    graph::Shape out(rank);
    for (std::size_t k = 0; k < rank; ++k) {
        const auto x = k + in.size() < rank ? 1 : in[k + in.size() - rank];
        const auto y = k + target.size() < rank ? 1 : dimension(q, target[k + target.size() - rank], "the shape");
        if (x != y && x != 1 && y != 1)
            q.invalid("cannot expand " + graph::to_string(in) + " to " + graph::to_string(target));
        out[k] = x == 1 ? y : x;
    }
    return {out};
}

inline std::vector<graph::Shape> tile(const ShapeQuery& q) {
    auto out = q.shape(0);
    const auto repeats = q.ints(1);
    if (repeats.size() != out.size())
        q.invalid(std::to_string(repeats.size()) + " repeats for a rank-" + std::to_string(out.size()) + " input");
    for (std::size_t k = 0; k < out.size(); ++k)
        if (__builtin_mul_overflow(out[k], dimension(q, repeats[k], "the repeats"), &out[k])) q.invalid("the output overflows");
    return {out};
}

inline std::vector<graph::Shape> constant_of_shape(const ShapeQuery& q) {
    auto out = q.ints(0);
    for (auto d : out) dimension(q, d, "the shape");
    return {out};
}

inline std::vector<graph::Shape> range(const ShapeQuery& q) {
    const auto start = q.reals(0), limit = q.reals(1), delta = q.reals(2);
    if (start.size() != 1 || limit.size() != 1 || delta.size() != 1) q.invalid("start, limit and delta must be scalars");
    if (delta[0] == 0) q.invalid("delta is 0");
    const double count = std::ceil((limit[0] - start[0]) / delta[0]);
    if (!std::isfinite(count) || count > 9e15) q.invalid("the range has no plausible length");
    return {{count > 0 ? static_cast<std::int64_t>(count) : 0}};
}

/// Pad: pads as input 1 (opset 11) with optional axes as input 3 (opset 18), or an attribute.
inline std::vector<graph::Shape> pad(const ShapeQuery& q) {
    auto out = q.shape(0);
    const auto rank = out.size();
    std::vector<std::int64_t> pads;
    if (q.opset >= 11) {
        pads = q.ints(1);
    } else if (auto a = attr_ints(q.node, "pads")) {
        pads = *a;
    }
    std::vector<std::int64_t> axes;
    if (q.opset >= 18 && q.present(3)) {
        for (auto a : q.ints(3)) axes.push_back(q.axis(a, rank));
    } else {
        for (std::size_t k = 0; k < rank; ++k) axes.push_back(static_cast<std::int64_t>(k));
    }
    if (pads.size() != 2 * axes.size())
        q.invalid(std::to_string(pads.size()) + " pads for " + std::to_string(axes.size()) + " axes (two per axis)");
    for (std::size_t k = 0; k < axes.size(); ++k) {
        auto& d = out[static_cast<std::size_t>(axes[k])];
        const auto padded = checked_sum(q, checked_sum(q, d, pads[k]), pads[k + axes.size()]);
        if (padded < 0)
            q.invalid("pads " + graph::to_string(pads) + " make axis " + std::to_string(axes[k]) + " of extent " +
                      std::to_string(d) + " negative");
        d = padded;
    }
    return {out};
}

inline std::vector<graph::Shape> slice(const ShapeQuery& q) {
    const auto& in = q.shape(0);
    std::vector<std::int64_t> starts, ends, axes, steps;
    if (q.opset < 10) {
        starts = attr_ints(q.node, "starts").value_or(std::vector<std::int64_t>{});
        ends = attr_ints(q.node, "ends").value_or(std::vector<std::int64_t>{});
        axes = attr_ints(q.node, "axes").value_or(std::vector<std::int64_t>{});
    } else {
        starts = q.ints(1);
        ends = q.ints(2);
        if (q.present(3)) axes = q.ints(3);
        if (q.present(4)) steps = q.ints(4);
    }
    for (auto s : steps)
        if (s == 0 || s == std::numeric_limits<std::int64_t>::min()) q.invalid("a step is 0 or out of range");
    if (starts.size() != ends.size() || (!axes.empty() && axes.size() != starts.size()) ||
        (!steps.empty() && steps.size() != starts.size()))
        q.invalid("starts, ends, axes and steps differ in length");
    for (auto a : axes) (void)q.axis(a, in.size());
    graph::Shape out = in;
    for (std::size_t k = 0; k < starts.size(); ++k) {
        const auto axis = static_cast<std::size_t>(axes.empty() ? static_cast<std::int64_t>(k) : q.axis(axes[k], in.size()));
        if (axis >= in.size()) q.invalid("more starts than input axes");
        const auto length = in[axis];
        const auto step = steps.empty() ? 1 : steps[k];
        auto clamp = [](std::int64_t v, std::int64_t lo, std::int64_t hi) { return std::min(std::max(v, lo), hi); };
        auto start = starts[k], end = ends[k];
        if (start < 0) start = start < -length ? -1 - length : start + length;
        if (end < 0) end = end < -length ? -1 - length : end + length;
        if (step > 0) {
            start = clamp(start, 0, length);
            end = clamp(end, 0, length);
            out[axis] = end > start ? 1 + (end - start - 1) / step : 0;
        } else {
            start = clamp(start, 0, length - 1);
            end = clamp(end, -1, length - 1);
            out[axis] = start > end ? 1 + (start - end - 1) / (-step) : 0;
        }
    }
    return {out};
}

/// The reductions with axes as input 1 (ReduceSum from opset 13, the others from opset 18).
inline std::vector<graph::Shape> reduce(const ShapeQuery& q) {
    const auto& in = q.shape(0);
    std::vector<std::int64_t> axes;
    const bool axes_input = q.opset >= (q.node.op_type() == "ReduceSum" ? 13 : 18);
    if (axes_input) {
        if (q.present(1)) axes = q.ints(1);
    } else if (auto a = attr_ints(q.node, "axes")) {
        axes = *a;
    }
    if (axes.empty() && q.attr("noop_with_empty_axes", 0)) return {in};
    std::vector<char> reduced(in.size(), axes.empty() ? 1 : 0);
    for (auto a : axes) reduced[static_cast<std::size_t>(q.axis(a, in.size()))] = 1;
    const bool keep = q.attr("keepdims", 1) != 0;
    graph::Shape out;
    for (std::size_t k = 0; k < in.size(); ++k)
        if (!reduced[k])
            out.push_back(in[k]);
        else if (keep)
            out.push_back(1);
    return {out};
}

/// Split: sizes from input 1 (opset 13) or the attribute, else num_outputs (opset 18, the last
/// part smaller when the extent does not divide), else equal parts, one per output.
inline std::vector<graph::Shape> split(const ShapeQuery& q) {
    const auto& in = q.shape(0);
    if (in.empty()) q.invalid("cannot split a scalar");
    const auto axis = static_cast<std::size_t>(q.axis(q.attr("axis", 0), in.size()));
    const auto extent = in[axis];
    std::vector<std::int64_t> sizes;
    if (q.opset >= 13 && q.present(1))
        sizes = q.ints(1);
    else if (auto a = attr_ints(q.node, "split"); a && q.opset < 13)
        sizes = *a;
    const auto outputs = static_cast<std::int64_t>(q.node.output_size());
    if (sizes.empty()) {
        const auto parts = q.attr("num_outputs", outputs);
        if (parts < 1 || parts != outputs)
            q.invalid("num_outputs " + std::to_string(parts) + " for " + std::to_string(outputs) + " outputs");
        const auto chunk = (extent + parts - 1) / parts;
        if (q.opset < 18 && extent % parts != 0)
            q.invalid("axis extent " + std::to_string(extent) + " does not divide into " + std::to_string(parts) + " parts");
        for (std::int64_t k = 0; k < parts; ++k) sizes.push_back(std::max<std::int64_t>(0, std::min(chunk, extent - k * chunk)));
    }
    if (static_cast<std::int64_t>(sizes.size()) != outputs)
        q.invalid(std::to_string(sizes.size()) + " split sizes for " + std::to_string(outputs) + " outputs");
    std::int64_t total = 0;
    for (auto s : sizes) total += dimension(q, s, "the split");
    if (total != extent)
        q.invalid("split sizes " + graph::to_string(sizes) + " add up to " + std::to_string(total) + ", not the extent " +
                  std::to_string(extent));
    std::vector<graph::Shape> out;
    for (auto s : sizes) {
        auto shape = in;
        shape[axis] = s;
        out.push_back(shape);
    }
    return out;
}

/// Resize with sizes or scales, optionally over `axes` and keeping the aspect ratio (opset 18).
inline std::vector<graph::Shape> resize(const ShapeQuery& q) {
    auto out = q.shape(0);
    std::vector<std::int64_t> axes;
    if (auto a = attr_ints(q.node, "axes"))
        for (auto x : *a) axes.push_back(q.axis(x, out.size()));
    else
        for (std::size_t k = 0; k < out.size(); ++k) axes.push_back(static_cast<std::int64_t>(k));
    const bool has_sizes = q.present(3) && q.values.size() > 3 && q.values[3] && q.values[3]->size() > 0;
    if (has_sizes || (q.present(3) && !(q.values.size() > 3 && q.values[3]))) {
        const auto sizes = q.ints(3);
        if (sizes.size() != axes.size()) q.invalid(std::to_string(sizes.size()) + " sizes for " + std::to_string(axes.size()) + " axes");
        const auto policy = attr_string_value(q.node, "keep_aspect_ratio_policy", "stretch");
        if (policy == "stretch") {
            for (std::size_t k = 0; k < axes.size(); ++k) out[static_cast<std::size_t>(axes[k])] = dimension(q, sizes[k], "sizes");
        } else {
            double scale = policy == "not_larger" ? 1e300 : 0.0;
            for (std::size_t k = 0; k < axes.size(); ++k) {
                const double s = static_cast<double>(sizes[k]) / static_cast<double>(out[static_cast<std::size_t>(axes[k])]);
                scale = policy == "not_larger" ? std::min(scale, s) : std::max(scale, s);
            }
            for (auto a : axes) {
                auto& d = out[static_cast<std::size_t>(a)];
                d = scaled_extent(q, std::round(scale * static_cast<double>(d)));
            }
        }
        return {out};
    }
    const std::size_t scales_slot = q.opset >= 11 ? 2 : 1;
    const auto scales = q.reals(scales_slot);
    if (scales.size() != axes.size()) q.invalid(std::to_string(scales.size()) + " scales for " + std::to_string(axes.size()) + " axes");
    for (std::size_t k = 0; k < axes.size(); ++k) {
        if (!(scales[k] > 0) || !std::isfinite(scales[k])) q.invalid("scale " + std::to_string(scales[k]) + " is not positive");
        auto& d = out[static_cast<std::size_t>(axes[k])];
        d = scaled_extent(q, std::floor(static_cast<double>(d) * scales[k]));
    }
    return {out};
}

/// AveragePool, MaxPool and LpPool with dilations and ceil_mode (AveragePool 19, LpPool 18).
inline std::vector<graph::Shape> pool(const ShapeQuery& q) {
    auto out = q.shape(0);
    if (out.size() < 3) q.invalid("pooling needs an [N, C, spatial...] input");
    const auto n = out.size() - 2;
    const auto kernel = attr_ints(q.node, "kernel_shape").value_or(std::vector<std::int64_t>{});
    if (kernel.size() != n) q.invalid("kernel_shape has " + std::to_string(kernel.size()) + " entries for " + std::to_string(n) + " spatial axes");
    const auto strides = attr_ints(q.node, "strides").value_or(std::vector<std::int64_t>(n, 1));
    const auto dilations = attr_ints(q.node, "dilations").value_or(std::vector<std::int64_t>(n, 1));
    const auto pads = attr_ints(q.node, "pads").value_or(std::vector<std::int64_t>(2 * n, 0));
    if (strides.size() != n || dilations.size() != n || pads.size() != 2 * n) q.invalid("strides, dilations or pads do not fit the kernel");
    const auto auto_pad = attr_string_value(q.node, "auto_pad", "NOTSET");
    const bool ceil_mode = q.attr("ceil_mode", 0) != 0;
    for (std::size_t i = 0; i < n; ++i) {
        auto& d = out[2 + i];
        const auto s = strides[i];
        std::int64_t span = 0;
        if (s < 1 || dilations[i] < 1 || kernel[i] < 1 || __builtin_mul_overflow(dilations[i], kernel[i] - 1, &span))
            q.invalid("kernel, strides or dilations are not positive or overflow");
        span = checked_sum(q, span, 1);
        if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
            d = d / s + (d % s != 0);
            continue;
        }
        const auto padded =
            auto_pad == "VALID" ? d : checked_sum(q, checked_sum(q, d, pads[i]), pads[i + n]);
        if (padded < span) q.invalid("spatial input " + std::to_string(d) + " is smaller than the kernel extent " + std::to_string(span));
        const auto room = padded - span;
        auto extent = (ceil_mode ? (room + s - 1) / s : room / s) + 1;
        // ceil_mode: the last window must start inside the input or its left padding
        if (ceil_mode && (extent - 1) * s >= checked_sum(q, d, pads[i])) --extent;
        d = extent;
    }
    return {out};
}

/// Einsum: extents by label from the operands (an ellipsis broadcasts); the output is the
/// explicit right-hand side, or the ellipsis and the labels used once, in alphabetical order.
inline std::vector<graph::Shape> einsum(const ShapeQuery& q) {
    std::string equation = attr_string_value(q.node, "equation", "");
    equation.erase(std::remove(equation.begin(), equation.end(), ' '), equation.end());
    const auto arrow = equation.find("->");
    const std::string lhs = equation.substr(0, arrow);
    std::vector<std::string> terms{""};
    for (char c : lhs)
        if (c == ',')
            terms.emplace_back();
        else
            terms.back() += c;
    if (static_cast<int>(terms.size()) != q.node.input_size())
        q.invalid("equation '" + equation + "' has " + std::to_string(terms.size()) + " operands for " +
                  std::to_string(q.node.input_size()) + " inputs");
    std::int64_t extent[128];
    std::fill(std::begin(extent), std::end(extent), -1);
    std::vector<int> uses(128, 0);
    graph::Shape ellipsis;
    for (std::size_t t = 0; t < terms.size(); ++t) {
        const auto& shape = q.shape(t);
        std::string term = terms[t];
        const auto dots = term.find("...");
        const std::size_t labels = term.size() - (dots == std::string::npos ? 0 : 3);
        if (labels > shape.size() || (dots == std::string::npos && labels != shape.size()))
            q.invalid("operand " + std::to_string(t) + " '" + term + "' does not fit shape " + graph::to_string(shape));
        const std::size_t broadcast = shape.size() - labels;
        std::size_t axis = 0;
        for (std::size_t k = 0; k < term.size(); ++k) {
            if (term.compare(k, 3, "...") == 0) {
                graph::Shape part(shape.begin() + static_cast<std::ptrdiff_t>(axis),
                                  shape.begin() + static_cast<std::ptrdiff_t>(axis + broadcast));
                if (part.size() > ellipsis.size()) ellipsis.insert(ellipsis.begin(), part.size() - ellipsis.size(), 1);
                for (std::size_t e = 0; e < part.size(); ++e) {
                    auto& d = ellipsis[ellipsis.size() - part.size() + e];
                    if (d != part[e] && d != 1 && part[e] != 1) q.invalid("ellipsis dimensions do not broadcast");
                    d = d == 1 ? part[e] : d;
                }
                axis += broadcast;
                k += 2;
                continue;
            }
            const auto label = static_cast<unsigned char>(term[k]);
            if (label >= 128 || !std::isalpha(label)) q.invalid("equation '" + equation + "' has a label that is not a letter");
            const auto d = shape[axis++];
            if (extent[label] >= 0 && extent[label] != d && extent[label] != 1 && d != 1)
                q.invalid("label '" + std::string(1, term[k]) + "' has extents " + std::to_string(extent[label]) +
                          " and " + std::to_string(d));
            extent[label] = extent[label] < 0 || extent[label] == 1 ? d : extent[label];
            ++uses[label];
        }
    }
    graph::Shape out;
    if (arrow != std::string::npos) {
        const std::string rhs = equation.substr(arrow + 2);
        for (std::size_t k = 0; k < rhs.size(); ++k) {
            if (rhs.compare(k, 3, "...") == 0) {
                out.insert(out.end(), ellipsis.begin(), ellipsis.end());
                k += 2;
                continue;
            }
            const auto label = static_cast<unsigned char>(rhs[k]);
            if (label >= 128 || extent[label] < 0) q.invalid("output label '" + std::string(1, rhs[k]) + "' is on no operand");
            out.push_back(extent[label]);
        }
    } else {
        out = ellipsis;
        for (int label = 0; label < 128; ++label)
            if (uses[static_cast<std::size_t>(label)] == 1) out.push_back(extent[label]);
    }
    return {out};
}

/// LayerNormalization (opset 17, and the same operator exporters wrote at lower opsets for
/// runtimes that had it earlier): Y like X; Mean and InvStdDev keep the axes before `axis`.
inline std::vector<graph::Shape> layer_normalization(const ShapeQuery& q) {
    const auto& x = q.shape(0);
    const auto axis = static_cast<std::size_t>(q.axis(q.attr("axis", -1), x.size()));
    graph::Shape statistics(x.begin(), x.begin() + static_cast<std::ptrdiff_t>(axis));
    statistics.resize(x.size(), 1);
    return {x, statistics, statistics};
}

inline std::vector<graph::Shape> center_crop_pad(const ShapeQuery& q) {
    auto out = q.shape(0);
    const auto shape = q.ints(1);
    std::vector<std::int64_t> axes;
    if (auto a = attr_ints(q.node, "axes"))
        for (auto x : *a) axes.push_back(q.axis(x, out.size()));
    else
        for (std::size_t k = 0; k < out.size(); ++k) axes.push_back(static_cast<std::int64_t>(k));
    if (shape.size() != axes.size()) q.invalid(std::to_string(shape.size()) + " extents for " + std::to_string(axes.size()) + " axes");
    for (std::size_t k = 0; k < axes.size(); ++k) out[static_cast<std::size_t>(axes[k])] = dimension(q, shape[k], "the shape");
    return {out};
}

}  // namespace shape_rules

/// The rule for an operator of the default domain (`domain` "" or "ai.onnx") or one of
/// com.microsoft's elementwise activations; null when there is none.
inline ShapeRule find_shape_rule(const std::string& domain, const std::string& op) {
    using namespace shape_rules;
    static const std::unordered_map<std::string, ShapeRule> onnx_rules = [] {
        std::unordered_map<std::string, ShapeRule> r;
        for (const char* o : {"Gelu", "Mish", "GroupNormalization", "BitwiseNot", "RMSNormalization", "RotaryEmbedding",
                              "ScatterElements", "ScatterND", "Swish"})
            r[o] = same_as_input;
        for (const char* o : {"BitwiseAnd", "BitwiseOr", "BitwiseXor"}) r[o] = broadcast_binary;
        r["Reshape"] = reshape;
        r["Expand"] = expand;
        r["Tile"] = tile;
        r["ConstantOfShape"] = constant_of_shape;
        r["Range"] = range;
        r["Pad"] = pad;
        r["Slice"] = slice;
        for (const char* o : {"ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceMax", "ReduceMean",
                              "ReduceMin", "ReduceProd", "ReduceSum", "ReduceSumSquare"})
            r[o] = reduce;
        r["Split"] = split;
        r["Resize"] = resize;
        for (const char* o : {"AveragePool", "MaxPool", "LpPool"}) r[o] = pool;
        r["CenterCropPad"] = center_crop_pad;
        r["LayerNormalization"] = layer_normalization;
        r["Einsum"] = einsum;
        return r;
    }();
    static const std::unordered_map<std::string, ShapeRule> microsoft_rules{
        {"Gelu", same_as_input}, {"FastGelu", same_as_input}, {"BiasGelu", same_as_input}, {"QuickGelu", same_as_input}};
    const std::unordered_map<std::string, ShapeRule>* rules = nullptr;
    if (domain.empty() || domain == "ai.onnx")
        rules = &onnx_rules;
    else if (domain == "com.microsoft")
        rules = &microsoft_rules;
    else
        return nullptr;
    const auto it = rules->find(op);
    return it == rules->end() ? nullptr : it->second;
}

/// Inputs whose values (not only shapes) an operator's output shape depends on.
inline std::vector<int> value_inputs(const std::string& op, int opset) {
    if (op == "Reshape" || op == "Expand" || op == "Tile" || op == "Upsample" || op == "TopK" || op == "OneHot" ||
        op == "CenterCropPad")
        return {1};
    if (op == "ConstantOfShape") return {0};
    if (op == "Range") return {0, 1, 2};
    if (op == "Pad") return opset >= 18 ? std::vector<int>{1, 3} : std::vector<int>{1};
    if (op == "Slice") return {1, 2, 3, 4};
    if (op == "Resize") return {2, 3};
    if (op == "Squeeze" || op == "Unsqueeze" || op == "Split") return opset >= 13 ? std::vector<int>{1} : std::vector<int>{};
    if (op == "ReduceSum") return opset >= 13 ? std::vector<int>{1} : std::vector<int>{};
    if (op.rfind("Reduce", 0) == 0) return opset >= 18 ? std::vector<int>{1} : std::vector<int>{};
    return {};
}

}  // namespace dnncost::io::detail::onnx_impl
