#pragma once
/// @file fold_ops.hpp
/// One evaluator per operator the shape folder understands (the integer and shape arithmetic
/// exporters emit around Reshape, Expand, Slice and friends). Each takes a FoldRequest (the node,
/// its constant inputs, the opset) and returns the node's outputs or throws cannot_fold;
/// fold.hpp maps operator types to them.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <optional>
#include <vector>

#include <dnncost/graph/graph.hpp>
#include <dnncost/io/onnx/fold_kernels.hpp>
#include <dnncost/io/onnx/proto.hpp>
#include <dnncost/io/onnx/tensor_data.hpp>

namespace dnncost::io::detail::onnx_impl {

/// One node to evaluate on constant inputs.
struct FoldRequest {
    const ::onnx::NodeProto& node;
    int opset = 0;
    /// Input k, or null when it is unknown (not a constant) or omitted.
    std::vector<const ConstantTensor*> inputs;
    /// The fully known shape of input 0 (what Shape and Size read), when there is one.
    std::optional<graph::Shape> input0_shape;
    /// Largest result (elements) worth computing.
    std::int64_t max_elements = 0;

    /// Input k with values, or cannot_fold.
    const ConstantTensor& need(std::size_t k) const {
        if (k >= inputs.size() || !inputs[k] || !inputs[k]->has_data) throw cannot_fold{};
        return *inputs[k];
    }
    /// An optional input: null when omitted, cannot_fold when present without values.
    const ConstantTensor* optional_input(std::size_t k) const {
        if (k >= inputs.size() || !inputs[k]) return nullptr;
        if (!inputs[k]->has_data) throw cannot_fold{};
        return inputs[k];
    }
    ConstantTensor bounded(ConstantTensor c) const {
        if (c.size() > max_elements) throw cannot_fold{};
        return c;
    }
};

using FoldResult = std::vector<ConstantTensor>;

namespace fold_ops {

inline FoldResult shape(const FoldRequest& request) {
    if (!request.input0_shape) throw cannot_fold{};
    const auto& dims = *request.input0_shape;
    const auto rank = static_cast<std::int64_t>(dims.size());
    auto start = attr_int(request.node, "start", 0), end = attr_int(request.node, "end", rank);
    if (start < 0) start += rank;
    if (end < 0) end += rank;
    start = std::clamp<std::int64_t>(start, 0, rank);
    end = std::clamp<std::int64_t>(end, 0, rank);
    std::vector<std::int64_t> values;
    for (auto k = start; k < end; ++k) values.push_back(dims[static_cast<std::size_t>(k)]);
    return {make_int({static_cast<std::int64_t>(values.size())}, values)};
}

inline FoldResult size(const FoldRequest& request) {
    if (!request.input0_shape) throw cannot_fold{};
    const auto count = checked_numel(*request.input0_shape);
    if (!count) throw cannot_fold{};
    return {make_int({}, {*count})};
}

inline FoldResult constant(const FoldRequest& request) {
    const auto& node = request.node;
    if (const auto* a = find_attr(node, "value")) {
        auto c = read_tensor(a->t(), request.max_elements);
        if (!c.has_data) throw cannot_fold{};
        return {c};
    }
    if (const auto* a = find_attr(node, "value_int")) return {make_int({}, {a->i()})};
    if (const auto* a = find_attr(node, "value_ints"))
        return {make_int({a->ints_size()}, {a->ints().begin(), a->ints().end()})};
    ConstantTensor c;
    c.dtype = TensorProto::FLOAT;
    c.has_data = true;
    if (const auto* a = find_attr(node, "value_float")) {
        c.floats = {widen(a->f())};
        return {c};
    }
    if (const auto* a = find_attr(node, "value_floats")) {
        c.dims = {a->floats_size()};
        for (float x : a->floats()) c.floats.push_back(widen(x));
        return {c};
    }
    throw cannot_fold{};
}

inline FoldResult identity(const FoldRequest& request) { return {request.need(0)}; }

inline FoldResult cast(const FoldRequest& request) {
    ConstantTensor c = request.need(0);
    const int to = static_cast<int>(attr_int(request.node, "to", TensorProto::INT64));
    if (is_float_type(to) && !c.is_float()) {
        c.floats.assign(c.ints.begin(), c.ints.end());
        c.ints.clear();
    } else if (is_int_type(to) && c.is_float()) {
        for (double x : c.floats) c.ints.push_back(to_int_or_unfold(x));
        c.floats.clear();
    } else if (!is_float_type(to) && !is_int_type(to)) {
        throw cannot_fold{};
    }
    if (to == TensorProto::BOOL)
        for (auto& x : c.ints) x = x != 0;
    c.dtype = to;
    return {c};
}

inline FoldResult gather(const FoldRequest& request) {
    return {request.bounded(
        onnx_impl::gather(request.need(0), request.need(1), attr_int(request.node, "axis", 0), request.max_elements))};
}

/// The axes of Squeeze/Unsqueeze: an input from opset 13, an attribute before.
inline std::vector<std::int64_t> squeeze_axes(const FoldRequest& request) {
    if (request.opset >= 13) {
        if (const ConstantTensor* axes = request.optional_input(1)) return ints_of(*axes);
        return {};
    }
    return attr_ints(request.node, "axes").value_or(std::vector<std::int64_t>{});
}

inline FoldResult unsqueeze(const FoldRequest& request) {
    ConstantTensor c = request.need(0);
    auto axes = squeeze_axes(request);
    const auto rank = static_cast<std::int64_t>(c.dims.size() + axes.size());
    for (auto& axis : axes) axis = normalize_axis(axis, rank);
    std::sort(axes.begin(), axes.end());
    for (auto axis : axes) {
        if (axis > static_cast<std::int64_t>(c.dims.size())) throw cannot_fold{};
        c.dims.insert(c.dims.begin() + axis, 1);
    }
    return {c};
}

inline FoldResult squeeze(const FoldRequest& request) {
    ConstantTensor c = request.need(0);
    const auto axes = squeeze_axes(request);
    const auto rank = static_cast<std::int64_t>(c.dims.size());
    graph::Shape out;
    for (std::int64_t k = 0; k < rank; ++k) {
        const auto dim = c.dims[static_cast<std::size_t>(k)];
        const bool listed = axes.empty() ? dim == 1 : std::any_of(axes.begin(), axes.end(), [&](std::int64_t axis) {
            return normalize_axis(axis, rank) == k;
        });
        if (listed && dim != 1) throw cannot_fold{};
        if (!listed) out.push_back(dim);
    }
    c.dims = out;
    return {c};
}

/// The same values under a new shape of the same element count.
inline FoldResult relabel(ConstantTensor c, graph::Shape target) {
    if (checked_numel(target) != std::optional<std::int64_t>(c.size()))
        throw cannot_fold{"cannot lay out " + graph::to_string(c.dims) + " (" + std::to_string(c.size()) +
                          " elements) as " + graph::to_string(target)};
    c.dims = std::move(target);
    return {c};
}

inline FoldResult flatten(const FoldRequest& request) {
    const ConstantTensor& c = request.need(0);
    const auto rank = static_cast<std::int64_t>(c.dims.size());
    auto axis = attr_int(request.node, "axis", 1);
    if (axis < 0) axis += rank;
    std::int64_t outer = 1;
    for (std::int64_t k = 0; k < axis && k < rank; ++k) outer *= c.dims[static_cast<std::size_t>(k)];
    return relabel(c, {outer, c.size() / std::max<std::int64_t>(outer, 1)});
}

inline FoldResult reshape(const FoldRequest& request) {
    const ConstantTensor& c = request.need(0);
    graph::Shape target = ints_of(request.need(1));
    std::int64_t known = 1;
    int inferred = -1;
    for (std::size_t k = 0; k < target.size(); ++k) {
        if (target[k] == 0 && !attr_int(request.node, "allowzero", 0)) {
            if (k >= c.dims.size()) throw cannot_fold{};
            target[k] = c.dims[k];
        }
        if (target[k] == -1) {
            if (inferred >= 0) throw cannot_fold{"has more than one -1 in its target shape"};
            inferred = static_cast<int>(k);
        } else if (target[k] < 0) {
            throw cannot_fold{"is asked for the negative dimension " + std::to_string(target[k])};
        } else if (__builtin_mul_overflow(known, target[k], &known)) {
            throw cannot_fold{};
        }
    }
    if (inferred >= 0) {
        if (known == 0) throw cannot_fold{};
        target[static_cast<std::size_t>(inferred)] = c.size() / known;
    }
    return relabel(c, std::move(target));
}

inline FoldResult concat(const FoldRequest& request) {
    std::vector<const ConstantTensor*> parts;
    for (std::size_t k = 0; k < request.inputs.size(); ++k) parts.push_back(&request.need(k));
    if (parts.empty()) throw cannot_fold{};
    const auto rank = static_cast<std::int64_t>(parts[0]->dims.size());
    if (rank == 0) throw cannot_fold{};  // scalars cannot be concatenated
    const auto axis = static_cast<std::size_t>(normalize_axis(attr_int(request.node, "axis", 0), rank));
    ConstantTensor result;
    result.dtype = parts[0]->dtype;
    result.dims = parts[0]->dims;
    result.dims[axis] = 0;
    result.has_data = true;
    for (const auto* part : parts) {
        if (static_cast<std::int64_t>(part->dims.size()) != rank || part->is_float() != result.is_float())
            throw cannot_fold{};
        for (std::size_t k = 0; k < part->dims.size(); ++k)
            if (k != axis && part->dims[k] != result.dims[k]) throw cannot_fold{};
        result.dims[axis] += part->dims[axis];
        if (result.dims[axis] > request.max_elements) throw cannot_fold{};
    }
    if (result.size() > request.max_elements) throw cannot_fold{};
    std::int64_t outer = 1;
    for (std::size_t k = 0; k < axis; ++k) outer *= result.dims[k];
    for (std::int64_t o = 0; o < outer; ++o)
        for (const auto* part : parts) {
            const auto chunk = part->size() / std::max<std::int64_t>(outer, 1);
            for (std::int64_t q = 0; q < chunk; ++q) {
                const auto src = static_cast<std::size_t>(o * chunk + q);
                if (result.is_float())
                    result.floats.push_back(part->floats[src]);
                else
                    result.ints.push_back(part->ints[src]);
            }
        }
    return {request.bounded(result)};
}

inline FoldResult slice(const FoldRequest& request) {
    const ConstantTensor& data = request.need(0);
    if (request.opset < 10) {
        auto starts = attr_ints(request.node, "starts"), ends = attr_ints(request.node, "ends");
        if (!starts || !ends) throw cannot_fold{};
        return {onnx_impl::slice(data, *starts, *ends,
                                 attr_ints(request.node, "axes").value_or(std::vector<std::int64_t>{}), {})};
    }
    const ConstantTensor* axes = request.optional_input(3);
    const ConstantTensor* steps = request.optional_input(4);
    return {onnx_impl::slice(data, ints_of(request.need(1)), ints_of(request.need(2)),
                             axes ? ints_of(*axes) : std::vector<std::int64_t>{},
                             steps ? ints_of(*steps) : std::vector<std::int64_t>{})};
}

// Binary elementwise operators: integer arithmetic is checked (an overflow is no shape code),
// comparisons give booleans and are folded for integers only.
struct AddOp {
    static constexpr bool comparison = false;
    static std::int64_t on_ints(std::int64_t x, std::int64_t y) {
        std::int64_t sum = 0;
        if (__builtin_add_overflow(x, y, &sum)) throw cannot_fold{"overflows 64-bit integers"};
        return sum;
    }
    static double on_floats(double x, double y) { return x + y; }
};
struct SubOp {
    static constexpr bool comparison = false;
    static std::int64_t on_ints(std::int64_t x, std::int64_t y) {
        std::int64_t difference = 0;
        if (__builtin_sub_overflow(x, y, &difference)) throw cannot_fold{"overflows 64-bit integers"};
        return difference;
    }
    static double on_floats(double x, double y) { return x - y; }
};
struct MulOp {
    static constexpr bool comparison = false;
    static std::int64_t on_ints(std::int64_t x, std::int64_t y) {
        std::int64_t product = 0;
        if (__builtin_mul_overflow(x, y, &product)) throw cannot_fold{"overflows 64-bit integers"};
        return product;
    }
    static double on_floats(double x, double y) { return x * y; }
};
inline void check_integer_division(std::int64_t x, std::int64_t y) {
    if (y == 0) throw cannot_fold{"divides " + std::to_string(x) + " by zero"};
    if (y == -1 && x == std::numeric_limits<std::int64_t>::min()) throw cannot_fold{};
}
struct DivOp {
    static constexpr bool comparison = false;
    static std::int64_t on_ints(std::int64_t x, std::int64_t y) {
        check_integer_division(x, y);
        return x / y;
    }
    static double on_floats(double x, double y) { return x / y; }
};
struct ModOp {
    static constexpr bool comparison = false;
    static std::int64_t on_ints(std::int64_t x, std::int64_t y) {
        check_integer_division(x, y);
        return x % y;
    }
    static double on_floats(double x, double y) { return std::fmod(x, y); }
};
struct MinOp {
    static constexpr bool comparison = false;
    static std::int64_t on_ints(std::int64_t x, std::int64_t y) { return std::min(x, y); }
    static double on_floats(double x, double y) { return std::min(x, y); }
};
struct MaxOp {
    static constexpr bool comparison = false;
    static std::int64_t on_ints(std::int64_t x, std::int64_t y) { return std::max(x, y); }
    static double on_floats(double x, double y) { return std::max(x, y); }
};
struct EqualOp {
    static constexpr bool comparison = true;
    static std::int64_t on_ints(std::int64_t x, std::int64_t y) { return x == y; }
};
struct LessOp {
    static constexpr bool comparison = true;
    static std::int64_t on_ints(std::int64_t x, std::int64_t y) { return x < y; }
};
struct GreaterOp {
    static constexpr bool comparison = true;
    static std::int64_t on_ints(std::int64_t x, std::int64_t y) { return x > y; }
};

template <class Op>
FoldResult binary(const FoldRequest& request) {
    const ConstantTensor& a = request.need(0);
    if (request.inputs.size() != 2) throw cannot_fold{};
    const ConstantTensor& b = request.need(1);
    if constexpr (Op::comparison) {
        if (a.is_float() || b.is_float()) throw cannot_fold{};
        return {request.bounded(broadcast(
            a, b, TensorProto::BOOL, Op::on_ints, [](double, double) -> double { throw cannot_fold{}; },
            request.max_elements))};
    } else {
        return {request.bounded(broadcast(a, b, a.dtype, Op::on_ints, Op::on_floats, request.max_elements))};
    }
}

struct LessOrEqualOp {
    static constexpr bool comparison = true;
    static std::int64_t on_ints(std::int64_t x, std::int64_t y) { return x <= y; }
};
struct GreaterOrEqualOp {
    static constexpr bool comparison = true;
    static std::int64_t on_ints(std::int64_t x, std::int64_t y) { return x >= y; }
};
struct AndOp {
    static constexpr bool comparison = true;
    static std::int64_t on_ints(std::int64_t x, std::int64_t y) { return x != 0 && y != 0; }
};
struct OrOp {
    static constexpr bool comparison = true;
    static std::int64_t on_ints(std::int64_t x, std::int64_t y) { return x != 0 || y != 0; }
};

inline FoldResult logical_not(const FoldRequest& request) {
    ConstantTensor c = request.need(0);
    if (c.is_float()) throw cannot_fold{};
    for (auto& x : c.ints) x = x == 0;
    c.dtype = TensorProto::BOOL;
    return {c};
}

enum class Rounding { floor, ceil, round, sqrt };

/// Float functions shape code applies before casting back to integers (e.g. the side of a
/// square token grid, sqrt(L)); on integers Floor, Ceil and Round are the identity.
template <Rounding kind>
FoldResult rounding(const FoldRequest& request) {
    ConstantTensor c = request.need(0);
    if (!c.is_float()) {
        if (kind == Rounding::sqrt) throw cannot_fold{};
        return {c};
    }
    for (auto& x : c.floats) {
        if constexpr (kind == Rounding::floor) x = std::floor(x);
        if constexpr (kind == Rounding::ceil) x = std::ceil(x);
        if constexpr (kind == Rounding::round) x = std::nearbyint(x);  // half to even, as ONNX
        if constexpr (kind == Rounding::sqrt) x = std::sqrt(x);
    }
    return {c};
}

/// Element e of `c` read through a broadcast to `out` (right-aligned numpy rules).
inline std::size_t broadcast_source(const ConstantTensor& c, const graph::Shape& out,
                                    const std::vector<std::int64_t>& out_strides, std::int64_t e) {
    const std::size_t offset = out.size() - c.dims.size();
    const auto strides = strides_of(c.dims);
    std::int64_t index = 0;
    for (std::size_t k = offset; k < out.size(); ++k) {
        const auto coord = (e / out_strides[k]) % out[k];
        if (c.dims[k - offset] != 1) index += coord * strides[k - offset];
    }
    return static_cast<std::size_t>(index);
}
inline void push_element(ConstantTensor& to, const ConstantTensor& from, std::size_t k) {
    if (from.is_float())
        to.floats.push_back(from.floats[k]);
    else
        to.ints.push_back(from.ints[k]);
}

inline FoldResult expand(const FoldRequest& request) {
    const ConstantTensor& c = request.need(0);
    const auto target = ints_of(request.need(1));
    for (auto d : target)
        if (d < 0) throw cannot_fold{"is asked for the negative dimension " + std::to_string(d)};
    const std::size_t rank = std::max(c.dims.size(), target.size());
    graph::Shape out(rank);
    for (std::size_t k = 0; k < rank; ++k) {
        const auto x = k + c.dims.size() < rank ? 1 : c.dims[k + c.dims.size() - rank];
        const auto y = k + target.size() < rank ? 1 : target[k + target.size() - rank];
        if (x != y && x != 1 && y != 1)
            throw cannot_fold{"cannot expand " + graph::to_string(c.dims) + " to " + graph::to_string(target)};
        out[k] = x == 1 ? y : x;
    }
    const auto count = checked_numel(out);
    if (!count || *count > request.max_elements) throw cannot_fold{};
    ConstantTensor result;
    result.dtype = c.dtype;
    result.dims = out;
    result.has_data = true;
    const auto out_strides = strides_of(out);
    for (std::int64_t e = 0; e < *count; ++e) push_element(result, c, broadcast_source(c, out, out_strides, e));
    return {result};
}

inline FoldResult tile(const FoldRequest& request) {
    const ConstantTensor& c = request.need(0);
    const auto repeats = ints_of(request.need(1));
    if (repeats.size() != c.dims.size())
        throw cannot_fold{std::to_string(repeats.size()) + " repeats for a rank-" + std::to_string(c.dims.size()) +
                          " input"};
    graph::Shape out(c.dims.size());
    for (std::size_t k = 0; k < out.size(); ++k) {
        if (repeats[k] < 0) throw cannot_fold{"has the negative repeat count " + std::to_string(repeats[k])};
        if (__builtin_mul_overflow(c.dims[k], repeats[k], &out[k])) throw cannot_fold{};
    }
    const auto count = checked_numel(out);
    if (!count || *count > request.max_elements) throw cannot_fold{};
    ConstantTensor result;
    result.dtype = c.dtype;
    result.dims = out;
    result.has_data = true;
    const auto out_strides = strides_of(out), in_strides = strides_of(c.dims);
    for (std::int64_t e = 0; e < *count; ++e) {
        std::int64_t src = 0;
        for (std::size_t k = 0; k < out.size(); ++k) src += ((e / out_strides[k]) % out[k] % c.dims[k]) * in_strides[k];
        push_element(result, c, static_cast<std::size_t>(src));
    }
    return {result};
}

inline FoldResult transpose(const FoldRequest& request) {
    const ConstantTensor& c = request.need(0);
    const auto rank = c.dims.size();
    std::vector<std::int64_t> perm(rank);
    for (std::size_t k = 0; k < rank; ++k) perm[k] = static_cast<std::int64_t>(rank - 1 - k);
    if (auto given = attr_ints(request.node, "perm")) perm = *given;
    std::vector<char> seen(rank, 0);
    if (perm.size() != rank) throw cannot_fold{};
    for (auto p : perm) {
        if (p < 0 || p >= static_cast<std::int64_t>(rank) || seen[static_cast<std::size_t>(p)]) throw cannot_fold{};
        seen[static_cast<std::size_t>(p)] = 1;
    }
    graph::Shape out(rank);
    for (std::size_t k = 0; k < rank; ++k) out[k] = c.dims[static_cast<std::size_t>(perm[k])];
    ConstantTensor result;
    result.dtype = c.dtype;
    result.dims = out;
    result.has_data = true;
    const auto out_strides = strides_of(out), in_strides = strides_of(c.dims);
    for (std::int64_t e = 0; e < c.size(); ++e) {
        std::int64_t src = 0;
        for (std::size_t k = 0; k < rank; ++k)
            src += ((e / out_strides[k]) % out[k]) * in_strides[static_cast<std::size_t>(perm[k])];
        push_element(result, c, static_cast<std::size_t>(src));
    }
    return {result};
}

template <bool negate>
FoldResult sign_op(const FoldRequest& request) {
    ConstantTensor c = request.need(0);
    for (auto& x : c.ints) {
        if (x == std::numeric_limits<std::int64_t>::min()) throw cannot_fold{};
        x = negate ? -x : std::abs(x);
    }
    for (auto& x : c.floats) x = negate ? -x : std::abs(x);
    return {c};
}

inline FoldResult where(const FoldRequest& request) {
    const ConstantTensor& condition = request.need(0);
    const ConstantTensor& x = request.need(1);
    const ConstantTensor& y = request.need(2);
    if (x.is_float() || y.is_float() || condition.is_float()) throw cannot_fold{};
    const auto max_elements = request.max_elements;
    const auto first = [](auto a, auto) { return a; };
    const auto second = [](auto, auto b) { return b; };
    // Broadcast the three operands: first x against y (keeping y), then against the condition.
    const ConstantTensor xy = broadcast(x, y, x.dtype, second, second, max_elements);
    const ConstantTensor full_condition = broadcast(condition, xy, TensorProto::INT64, first, first, max_elements);
    const ConstantTensor full_x = broadcast(x, full_condition, x.dtype, first, first, max_elements);
    const ConstantTensor full_y = broadcast(y, full_condition, y.dtype, first, first, max_elements);
    ConstantTensor result = full_x;
    for (std::size_t k = 0; k < result.ints.size(); ++k)
        if (!full_condition.ints[k]) result.ints[k] = full_y.ints[k];
    return {request.bounded(result)};
}

inline FoldResult constant_of_shape(const FoldRequest& request) {
    const auto dims = ints_of(request.need(0));
    for (auto d : dims)
        if (d < 0) throw cannot_fold{"is asked for the negative dimension " + std::to_string(d)};
    const auto count = checked_numel(dims);
    if (!count || *count > request.max_elements) throw cannot_fold{};
    ConstantTensor result;
    result.dims = dims;
    result.has_data = true;
    ConstantTensor fill;
    fill.dtype = TensorProto::FLOAT;
    fill.has_data = true;
    fill.floats = {0.0};
    if (const auto* a = find_attr(request.node, "value")) {
        fill = read_tensor(a->t(), 1);
        if (!fill.has_data || fill.size() != 1) throw cannot_fold{};
    }
    result.dtype = fill.dtype;
    if (fill.is_float())
        result.floats.assign(static_cast<std::size_t>(result.size()), fill.floats[0]);
    else
        result.ints.assign(static_cast<std::size_t>(result.size()), fill.ints[0]);
    return {result};
}

inline FoldResult range(const FoldRequest& request) {
    const ConstantTensor &start_in = request.need(0), &limit_in = request.need(1), &delta_in = request.need(2);
    if (start_in.size() != 1 || limit_in.size() != 1 || delta_in.size() != 1 || start_in.is_float())
        throw cannot_fold{};
    const auto start = start_in.ints[0], limit = integer_at(limit_in, 0), delta = integer_at(delta_in, 0);
    constexpr std::int64_t big = std::int64_t{1} << 40;  // shape code never comes near this
    if (delta == 0) throw cannot_fold{"has a delta of 0"};
    if (std::abs(start) > big || std::abs(limit) > big || std::abs(delta) > big) throw cannot_fold{};
    const auto count = std::max<std::int64_t>(0, (limit - start + delta + (delta > 0 ? -1 : 1)) / delta);
    if (count > request.max_elements) throw cannot_fold{};
    std::vector<std::int64_t> values;
    for (std::int64_t k = 0; k < count; ++k) values.push_back(start + k * delta);
    return {make_int({count}, values, start_in.dtype)};
}

enum class Reduction { product, sum, max, min };

/// Whole-tensor integer reductions (the only ones shape code uses).
template <Reduction kind>
FoldResult reduce(const FoldRequest& request) {
    const ConstantTensor& c = request.need(0);
    if (c.is_float()) throw cannot_fold{};
    std::vector<std::int64_t> axes;
    // axes became an input: ReduceSum at opset 13, the other reductions at opset 18
    if (request.opset >= (kind == Reduction::sum ? 13 : 18)) {
        if (const ConstantTensor* a = request.optional_input(1)) axes = ints_of(*a);
    } else if (auto a = attr_ints(request.node, "axes")) {
        axes = *a;
    }
    if (axes.empty() && attr_int(request.node, "noop_with_empty_axes", 0)) return {c};
    const auto rank = static_cast<std::int64_t>(c.dims.size());
    // Only whole-tensor or single-axis reductions of a vector occur in shape code.
    if (rank > 1 && !(axes.empty() || (axes.size() == static_cast<std::size_t>(rank)))) throw cannot_fold{};
    std::int64_t accumulator = kind == Reduction::product ? 1
                               : kind == Reduction::sum   ? 0
                                                          : (c.ints.empty() ? 0 : c.ints[0]);
    for (auto x : c.ints) {
        if constexpr (kind == Reduction::product) {
            if (__builtin_mul_overflow(accumulator, x, &accumulator)) throw cannot_fold{};
        } else if constexpr (kind == Reduction::sum) {
            if (__builtin_add_overflow(accumulator, x, &accumulator)) throw cannot_fold{};
        } else if constexpr (kind == Reduction::max) {
            accumulator = std::max(accumulator, x);
        } else {
            accumulator = std::min(accumulator, x);
        }
    }
    const bool keep_dims = attr_int(request.node, "keepdims", 1) != 0;
    return {
        make_int(keep_dims ? graph::Shape(static_cast<std::size_t>(rank), 1) : graph::Shape{}, {accumulator}, c.dtype)};
}

}  // namespace fold_ops
}  // namespace dnncost::io::detail::onnx_impl
