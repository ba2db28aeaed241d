#pragma once
/// @file model_checks.hpp
/// The checks a serialised model passes before the importer reads it: it parses as an ONNX
/// ModelProto with a graph, its opset is one libonnx knows, its nodes are put in topological
/// order (no cycles, no reads of undefined values) and each node satisfies its operator schema.
/// Every failure is an onnx_import_error naming the model and, where there is one, the node.
#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <queue>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include <dnncost/core/error.hpp>
#include <dnncost/io/onnx/proto.hpp>
#include <dnncost/io/onnx/shape_rules.hpp>

namespace dnncost::io::detail::onnx_impl {

template <class... A>
[[noreturn]] void fail_import(const std::string& source, A&&... parts) {
    raise<onnx_import_error>("ONNX import of '", source, "': ", std::forward<A>(parts)...);
}
template <class... A>
[[noreturn]] void fail_import_node(const std::string& source, const ::onnx::NodeProto& node, A&&... parts) {
    raise<onnx_import_error>("ONNX import of '", source, "': node '", node.name(), "' (", node.op_type(),
                             "): ", std::forward<A>(parts)...);
}

inline bool has_subgraph(const ::onnx::NodeProto& node) {
    for (const auto& a : node.attribute())
        if (a.has_g() || a.graphs_size() > 0) return true;
    return false;
}

/// Parse `bytes` into `model`; it must have a graph with nodes and an IR version.
inline void parse_model(const std::string& bytes, const std::string& source, ::onnx::ModelProto& model) {
    if (bytes.empty()) fail_import(source, "empty file (not an ONNX model)");
    if (bytes.size() > static_cast<std::size_t>(std::numeric_limits<int>::max()))
        fail_import(source, "file too large for protobuf (", bytes.size(), " bytes)");
    if (!model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
        fail_import(source, "not a valid ONNX model (protobuf parse failed; truncated or not an ONNX file)");
    if (!model.has_graph() || model.graph().node_size() == 0)
        fail_import(source, "not a valid ONNX model (no graph or no nodes)");
    if (model.ir_version() <= 0) fail_import(source, "not a valid ONNX model (missing ir_version)");
    const auto& g = model.graph();
    if (g.output_size() == 0) fail_import(source, "the graph has no outputs");
    std::unordered_set<std::string> seen;
    for (const auto& i : g.input())
        if (!seen.insert(i.name()).second) fail_import(source, "graph input '", i.name(), "' is declared twice");
    seen.clear();
    for (const auto& t : g.initializer())
        if (!t.name().empty() && !seen.insert(t.name()).second)
            fail_import(source, "initializer '", t.name(), "' is given twice");
    seen.clear();
    for (const auto& o : g.output())
        if (!seen.insert(o.name()).second) fail_import(source, "graph output '", o.name(), "' is declared twice");
}

/// The opset of the default domain, checked against the opsets this libonnx knows.
inline int default_opset(const ::onnx::ModelProto& model, const std::string& source) {
    int opset = -1;
    for (const auto& o : model.opset_import())
        if (o.domain().empty() || o.domain() == "ai.onnx") {
            if (opset >= 0 && opset != static_cast<int>(o.version()))
                fail_import(source, "two opsets (", opset, " and ", o.version(), ") for the default ONNX domain");
            opset = static_cast<int>(o.version());
        }
    if (opset < 0) {
        if (model.opset_import_size() == 0)
            opset = 1;  // IR 1-2 files: opset 1 implied
        else
            fail_import(source, "no opset for the default ONNX domain");
    }
    if (opset < 1 || opset > newest_readable_opset)
        fail_import(source, "opset ", opset, " is not supported (the importer reads opsets 1 to ", newest_readable_opset,
                    ")");
    return opset;
}

/// Reorder the node list topologically (ONNX requires it, not every writer obeys) and reject
/// cycles and reads of undefined values.
inline void sort_nodes(::onnx::ModelProto& model, const std::string& source) {
    auto& g = *model.mutable_graph();
    const int count = g.node_size();
    std::unordered_map<std::string, int> producer;
    for (int v = 0; v < count; ++v) {
        if (g.node(v).op_type().empty()) fail_import_node(source, g.node(v), "no operator type");
        for (const auto& o : g.node(v).output())
            if (!o.empty()) {
                if (!producer.emplace(o, v).second)
                    fail_import_node(source, g.node(v), "value '", o, "' is written by more than one node");
            }
    }
    std::unordered_set<std::string> defined;
    for (const auto& i : g.input()) defined.insert(i.name());
    for (const auto& i : g.initializer()) defined.insert(i.name());
    std::vector<std::vector<int>> successors(static_cast<std::size_t>(count));
    std::vector<int> in_degree(static_cast<std::size_t>(count), 0);
    for (int v = 0; v < count; ++v) {
        const auto& node = g.node(v);
        for (const auto& i : node.input()) {
            if (i.empty()) continue;
            auto it = producer.find(i);
            if (it != producer.end()) {
                successors[static_cast<std::size_t>(it->second)].push_back(v);
                ++in_degree[static_cast<std::size_t>(v)];
            } else if (!defined.count(i) && !has_subgraph(node)) {
                fail_import_node(source, node, "reads value '", i,
                                 "' that is neither a graph input, an initializer nor a node output");
            }
        }
    }
    // Kahn's algorithm with a min-heap: the smallest ready index first, O(E + N log N).
    std::vector<int> order;
    order.reserve(static_cast<std::size_t>(count));
    std::priority_queue<int, std::vector<int>, std::greater<>> ready;
    for (int v = 0; v < count; ++v)
        if (in_degree[static_cast<std::size_t>(v)] == 0) ready.push(v);
    while (!ready.empty()) {
        const int v = ready.top();
        ready.pop();
        order.push_back(v);
        for (int s : successors[static_cast<std::size_t>(v)])
            if (--in_degree[static_cast<std::size_t>(s)] == 0) ready.push(s);
    }
    if (static_cast<int>(order.size()) != count) {
        for (int v = 0; v < count; ++v)
            if (in_degree[static_cast<std::size_t>(v)] > 0)
                fail_import_node(source, g.node(v), "the graph has a cycle through this node");
    }
    bool sorted = true;
    for (int v = 0; v < count; ++v) sorted = sorted && order[static_cast<std::size_t>(v)] == v;
    if (!sorted) {
        google::protobuf::RepeatedPtrField<::onnx::NodeProto> nodes(g.GetArena());
        for (int v : order) *nodes.Add() = g.node(v);
        g.mutable_node()->Swap(&nodes);
    }
}

/// Values an enumerated attribute may take; ONNX's checker verifies attribute types only, and
/// shape inference and the cost model would treat an unknown value as the default.
inline const std::vector<std::string>* allowed_attribute_values(const std::string& op, const std::string& attribute) {
    static const std::vector<std::string> auto_pad{"NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"};
    static const std::vector<std::string> pad_mode{"constant", "reflect", "edge", "wrap"};
    static const std::vector<std::string> resize_mode{"nearest", "linear", "cubic", "bilinear", "trilinear"};
    static const std::vector<std::string> coordinate_mode{
        "half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners",
        "asymmetric", "tf_half_pixel_for_nn", "tf_crop_and_resize"};
    static const std::vector<std::string> nearest_mode{"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
    static const std::vector<std::string> depth_mode{"DCR", "CRD"};
    static const std::vector<std::string> gelu{"none", "tanh"};
    if (attribute == "auto_pad") return &auto_pad;
    if (op == "Pad" && attribute == "mode") return &pad_mode;
    if ((op == "Resize" || op == "Upsample") && attribute == "mode") return &resize_mode;
    if (op == "Resize" && attribute == "coordinate_transformation_mode") return &coordinate_mode;
    if (op == "Resize" && attribute == "nearest_mode") return &nearest_mode;
    if (op == "DepthToSpace" && attribute == "mode") return &depth_mode;
    if (op == "Gelu" && attribute == "approximate") return &gelu;
    return nullptr;
}
/// Integer attributes that are flags (0 or 1).
inline bool is_flag_attribute(const std::string& attribute) {
    return attribute == "ceil_mode" || attribute == "count_include_pad" || attribute == "keepdims" ||
           attribute == "transA" || attribute == "transB" || attribute == "noop_with_empty_axes" ||
           attribute == "allowzero";
}
/// Attribute values ONNX's checker lets through but no operator defines: unknown enumerated
/// strings, flags other than 0/1, non-positive strides/dilations/kernel sizes/groups (libonnx's
/// conv/pool shape inference divides by them without checking: SIGFPE), negative convolution
/// and pooling pads.
inline void check_attribute_values(const ::onnx::NodeProto& node, const std::string& source) {
    const std::string& op = node.op_type();
    const bool conv_or_pool = op == "Conv" || op == "ConvTranspose" || op == "MaxPool" || op == "AveragePool" ||
                              op == "LpPool" || op == "ConvInteger" || op == "QLinearConv";
    for (const auto& a : node.attribute()) {
        if (a.name() == "strides" || a.name() == "dilations" || a.name() == "kernel_shape")
            for (auto value : a.ints())
                if (value <= 0)
                    fail_import_node(source, node, "attribute '", a.name(), "' has non-positive value ", value);
        if (a.name() == "group" && a.has_i() && a.i() < 1)
            fail_import_node(source, node, "attribute 'group' is ", a.i(), ", not a positive group count");
        if (conv_or_pool && a.name() == "pads")
            for (auto value : a.ints())
                if (value < 0) fail_import_node(source, node, "attribute 'pads' has negative value ", value);
        if (is_flag_attribute(a.name()) && a.type() == ::onnx::AttributeProto::INT && a.i() != 0 && a.i() != 1)
            fail_import_node(source, node, "attribute '", a.name(), "' is ", a.i(), ", not 0 or 1");
        if (const auto* allowed = allowed_attribute_values(op, a.name());
            allowed && a.type() == ::onnx::AttributeProto::STRING &&
            std::find(allowed->begin(), allowed->end(), a.s()) == allowed->end()) {
            std::string list;
            for (const auto& v : *allowed) list += (list.empty() ? "" : ", ") + v;
            fail_import_node(source, node, "attribute '", a.name(), "' has the unknown value '", a.s(), "' (one of ",
                             list, ")");
        }
    }
}

/// ONNX's own checks of each node against its schema (attribute types, input and output
/// counts), so that malformed nodes are rejected before shape inference reads them. `opset` is
/// the model's, `schema_opset` the newest libonnx knows up to it: an operator changed in
/// between is not checked against its older schema.
inline void check_nodes(const ::onnx::ModelProto& model, int opset, int schema_opset, const std::string& source) {
    ::onnx::checker::CheckerContext context;
    context.set_ir_version(static_cast<int>(std::max<std::int64_t>(model.ir_version(), 4)));
    std::unordered_map<std::string, int> opsets;
    for (const auto& o : model.opset_import()) opsets[o.domain()] = static_cast<int>(o.version());
    opsets[""] = schema_opset;
    context.set_opset_imports(opsets);
    ::onnx::checker::LexicalScopeContext scope;
    std::unordered_map<std::string, bool> has_schema;  // one lookup per operator type
    for (const auto& node : model.graph().node()) {
        check_attribute_values(node, source);
        auto [it, fresh] = has_schema.try_emplace(node.domain() + '\n' + node.op_type(), false);
        if (fresh) {
            const auto change = op_change(node.op_type());
            const bool newer = change && change->since > schema_opset && change->since <= opset &&
                               (node.domain().empty() || node.domain() == "ai.onnx");
            it->second = !newer && ::onnx::OpSchemaRegistry::Schema(node.op_type(), schema_opset, node.domain());
        }
        if (!it->second) continue;
        try {
            ::onnx::checker::check_node(node, context, scope);
        } catch (const std::exception& e) {
            fail_import_node(source, node, "invalid node: ", e.what());
        }
    }
}

}  // namespace dnncost::io::detail::onnx_impl
