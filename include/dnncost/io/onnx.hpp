#pragma once
/// @file onnx.hpp
/// ONNX import and export for the operator graph (target `dnncost::onnx`; not part of the
/// umbrella header because it pulls in protobuf and libonnx).
///
/// Import runs ONNX shape inference, then folds the shape computations that exporters emit
/// (Shape -> Gather -> Unsqueeze -> Concat -> Reshape and friends) by evaluating them on small
/// integer tensors, feeds the folded values back as initializers and runs inference again, until
/// every compute node has concrete shapes. Folded nodes, Constant nodes and layout operators
/// applied to weights (Identity, Transpose, Reshape, Cast, ... of an initializer) do not appear in
/// the resulting graph: their outputs become weight tensors of the nodes that read them.
///
/// Export writes weights as *typed graph inputs* marked with the doc string `dnncost:weight`:
/// the graph carries shapes but no weight values, and an initializer without data is rejected by
/// `onnx::checker`. The exception are small constants whose values the graph knows
/// (graph::Tensor::data, e.g. NB201's zero of `none`): they are written as initializers with
/// their data, and import keeps the values of such small initializers. The marked inputs are turned back into weights on
/// import, so export followed by import gives back the same graph (operator==).
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

// protobuf's generated headers are not -Wpedantic/-Wextra clean; they are third-party code.
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpedantic"
#pragma GCC diagnostic ignored "-Wextra"
#pragma GCC diagnostic ignored "-Wunused-parameter"
#pragma GCC diagnostic ignored "-Wshadow"
#endif
#include <onnx/checker.h>
#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

#include <dnncost/core/error.hpp>
#include <dnncost/graph/graph.hpp>
#include <dnncost/io/file.hpp>

namespace dnncost::io {

/// How to read an ONNX model.
struct OnnxImportOptions {
    /// Value for a symbolic or unknown leading (batch) dimension of a graph input.
    std::int64_t batch_size = 1;
    /// Explicit shapes for graph inputs by name (override the file; needed when an input has
    /// symbolic dimensions other than the batch).
    std::map<std::string, graph::Shape> input_shapes;
    /// Largest constant (elements) the shape folder evaluates; bigger constants stay opaque.
    std::int64_t max_fold_elements = 1 << 16;
};

/// How to write an ONNX model.
struct OnnxExportOptions {
    /// Opset of the default domain. 13 suits NB201 graphs and opset 13-17 imports; a graph imported
    /// from an older file whose attributes changed meaning since (e.g. BatchNormalization's
    /// `spatial` in opset 7-8) must be written with its own opset (see onnx_opset()).
    int opset = 13;
    std::string producer = "dnncost";
};

/// The doc string that marks a graph input as a weight (see the file comment).
inline constexpr std::string_view onnx_weight_marker = "dnncost:weight";

namespace detail::onnx_impl {

using TensorProto = ::onnx::TensorProto;

/// A small constant the folder can compute with. Integer and boolean tensors keep int64 values,
/// floating tensors keep doubles. `has_data == false` is a weight whose values are unknown (a
/// stripped initializer): its shape is known, its values are not.
struct Const {
    int dtype = TensorProto::INT64;
    graph::Shape dims;
    bool has_data = false;
    std::vector<std::int64_t> i;
    std::vector<double> f;
    bool is_float() const {
        return dtype == TensorProto::FLOAT || dtype == TensorProto::DOUBLE || dtype == TensorProto::FLOAT16 ||
               dtype == TensorProto::BFLOAT16;
    }
    std::int64_t size() const { return graph::numel(dims); }
    double at_f(std::size_t k) const { return is_float() ? f[k] : static_cast<double>(i[k]); }
    std::int64_t at_i(std::size_t k) const;
};

inline bool is_float_type(int dt) {
    return dt == TensorProto::FLOAT || dt == TensorProto::DOUBLE || dt == TensorProto::FLOAT16 ||
           dt == TensorProto::BFLOAT16;
}
inline bool is_int_type(int dt) {
    return dt == TensorProto::INT64 || dt == TensorProto::INT32 || dt == TensorProto::INT16 ||
           dt == TensorProto::INT8 || dt == TensorProto::UINT8 || dt == TensorProto::UINT16 ||
           dt == TensorProto::UINT32 || dt == TensorProto::UINT64 || dt == TensorProto::BOOL;
}

using graph::checked_numel;
/// Far beyond any real tensor; keeps byte counts (elements x 8) well inside int64.
inline constexpr std::int64_t max_plausible_elements = std::int64_t{1} << 50;

template <class T>
bool read_raw(const std::string& raw, std::size_t n, std::vector<T>& out) {
    if (raw.size() != n * sizeof(T)) return false;
    out.resize(n);
    if (n) std::memcpy(out.data(), raw.data(), raw.size());  // ONNX raw data is little-endian
    return true;
}

/// Read the shape and, when small and well-formed, the values of a tensor.
inline Const read_tensor(const TensorProto& t, std::int64_t max_elements) {
    Const c;
    c.dtype = t.data_type();
    for (auto d : t.dims()) {
        if (d < 0) raise<onnx_import_error>("tensor '", t.name(), "' has negative dimension ", d);
        c.dims.push_back(d);
    }
    const auto checked = checked_numel(c.dims);
    if (!checked || *checked > max_plausible_elements)
        raise<onnx_import_error>("tensor '", t.name(), "' has an implausible shape ", graph::to_string(c.dims));
    const std::int64_t n = *checked;
    if (n > max_elements || t.data_location() == TensorProto::EXTERNAL) return c;
    const auto un = static_cast<std::size_t>(n);
    const std::string& raw = t.raw_data();
    const bool has_raw = t.has_raw_data();
    switch (t.data_type()) {
        case TensorProto::FLOAT: {
            std::vector<float> v;
            if (has_raw ? read_raw(raw, un, v) : static_cast<std::size_t>(t.float_data_size()) == un) {
                if (!has_raw) v.assign(t.float_data().begin(), t.float_data().end());
                c.f.assign(v.begin(), v.end());
                c.has_data = true;
            }
            break;
        }
        case TensorProto::DOUBLE: {
            if (has_raw ? read_raw(raw, un, c.f) : static_cast<std::size_t>(t.double_data_size()) == un) {
                if (!has_raw) c.f.assign(t.double_data().begin(), t.double_data().end());
                c.has_data = true;
            }
            break;
        }
        case TensorProto::INT64: {
            if (has_raw ? read_raw(raw, un, c.i) : static_cast<std::size_t>(t.int64_data_size()) == un) {
                if (!has_raw) c.i.assign(t.int64_data().begin(), t.int64_data().end());
                c.has_data = true;
            }
            break;
        }
        case TensorProto::INT32: {
            std::vector<std::int32_t> v;
            if (has_raw ? read_raw(raw, un, v) : static_cast<std::size_t>(t.int32_data_size()) == un) {
                if (!has_raw) v.assign(t.int32_data().begin(), t.int32_data().end());
                c.i.assign(v.begin(), v.end());
                c.has_data = true;
            }
            break;
        }
        case TensorProto::BOOL:
        case TensorProto::UINT8:
        case TensorProto::INT8: {
            if (has_raw) {
                if (raw.size() == un) {
                    for (char ch : raw)
                        c.i.push_back(t.data_type() == TensorProto::INT8 ? static_cast<std::int64_t>(static_cast<signed char>(ch))
                                                                         : static_cast<std::int64_t>(static_cast<unsigned char>(ch)));
                    c.has_data = true;
                }
            } else if (static_cast<std::size_t>(t.int32_data_size()) == un) {
                c.i.assign(t.int32_data().begin(), t.int32_data().end());
                c.has_data = true;
            }
            break;
        }
        default: break;
    }
    if (!c.has_data) {
        c.i.clear();
        c.f.clear();
    }
    return c;
}

/// Small constants whose values the graph keeps (graph::Tensor::data): enough for analyses such
/// as a multiplication by zero (graph/analysis.hpp), in the element types that read back exactly.
inline constexpr std::int64_t max_kept_constant_elements = 64;
inline bool keeps_data_type(int dt) {
    return dt == TensorProto::FLOAT || dt == TensorProto::DOUBLE || dt == TensorProto::INT64 ||
           dt == TensorProto::INT32 || dt == TensorProto::BOOL || dt == TensorProto::UINT8 || dt == TensorProto::INT8;
}
inline bool keeps_data(const Const& c) {
    return c.has_data && keeps_data_type(c.dtype) && c.size() <= max_kept_constant_elements;
}

inline void write_tensor(const Const& c, const std::string& name, TensorProto& t) {
    t.set_name(name);
    t.set_data_type(c.dtype);
    for (auto d : c.dims) t.add_dims(d);
    if (!c.has_data) return;
    const auto n = static_cast<std::size_t>(c.size());
    switch (c.dtype) {
        case TensorProto::FLOAT:
            for (std::size_t k = 0; k < n; ++k) t.add_float_data(static_cast<float>(c.f[k]));
            break;
        case TensorProto::DOUBLE:
            for (std::size_t k = 0; k < n; ++k) t.add_double_data(c.f[k]);
            break;
        case TensorProto::INT64:
            for (std::size_t k = 0; k < n; ++k) t.add_int64_data(c.i[k]);
            break;
        default:
            for (std::size_t k = 0; k < n; ++k) t.add_int32_data(static_cast<std::int32_t>(c.i[k]));
            break;
    }
}

/// Float attributes are float32 in ONNX; widen them through their shortest decimal form so that
/// 0.9f comes back as the double 0.9 (and an export/import round trip is exact).
inline double widen(float x) {
    if (!std::isfinite(x)) return static_cast<double>(x);
    char buf[64];
    auto r = std::to_chars(buf, buf + sizeof buf, x);
    double d = 0.0;
    std::from_chars(buf, r.ptr, d);
    return d;
}

// ------------------------------------------------------------------ the shape folder
/// Thrown inside the folder when a node cannot be evaluated; it is then left in the graph.
struct cannot_fold {};

/// A float value as an integer, truncated like a C++ cast; NaN or beyond the int64 range would
/// be undefined behaviour and is no shape code: the node is left unfolded.
inline std::int64_t to_int_or_unfold(double x) {
    if (!(x > -9.2e18 && x < 9.2e18)) throw cannot_fold{};
    return static_cast<std::int64_t>(x);
}

inline std::int64_t Const::at_i(std::size_t k) const { return is_float() ? to_int_or_unfold(f[k]) : i[k]; }

inline std::int64_t norm_axis(std::int64_t axis, std::int64_t rank) {
    if (axis < -rank || axis >= std::max<std::int64_t>(rank, 1)) throw cannot_fold{};
    return axis < 0 ? axis + rank : axis;
}

inline Const make_int(graph::Shape dims, std::vector<std::int64_t> v, int dtype = TensorProto::INT64) {
    Const c;
    c.dtype = dtype;
    c.dims = std::move(dims);
    c.i = std::move(v);
    c.has_data = true;
    return c;
}

inline std::vector<std::int64_t> strides_of(const graph::Shape& s) {
    std::vector<std::int64_t> st(s.size(), 1);
    for (std::size_t k = s.size(); k-- > 1;) st[k - 1] = st[k] * s[k];
    return st;
}

/// Elementwise binary operation with numpy broadcasting.
template <class FI, class FF>
Const broadcast(const Const& a, const Const& b, int out_dtype, FI fi, FF ff, std::int64_t max_elements) {
    const std::size_t rank = std::max(a.dims.size(), b.dims.size());
    graph::Shape out(rank);
    auto dim = [&](const Const& c, std::size_t k) -> std::int64_t {
        const std::size_t off = rank - c.dims.size();
        return k < off ? 1 : c.dims[k - off];
    };
    for (std::size_t k = 0; k < rank; ++k) {
        const auto x = dim(a, k), y = dim(b, k);
        if (x != y && x != 1 && y != 1) throw cannot_fold{};
        out[k] = x == 1 ? y : x;
    }
    const auto count = checked_numel(out);
    if (!count || *count > max_elements) throw cannot_fold{};  // bounded before it is computed
    Const r;
    r.dtype = out_dtype;
    r.dims = out;
    r.has_data = true;
    const auto n = *count;
    const auto so = strides_of(out);
    auto index_in = [&](const Const& c, std::int64_t flat) {
        const std::size_t off = rank - c.dims.size();
        const auto sc = strides_of(c.dims);
        std::int64_t idx = 0;
        for (std::size_t k = 0; k < rank; ++k) {
            const auto coord = (flat / so[k]) % out[k];
            if (k >= off && c.dims[k - off] != 1) idx += coord * sc[k - off];
        }
        return static_cast<std::size_t>(idx);
    };
    const bool flt = is_float_type(out_dtype);
    for (std::int64_t e = 0; e < n; ++e) {
        const auto ia = index_in(a, e), ib = index_in(b, e);
        if (flt)
            r.f.push_back(ff(a.at_f(ia), b.at_f(ib)));
        else
            r.i.push_back(fi(a.at_i(ia), b.at_i(ib)));
    }
    return r;
}

/// Gather along `axis` with integer indices.
inline Const gather(const Const& data, const Const& idx, std::int64_t axis, std::int64_t max_elements) {
    const auto rank = static_cast<std::int64_t>(data.dims.size());
    if (rank == 0) throw cannot_fold{};
    axis = norm_axis(axis, rank);
    graph::Shape out;
    for (std::int64_t k = 0; k < axis; ++k) out.push_back(data.dims[static_cast<std::size_t>(k)]);
    for (auto d : idx.dims) out.push_back(d);
    for (std::int64_t k = axis + 1; k < rank; ++k) out.push_back(data.dims[static_cast<std::size_t>(k)]);
    std::int64_t outer = 1, inner = 1;
    for (std::int64_t k = 0; k < axis; ++k) outer *= data.dims[static_cast<std::size_t>(k)];
    for (std::int64_t k = axis + 1; k < rank; ++k) inner *= data.dims[static_cast<std::size_t>(k)];
    const auto len = data.dims[static_cast<std::size_t>(axis)];
    {
        const auto count = checked_numel(out);
        if (!count || *count > max_elements) throw cannot_fold{};  // bounded before it is computed
    }
    Const r;
    r.dtype = data.dtype;
    r.dims = out;
    r.has_data = true;
    for (std::int64_t o = 0; o < outer; ++o)
        for (std::int64_t q = 0; q < idx.size(); ++q) {
            auto j = idx.at_i(static_cast<std::size_t>(q));
            if (j < 0) j += len;
            if (j < 0 || j >= len) throw cannot_fold{};
            for (std::int64_t in = 0; in < inner; ++in) {
                const auto src = static_cast<std::size_t>((o * len + j) * inner + in);
                if (data.is_float())
                    r.f.push_back(data.f[src]);
                else
                    r.i.push_back(data.i[src]);
            }
        }
    return r;
}

/// Slice with per-axis starts/ends/steps (ONNX clamping rules).
inline Const slice(const Const& data, std::vector<std::int64_t> starts, std::vector<std::int64_t> ends,
                   std::vector<std::int64_t> axes, std::vector<std::int64_t> steps) {
    const auto rank = static_cast<std::int64_t>(data.dims.size());
    if (rank == 0) throw cannot_fold{};  // a scalar has no axis to slice
    if (axes.empty())
        for (std::size_t k = 0; k < starts.size(); ++k) axes.push_back(static_cast<std::int64_t>(k));
    if (steps.empty()) steps.assign(starts.size(), 1);
    if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
        throw cannot_fold{};
    std::vector<std::int64_t> lo(static_cast<std::size_t>(rank), 0), st(static_cast<std::size_t>(rank), 1);
    graph::Shape out = data.dims;
    for (std::size_t k = 0; k < starts.size(); ++k) {
        const auto ax = static_cast<std::size_t>(norm_axis(axes[k], rank));
        const auto len = data.dims[ax];
        const auto step = steps[k];
        if (step == 0 || step == std::numeric_limits<std::int64_t>::min()) throw cannot_fold{};
        auto clampi = [](std::int64_t v, std::int64_t a, std::int64_t b) { return std::min(std::max(v, a), b); };
        auto s = starts[k], e = ends[k];
        if (s < 0) s = s < -len ? -1 - len : s + len;  // far negative: clamped below
        if (e < 0) e = e < -len ? -1 - len : e + len;
        if (s < 0 && step > 0) s = 0;
        if (step > 0) {
            s = clampi(s, 0, len);
            e = clampi(e, 0, len);
            out[ax] = e > s ? 1 + (e - s - 1) / step : 0;
        } else {
            s = clampi(s, 0, len - 1);
            e = clampi(e, -1, len - 1);
            out[ax] = s > e ? 1 + (s - e - 1) / (-step) : 0;
        }
        lo[ax] = s;
        st[ax] = step;
    }
    Const r;
    r.dtype = data.dtype;
    r.dims = out;
    r.has_data = true;
    const auto n = graph::numel(out);
    const auto so = strides_of(out), sd = strides_of(data.dims);
    for (std::int64_t e = 0; e < n; ++e) {
        std::int64_t src = 0;
        for (std::size_t k = 0; k < out.size(); ++k) src += (lo[k] + ((e / so[k]) % out[k]) * st[k]) * sd[k];
        if (data.is_float())
            r.f.push_back(data.f[static_cast<std::size_t>(src)]);
        else
            r.i.push_back(data.i[static_cast<std::size_t>(src)]);
    }
    return r;
}

inline std::vector<std::int64_t> ints_of(const Const& c) {
    std::vector<std::int64_t> v;
    for (std::int64_t k = 0; k < c.size(); ++k) v.push_back(c.at_i(static_cast<std::size_t>(k)));
    return v;
}

inline const ::onnx::AttributeProto* find_attr(const ::onnx::NodeProto& n, std::string_view name) {
    for (const auto& a : n.attribute())
        if (a.name() == name) return &a;
    return nullptr;
}
inline std::int64_t attr_i(const ::onnx::NodeProto& n, std::string_view name, std::int64_t fallback) {
    const auto* a = find_attr(n, name);
    return a ? a->i() : fallback;
}
inline std::optional<std::vector<std::int64_t>> attr_ints(const ::onnx::NodeProto& n, std::string_view name) {
    const auto* a = find_attr(n, name);
    if (!a) return std::nullopt;
    return std::vector<std::int64_t>(a->ints().begin(), a->ints().end());
}

/// Evaluate one node on constant inputs. `in[k]` is null when input k is unknown or omitted;
/// `shape_of_input0` is the (fully known) shape of input 0 for Shape/Size. Returns the outputs or
/// throws cannot_fold.
inline std::vector<Const> evaluate(const ::onnx::NodeProto& n, int opset, const std::vector<const Const*>& in,
                                   const std::optional<graph::Shape>& shape_of_input0, std::int64_t max_elements) {
    const std::string& op = n.op_type();
    auto need = [&](std::size_t k) -> const Const& {
        if (k >= in.size() || !in[k] || !in[k]->has_data) throw cannot_fold{};
        return *in[k];
    };
    auto opt = [&](std::size_t k) -> const Const* {
        if (k >= in.size() || !in[k]) return nullptr;
        if (!in[k]->has_data) throw cannot_fold{};
        return in[k];
    };
    auto check = [&](Const c) {
        if (c.size() > max_elements) throw cannot_fold{};
        return c;
    };
    if (op == "Shape" || op == "Size") {
        if (!shape_of_input0) throw cannot_fold{};
        const auto& s = *shape_of_input0;
        if (op == "Size") {
            const auto n = checked_numel(s);
            if (!n) throw cannot_fold{};
            return {make_int({}, {*n})};
        }
        const auto rank = static_cast<std::int64_t>(s.size());
        auto start = attr_i(n, "start", 0), end = attr_i(n, "end", rank);
        if (start < 0) start += rank;
        if (end < 0) end += rank;
        start = std::clamp<std::int64_t>(start, 0, rank);
        end = std::clamp<std::int64_t>(end, 0, rank);
        std::vector<std::int64_t> v;
        for (auto k = start; k < end; ++k) v.push_back(s[static_cast<std::size_t>(k)]);
        return {make_int({static_cast<std::int64_t>(v.size())}, v)};
    }
    if (op == "Constant") {
        if (const auto* a = find_attr(n, "value")) {
            auto c = read_tensor(a->t(), max_elements);
            if (!c.has_data) throw cannot_fold{};
            return {c};
        }
        if (const auto* a = find_attr(n, "value_int")) return {make_int({}, {a->i()})};
        if (const auto* a = find_attr(n, "value_ints"))
            return {make_int({a->ints_size()}, {a->ints().begin(), a->ints().end()})};
        Const c;
        c.dtype = TensorProto::FLOAT;
        c.has_data = true;
        if (const auto* a = find_attr(n, "value_float")) {
            c.f = {widen(a->f())};
            return {c};
        }
        if (const auto* a = find_attr(n, "value_floats")) {
            c.dims = {a->floats_size()};
            for (float x : a->floats()) c.f.push_back(widen(x));
            return {c};
        }
        throw cannot_fold{};
    }
    if (op == "Identity") return {need(0)};
    if (op == "Cast") {
        Const c = need(0);
        const int to = static_cast<int>(attr_i(n, "to", TensorProto::INT64));
        if (is_float_type(to) && !c.is_float()) {
            c.f.assign(c.i.begin(), c.i.end());
            c.i.clear();
        } else if (is_int_type(to) && c.is_float()) {
            for (double x : c.f) c.i.push_back(to_int_or_unfold(x));
            c.f.clear();
        } else if (!is_float_type(to) && !is_int_type(to)) {
            throw cannot_fold{};
        }
        if (to == TensorProto::BOOL)
            for (auto& x : c.i) x = x != 0;
        c.dtype = to;
        return {c};
    }
    if (op == "Gather") return {check(gather(need(0), need(1), attr_i(n, "axis", 0), max_elements))};
    if (op == "Unsqueeze" || op == "Squeeze") {
        Const c = need(0);
        std::vector<std::int64_t> axes;
        if (opset >= 13) {
            if (const Const* a = opt(1)) axes = ints_of(*a);
        } else if (auto a = attr_ints(n, "axes")) {
            axes = *a;
        }
        if (op == "Unsqueeze") {
            const auto rank = static_cast<std::int64_t>(c.dims.size() + axes.size());
            for (auto& a : axes) a = norm_axis(a, rank);
            std::sort(axes.begin(), axes.end());
            for (auto a : axes) {
                if (a > static_cast<std::int64_t>(c.dims.size())) throw cannot_fold{};
                c.dims.insert(c.dims.begin() + a, 1);
            }
        } else {
            const auto rank = static_cast<std::int64_t>(c.dims.size());
            graph::Shape out;
            for (std::int64_t k = 0; k < rank; ++k) {
                const bool listed = axes.empty() ? c.dims[static_cast<std::size_t>(k)] == 1
                                                 : std::any_of(axes.begin(), axes.end(), [&](std::int64_t a) {
                                                       return norm_axis(a, rank) == k;
                                                   });
                if (listed && c.dims[static_cast<std::size_t>(k)] != 1) throw cannot_fold{};
                if (!listed) out.push_back(c.dims[static_cast<std::size_t>(k)]);
            }
            c.dims = out;
        }
        return {c};
    }
    if (op == "Reshape" || op == "Flatten") {
        Const c = need(0);
        graph::Shape target;
        if (op == "Flatten") {
            const auto rank = static_cast<std::int64_t>(c.dims.size());
            auto axis = attr_i(n, "axis", 1);
            if (axis < 0) axis += rank;
            std::int64_t a = 1;
            for (std::int64_t k = 0; k < axis && k < rank; ++k) a *= c.dims[static_cast<std::size_t>(k)];
            target = {a, c.size() / std::max<std::int64_t>(a, 1)};
        } else {
            target = ints_of(need(1));
            std::int64_t known = 1;
            int infer = -1;
            for (std::size_t k = 0; k < target.size(); ++k) {
                if (target[k] == 0 && !attr_i(n, "allowzero", 0)) {
                    if (k >= c.dims.size()) throw cannot_fold{};
                    target[k] = c.dims[k];
                }
                if (target[k] == -1) {
                    if (infer >= 0) throw cannot_fold{};
                    infer = static_cast<int>(k);
                } else if (target[k] < 0 || __builtin_mul_overflow(known, target[k], &known)) {
                    throw cannot_fold{};
                }
            }
            if (infer >= 0) {
                if (known == 0) throw cannot_fold{};
                target[static_cast<std::size_t>(infer)] = c.size() / known;
            }
        }
        if (checked_numel(target) != std::optional<std::int64_t>(c.size())) throw cannot_fold{};
        c.dims = target;
        return {c};
    }
    if (op == "Concat") {
        std::vector<const Const*> parts;
        for (std::size_t k = 0; k < in.size(); ++k) parts.push_back(&need(k));
        if (parts.empty()) throw cannot_fold{};
        const auto rank = static_cast<std::int64_t>(parts[0]->dims.size());
        if (rank == 0) throw cannot_fold{};  // scalars cannot be concatenated
        const auto axis = static_cast<std::size_t>(norm_axis(attr_i(n, "axis", 0), rank));
        Const r;
        r.dtype = parts[0]->dtype;
        r.dims = parts[0]->dims;
        r.dims[axis] = 0;
        r.has_data = true;
        for (const auto* p : parts) {
            if (static_cast<std::int64_t>(p->dims.size()) != rank || p->is_float() != r.is_float()) throw cannot_fold{};
            for (std::size_t k = 0; k < p->dims.size(); ++k)
                if (k != axis && p->dims[k] != r.dims[k]) throw cannot_fold{};
            r.dims[axis] += p->dims[axis];
            if (r.dims[axis] > max_elements) throw cannot_fold{};
        }
        if (r.size() > max_elements) throw cannot_fold{};
        std::int64_t outer = 1;
        for (std::size_t k = 0; k < axis; ++k) outer *= r.dims[k];
        for (std::int64_t o = 0; o < outer; ++o)
            for (const auto* p : parts) {
                const auto chunk = p->size() / std::max<std::int64_t>(outer, 1);
                for (std::int64_t q = 0; q < chunk; ++q) {
                    const auto src = static_cast<std::size_t>(o * chunk + q);
                    if (r.is_float())
                        r.f.push_back(p->f[src]);
                    else
                        r.i.push_back(p->i[src]);
                }
            }
        return {check(r)};
    }
    if (op == "Slice") {
        const Const& data = need(0);
        if (opset < 10) {
            auto starts = attr_ints(n, "starts"), ends = attr_ints(n, "ends");
            if (!starts || !ends) throw cannot_fold{};
            return {slice(data, *starts, *ends, attr_ints(n, "axes").value_or(std::vector<std::int64_t>{}), {})};
        }
        const Const* axes = opt(3);
        const Const* steps = opt(4);
        return {slice(data, ints_of(need(1)), ints_of(need(2)), axes ? ints_of(*axes) : std::vector<std::int64_t>{},
                      steps ? ints_of(*steps) : std::vector<std::int64_t>{})};
    }
    if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div" || op == "Min" || op == "Max" || op == "Mod" ||
        op == "Equal" || op == "Less" || op == "Greater") {
        const Const& a = need(0);
        if (in.size() != 2) throw cannot_fold{};
        const Const& b = need(1);
        const bool cmp = op == "Equal" || op == "Less" || op == "Greater";
        const int dt = cmp ? static_cast<int>(TensorProto::BOOL) : a.dtype;
        auto fi = [&](std::int64_t x, std::int64_t y) -> std::int64_t {
            std::int64_t r = 0;
            if (op == "Add") {
                if (__builtin_add_overflow(x, y, &r)) throw cannot_fold{};
                return r;
            }
            if (op == "Sub") {
                if (__builtin_sub_overflow(x, y, &r)) throw cannot_fold{};
                return r;
            }
            if (op == "Mul") {
                if (__builtin_mul_overflow(x, y, &r)) throw cannot_fold{};
                return r;
            }
            if (op == "Div" || op == "Mod") {
                if (y == 0 || (y == -1 && x == std::numeric_limits<std::int64_t>::min())) throw cannot_fold{};
                return op == "Div" ? x / y : x % y;
            }
            if (op == "Min") return std::min(x, y);
            if (op == "Max") return std::max(x, y);
            if (op == "Equal") return x == y;
            if (op == "Less") return x < y;
            return x > y;
        };
        auto ff = [&](double x, double y) -> double {
            if (op == "Add") return x + y;
            if (op == "Sub") return x - y;
            if (op == "Mul") return x * y;
            if (op == "Div") return x / y;
            if (op == "Mod") return std::fmod(x, y);
            if (op == "Min") return std::min(x, y);
            if (op == "Max") return std::max(x, y);
            throw cannot_fold{};
        };
        if (cmp && (a.is_float() || b.is_float())) throw cannot_fold{};
        return {check(broadcast(a, b, dt, fi, ff, max_elements))};
    }
    if (op == "Neg" || op == "Abs") {
        Const c = need(0);
        for (auto& x : c.i) {
            if (x == std::numeric_limits<std::int64_t>::min()) throw cannot_fold{};
            x = op == "Neg" ? -x : std::abs(x);
        }
        for (auto& x : c.f) x = op == "Neg" ? -x : std::abs(x);
        return {c};
    }
    if (op == "Where") {
        const Const& cond = need(0);
        const Const& x = need(1);
        const Const& y = need(2);
        if (x.is_float() || y.is_float() || cond.is_float()) throw cannot_fold{};
        // Broadcast the three operands: first x against y (keeping y), then against cond.
        const Const xy = broadcast(x, y, x.dtype, [](std::int64_t, std::int64_t b) { return b; },
                                   [](double, double b) { return b; }, max_elements);
        const Const full_c = broadcast(cond, xy, TensorProto::INT64, [](std::int64_t c, std::int64_t) { return c; },
                                       [](double c, double) { return c; }, max_elements);
        const Const full_x = broadcast(x, full_c, x.dtype, [](std::int64_t a, std::int64_t) { return a; },
                                       [](double a, double) { return a; }, max_elements);
        const Const full_y = broadcast(y, full_c, y.dtype, [](std::int64_t a, std::int64_t) { return a; },
                                       [](double a, double) { return a; }, max_elements);
        Const r = full_x;
        for (std::size_t k = 0; k < r.i.size(); ++k)
            if (!full_c.i[k]) r.i[k] = full_y.i[k];
        return {check(r)};
    }
    if (op == "ConstantOfShape") {
        const auto shape = ints_of(need(0));
        for (auto d : shape)
            if (d < 0) throw cannot_fold{};
        const auto count = checked_numel(shape);
        if (!count || *count > max_elements) throw cannot_fold{};
        Const r;
        r.dims = shape;
        r.has_data = true;
        Const fill = make_int({}, {0}, TensorProto::FLOAT);
        fill.f = {0.0};
        fill.i.clear();
        if (const auto* a = find_attr(n, "value")) {
            fill = read_tensor(a->t(), 1);
            if (!fill.has_data || fill.size() != 1) throw cannot_fold{};
        }
        r.dtype = fill.dtype;
        if (fill.is_float())
            r.f.assign(static_cast<std::size_t>(r.size()), fill.f[0]);
        else
            r.i.assign(static_cast<std::size_t>(r.size()), fill.i[0]);
        return {r};
    }
    if (op == "Range") {
        const Const &s = need(0), &l = need(1), &d = need(2);
        if (s.size() != 1 || l.size() != 1 || d.size() != 1 || s.is_float()) throw cannot_fold{};
        const auto start = s.i[0], limit = l.at_i(0), delta = d.at_i(0);
        constexpr std::int64_t big = std::int64_t{1} << 40;  // shape code never comes near this
        if (delta == 0 || std::abs(start) > big || std::abs(limit) > big || std::abs(delta) > big) throw cannot_fold{};
        const auto count = std::max<std::int64_t>(0, (limit - start + delta + (delta > 0 ? -1 : 1)) / delta);
        if (count > max_elements) throw cannot_fold{};
        std::vector<std::int64_t> v;
        for (std::int64_t k = 0; k < count; ++k) v.push_back(start + k * delta);
        return {make_int({count}, v, s.dtype)};
    }
    if (op == "ReduceProd" || op == "ReduceSum" || op == "ReduceMax" || op == "ReduceMin") {
        const Const& c = need(0);
        if (c.is_float()) throw cannot_fold{};
        std::vector<std::int64_t> axes;
        if (op == "ReduceSum" && opset >= 13) {
            if (const Const* a = opt(1)) axes = ints_of(*a);
        } else if (auto a = attr_ints(n, "axes")) {
            axes = *a;
        }
        const auto rank = static_cast<std::int64_t>(c.dims.size());
        // Only whole-tensor or single-axis reductions of a vector occur in shape code.
        if (rank > 1 && !(axes.empty() || (axes.size() == static_cast<std::size_t>(rank)))) throw cannot_fold{};
        std::int64_t acc = op == "ReduceProd" ? 1 : op == "ReduceSum" ? 0 : (c.i.empty() ? 0 : c.i[0]);
        for (auto x : c.i) {
            if (op == "ReduceProd") {
                if (__builtin_mul_overflow(acc, x, &acc)) throw cannot_fold{};
            } else if (op == "ReduceSum") {
                if (__builtin_add_overflow(acc, x, &acc)) throw cannot_fold{};
            }
            else if (op == "ReduceMax") acc = std::max(acc, x);
            else acc = std::min(acc, x);
        }
        const bool keep = attr_i(n, "keepdims", 1) != 0;
        return {make_int(keep ? graph::Shape(static_cast<std::size_t>(rank), 1) : graph::Shape{}, {acc}, c.dtype)};
    }
    throw cannot_fold{};
}

/// Operators that only re-lay-out or relabel their first input: applied to a weight without
/// data, the result is still a weight (shape from inference, no data).
inline bool is_weight_layout_op(const std::string& op) {
    return op == "Identity" || op == "Transpose" || op == "Reshape" || op == "Flatten" || op == "Squeeze" ||
           op == "Unsqueeze" || op == "Cast" || op == "Dropout";
}

// ------------------------------------------------------------------ importer
class Importer {
public:
    Importer(std::string source, const OnnxImportOptions& opt) : m_src(std::move(source)), m_opt(opt) {}

    graph::Graph run(const std::string& bytes) {
        parse(bytes);
        check_opset();
        sort_nodes();
        check_nodes();
        collect_constants();
        fix_input_shapes();
        fold_loop();
        return build();
    }

    int opset() const { return m_opset; }

    void parse(const std::string& bytes) {
        if (bytes.empty()) fail("empty file (not an ONNX model)");
        if (bytes.size() > static_cast<std::size_t>(std::numeric_limits<int>::max()))
            fail("file too large for protobuf (", bytes.size(), " bytes)");
        if (!m_model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
            fail("not a valid ONNX model (protobuf parse failed; truncated or not an ONNX file)");
        if (!m_model.has_graph() || m_model.graph().node_size() == 0)
            fail("not a valid ONNX model (no graph or no nodes)");
        if (m_model.ir_version() <= 0) fail("not a valid ONNX model (missing ir_version)");
    }

private:
    template <class... A>
    [[noreturn]] void fail(A&&... a) const {
        raise<onnx_import_error>("ONNX import of '", m_src, "': ", std::forward<A>(a)...);
    }
    template <class... A>
    [[noreturn]] void fail_node(const ::onnx::NodeProto& n, A&&... a) const {
        raise<onnx_import_error>("ONNX import of '", m_src, "': node '", n.name(), "' (", n.op_type(), "): ",
                                 std::forward<A>(a)...);
    }

    void check_opset() {
        m_opset = -1;
        for (const auto& o : m_model.opset_import())
            if (o.domain().empty() || o.domain() == "ai.onnx") m_opset = static_cast<int>(o.version());
        if (m_opset < 0) {
            if (m_model.opset_import_size() == 0) m_opset = 1;  // IR 1-2 files: opset 1 implied
            else fail("no opset for the default ONNX domain");
        }
        const int newest = ::onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map().at(::onnx::ONNX_DOMAIN).second;
        if (m_opset < 1 || m_opset > newest)
            fail("opset ", m_opset, " is not supported (this libonnx knows opsets 1 to ", newest, ")");
    }

    /// Reorder the node list topologically (ONNX requires it, not every writer obeys) and reject
    /// cycles and reads of undefined values.
    void sort_nodes() {
        auto& g = *m_model.mutable_graph();
        const int n = g.node_size();
        std::unordered_map<std::string, int> producer;
        for (int v = 0; v < n; ++v)
            for (const auto& o : g.node(v).output())
                if (!o.empty()) {
                    if (!producer.emplace(o, v).second)
                        fail_node(g.node(v), "value '", o, "' is written by more than one node");
                }
        std::unordered_set<std::string> defined;
        for (const auto& i : g.input()) defined.insert(i.name());
        for (const auto& i : g.initializer()) defined.insert(i.name());
        std::vector<std::vector<int>> succ(static_cast<std::size_t>(n));
        std::vector<int> indeg(static_cast<std::size_t>(n), 0);
        for (int v = 0; v < n; ++v) {
            const auto& nd = g.node(v);
            for (const auto& i : nd.input()) {
                if (i.empty()) continue;
                auto it = producer.find(i);
                if (it != producer.end()) {
                    succ[static_cast<std::size_t>(it->second)].push_back(v);
                    ++indeg[static_cast<std::size_t>(v)];
                } else if (!defined.count(i) && !has_subgraph(nd)) {
                    fail_node(nd, "reads value '", i, "' that is neither a graph input, an initializer nor a node output");
                }
            }
        }
        std::vector<int> order, ready;
        for (int v = n - 1; v >= 0; --v)
            if (indeg[static_cast<std::size_t>(v)] == 0) ready.push_back(v);
        while (!ready.empty()) {
            const int v = ready.back();
            ready.pop_back();
            order.push_back(v);
            std::vector<int> newly;
            for (int s : succ[static_cast<std::size_t>(v)])
                if (--indeg[static_cast<std::size_t>(s)] == 0) newly.push_back(s);
            ready.insert(ready.end(), newly.begin(), newly.end());
            std::sort(ready.begin(), ready.end(), std::greater<>());
        }
        if (static_cast<int>(order.size()) != n) {
            for (int v = 0; v < n; ++v)
                if (indeg[static_cast<std::size_t>(v)] > 0) fail_node(g.node(v), "the graph has a cycle through this node");
        }
        bool sorted = true;
        for (int v = 0; v < n; ++v) sorted = sorted && order[static_cast<std::size_t>(v)] == v;
        if (!sorted) {
            google::protobuf::RepeatedPtrField<::onnx::NodeProto> nodes;
            for (int v : order) *nodes.Add() = g.node(v);
            g.mutable_node()->Swap(&nodes);
        }
    }
    /// ONNX's own checks of each node against its schema (attribute types, input and output
    /// counts), so that malformed nodes are rejected before shape inference reads them.
    void check_nodes() {
        ::onnx::checker::CheckerContext ctx;
        ctx.set_ir_version(static_cast<int>(std::max<std::int64_t>(m_model.ir_version(), 4)));
        std::unordered_map<std::string, int> opsets;
        for (const auto& o : m_model.opset_import()) opsets[o.domain()] = static_cast<int>(o.version());
        opsets[""] = m_opset;
        ctx.set_opset_imports(opsets);
        ::onnx::checker::LexicalScopeContext scope;
        for (const auto& nd : m_model.graph().node()) {
            // libonnx's conv/pool shape inference divides by these without checking (SIGFPE).
            for (const auto& a : nd.attribute())
                if (a.name() == "strides" || a.name() == "dilations" || a.name() == "kernel_shape")
                    for (auto v : a.ints())
                        if (v <= 0) fail_node(nd, "attribute '", a.name(), "' has non-positive value ", v);
            if (!::onnx::OpSchemaRegistry::Schema(nd.op_type(), m_opset, nd.domain())) continue;
            try {
                ::onnx::checker::check_node(nd, ctx, scope);
            } catch (const std::exception& e) {
                fail_node(nd, "invalid node: ", e.what());
            }
        }
    }
    static bool has_subgraph(const ::onnx::NodeProto& n) {
        for (const auto& a : n.attribute())
            if (a.has_g() || a.graphs_size() > 0) return true;
        return false;
    }

    void collect_constants() {
        auto& g = *m_model.mutable_graph();
        for (const auto& nd : g.node())
            for (const auto& i : nd.input()) m_consumed.insert(i);
        for (const auto& t : g.initializer()) {
            if (t.name().empty()) fail("an initializer has no name");
            m_const[t.name()] = read_tensor(t, m_opt.max_fold_elements);
        }
        std::unordered_set<std::string> marked;
        for (const auto& i : g.input())
            if (i.doc_string() == onnx_weight_marker) marked.insert(i.name());
        // Graph inputs that are initializers (IR < 4) or carry dnncost's weight marker are weights.
        for (const auto& i : g.input()) {
            if (m_const.count(i.name())) continue;
            if (marked.count(i.name())) {
                Const c;
                c.dtype = i.type().tensor_type().elem_type();
                for (const auto& d : i.type().tensor_type().shape().dim()) {
                    if (!d.has_dim_value() || d.dim_value() < 0)
                        fail("weight input '", i.name(), "' has an unknown dimension");
                    c.dims.push_back(d.dim_value());
                }
                const auto count = checked_numel(c.dims);
                if (!count || *count > max_plausible_elements)
                    fail("weight input '", i.name(), "' has an implausible shape ", graph::to_string(c.dims));
                m_const[i.name()] = c;
                m_weight_inputs.insert(i.name());
                continue;
            }
            m_inputs.push_back(i.name());
        }
        // Shape inference needs IR >= 4 to see initializers that are not graph inputs; the folded
        // values added below are such initializers.
        if (m_model.ir_version() < 4) m_model.set_ir_version(4);
        // Marked weight inputs become initializers (typed, without data) for inference.
        if (!m_weight_inputs.empty()) {
            google::protobuf::RepeatedPtrField<::onnx::ValueInfoProto> keep;
            for (const auto& i : g.input())
                if (!m_weight_inputs.count(i.name())) *keep.Add() = i;
            for (const auto& name : m_weight_inputs) write_tensor(m_const[name], name, *g.add_initializer());
            g.mutable_input()->Swap(&keep);
        }
        // Remove initializers from the graph inputs so that shape inference treats them uniformly.
        google::protobuf::RepeatedPtrField<::onnx::ValueInfoProto> real;
        for (const auto& i : g.input())
            if (!m_const.count(i.name())) *real.Add() = i;
        g.mutable_input()->Swap(&real);
    }

    void fix_input_shapes() {
        auto& g = *m_model.mutable_graph();
        bool changed = false;
        if (m_opt.batch_size < 1) fail("OnnxImportOptions::batch_size must be at least 1, got ", m_opt.batch_size);
        for (const auto& [name, shape] : m_opt.input_shapes) {  // a misspelt name would be silently ignored
            const bool known = std::any_of(g.input().begin(), g.input().end(), [&](const auto& i) { return i.name() == name; });
            if (!known) fail("OnnxImportOptions::input_shapes names '", name, "', which is not a graph input");
            for (auto d : shape)
                if (d < 0) fail("OnnxImportOptions::input_shapes gives '", name, "' the negative dimension ", d);
        }
        for (auto& i : *g.mutable_input()) {
            if (!i.type().has_tensor_type()) fail("graph input '", i.name(), "' is not a tensor");
            auto* tt = i.mutable_type()->mutable_tensor_type();
            auto it = m_opt.input_shapes.find(i.name());
            if (it != m_opt.input_shapes.end()) {
                auto* sh = tt->mutable_shape();
                sh->clear_dim();
                for (auto d : it->second) sh->add_dim()->set_dim_value(d);
                changed = true;
                continue;
            }
            if (!tt->has_shape()) fail("graph input '", i.name(), "' has no shape (give it in OnnxImportOptions::input_shapes)");
            auto* sh = tt->mutable_shape();
            for (int k = 0; k < sh->dim_size(); ++k) {
                auto* d = sh->mutable_dim(k);
                if (d->has_dim_value() && d->dim_value() >= 0) continue;
                if (k == 0) {
                    d->set_dim_value(m_opt.batch_size);
                    changed = true;
                } else if (d->has_dim_value()) {
                    fail("graph input '", i.name(), "' has a negative dimension ", k, " (", d->dim_value(),
                         "); give its shape in OnnxImportOptions::input_shapes");
                } else {
                    fail("graph input '", i.name(), "' has a symbolic dimension ", k, " ('", d->dim_param(),
                         "'); give its shape in OnnxImportOptions::input_shapes");
                }
            }
        }
        // Shapes recorded in the file were computed for other input shapes: infer them afresh.
        if (changed) {
            g.clear_value_info();
            for (auto& o : *g.mutable_output())
                if (o.type().has_tensor_type()) o.mutable_type()->mutable_tensor_type()->clear_shape();
        }
    }

    void infer(int error_mode) {
        try {
            ::onnx::ShapeInferenceOptions o(false, error_mode, true);
            ::onnx::shape_inference::InferShapes(m_model, ::onnx::OpSchemaRegistry::Instance(), o);
        } catch (const std::exception& e) {
            if (error_mode == 0) fail("ONNX shape inference failed: ", e.what());
            throw;
        }
    }

    /// name -> (dtype, shape with -1 for unknown dims); nullopt shape when the rank is unknown.
    struct TypeInfo {
        int dtype = 0;
        std::optional<graph::Shape> shape;
    };
    void collect_types() {
        m_types.clear();
        const auto& g = m_model.graph();
        auto add = [&](const ::onnx::ValueInfoProto& v) {
            if (!v.type().has_tensor_type()) return;
            const auto& tt = v.type().tensor_type();
            TypeInfo ti;
            ti.dtype = tt.elem_type();
            if (tt.has_shape()) {
                graph::Shape s;
                for (const auto& d : tt.shape().dim()) s.push_back(d.has_dim_value() ? d.dim_value() : -1);
                ti.shape = s;
            }
            auto& slot = m_types[v.name()];
            if (!slot.shape || (ti.shape && known(*ti.shape))) slot = ti;
        };
        for (const auto& v : g.input()) add(v);
        for (const auto& v : g.value_info()) add(v);
        for (const auto& v : g.output()) add(v);
        for (const auto& [name, c] : m_const) m_types[name] = TypeInfo{c.dtype, c.dims};
    }
    static bool known(const graph::Shape& s) {
        return std::all_of(s.begin(), s.end(), [](std::int64_t d) { return d >= 0; });
    }
    std::optional<graph::Shape> known_shape(const std::string& name) const {
        auto it = m_types.find(name);
        if (it == m_types.end() || !it->second.shape || !known(*it->second.shape)) return std::nullopt;
        return it->second.shape;
    }

    /// Infer, fold what became computable, feed the folded values back, repeat.
    void fold_loop() {
        auto& g = *m_model.mutable_graph();
        for (int round = 0; round < 256; ++round) {
            infer(0);
            collect_types();
            std::vector<char> folded(static_cast<std::size_t>(g.node_size()), 0);
            bool any = false;
            for (int v = 0; v < g.node_size(); ++v) {
                const auto& nd = g.node(v);
                if (!nd.domain().empty() && nd.domain() != "ai.onnx") continue;
                if (has_subgraph(nd)) continue;
                if (try_fold(nd)) {
                    folded[static_cast<std::size_t>(v)] = 1;
                    any = true;
                }
            }
            if (!any) return;
            google::protobuf::RepeatedPtrField<::onnx::NodeProto> keep;
            for (int v = 0; v < g.node_size(); ++v)
                if (!folded[static_cast<std::size_t>(v)]) *keep.Add() = g.node(v);
            g.mutable_node()->Swap(&keep);
            // Inferred types of values that are now initializers must not clash with them.
            google::protobuf::RepeatedPtrField<::onnx::ValueInfoProto> vi;
            for (const auto& x : g.value_info())
                if (!m_const.count(x.name())) *vi.Add() = x;
            g.mutable_value_info()->Swap(&vi);
            for (const auto& name : m_new_consts) write_tensor(m_const[name], name, *g.add_initializer());
            m_new_consts.clear();
        }
        fail("shape folding did not converge after 256 rounds");
    }

    bool try_fold(const ::onnx::NodeProto& nd) {
        // Graph outputs stay computed by a node (a Constant producing the output is kept, so that
        // the network still has an operator writing its result).
        for (const auto& o : nd.output())
            if (is_graph_output(o)) return false;
        if (nd.output_size() == 0) return false;
        std::vector<const Const*> in;
        bool all_const = true, all_data = true;
        for (const auto& i : nd.input()) {
            if (i.empty()) {
                in.push_back(nullptr);
                continue;
            }
            auto it = m_const.find(i);
            if (it == m_const.end()) {
                in.push_back(nullptr);
                all_const = false;
                all_data = false;
            } else {
                in.push_back(&it->second);
                all_data = all_data && it->second.has_data;
            }
        }
        const std::string& op = nd.op_type();
        std::optional<graph::Shape> s0;
        if ((op == "Shape" || op == "Size") && nd.input_size() > 0) s0 = known_shape(nd.input(0));
        if (op == "Shape" || op == "Size" || op == "Constant" || all_data) {
            try {
                auto outs = evaluate(nd, m_opset, in, s0, m_opt.max_fold_elements);
                if (static_cast<int>(outs.size()) > nd.output_size()) return false;
                for (std::size_t k = 0; k < outs.size(); ++k) {
                    if (outs[k].size() > m_opt.max_fold_elements) return false;
                }
                // Optional extra outputs (e.g. a Dropout mask) must be unused for the fold to be valid.
                for (int k = static_cast<int>(outs.size()); k < nd.output_size(); ++k)
                    if (!nd.output(k).empty() && m_consumed.count(nd.output(k))) return false;
                for (std::size_t k = 0; k < outs.size(); ++k) add_const(nd.output(static_cast<int>(k)), outs[k]);
                return true;
            } catch (const cannot_fold&) {
            }
        }
        // A layout operator applied to a weight without data: the result is a weight whose shape
        // inference has found.
        if (all_const && nd.input_size() > 0 && is_weight_layout_op(op) && in[0]) {
            for (int k = 1; k < nd.output_size(); ++k)
                if (!nd.output(k).empty() && m_consumed.count(nd.output(k))) return false;
            auto s = known_shape(nd.output(0));
            if (!s) return false;
            Const c;
            c.dtype = m_types[nd.output(0)].dtype;
            if (c.dtype == 0) c.dtype = in[0]->dtype;
            c.dims = *s;
            add_const(nd.output(0), c);
            return true;
        }
        return false;
    }
    void add_const(const std::string& name, Const c) {
        if (name.empty()) return;
        m_const[name] = std::move(c);
        m_new_consts.push_back(name);
        m_types[name] = TypeInfo{m_const[name].dtype, m_const[name].dims};
    }
    bool is_graph_output(const std::string& name) const {
        for (const auto& o : m_model.graph().output())
            if (o.name() == name) return true;
        return false;
    }

    std::string explain(const ::onnx::NodeProto& nd) {
        // Run inference again in strict mode to obtain ONNX's own reason, if it has one.
        ::onnx::ModelProto copy = m_model;
        try {
            ::onnx::ShapeInferenceOptions o(false, 1, true);
            ::onnx::shape_inference::InferShapes(copy, ::onnx::OpSchemaRegistry::Instance(), o);
        } catch (const std::exception& e) {
            return std::string("; ONNX shape inference says: ") + e.what();
        }
        const auto* schema = ::onnx::OpSchemaRegistry::Schema(nd.op_type(), m_opset, nd.domain());
        if (!schema) return "; the operator is unknown to ONNX opset " + std::to_string(m_opset);
        return "";
    }

    graph::Graph build() {
        const auto& g = m_model.graph();
        graph::Graph out(g.name().empty() ? std::filesystem::path(m_src).stem().string() : g.name());
        std::unordered_map<std::string, int> id;
        std::unordered_map<std::string, int> produced_by;
        for (int v = 0; v < g.node_size(); ++v)
            for (const auto& o : g.node(v).output()) produced_by[o] = v;
        std::unordered_set<std::string> inputs(m_inputs.begin(), m_inputs.end());
        auto dtype_of = [&](const std::string& name) {
            auto it = m_types.find(name);
            return static_cast<graph::DataType>(it == m_types.end() ? 1 : it->second.dtype);
        };
        auto tensor_for_input = [&](const ::onnx::NodeProto& nd, const std::string& name) -> int {
            if (name.empty()) return -1;
            if (auto it = id.find(name); it != id.end()) return it->second;
            auto c = m_const.find(name);
            int t;
            if (c != m_const.end()) {
                t = out.add_weight(name, c->second.dims, static_cast<graph::DataType>(c->second.dtype));
                if (keeps_data(c->second)) {
                    std::vector<double> values(static_cast<std::size_t>(c->second.size()));
                    for (std::size_t k = 0; k < values.size(); ++k) values[k] = c->second.at_f(k);
                    out.set_data(t, std::move(values));
                }
            } else if (inputs.count(name)) {
                auto s = known_shape(name);
                if (!s) fail("graph input '", name, "' has no concrete shape");
                const auto count = checked_numel(*s);
                if (!count || *count > max_plausible_elements)
                    fail("graph input '", name, "' has an implausible shape ", graph::to_string(*s));
                t = out.add_input(name, *s, dtype_of(name));
            } else {
                fail_node(nd, "reads value '", name, "' that no remaining node produces");
            }
            id.emplace(name, t);
            return t;
        };
        for (int v = 0; v < g.node_size(); ++v) {
            const auto& nd = g.node(v);
            std::vector<int> ins, outs;
            for (const auto& i : nd.input()) ins.push_back(tensor_for_input(nd, i));
            for (const auto& o : nd.output()) {
                if (o.empty()) fail_node(nd, "has an unnamed output");
                auto s = known_shape(o);
                if (!s)
                    fail_node(nd, "cannot determine the shape of output '", o, "'", explain(nd));
                const auto count = checked_numel(*s);
                if (!count || *count > max_plausible_elements)
                    fail_node(nd, "output '", o, "' has an implausible shape ", graph::to_string(*s));
                const int t = out.add_tensor(o, *s, dtype_of(o));
                id.emplace(o, t);
                outs.push_back(t);
            }
            std::vector<graph::Attribute> attrs;
            for (const auto& a : nd.attribute()) {
                if (auto val = convert_attr(a)) attrs.push_back({a.name(), std::move(*val)});
            }
            try {
                out.add_node(nd.op_type(), nd.name(), std::move(ins), std::move(outs), std::move(attrs));
            } catch (const error& e) {
                fail_node(nd, e.what());
            }
        }
        for (const auto& o : g.output()) {
            auto it = id.find(o.name());
            if (it == id.end()) {
                auto c = m_const.find(o.name());
                if (c == m_const.end() && !inputs.count(o.name()))
                    fail("graph output '", o.name(), "' is not produced by any node");
                // A graph output that is an input or a constant: keep it as a tensor.
                if (c != m_const.end())
                    it = id.emplace(o.name(), out.add_weight(o.name(), c->second.dims,
                                                             static_cast<graph::DataType>(c->second.dtype))).first;
                else
                    it = id.emplace(o.name(), out.add_input(o.name(), known_shape(o.name()).value_or(graph::Shape{}),
                                                            dtype_of(o.name()))).first;
            }
            out.mark_output(it->second);
        }
        try {
            out.validate();
        } catch (const error& e) {
            fail(e.what());
        }
        return out;
    }

    static std::optional<graph::AttrValue> convert_attr(const ::onnx::AttributeProto& a) {
        using A = ::onnx::AttributeProto;
        switch (a.type()) {
            case A::INT: return graph::AttrValue{static_cast<std::int64_t>(a.i())};
            case A::FLOAT: return graph::AttrValue{widen(a.f())};
            case A::STRING: return graph::AttrValue{a.s()};
            case A::INTS: return graph::AttrValue{std::vector<std::int64_t>(a.ints().begin(), a.ints().end())};
            case A::FLOATS: {
                std::vector<double> v;
                for (float x : a.floats()) v.push_back(widen(x));
                return graph::AttrValue{std::move(v)};
            }
            case A::STRINGS:
                return graph::AttrValue{std::vector<std::string>(a.strings().begin(), a.strings().end())};
            default: return std::nullopt;  // tensors, graphs, sparse tensors, type protos: not kept
        }
    }

    std::string m_src;
    const OnnxImportOptions& m_opt;
    ::onnx::ModelProto m_model;
    int m_opset = 0;
    std::unordered_map<std::string, Const> m_const;
    std::unordered_set<std::string> m_weight_inputs;
    std::unordered_set<std::string> m_consumed;
    std::vector<std::string> m_inputs;
    std::vector<std::string> m_new_consts;
    std::unordered_map<std::string, TypeInfo> m_types;
};

}  // namespace detail::onnx_impl

/// Import an ONNX model held in memory.
/// @param bytes serialised ModelProto
/// @param name  what error messages call the model (usually its file name)
/// @throws onnx_import_error for anything that is not an importable ONNX model, naming `name` and
///         the offending node
inline graph::Graph import_onnx_bytes(const std::string& bytes, const std::string& name,
                                      const OnnxImportOptions& options = {}) {
    detail::onnx_impl::Importer imp(name, options);
    try {
        return imp.run(bytes);
    } catch (const error&) {
        throw;
    } catch (const std::exception& e) {
        raise<onnx_import_error>("ONNX import of '", name, "': ", e.what());
    }
}

/// Import an ONNX file.
/// @throws io_error when the file cannot be read, onnx_import_error when it is not importable
inline graph::Graph import_onnx(const std::filesystem::path& path, const OnnxImportOptions& options = {}) {
    return import_onnx_bytes(read_file(path), path.string(), options);
}

/// Opset of the default domain of a serialised model (e.g. to export an imported graph again
/// with the opset its attributes belong to).
inline int onnx_opset(const std::string& bytes, const std::string& name = "<memory>") {
    detail::onnx_impl::Importer imp(name, {});
    imp.parse(bytes);
    ::onnx::ModelProto m;
    m.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()));
    for (const auto& o : m.opset_import())
        if (o.domain().empty() || o.domain() == "ai.onnx") return static_cast<int>(o.version());
    raise<onnx_import_error>("ONNX model '", name, "' has no opset for the default domain");
}

namespace detail::onnx_impl {

inline void set_value_info(::onnx::ValueInfoProto& vi, const graph::Tensor& t) {
    vi.set_name(t.name);
    auto* tt = vi.mutable_type()->mutable_tensor_type();
    tt->set_elem_type(static_cast<int>(t.dtype));
    auto* sh = tt->mutable_shape();
    for (auto d : t.shape) sh->add_dim()->set_dim_value(d);
}

inline ::onnx::ModelProto to_model(const graph::Graph& g, const OnnxExportOptions& opt) {
    if (opt.opset < 7) raise<config_error>("export_onnx: opset ", opt.opset, " is older than the supported 7");
    ::onnx::ModelProto m;
    m.set_ir_version(opt.opset >= 15 ? 8 : 7);
    m.set_producer_name(opt.producer);
    m.set_producer_version("0.1.0");
    auto* os = m.add_opset_import();
    os->set_domain("");
    os->set_version(opt.opset);
    auto& gp = *m.mutable_graph();
    gp.set_name(g.name().empty() ? "dnncost" : g.name());
    // Inputs first, then weights (marked), in tensor order; activations get value_info so that a
    // reader does not depend on shape inference.
    for (const auto& t : g.tensors()) {
        if (t.kind == graph::TensorKind::input) set_value_info(*gp.add_input(), t);
    }
    for (const auto& t : g.tensors()) {
        if (t.kind != graph::TensorKind::weight) continue;
        if (!t.data.empty() && keeps_data_type(static_cast<int>(t.dtype)) &&
            t.elements() <= max_kept_constant_elements) {
            // a constant with known values: a real initializer
            Const c;
            c.dtype = static_cast<int>(t.dtype);
            c.dims = t.shape;
            c.has_data = true;
            if (is_float_type(c.dtype)) c.f = t.data;
            else
                for (double x : t.data) c.i.push_back(static_cast<std::int64_t>(x));
            write_tensor(c, t.name, *gp.add_initializer());
            continue;
        }
        auto& vi = *gp.add_input();
        set_value_info(vi, t);
        vi.set_doc_string(std::string(onnx_weight_marker));
    }
    for (const auto& t : g.tensors()) {
        if (t.is_output)
            set_value_info(*gp.add_output(), t);
        else if (t.kind == graph::TensorKind::activation)
            set_value_info(*gp.add_value_info(), t);
    }
    for (int v : g.topological_order()) {
        const auto& nd = g.node(v);
        auto& np = *gp.add_node();
        np.set_op_type(nd.op_type);
        np.set_name(nd.name);
        for (int t : nd.inputs) np.add_input(t < 0 ? std::string() : g.tensor(t).name);
        for (int t : nd.outputs) np.add_output(g.tensor(t).name);
        for (const auto& a : nd.attributes) {
            auto& ap = *np.add_attribute();
            ap.set_name(a.name);
            using A = ::onnx::AttributeProto;
            std::visit(
                [&](const auto& val) {
                    using T = std::decay_t<decltype(val)>;
                    if constexpr (std::is_same_v<T, std::int64_t>) {
                        ap.set_type(A::INT);
                        ap.set_i(val);
                    } else if constexpr (std::is_same_v<T, double>) {
                        ap.set_type(A::FLOAT);
                        ap.set_f(static_cast<float>(val));
                    } else if constexpr (std::is_same_v<T, std::string>) {
                        ap.set_type(A::STRING);
                        ap.set_s(val);
                    } else if constexpr (std::is_same_v<T, std::vector<std::int64_t>>) {
                        ap.set_type(A::INTS);
                        for (auto x : val) ap.add_ints(x);
                    } else if constexpr (std::is_same_v<T, std::vector<double>>) {
                        ap.set_type(A::FLOATS);
                        for (auto x : val) ap.add_floats(static_cast<float>(x));
                    } else {
                        ap.set_type(A::STRINGS);
                        for (const auto& x : val) ap.add_strings(x);
                    }
                },
                a.value);
        }
        // A Constant operator without a value (a folded result, as in pruned NB201 graphs) is
        // written as zeros of its output shape so that the file is a valid ONNX model.
        if (nd.op_type == "Constant" && !nd.has_attr("value") && nd.outputs.size() == 1) {
            const auto& t = g.tensor(nd.outputs[0]);
            if (t.elements() > (std::int64_t{1} << 20))
                raise<config_error>("export_onnx: constant '", nd.name, "' is too large to write as zeros");
            auto& ap = *np.add_attribute();
            ap.set_name("value");
            ap.set_type(::onnx::AttributeProto::TENSOR);
            Const c;
            c.dtype = static_cast<int>(t.dtype);
            c.dims = t.shape;
            c.has_data = true;
            if (is_float_type(c.dtype)) c.f.assign(static_cast<std::size_t>(t.elements()), 0.0);
            else c.i.assign(static_cast<std::size_t>(t.elements()), 0);
            write_tensor(c, t.name, *ap.mutable_t());
        }
    }
    return m;
}

}  // namespace detail::onnx_impl

/// Serialise a graph as an ONNX model that passes onnx::checker::check_model. Weights are typed
/// graph inputs marked `dnncost:weight` (no values exist to write); see the file comment.
/// @throws config_error if the graph cannot be written (e.g. an attribute the checker rejects for
///         the chosen opset); the message names the graph and ONNX's reason.
inline std::string export_onnx_bytes(const graph::Graph& g, const OnnxExportOptions& options = {}) {
    auto m = detail::onnx_impl::to_model(g, options);
    try {
        ::onnx::checker::check_model(m);
    } catch (const std::exception& e) {
        raise<config_error>("export_onnx: graph '", g.name(), "' does not make a valid ONNX model at opset ",
                            options.opset, ": ", e.what());
    }
    std::string out;
    if (!m.SerializeToString(&out)) raise<io_error>("export_onnx: cannot serialise graph '", g.name(), "'");
    return out;
}

/// Write a graph as an ONNX file, atomically (io::write_file_atomic).
/// @throws config_error (see export_onnx_bytes), io_error when the file cannot be written
inline void export_onnx(const graph::Graph& g, const std::filesystem::path& path,
                        const OnnxExportOptions& options = {}) {
    write_file_atomic(path, export_onnx_bytes(g, options));
}

}  // namespace dnncost::io
