#pragma once
/// @file inference.hpp
/// The shape side of an import: the model being read, libonnx's shape inference over it, and
/// the importer's own rules (shape_rules.hpp) where libonnx gives no shape or, for an opset past
/// libonnx's newest, would give a wrong one. The Importer (import.hpp) builds on it.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include <google/protobuf/arena.h>

#include <dnncost/graph/graph.hpp>
#include <dnncost/io/onnx/model_checks.hpp>
#include <dnncost/io/onnx/proto.hpp>
#include <dnncost/io/onnx/shape_rules.hpp>
#include <dnncost/io/onnx/tensor_data.hpp>

namespace dnncost::io::detail::onnx_impl {

class ShapeInference {
protected:
    explicit ShapeInference(std::string source) : m_source(std::move(source)) {}

    template <class... A>
    [[noreturn]] void fail(A&&... parts) const {
        fail_import(m_source, std::forward<A>(parts)...);
    }
    template <class... A>
    [[noreturn]] void fail_node(const ::onnx::NodeProto& node, A&&... parts) const {
        if (op_of(node) == node.op_type()) fail_import_node(m_source, node, std::forward<A>(parts)...);
        ::onnx::NodeProto named;  // a renamed node is reported under its real operator type
        named.set_name(node.name());
        named.set_op_type(op_of(node));
        fail_import_node(m_source, named, std::forward<A>(parts)...);
    }

    /// A model newer than libonnx is inferred with libonnx's newest schemas; operators whose
    /// shapes changed since are renamed with a private prefix, so that libonnx leaves them to
    /// the importer's own rules (shape_rules.hpp). op_of() gives the real operator type back.
    void read_newer_opset() {
        if (m_opset <= m_schema_opset) return;
        for (auto& o : *m_model.mutable_opset_import())
            if (o.domain().empty() || o.domain() == "ai.onnx") o.set_version(m_schema_opset);
        for (auto& node : *m_model.mutable_graph()->mutable_node()) {
            if (!default_domain(node)) continue;
            const auto change = op_change(node.op_type());
            if (change && change->shapes && change->since > m_schema_opset && change->since <= m_opset)
                node.set_op_type(std::string(own_rule_prefix) + node.op_type());
        }
    }
    static constexpr std::string_view own_rule_prefix = "dnncost.own_shape_rule.";
    static std::string op_of(const ::onnx::NodeProto& node) {
        const auto& op = node.op_type();
        return op.rfind(own_rule_prefix, 0) == 0 ? op.substr(own_rule_prefix.size()) : op;
    }
    static bool default_domain(const ::onnx::NodeProto& node) {
        return node.domain().empty() || node.domain() == "ai.onnx";
    }
    /// The importer's own shape rule for a node, if it has one.
    static ShapeRule rule_for(const ::onnx::NodeProto& node) {
        return find_shape_rule(default_domain(node) ? std::string() : node.domain(), op_of(node));
    }

    /// Outputs of operators libonnx has no schema for get an element type before inference:
    /// libonnx 1.12 dereferences the missing type of such a value when a Shape reads it.
    void type_outputs_without_schema() {
        if (m_without_schema.empty()) return;
        auto& g = *m_model.mutable_graph();
        std::unordered_set<std::string> typed;
        for (const auto& v : g.value_info())
            if (v.type().has_tensor_type()) typed.insert(v.name());
        for (const auto& o : g.output())
            if (o.type().has_tensor_type()) typed.insert(o.name());
        for (const auto& name : m_without_schema) {
            if (typed.count(name) || m_constants.count(name)) continue;
            auto* value = g.add_value_info();
            value->set_name(name);
            value->mutable_type()->mutable_tensor_type()->set_elem_type(TensorProto::FLOAT);
        }
    }

    void infer(int error_mode) {
        type_outputs_without_schema();
        try {
            ::onnx::ShapeInferenceOptions options(false, error_mode, true);
            ::onnx::shape_inference::InferShapes(m_model, ::onnx::OpSchemaRegistry::Instance(), options);
        } catch (const std::exception& e) {
            if (error_mode == 0) fail("ONNX shape inference failed: ", e.what());
            throw;
        }
    }

    /// Element type and shape of a value (-1 for an unknown dimension, nullopt for an unknown rank).
    struct TypeInfo {
        int dtype = 0;
        std::optional<graph::Shape> shape;
    };
    void collect_types() {
        m_types.clear();
        const auto& g = m_model.graph();
        m_types.reserve(static_cast<std::size_t>(g.input_size() + g.value_info_size() + g.output_size()) +
                        m_constants.size());
        auto add = [&](const ::onnx::ValueInfoProto& value) {
            if (!value.type().has_tensor_type()) return;
            const auto& tensor_type = value.type().tensor_type();
            TypeInfo info;
            info.dtype = tensor_type.elem_type();
            if (tensor_type.has_shape()) {
                graph::Shape shape;
                for (const auto& d : tensor_type.shape().dim()) shape.push_back(d.has_dim_value() ? d.dim_value() : -1);
                info.shape = shape;
            }
            auto& slot = m_types[value.name()];
            if (!slot.shape || (info.shape && known(*info.shape))) slot = info;
        };
        for (const auto& value : g.input()) add(value);
        for (const auto& value : g.value_info()) add(value);
        for (const auto& value : g.output()) add(value);
        for (const auto& [name, c] : m_constants) m_types[name] = TypeInfo{c.dtype, c.dims};
    }
    static bool known(const graph::Shape& shape) {
        return std::all_of(shape.begin(), shape.end(), [](std::int64_t d) { return d >= 0; });
    }
    std::optional<graph::Shape> known_shape(const std::string& name) const {
        auto it = m_types.find(name);
        if (it == m_types.end() || !it->second.shape || !known(*it->second.shape)) return std::nullopt;
        return it->second.shape;
    }

    /// What a shape rule sees of a node: known input shapes and constant values.
    ShapeQuery query(const ::onnx::NodeProto& node) const {
        ShapeQuery q{node, m_opset, {}, {}};
        for (const auto& i : node.input()) {
            q.shapes.push_back(i.empty() ? std::nullopt : known_shape(i));
            const auto c = i.empty() ? m_constants.end() : m_constants.find(i);
            q.values.push_back(c == m_constants.end() ? nullptr : &c->second);
        }
        return q;
    }
    /// Outputs the importer's own rules can give where inference gave none; recorded as
    /// value_info so that the next inference round carries them on. True if any was added.
    bool apply_shape_rules() {
        auto& g = *m_model.mutable_graph();
        std::unordered_map<std::string, int> declared;
        bool any = false;
        for (const auto& node : g.node()) {
            if (has_subgraph(node)) continue;
            const bool missing = std::any_of(node.output().begin(), node.output().end(),
                                             [&](const std::string& o) { return !o.empty() && !known_shape(o); });
            if (!missing) continue;
            const ShapeRule rule = rule_for(node);
            if (!rule) continue;
            const bool schema_known =
                ::onnx::OpSchemaRegistry::Schema(node.op_type(), m_schema_opset, node.domain()) != nullptr;
            std::vector<graph::Shape> shapes;
            try {
                shapes = rule(query(node));
            } catch (const cannot_infer&) {
                continue;
            }
            if (declared.empty())
                for (int k = 0; k < g.value_info_size(); ++k) declared.emplace(g.value_info(k).name(), k);
            for (std::size_t k = 0; k < shapes.size() && k < static_cast<std::size_t>(node.output_size()); ++k) {
                const auto& name = node.output(static_cast<int>(k));
                if (name.empty() || known_shape(name)) continue;
                // libonnx types what it knows; the rest take their first input's type
                int dtype = schema_known && m_types.count(name) ? m_types[name].dtype : 0;
                if (dtype == 0 && node.input_size() > 0 && m_types.count(node.input(0)))
                    dtype = m_types[node.input(0)].dtype;
                if (dtype == 0) dtype = TensorProto::FLOAT;
                const auto slot = declared.find(name);
                auto* value = slot != declared.end() ? g.mutable_value_info(slot->second) : g.add_value_info();
                if (slot == declared.end()) declared.emplace(name, g.value_info_size() - 1);
                value->Clear();
                value->set_name(name);
                auto* tensor_type = value->mutable_type()->mutable_tensor_type();
                tensor_type->set_elem_type(dtype);
                auto* shape = tensor_type->mutable_shape();
                for (auto d : shapes[k]) shape->add_dim()->set_dim_value(d);
                m_types[name] = TypeInfo{dtype, shapes[k]};
                any = true;
            }
        }
        return any;
    }

    std::string m_source;
    // The model lives on an arena: a 100k-node graph is millions of small protobuf objects,
    // which an arena allocates in blocks and frees at once.
    google::protobuf::Arena m_arena;
    ::onnx::ModelProto& m_model = *google::protobuf::Arena::CreateMessage<::onnx::ModelProto>(&m_arena);
    int m_opset = 0;         ///< the model's opset of the default domain
    int m_schema_opset = 0;  ///< the newest opset libonnx knows up to m_opset
    std::vector<std::string> m_without_schema;  ///< outputs of nodes libonnx has no schema for
    std::unordered_map<std::string, ConstantTensor> m_constants;  ///< values known at import time
    std::unordered_map<std::string, TypeInfo> m_types;            ///< element types and shapes
};

}  // namespace dnncost::io::detail::onnx_impl
