#pragma once
/// @file export.hpp
/// Writing a graph::Graph as an ONNX model (io::export_onnx, io::export_onnx_bytes).
///
/// By default (WeightData::none) weights are written as *typed graph inputs* marked
/// onnx_weight_marker: the graph carries shapes but no weight values, and an initializer without
/// data is rejected by onnx::checker. The exception are small constants whose values the graph
/// knows (graph::Tensor::data, e.g. NB201's zero of `none`): they are written as initializers
/// with their data. Import turns the marked inputs back into weights, so export followed by
/// import gives back the same graph.
///
/// With WeightData::random or WeightData::model every weight is an initializer with values (raw
/// data in its own element type), so that a runtime can fold and fuse constants: known values
/// first (graph::Tensor::data, then OnnxExportOptions::weight_values), then values the shapes
/// determine, then seeded random values of a trained network's scale (weight_init.hpp). An
/// integer constant is never random: without known values it is an error naming it.
#include <cstdint>
#include <filesystem>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include <dnncost/core/config.hpp>
#include <dnncost/core/error.hpp>
#include <dnncost/graph/graph.hpp>
#include <dnncost/io/file.hpp>
#include <dnncost/io/onnx/api.hpp>
#include <dnncost/io/onnx/options.hpp>
#include <dnncost/io/onnx/proto.hpp>
#include <dnncost/io/onnx/tensor_data.hpp>
#include <dnncost/io/onnx/weight_init.hpp>
#include <dnncost/io/onnx/weight_values.hpp>

namespace dnncost::io {

namespace detail::onnx_impl {

inline void set_value_info(::onnx::ValueInfoProto& value, const graph::Tensor& t) {
    value.set_name(t.name);
    auto* tensor_type = value.mutable_type()->mutable_tensor_type();
    tensor_type->set_elem_type(static_cast<int>(t.dtype));
    auto* shape = tensor_type->mutable_shape();
    for (auto d : t.shape) shape->add_dim()->set_dim_value(d);
}

inline void set_attribute(::onnx::AttributeProto& proto, const graph::Attribute& a) {
    using A = ::onnx::AttributeProto;
    proto.set_name(a.name);
    std::visit(
        [&](const auto& value) {
            using T = std::decay_t<decltype(value)>;
            if constexpr (std::is_same_v<T, std::int64_t>) {
                proto.set_type(A::INT);
                proto.set_i(value);
            } else if constexpr (std::is_same_v<T, double>) {
                proto.set_type(A::FLOAT);
                proto.set_f(static_cast<float>(value));
            } else if constexpr (std::is_same_v<T, std::string>) {
                proto.set_type(A::STRING);
                proto.set_s(value);
            } else if constexpr (std::is_same_v<T, std::vector<std::int64_t>>) {
                proto.set_type(A::INTS);
                for (auto x : value) proto.add_ints(x);
            } else if constexpr (std::is_same_v<T, std::vector<double>>) {
                proto.set_type(A::FLOATS);
                for (auto x : value) proto.add_floats(static_cast<float>(x));
            } else {
                proto.set_type(A::STRINGS);
                for (const auto& x : value) proto.add_strings(x);
            }
        },
        a.value);
}

/// A constant of the tensor's shape and type holding `values` (or zeros when empty).
inline ConstantTensor constant_of(const graph::Tensor& t, const std::vector<double>& values) {
    ConstantTensor c;
    c.dtype = static_cast<int>(t.dtype);
    c.dims = t.shape;
    c.has_data = true;
    const auto count = static_cast<std::size_t>(t.elements());
    if (c.is_float()) {
        c.floats = values.empty() ? std::vector<double>(count, 0.0) : values;
    } else if (values.empty()) {
        c.ints.assign(count, 0);
    } else {
        for (double x : values) c.ints.push_back(static_cast<std::int64_t>(x));
    }
    return c;
}

/// Write weight `tensor` as an initializer with values (WeightData::random or model).
inline void write_weight_with_values(const graph::Graph& g, int tensor, const OnnxExportOptions& options,
                                     TensorProto& proto) {
    const auto& t = g.tensor(tensor);
    const int dtype = static_cast<int>(t.dtype);
    if (!writes_values_of(dtype))
        raise<config_error>("export_onnx: weight '", t.name, "' of graph '", g.name(), "' has element type ", dtype,
                            ", which cannot be written with values");
    const auto count = static_cast<std::size_t>(t.elements());
    if (!t.data.empty()) {
        write_values(
            t.name, dtype, t.shape, count, [&](std::size_t k) { return t.data[k]; }, proto);
        return;
    }
    const bool integer = is_int_type(dtype);
    if (options.weight_values && (integer || options.weights == WeightData::model)) {
        const auto it = options.weight_values->find(t.name);
        if (it != options.weight_values->end() && it->second.size() == count &&
            (integer ? it->second.reals.empty() : it->second.integers.empty())) {
            write_values(t.name, dtype, t.shape, it->second, proto);
            return;
        }
    }
    if (auto derived = values_from_shapes(g, tensor, options.opset)) {
        write_values(t.name, dtype, t.shape, *derived, proto);
        return;
    }
    if (integer) {
        const auto use = first_use(g, tensor);
        raise<config_error>("export_onnx: integer constant '", t.name, "' of graph '", g.name(), "'",
                            use ? " (read by node '" + use->node->name + "', " + use->node->op_type + ")" : "",
                            " has no known values, and integer constants are never random: give them in "
                            "graph::Tensor::data or OnnxExportOptions::weight_values (import the model with "
                            "OnnxImportOptions::weight_values)");
    }
    write_values(t.name, dtype, t.shape, count, random_values(g, tensor, options.seed), proto);
}

inline ::onnx::ModelProto to_model(const graph::Graph& g, const OnnxExportOptions& options) {
    if (options.opset < 7) raise<config_error>("export_onnx: opset ", options.opset, " is older than the supported 7");
    ::onnx::ModelProto model;
    model.set_ir_version(options.opset >= 15 ? 8 : 7);
    model.set_producer_name(options.producer);
    model.set_producer_version("0.1.0");
    auto* opset = model.add_opset_import();
    opset->set_domain("");
    opset->set_version(options.opset);
    auto& graph_proto = *model.mutable_graph();
    graph_proto.set_name(g.name().empty() ? "dnncost" : g.name());
    // Inputs first, then weights (marked), in tensor order; activations get value_info so that a
    // reader does not depend on shape inference.
    for (const auto& t : g.tensors()) {
        if (t.kind == graph::TensorKind::input) set_value_info(*graph_proto.add_input(), t);
    }
    if (options.weights == WeightData::model && !options.weight_values)
        raise<config_error>("export_onnx: WeightData::model needs OnnxExportOptions::weight_values");
    for (int index = 0; index < static_cast<int>(g.num_tensors()); ++index) {
        const auto& t = g.tensor(index);
        if (t.kind != graph::TensorKind::weight) continue;
        if (options.weights != WeightData::none) {
            write_weight_with_values(g, index, options, *graph_proto.add_initializer());
            continue;
        }
        if (!t.data.empty() && keeps_data_type(static_cast<int>(t.dtype)) &&
            t.elements() <= max_kept_constant_elements) {
            // a constant with known values: a real initializer
            write_tensor(constant_of(t, t.data), t.name, *graph_proto.add_initializer());
            continue;
        }
        auto& value = *graph_proto.add_input();
        set_value_info(value, t);
        value.set_doc_string(std::string(onnx_weight_marker));
    }
    for (const auto& t : g.tensors()) {
        if (t.is_output)
            set_value_info(*graph_proto.add_output(), t);
        else if (t.kind == graph::TensorKind::activation)
            set_value_info(*graph_proto.add_value_info(), t);
    }
    for (int v : g.topological_order()) {
        const auto& node = g.node(v);
        auto& node_proto = *graph_proto.add_node();
        node_proto.set_op_type(node.op_type);
        node_proto.set_name(node.name);
        for (int t : node.inputs) node_proto.add_input(t < 0 ? std::string() : g.tensor(t).name);
        for (int t : node.outputs) node_proto.add_output(g.tensor(t).name);
        for (const auto& a : node.attributes) set_attribute(*node_proto.add_attribute(), a);
        // A Constant operator without a value (a folded result, as in pruned NB201 graphs) is
        // written as zeros of its output shape so that the file is a valid ONNX model.
        if (node.op_type == "Constant" && !node.has_attr("value") && node.outputs.size() == 1) {
            const auto& t = g.tensor(node.outputs[0]);
            if (t.elements() > (std::int64_t{1} << 20))
                raise<config_error>("export_onnx: constant '", node.name, "' is too large to write as zeros");
            auto& value = *node_proto.add_attribute();
            value.set_name("value");
            value.set_type(::onnx::AttributeProto::TENSOR);
            write_tensor(constant_of(t, {}), t.name, *value.mutable_t());
        }
    }
    return model;
}

}  // namespace detail::onnx_impl

#if DNNCOST_HEADER_ONLY
DNNCOST_FUNC std::string export_onnx_bytes(const graph::Graph& g, const OnnxExportOptions& options) {
    auto model = detail::onnx_impl::to_model(g, options);
    try {
        ::onnx::checker::check_model(model);
    } catch (const std::exception& e) {
        raise<config_error>("export_onnx: graph '", g.name(), "' does not make a valid ONNX model at opset ",
                            options.opset, ": ", e.what());
    }
    std::string out;
    if (!model.SerializeToString(&out)) raise<io_error>("export_onnx: cannot serialise graph '", g.name(), "'");
    return out;
}

DNNCOST_FUNC void export_onnx(const graph::Graph& g, const std::filesystem::path& path,
                              const OnnxExportOptions& options) {
    write_file_atomic(path, export_onnx_bytes(g, options));
}
#endif

}  // namespace dnncost::io
