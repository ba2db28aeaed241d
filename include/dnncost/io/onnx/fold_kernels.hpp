#pragma once
/// @file fold_kernels.hpp
/// The tensor arithmetic the shape folder is built from: exact integer conversions, numpy
/// broadcasting, Gather, Slice, and reading node attributes. Every result is bounded in size
/// before it is computed; anything that cannot be computed exactly throws cannot_fold.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <dnncost/graph/graph.hpp>
#include <dnncost/io/onnx/proto.hpp>
#include <dnncost/io/onnx/tensor_data.hpp>

namespace dnncost::io::detail::onnx_impl {

/// Thrown inside the folder when a node cannot be evaluated; it is then left in the graph.
/// `why` is set when the values are known and the operation itself is invalid (a division by
/// zero, a negative dimension): the importer reports it if a shape then cannot be determined.
struct cannot_fold {
    std::string why;
};

/// A float value as an integer, truncated like a C++ cast; NaN or beyond the int64 range would
/// be undefined behaviour and is no shape code: the node is left unfolded.
inline std::int64_t to_int_or_unfold(double x) {
    if (!(x > -9.2e18 && x < 9.2e18)) throw cannot_fold{};
    return static_cast<std::int64_t>(x);
}

/// Element k as an integer, whatever the element type.
inline std::int64_t integer_at(const ConstantTensor& c, std::size_t k) {
    return c.is_float() ? to_int_or_unfold(c.floats[k]) : c.ints[k];
}

/// All elements as integers (axes, shapes, starts and ends).
inline std::vector<std::int64_t> ints_of(const ConstantTensor& c) {
    std::vector<std::int64_t> values;
    for (std::int64_t k = 0; k < c.size(); ++k) values.push_back(integer_at(c, static_cast<std::size_t>(k)));
    return values;
}

/// An axis in [-rank, rank) as an index in [0, rank).
inline std::int64_t normalize_axis(std::int64_t axis, std::int64_t rank) {
    if (axis < -rank || axis >= std::max<std::int64_t>(rank, 1)) throw cannot_fold{};
    return axis < 0 ? axis + rank : axis;
}

inline ConstantTensor make_int(graph::Shape dims, std::vector<std::int64_t> values, int dtype = TensorProto::INT64) {
    ConstantTensor c;
    c.dtype = dtype;
    c.dims = std::move(dims);
    c.ints = std::move(values);
    c.has_data = true;
    return c;
}

/// Row-major strides of a shape.
inline std::vector<std::int64_t> strides_of(const graph::Shape& shape) {
    std::vector<std::int64_t> strides(shape.size(), 1);
    for (std::size_t k = shape.size(); k-- > 1;) strides[k - 1] = strides[k] * shape[k];
    return strides;
}

/// Elementwise binary operation with numpy broadcasting: `int_op` on integer results, `float_op`
/// on floating ones. The operations are plain function pointers, not template parameters: the
/// tensors here are shapes and indices, a few values each, and one body serves every operator.
inline ConstantTensor broadcast(const ConstantTensor& a, const ConstantTensor& b, int out_dtype,
                                std::int64_t (*int_op)(std::int64_t, std::int64_t),
                                double (*float_op)(double, double), std::int64_t max_elements) {
    const std::size_t rank = std::max(a.dims.size(), b.dims.size());
    graph::Shape out(rank);
    auto dim = [&](const ConstantTensor& c, std::size_t k) -> std::int64_t {
        const std::size_t offset = rank - c.dims.size();
        return k < offset ? 1 : c.dims[k - offset];
    };
    for (std::size_t k = 0; k < rank; ++k) {
        const auto x = dim(a, k), y = dim(b, k);
        if (x != y && x != 1 && y != 1)
            throw cannot_fold{"shapes " + graph::to_string(a.dims) + " and " + graph::to_string(b.dims) +
                              " do not broadcast"};
        out[k] = x == 1 ? y : x;
    }
    const auto count = checked_numel(out);
    if (!count || *count > max_elements) throw cannot_fold{};  // bounded before it is computed
    ConstantTensor result;
    result.dtype = out_dtype;
    result.dims = out;
    result.has_data = true;
    const auto out_strides = strides_of(out);
    auto source_index = [&](const ConstantTensor& c, std::int64_t flat) {
        const std::size_t offset = rank - c.dims.size();
        const auto strides = strides_of(c.dims);
        std::int64_t index = 0;
        for (std::size_t k = 0; k < rank; ++k) {
            const auto coord = (flat / out_strides[k]) % out[k];
            if (k >= offset && c.dims[k - offset] != 1) index += coord * strides[k - offset];
        }
        return static_cast<std::size_t>(index);
    };
    const bool floating = is_float_type(out_dtype);
    for (std::int64_t e = 0; e < *count; ++e) {
        const auto ia = source_index(a, e), ib = source_index(b, e);
        if (floating)
            result.floats.push_back(float_op(a.real_at(ia), b.real_at(ib)));
        else
            result.ints.push_back(int_op(integer_at(a, ia), integer_at(b, ib)));
    }
    return result;
}

/// Gather along `axis` with integer indices.
inline ConstantTensor gather(const ConstantTensor& data, const ConstantTensor& indices, std::int64_t axis,
                             std::int64_t max_elements) {
    const auto rank = static_cast<std::int64_t>(data.dims.size());
    if (rank == 0) throw cannot_fold{};
    axis = normalize_axis(axis, rank);
    graph::Shape out;
    for (std::int64_t k = 0; k < axis; ++k) out.push_back(data.dims[static_cast<std::size_t>(k)]);
    for (auto d : indices.dims) out.push_back(d);
    for (std::int64_t k = axis + 1; k < rank; ++k) out.push_back(data.dims[static_cast<std::size_t>(k)]);
    std::int64_t outer = 1, inner = 1;
    for (std::int64_t k = 0; k < axis; ++k) outer *= data.dims[static_cast<std::size_t>(k)];
    for (std::int64_t k = axis + 1; k < rank; ++k) inner *= data.dims[static_cast<std::size_t>(k)];
    const auto length = data.dims[static_cast<std::size_t>(axis)];
    {
        const auto count = checked_numel(out);
        if (!count || *count > max_elements) throw cannot_fold{};  // bounded before it is computed
    }
    ConstantTensor result;
    result.dtype = data.dtype;
    result.dims = out;
    result.has_data = true;
    for (std::int64_t o = 0; o < outer; ++o)
        for (std::int64_t q = 0; q < indices.size(); ++q) {
            auto j = integer_at(indices, static_cast<std::size_t>(q));
            if (j < -length || j >= length)
                throw cannot_fold{"index " + std::to_string(j) + " is out of range for an axis of extent " +
                                  std::to_string(length)};
            if (j < 0) j += length;
            for (std::int64_t i = 0; i < inner; ++i) {
                const auto src = static_cast<std::size_t>((o * length + j) * inner + i);
                if (data.is_float())
                    result.floats.push_back(data.floats[src]);
                else
                    result.ints.push_back(data.ints[src]);
            }
        }
    return result;
}

/// Slice with per-axis starts/ends/steps (ONNX clamping rules).
inline ConstantTensor slice(const ConstantTensor& data, std::vector<std::int64_t> starts,
                            std::vector<std::int64_t> ends, std::vector<std::int64_t> axes,
                            std::vector<std::int64_t> steps) {
    const auto rank = static_cast<std::int64_t>(data.dims.size());
    if (rank == 0) throw cannot_fold{};  // a scalar has no axis to slice
    if (axes.empty())
        for (std::size_t k = 0; k < starts.size(); ++k) axes.push_back(static_cast<std::int64_t>(k));
    if (steps.empty()) steps.assign(starts.size(), 1);
    if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
        throw cannot_fold{};
    std::vector<std::int64_t> first(static_cast<std::size_t>(rank), 0), stride(static_cast<std::size_t>(rank), 1);
    graph::Shape out = data.dims;
    for (std::size_t k = 0; k < starts.size(); ++k) {
        const auto axis = static_cast<std::size_t>(normalize_axis(axes[k], rank));
        const auto length = data.dims[axis];
        const auto step = steps[k];
        if (step == 0) throw cannot_fold{"has a step of 0"};
        if (step == std::numeric_limits<std::int64_t>::min()) throw cannot_fold{};
        auto clamp = [](std::int64_t v, std::int64_t lo, std::int64_t hi) { return std::min(std::max(v, lo), hi); };
        auto start = starts[k], end = ends[k];
        if (start < 0) start = start < -length ? -1 - length : start + length;  // far negative: clamped below
        if (end < 0) end = end < -length ? -1 - length : end + length;
        if (start < 0 && step > 0) start = 0;
        if (step > 0) {
            start = clamp(start, 0, length);
            end = clamp(end, 0, length);
            out[axis] = end > start ? 1 + (end - start - 1) / step : 0;
        } else {
            start = clamp(start, 0, length - 1);
            end = clamp(end, -1, length - 1);
            out[axis] = start > end ? 1 + (start - end - 1) / (-step) : 0;
        }
        first[axis] = start;
        stride[axis] = step;
    }
    ConstantTensor result;
    result.dtype = data.dtype;
    result.dims = out;
    result.has_data = true;
    const auto count = graph::numel(out);
    const auto out_strides = strides_of(out), data_strides = strides_of(data.dims);
    for (std::int64_t e = 0; e < count; ++e) {
        std::int64_t src = 0;
        for (std::size_t k = 0; k < out.size(); ++k)
            src += (first[k] + ((e / out_strides[k]) % out[k]) * stride[k]) * data_strides[k];
        if (data.is_float())
            result.floats.push_back(data.floats[static_cast<std::size_t>(src)]);
        else
            result.ints.push_back(data.ints[static_cast<std::size_t>(src)]);
    }
    return result;
}

inline const ::onnx::AttributeProto* find_attr(const ::onnx::NodeProto& node, std::string_view name) {
    for (const auto& a : node.attribute())
        if (a.name() == name) return &a;
    return nullptr;
}
inline std::int64_t attr_int(const ::onnx::NodeProto& node, std::string_view name, std::int64_t fallback) {
    const auto* a = find_attr(node, name);
    return a ? a->i() : fallback;
}
inline std::optional<std::vector<std::int64_t>> attr_ints(const ::onnx::NodeProto& node, std::string_view name) {
    const auto* a = find_attr(node, name);
    if (!a) return std::nullopt;
    return std::vector<std::int64_t>(a->ints().begin(), a->ints().end());
}

}  // namespace dnncost::io::detail::onnx_impl
