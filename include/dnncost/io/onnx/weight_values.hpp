#pragma once
/// @file weight_values.hpp
/// Whole weight tensors as values (io::TensorValues: float32 or int64 elements): reading them from
/// an onnx::TensorProto in any element type, writing them back as raw little-endian data in the
/// tensor's own element type (float16 and bfloat16 included), and following them through the
/// layout operators the importer folds into weights (Identity, Reshape, Transpose, Cast, ...).
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <dnncost/core/error.hpp>
#include <dnncost/graph/graph.hpp>
#include <dnncost/io/onnx/fold_kernels.hpp>
#include <dnncost/io/onnx/options.hpp>
#include <dnncost/io/onnx/proto.hpp>
#include <dnncost/io/onnx/tensor_data.hpp>

namespace dnncost::io::detail::onnx_impl {

static_assert(std::endian::native == std::endian::little, "ONNX raw tensor data is little-endian");

/// IEEE half precision bits -> float.
inline float half_to_float(std::uint16_t half) {
    const std::uint32_t sign = static_cast<std::uint32_t>(half & 0x8000u) << 16;
    const std::uint32_t exponent = (half >> 10) & 0x1fu;
    std::uint32_t mantissa = half & 0x3ffu;
    std::uint32_t bits;
    if (exponent == 0x1fu) {
        bits = sign | 0x7f800000u | (mantissa << 13);  // infinity or NaN
    } else if (exponent != 0) {
        bits = sign | ((exponent + 112u) << 23) | (mantissa << 13);
    } else if (mantissa == 0) {
        bits = sign;
    } else {  // subnormal half: normalise
        std::uint32_t shift = 0;
        while (!(mantissa & 0x400u)) {
            mantissa <<= 1;
            ++shift;
        }
        bits = sign | ((113u - shift) << 23) | ((mantissa & 0x3ffu) << 13);
    }
    return std::bit_cast<float>(bits);
}

/// float -> IEEE half precision bits, rounded to nearest even (overflow gives infinity).
inline std::uint16_t float_to_half(float value) {
    const std::uint32_t bits = std::bit_cast<std::uint32_t>(value);
    const auto sign = static_cast<std::uint16_t>((bits >> 16) & 0x8000u);
    const std::uint32_t magnitude = bits & 0x7fffffffu;
    if (magnitude >= 0x7f800000u)  // infinity or NaN
        return static_cast<std::uint16_t>(sign | 0x7c00u | (magnitude > 0x7f800000u ? 0x200u : 0u));
    if (magnitude >= 0x477ff000u) return static_cast<std::uint16_t>(sign | 0x7c00u);  // rounds beyond 65504
    if (magnitude < 0x38800000u) {  // below the smallest normal half: subnormal or zero
        const float scaled = std::bit_cast<float>(magnitude) * 16777216.0f;  // in units of 2^-24
        return static_cast<std::uint16_t>(sign | static_cast<std::uint16_t>(std::nearbyint(scaled)));
    }
    const std::uint32_t rounded = magnitude + 0xfffu + ((magnitude >> 13) & 1u);
    return static_cast<std::uint16_t>(sign | ((rounded - 0x38000000u) >> 13));
}

inline float bfloat16_to_float(std::uint16_t bits) { return std::bit_cast<float>(std::uint32_t{bits} << 16); }

/// float -> bfloat16 bits, rounded to nearest even.
inline std::uint16_t float_to_bfloat16(float value) {
    const std::uint32_t bits = std::bit_cast<std::uint32_t>(value);
    if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((bits >> 16) | 0x40u);  // NaN
    return static_cast<std::uint16_t>((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
}

/// Width in bytes of one element of a numeric ONNX type, 0 for the others.
inline std::size_t element_bytes(int dtype) { return graph::element_size(static_cast<graph::DataType>(dtype)); }

/// Little-endian raw elements of type T, widened to Out.
template <class T, class Out, class Convert>
bool read_raw_as(const std::string& raw, std::size_t count, std::vector<Out>& out, Convert convert) {
    if (raw.size() != count * sizeof(T)) return false;
    out.resize(count);
    for (std::size_t k = 0; k < count; ++k) {
        T element;
        std::memcpy(&element, raw.data() + k * sizeof(T), sizeof(T));
        out[k] = convert(element);
    }
    return true;
}

/// All values of a tensor the file holds, or nullopt when it holds none (a stripped or external
/// initializer, a string tensor) or they do not match its shape.
inline std::optional<TensorValues> read_values(const TensorProto& proto) {
    if (proto.data_location() == TensorProto::EXTERNAL) return std::nullopt;
    graph::Shape dims(proto.dims().begin(), proto.dims().end());
    const auto checked = checked_numel(dims);
    if (!checked || *checked > max_plausible_elements) return std::nullopt;
    const auto count = static_cast<std::size_t>(*checked);
    const std::string& raw = proto.raw_data();
    const bool has_raw = proto.has_raw_data();
    TensorValues values;
    auto& reals = values.reals;
    auto& integers = values.integers;
    const auto same = [](auto x) { return x; };
    const auto to_float = [](auto x) { return static_cast<float>(x); };
    const auto to_int64 = [](auto x) { return static_cast<std::int64_t>(x); };
    // Typed storage: float/double/int64/uint64 fields by name, every narrower type in int32_data.
    const auto from_field = [&](const auto& field, auto& out, auto convert) {
        if (static_cast<std::size_t>(field.size()) != count) return false;
        out.clear();
        out.reserve(count);
        for (auto x : field) out.push_back(convert(x));
        return true;
    };
    bool ok = false;
    switch (proto.data_type()) {
        case TensorProto::FLOAT:
            ok = has_raw ? read_raw_as<float>(raw, count, reals, same) : from_field(proto.float_data(), reals, same);
            break;
        case TensorProto::DOUBLE:
            ok = has_raw ? read_raw_as<double>(raw, count, reals, to_float)
                         : from_field(proto.double_data(), reals, to_float);
            break;
        case TensorProto::FLOAT16:
            ok = has_raw ? read_raw_as<std::uint16_t>(raw, count, reals, half_to_float)
                         : from_field(proto.int32_data(), reals,
                                      [](std::int32_t x) { return half_to_float(static_cast<std::uint16_t>(x)); });
            break;
        case TensorProto::BFLOAT16:
            ok = has_raw ? read_raw_as<std::uint16_t>(raw, count, reals, bfloat16_to_float)
                         : from_field(proto.int32_data(), reals,
                                      [](std::int32_t x) { return bfloat16_to_float(static_cast<std::uint16_t>(x)); });
            break;
        case TensorProto::INT64:
            ok = has_raw ? read_raw_as<std::int64_t>(raw, count, integers, same)
                         : from_field(proto.int64_data(), integers, to_int64);
            break;
        case TensorProto::UINT64:
            ok = has_raw ? read_raw_as<std::uint64_t>(raw, count, integers, to_int64)
                         : from_field(proto.uint64_data(), integers, to_int64);
            break;
        case TensorProto::UINT32:
            ok = has_raw ? read_raw_as<std::uint32_t>(raw, count, integers, to_int64)
                         : from_field(proto.uint64_data(), integers, to_int64);
            break;
        case TensorProto::INT32:
            ok = has_raw ? read_raw_as<std::int32_t>(raw, count, integers, to_int64)
                         : from_field(proto.int32_data(), integers, to_int64);
            break;
        case TensorProto::INT16:
            ok = has_raw ? read_raw_as<std::int16_t>(raw, count, integers, to_int64)
                         : from_field(proto.int32_data(), integers, to_int64);
            break;
        case TensorProto::UINT16:
            ok = has_raw ? read_raw_as<std::uint16_t>(raw, count, integers, to_int64)
                         : from_field(proto.int32_data(), integers, to_int64);
            break;
        case TensorProto::INT8:
            ok = has_raw ? read_raw_as<std::int8_t>(raw, count, integers, to_int64)
                         : from_field(proto.int32_data(), integers, to_int64);
            break;
        case TensorProto::UINT8:
        case TensorProto::BOOL:
            ok = has_raw ? read_raw_as<std::uint8_t>(raw, count, integers, to_int64)
                         : from_field(proto.int32_data(), integers, to_int64);
            break;
        default:
            return std::nullopt;
    }
    if (!ok) return std::nullopt;
    return values;
}

/// The values of a constant whose data the folder computed.
inline TensorValues values_of(const ConstantTensor& c) {
    TensorValues values;
    if (c.is_float())
        values.reals.assign(c.floats.begin(), c.floats.end());
    else
        values.integers = c.ints;
    return values;
}

/// True for the element types write_values can write.
inline bool writes_values_of(int dtype) { return is_float_type(dtype) || is_int_type(dtype); }

/// A value as the integer type T: integers convert as C++ does (two's complement wrap-around),
/// floating values are truncated and clamped to the int64 range first (NaN gives 0) so that no
/// conversion is undefined.
template <class T, class V>
T to_integer(V value) {
    if constexpr (std::is_floating_point_v<V>) {
        if (!(value == value)) return T{0};
        const double clamped = std::clamp(static_cast<double>(value), -9.2e18, 9.2e18);
        return static_cast<T>(static_cast<std::int64_t>(clamped));
    } else {
        return static_cast<T>(value);
    }
}

template <class T>
struct AsInteger {
    template <class V>
    T operator()(V value) const {
        return to_integer<T>(value);
    }
};

/// Store elements 0 .. count-1, element k being `at(k)` (any arithmetic type), as little-endian
/// values of type T encoded by `encode`.
template <class T, class ElementAt, class Encode>
void store_as(char* out, std::size_t count, ElementAt& at, Encode encode) {
    for (std::size_t k = 0; k < count; ++k) {
        const T element = encode(at(k));
        std::memcpy(out + k * sizeof(T), &element, sizeof(T));
    }
}

/// Write a weight as an initializer whose raw data holds `count` elements in the element type
/// `dtype`, element k being `at(k)`. The data are written in place, in one allocation.
template <class ElementAt>
void write_values(const std::string& name, int dtype, const graph::Shape& dims, std::size_t count, ElementAt at,
                  TensorProto& proto) {
    proto.set_name(name);
    proto.set_data_type(dtype);
    for (auto d : dims) proto.add_dims(d);
    std::string& raw = *proto.mutable_raw_data();
    raw.resize(count * element_bytes(dtype));
    char* out = raw.data();
    const auto real = [](auto v) { return static_cast<float>(v); };
    switch (dtype) {
        case TensorProto::FLOAT:
            store_as<float>(out, count, at, real);
            break;
        case TensorProto::DOUBLE:
            store_as<double>(out, count, at, [](auto v) { return static_cast<double>(v); });
            break;
        case TensorProto::FLOAT16:
            store_as<std::uint16_t>(out, count, at, [&](auto v) { return float_to_half(real(v)); });
            break;
        case TensorProto::BFLOAT16:
            store_as<std::uint16_t>(out, count, at, [&](auto v) { return float_to_bfloat16(real(v)); });
            break;
        case TensorProto::INT64:
            store_as<std::int64_t>(out, count, at, AsInteger<std::int64_t>{});
            break;
        case TensorProto::UINT64:
            store_as<std::uint64_t>(out, count, at, AsInteger<std::uint64_t>{});
            break;
        case TensorProto::INT32:
            store_as<std::int32_t>(out, count, at, AsInteger<std::int32_t>{});
            break;
        case TensorProto::UINT32:
            store_as<std::uint32_t>(out, count, at, AsInteger<std::uint32_t>{});
            break;
        case TensorProto::INT16:
            store_as<std::int16_t>(out, count, at, AsInteger<std::int16_t>{});
            break;
        case TensorProto::UINT16:
            store_as<std::uint16_t>(out, count, at, AsInteger<std::uint16_t>{});
            break;
        case TensorProto::INT8:
            store_as<std::int8_t>(out, count, at, AsInteger<std::int8_t>{});
            break;
        case TensorProto::UINT8:
            store_as<std::uint8_t>(out, count, at, AsInteger<std::uint8_t>{});
            break;
        case TensorProto::BOOL:
            store_as<std::uint8_t>(out, count, at, [](auto v) { return static_cast<std::uint8_t>(v != 0); });
            break;
        default:
            raise<config_error>("export_onnx: weight '", name, "' has element type ", dtype,
                                ", which cannot be written with values");
    }
}

/// Write TensorValues as an initializer in the element type `dtype`.
inline void write_values(const std::string& name, int dtype, const graph::Shape& dims, const TensorValues& values,
                         TensorProto& proto) {
    if (!values.integers.empty())
        write_values(
            name, dtype, dims, values.integers.size(), [&](std::size_t k) { return values.integers[k]; }, proto);
    else
        write_values(
            name, dtype, dims, values.reals.size(), [&](std::size_t k) { return values.reals[k]; }, proto);
}

/// Row-major transpose of `values` (shape `dims`) by `perm` (empty: reverse the axes).
template <class T>
std::vector<T> transpose_values(const std::vector<T>& values, const graph::Shape& dims,
                                std::vector<std::int64_t> perm) {
    const std::size_t rank = dims.size();
    if (perm.empty())
        for (std::size_t k = rank; k-- > 0;) perm.push_back(static_cast<std::int64_t>(k));
    graph::Shape out_dims(rank);
    for (std::size_t k = 0; k < rank; ++k) out_dims[k] = dims[static_cast<std::size_t>(perm[k])];
    const auto in_strides = strides_of(dims), out_strides = strides_of(out_dims);
    std::vector<T> out(values.size());
    for (std::size_t e = 0; e < out.size(); ++e) {
        std::int64_t src = 0;
        for (std::size_t k = 0; k < rank; ++k)
            src += (static_cast<std::int64_t>(e) / out_strides[k] % out_dims[k]) *
                   in_strides[static_cast<std::size_t>(perm[k])];
        out[e] = values[static_cast<std::size_t>(src)];
    }
    return out;
}

/// The values of a layout operator's output (see is_weight_layout_op) from its input's values,
/// or nullopt when they cannot be followed (an unusual permutation, a cast to another kind).
inline std::optional<TensorValues> layout_values(const ::onnx::NodeProto& node, const TensorValues& input,
                                                 const graph::Shape& input_dims, int output_dtype) {
    const std::string& op = node.op_type();
    if (op == "Transpose") {
        std::vector<std::int64_t> perm = attr_ints(node, "perm").value_or(std::vector<std::int64_t>{});
        if (!perm.empty()) {
            if (perm.size() != input_dims.size()) return std::nullopt;
            std::vector<char> seen(perm.size(), 0);
            for (auto axis : perm) {
                if (axis < 0 || axis >= static_cast<std::int64_t>(perm.size()) || seen[static_cast<std::size_t>(axis)])
                    return std::nullopt;
                seen[static_cast<std::size_t>(axis)] = 1;
            }
        }
        TensorValues out;
        out.reals = transpose_values(input.reals, input_dims, perm);
        out.integers = transpose_values(input.integers, input_dims, perm);
        return out;
    }
    if (op == "Cast") {
        if (is_float_type(output_dtype) && input.integers.empty()) return input;
        if (!is_int_type(output_dtype) || !input.reals.empty()) return std::nullopt;
        TensorValues out = input;
        if (output_dtype == TensorProto::BOOL)
            for (auto& x : out.integers) x = x != 0;
        return out;
    }
    return input;  // Identity, Reshape, Flatten, Squeeze, Unsqueeze, Dropout: the same elements
}

}  // namespace dnncost::io::detail::onnx_impl
