#pragma once
/// @file tensor_data.hpp
/// Tensor values as the ONNX reader and writer see them: ConstantTensor (shape, element type and,
/// when small and well-formed, the values), reading and writing onnx::TensorProto, and the float
/// attribute widening that keeps an export/import round trip exact.
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <dnncost/core/error.hpp>
#include <dnncost/graph/graph.hpp>
#include <dnncost/io/onnx/proto.hpp>

namespace dnncost::io::detail::onnx_impl {

using TensorProto = ::onnx::TensorProto;
using graph::checked_numel;

inline bool is_float_type(int dtype) {
    return dtype == TensorProto::FLOAT || dtype == TensorProto::DOUBLE || dtype == TensorProto::FLOAT16 ||
           dtype == TensorProto::BFLOAT16;
}
inline bool is_int_type(int dtype) {
    return dtype == TensorProto::INT64 || dtype == TensorProto::INT32 || dtype == TensorProto::INT16 ||
           dtype == TensorProto::INT8 || dtype == TensorProto::UINT8 || dtype == TensorProto::UINT16 ||
           dtype == TensorProto::UINT32 || dtype == TensorProto::UINT64 || dtype == TensorProto::BOOL;
}

/// A constant tensor. Integer and boolean tensors keep int64 values, floating tensors keep
/// doubles. `has_data == false` is a weight whose values are unknown (a stripped initializer):
/// its shape is known, its values are not.
struct ConstantTensor {
    int dtype = TensorProto::INT64;
    graph::Shape dims;
    bool has_data = false;
    std::vector<std::int64_t> ints;
    std::vector<double> floats;

    bool is_float() const { return is_float_type(dtype); }
    std::int64_t size() const { return graph::numel(dims); }
    /// Element k as a double, whatever the element type.
    double real_at(std::size_t k) const { return is_float() ? floats[k] : static_cast<double>(ints[k]); }
};

/// Far beyond any real tensor; keeps byte counts (elements x 8) well inside int64.
inline constexpr std::int64_t max_plausible_elements = std::int64_t{1} << 50;

template <class T>
bool read_raw(const std::string& raw, std::size_t count, std::vector<T>& out) {
    if (raw.size() != count * sizeof(T)) return false;
    out.resize(count);
    if (count) std::memcpy(out.data(), raw.data(), raw.size());  // ONNX raw data is little-endian
    return true;
}

/// Bytes per element of the fixed-size ONNX element types (0 for strings, complex and unknown).
inline std::size_t stored_element_bytes(int dtype) {
    switch (dtype) {
        case TensorProto::BOOL:
        case TensorProto::UINT8:
        case TensorProto::INT8:
            return 1;
        case TensorProto::UINT16:
        case TensorProto::INT16:
        case TensorProto::FLOAT16:
        case TensorProto::BFLOAT16:
            return 2;
        case TensorProto::FLOAT:
        case TensorProto::INT32:
        case TensorProto::UINT32:
            return 4;
        case TensorProto::DOUBLE:
        case TensorProto::INT64:
        case TensorProto::UINT64:
            return 8;
        default:
            return 0;
    }
}
/// Data stored in the file must fit the shape: a raw_data or typed field of another length is
/// a malformed tensor, not one without values. A tensor without any data (shapes only) is fine.
inline void check_data_size(const TensorProto& proto, std::int64_t count) {
    const auto expected = static_cast<std::uint64_t>(count);
    if (proto.has_raw_data()) {
        const auto bytes = stored_element_bytes(proto.data_type());
        if (bytes > 0 && proto.raw_data().size() != expected * bytes)
            raise<onnx_import_error>("tensor '", proto.name(), "' has ", proto.raw_data().size(),
                                     " bytes of raw data for ", expected, " elements of ", bytes, " bytes");
        return;
    }
    if (proto.data_type() == TensorProto::COMPLEX64 || proto.data_type() == TensorProto::COMPLEX128) return;
    const auto typed = static_cast<std::uint64_t>(proto.float_data_size()) + proto.int32_data_size() +
                       proto.int64_data_size() + proto.double_data_size() + proto.uint64_data_size() +
                       proto.string_data_size();
    if (typed > 0 && typed != expected)
        raise<onnx_import_error>("tensor '", proto.name(), "' holds ", typed, " values for ", expected, " elements");
}

/// Read the shape and, when at most `max_elements` and well-formed, the values of a tensor.
/// @throws onnx_import_error for a negative dimension or an implausible element count
inline ConstantTensor read_tensor(const TensorProto& proto, std::int64_t max_elements) {
    ConstantTensor c;
    c.dtype = proto.data_type();
    for (auto d : proto.dims()) {
        if (d < 0) raise<onnx_import_error>("tensor '", proto.name(), "' has negative dimension ", d);
        c.dims.push_back(d);
    }
    const auto checked = checked_numel(c.dims);
    if (!checked || *checked > max_plausible_elements)
        raise<onnx_import_error>("tensor '", proto.name(), "' has an implausible shape ", graph::to_string(c.dims));
    const std::int64_t count = *checked;
    if (proto.data_location() == TensorProto::EXTERNAL) return c;
    check_data_size(proto, count);
    if (count > max_elements) return c;
    const auto ucount = static_cast<std::size_t>(count);
    const std::string& raw = proto.raw_data();
    const bool has_raw = proto.has_raw_data();
    switch (proto.data_type()) {
        case TensorProto::FLOAT: {
            std::vector<float> values;
            if (has_raw ? read_raw(raw, ucount, values) : static_cast<std::size_t>(proto.float_data_size()) == ucount) {
                if (!has_raw) values.assign(proto.float_data().begin(), proto.float_data().end());
                c.floats.assign(values.begin(), values.end());
                c.has_data = true;
            }
            break;
        }
        case TensorProto::DOUBLE: {
            if (has_raw ? read_raw(raw, ucount, c.floats)
                        : static_cast<std::size_t>(proto.double_data_size()) == ucount) {
                if (!has_raw) c.floats.assign(proto.double_data().begin(), proto.double_data().end());
                c.has_data = true;
            }
            break;
        }
        case TensorProto::INT64: {
            if (has_raw ? read_raw(raw, ucount, c.ints) : static_cast<std::size_t>(proto.int64_data_size()) == ucount) {
                if (!has_raw) c.ints.assign(proto.int64_data().begin(), proto.int64_data().end());
                c.has_data = true;
            }
            break;
        }
        case TensorProto::INT32: {
            std::vector<std::int32_t> values;
            if (has_raw ? read_raw(raw, ucount, values) : static_cast<std::size_t>(proto.int32_data_size()) == ucount) {
                if (!has_raw) values.assign(proto.int32_data().begin(), proto.int32_data().end());
                c.ints.assign(values.begin(), values.end());
                c.has_data = true;
            }
            break;
        }
        case TensorProto::BOOL:
        case TensorProto::UINT8:
        case TensorProto::INT8: {
            if (has_raw) {
                if (raw.size() == ucount) {
                    for (char byte : raw)
                        c.ints.push_back(proto.data_type() == TensorProto::INT8
                                             ? static_cast<std::int64_t>(static_cast<signed char>(byte))
                                             : static_cast<std::int64_t>(static_cast<unsigned char>(byte)));
                    c.has_data = true;
                }
            } else if (static_cast<std::size_t>(proto.int32_data_size()) == ucount) {
                c.ints.assign(proto.int32_data().begin(), proto.int32_data().end());
                c.has_data = true;
            }
            break;
        }
        default:
            break;
    }
    if (!c.has_data) {
        c.ints.clear();
        c.floats.clear();
    }
    return c;
}

/// Small constants whose values the graph keeps (graph::Tensor::data): enough for analyses such
/// as a multiplication by zero (graph/analysis.hpp), in the element types that read back exactly.
inline constexpr std::int64_t max_kept_constant_elements = 64;
inline bool keeps_data_type(int dtype) {
    return dtype == TensorProto::FLOAT || dtype == TensorProto::DOUBLE || dtype == TensorProto::INT64 ||
           dtype == TensorProto::INT32 || dtype == TensorProto::BOOL || dtype == TensorProto::UINT8 ||
           dtype == TensorProto::INT8;
}
inline bool keeps_data(const ConstantTensor& c) {
    return c.has_data && keeps_data_type(c.dtype) && c.size() <= max_kept_constant_elements;
}

/// Write name, type, shape and (when known) the values of a constant into `proto`.
inline void write_tensor(const ConstantTensor& c, const std::string& name, TensorProto& proto) {
    proto.set_name(name);
    proto.set_data_type(c.dtype);
    for (auto d : c.dims) proto.add_dims(d);
    if (!c.has_data) return;
    const auto count = static_cast<std::size_t>(c.size());
    switch (c.dtype) {
        case TensorProto::FLOAT:
            for (std::size_t k = 0; k < count; ++k) proto.add_float_data(static_cast<float>(c.floats[k]));
            break;
        case TensorProto::DOUBLE:
            for (std::size_t k = 0; k < count; ++k) proto.add_double_data(c.floats[k]);
            break;
        case TensorProto::INT64:
            for (std::size_t k = 0; k < count; ++k) proto.add_int64_data(c.ints[k]);
            break;
        default:
            for (std::size_t k = 0; k < count; ++k) proto.add_int32_data(static_cast<std::int32_t>(c.ints[k]));
            break;
    }
}

/// Float attributes are float32 in ONNX; widen them through their shortest decimal form so that
/// 0.9f comes back as the double 0.9 (and an export/import round trip is exact).
inline double widen(float x) {
    if (!std::isfinite(x)) return static_cast<double>(x);
    char text[64];
    const auto end = std::to_chars(text, text + sizeof text, x);
    double wide = 0.0;
    std::from_chars(text, end.ptr, wide);
    return wide;
}

}  // namespace dnncost::io::detail::onnx_impl
