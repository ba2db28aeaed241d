#pragma once
/// @file import.hpp
/// Reading an ONNX model into a graph::Graph (io::import_onnx, io::import_onnx_bytes).
///
/// Import runs ONNX shape inference, then folds the shape computations that exporters emit by
/// evaluating them on small integer tensors (fold.hpp), feeds the folded values back as
/// initializers and runs inference again, until every compute node has concrete shapes. Folded
/// nodes, Constant nodes and layout operators applied to weights (Identity, Transpose, Reshape,
/// Cast, ... of an initializer) do not appear in the resulting graph: their outputs become weight
/// tensors of the nodes that read them. Graph inputs marked onnx_weight_marker become weights.
/// When asked (OnnxImportOptions::weight_values), the values of the resulting weights are kept
/// as well, followed through the folded layout operators.
#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include <google/protobuf/arena.h>

#include <dnncost/core/config.hpp>
#include <dnncost/core/error.hpp>
#include <dnncost/graph/graph.hpp>
#include <dnncost/io/file.hpp>
#include <dnncost/io/onnx/api.hpp>
#include <dnncost/io/onnx/fold.hpp>
#include <dnncost/io/onnx/inference.hpp>
#include <dnncost/io/onnx/model_checks.hpp>
#include <dnncost/io/onnx/options.hpp>
#include <dnncost/io/onnx/proto.hpp>
#include <dnncost/io/onnx/shape_rules.hpp>
#include <dnncost/io/onnx/tensor_data.hpp>
#include <dnncost/io/onnx/weight_values.hpp>

namespace dnncost::io {

namespace detail::onnx_impl {

class Importer : private ShapeInference {
public:
    Importer(std::string source, const OnnxImportOptions& options) : ShapeInference(std::move(source)), m_options(options) {}

    graph::Graph run(const std::string& bytes) {
        parse_model(bytes, m_source, m_model);
        m_opset = default_opset(m_model, m_source);
        m_schema_opset = std::min(m_opset, libonnx_opset());
        sort_nodes(m_model, m_source);
        check_nodes(m_model, m_opset, m_schema_opset, m_source);
        read_newer_opset();
        collect_constants();
        fix_input_shapes();
        take_declared_shapes();
        fold_loop();
        return build();
    }

private:
    void collect_constants() {
        auto& g = *m_model.mutable_graph();
        for (const auto& node : g.node())
            for (const auto& i : node.input()) m_consumed.insert(i);
        for (const auto& t : g.initializer()) {
            if (t.name().empty()) fail("an initializer has no name");
            m_constants[t.name()] = read_tensor(t, m_options.max_fold_elements);
            if (m_options.weight_values)
                if (auto values = read_values(t)) m_values.insert_or_assign(t.name(), std::move(*values));
        }
        std::unordered_set<std::string> marked;
        for (const auto& i : g.input())
            if (i.doc_string() == onnx_weight_marker) marked.insert(i.name());
        // Graph inputs that are initializers (IR < 4) or carry dnncost's weight marker are weights.
        for (const auto& i : g.input()) {
            if (m_constants.count(i.name())) continue;
            if (marked.count(i.name())) {
                ConstantTensor c;
                c.dtype = i.type().tensor_type().elem_type();
                for (const auto& d : i.type().tensor_type().shape().dim()) {
                    if (!d.has_dim_value() || d.dim_value() < 0)
                        fail("weight input '", i.name(), "' has an unknown dimension");
                    c.dims.push_back(d.dim_value());
                }
                const auto count = checked_numel(c.dims);
                if (!count || *count > max_plausible_elements)
                    fail("weight input '", i.name(), "' has an implausible shape ", graph::to_string(c.dims));
                m_constants[i.name()] = c;
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
            google::protobuf::RepeatedPtrField<::onnx::ValueInfoProto> keep(g.GetArena());
            for (const auto& i : g.input())
                if (!m_weight_inputs.count(i.name())) *keep.Add() = i;
            for (const auto& name : m_weight_inputs) write_tensor(m_constants[name], name, *g.add_initializer());
            g.mutable_input()->Swap(&keep);
        }
        // Remove initializers from the graph inputs so that shape inference treats them uniformly.
        google::protobuf::RepeatedPtrField<::onnx::ValueInfoProto> real_inputs(g.GetArena());
        for (const auto& i : g.input())
            if (!m_constants.count(i.name())) *real_inputs.Add() = i;
        g.mutable_input()->Swap(&real_inputs);
    }

    void fix_input_shapes() {
        auto& g = *m_model.mutable_graph();
        bool changed = false;
        if (m_options.batch_size < 1)
            fail("OnnxImportOptions::batch_size must be at least 1, got ", m_options.batch_size);
        for (const auto& [name, shape] : m_options.input_shapes) {  // a misspelt name would be silently ignored
            const bool known =
                std::any_of(g.input().begin(), g.input().end(), [&name = name](const auto& i) { return i.name() == name; });
            if (!known) fail("OnnxImportOptions::input_shapes names '", name, "', which is not a graph input");
            for (auto d : shape)
                if (d < 1)
                    fail("OnnxImportOptions::input_shapes gives '", name, "' the ", d < 0 ? "negative" : "zero",
                         " dimension ", d);
        }
        for (auto& i : *g.mutable_input()) {
            if (!i.type().has_tensor_type()) fail("graph input '", i.name(), "' is not a tensor");
            auto* tensor_type = i.mutable_type()->mutable_tensor_type();
            auto it = m_options.input_shapes.find(i.name());
            if (it != m_options.input_shapes.end()) {
                auto* shape = tensor_type->mutable_shape();
                shape->clear_dim();
                for (auto d : it->second) shape->add_dim()->set_dim_value(d);
                changed = true;
                continue;
            }
            if (!tensor_type->has_shape())
                fail("graph input '", i.name(), "' has no shape (give it in OnnxImportOptions::input_shapes)");
            auto* shape = tensor_type->mutable_shape();
            for (int k = 0; k < shape->dim_size(); ++k) {
                auto* d = shape->mutable_dim(k);
                if (d->has_dim_value() && d->dim_value() > 0) continue;
                if (d->has_dim_value()) {
                    fail("graph input '", i.name(), "' has dimension ", k, " of size ", d->dim_value(),
                         " (not positive); give its shape in OnnxImportOptions::input_shapes");
                } else if (k == 0) {
                    d->set_dim_value(m_options.batch_size);
                    changed = true;
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

    /// Shapes the file declares for node outputs (value_info, graph outputs) are set aside, so
    /// that shape inference computes every shape from the operators; build() compares the two.
    /// Outputs of operators ONNX does not know keep their declared shapes (nothing infers them).
    void take_declared_shapes() {
        auto& g = *m_model.mutable_graph();
        std::unordered_set<std::string> inferable;
        inferable.reserve(static_cast<std::size_t>(g.node_size()));
        // one schema lookup per operator type, not per node: wide graphs repeat a few types
        std::unordered_map<std::string, bool> has_schema;
        for (const auto& node : g.node()) {
            if (has_subgraph(node)) continue;
            auto [it, fresh] = has_schema.try_emplace(node.domain() + '\n' + node.op_type(), false);
            const bool schema = ::onnx::OpSchemaRegistry::Schema(node.op_type(), m_schema_opset, node.domain());
            if (fresh) it->second = schema || rule_for(node);
            if (!schema)
                for (const auto& o : node.output())
                    if (!o.empty()) m_without_schema.push_back(o);
            if (it->second)
                for (const auto& o : node.output()) inferable.insert(o);
        }
        m_declared.reserve(static_cast<std::size_t>(g.value_info_size() + g.output_size()));
        auto declared = [&](const ::onnx::ValueInfoProto& value) {
            if (!inferable.count(value.name()) || !value.type().has_tensor_type()) return;
            const auto& tensor_type = value.type().tensor_type();
            if (!tensor_type.has_shape()) return;
            graph::Shape shape;
            for (const auto& d : tensor_type.shape().dim()) shape.push_back(d.has_dim_value() ? d.dim_value() : -1);
            m_declared.insert_or_assign(value.name(), std::move(shape));
        };
        google::protobuf::RepeatedPtrField<::onnx::ValueInfoProto> keep(g.GetArena());
        for (const auto& value : g.value_info()) {
            declared(value);
            if (!inferable.count(value.name())) *keep.Add() = value;
        }
        g.mutable_value_info()->Swap(&keep);
        for (auto& o : *g.mutable_output()) {
            declared(o);
            if (inferable.count(o.name()) && o.type().has_tensor_type())
                o.mutable_type()->mutable_tensor_type()->clear_shape();
        }
    }
    /// A declared shape agrees with an inferred one: same rank, equal where both are known.
    static bool agrees(const graph::Shape& declared, const graph::Shape& inferred) {
        if (declared.size() != inferred.size()) return false;
        for (std::size_t k = 0; k < declared.size(); ++k)
            if (declared[k] >= 0 && inferred[k] >= 0 && declared[k] != inferred[k]) return false;
        return true;
    }
    /// ONNX's strict shape inference over the model as it stands: its error, if it finds one.
    const std::optional<std::string>& strict_inference_error() {
        if (!m_strict_checked) {
            m_strict_checked = true;
            ::onnx::ModelProto copy = m_model;
            try {
                ::onnx::ShapeInferenceOptions options(false, 1, true);
                ::onnx::shape_inference::InferShapes(copy, ::onnx::OpSchemaRegistry::Instance(), options);
            } catch (const std::exception& e) {
                m_strict_error = e.what();
            }
        }
        return m_strict_error;
    }
    /// The shape of node output `name`: inferred, checked against the file's declaration. A
    /// declared shape is used only where inference gives none and finds no error in the model.
    std::optional<graph::Shape> output_shape(const ::onnx::NodeProto& node, const std::string& name) {
        const auto declared = m_declared.find(name);
        const auto it = m_types.find(name);
        const bool has_inferred = it != m_types.end() && it->second.shape;
        if (declared != m_declared.end() && has_inferred && !agrees(declared->second, *it->second.shape))
            fail_node(node, "output '", name, "' is declared with shape ", graph::to_string(declared->second),
                      " but the operator gives ", graph::to_string(*it->second.shape));
        if (auto shape = known_shape(name)) return shape;
        if (declared == m_declared.end() || !known(declared->second)) return std::nullopt;
        if (strict_inference_error()) return std::nullopt;
        return declared->second;
    }

    /// Infer, fold what became computable, feed the folded values back, repeat.
    void fold_loop() {
        auto& g = *m_model.mutable_graph();
        // each round folds a node or infers an output, so the rounds are bounded by the graph
        const int rounds = 256 + g.node_size();
        for (int round = 0; round < rounds; ++round) {
            infer(0);
            collect_types();
            const bool inferred = apply_shape_rules();
            std::vector<char> folded(static_cast<std::size_t>(g.node_size()), 0);
            bool any = false;
            for (int v = 0; v < g.node_size(); ++v) {
                const auto& node = g.node(v);
                if (!default_domain(node)) continue;
                if (has_subgraph(node)) continue;
                if (try_fold(node)) {
                    folded[static_cast<std::size_t>(v)] = 1;
                    any = true;
                }
            }
            if (!any) {
                if (inferred) continue;
                return;
            }
            google::protobuf::RepeatedPtrField<::onnx::NodeProto> keep(g.GetArena());
            for (int v = 0; v < g.node_size(); ++v)
                if (!folded[static_cast<std::size_t>(v)]) *keep.Add() = g.node(v);
            g.mutable_node()->Swap(&keep);
            // Inferred types of values that are now initializers must not clash with them.
            google::protobuf::RepeatedPtrField<::onnx::ValueInfoProto> value_info(g.GetArena());
            for (const auto& x : g.value_info())
                if (!m_constants.count(x.name())) *value_info.Add() = x;
            g.mutable_value_info()->Swap(&value_info);
            for (const auto& name : m_new_constants) write_tensor(m_constants[name], name, *g.add_initializer());
            m_new_constants.clear();
        }
        fail("shape folding did not converge after ", rounds, " rounds");
    }

    /// Why a node's output shape is unknown: the input whose shape or value is missing (and
    /// where that value comes from), what is wrong with known values, or ONNX's own reason.
    std::string why_unknown(const ::onnx::NodeProto& node) {
        std::optional<cannot_infer> reason;
        if (const ShapeRule rule = rule_for(node)) {
            try {
                (void)rule(query(node));
            } catch (const cannot_infer& e) {
                reason = e;
            }
        }
        for (int k : value_inputs(op_of(node), m_opset)) {
            if (reason || k >= node.input_size() || node.input(k).empty()) continue;
            const auto c = m_constants.find(node.input(k));
            if (c == m_constants.end() || !c->second.has_data) reason = cannot_infer{k, true, {}};
        }
        for (int k = 0; k < node.input_size() && !reason; ++k)
            if (!node.input(k).empty() && !known_shape(node.input(k))) reason = cannot_infer{k, false, {}};
        if (!reason || (reason->input < 0 && reason->why.empty())) return explain(node);
        if (!reason->why.empty()) return ": " + reason->why;
        const auto& name = node.input(reason->input);
        return std::string(": the ") + (reason->value ? "value" : "shape") + " of input " +
               std::to_string(reason->input) + " ('" + name + "') is not known at import time" + origin(name, 0);
    }
    /// Where an unknown value comes from: the node that failed to compute it and why, or the
    /// graph input or data-dependent operator it is read from.
    std::string origin(const std::string& name, int depth) {
        if (const auto f = m_fold_failures.find(name); f != m_fold_failures.end()) return ": " + f->second;
        if (depth > 64) return "";
        const auto& g = m_model.graph();
        for (const auto& node : g.node()) {
            if (std::find(node.output().begin(), node.output().end(), name) == node.output().end()) continue;
            const std::string op = op_of(node);
            if (!fold_table().find(op))
                return ": node '" + node.name() + "' (" + op +
                       ") computes it from tensor data, which import does not evaluate";
            for (const auto& i : node.input()) {
                if (i.empty()) continue;
                const auto c = m_constants.find(i);
                if (c == m_constants.end() || !c->second.has_data) {
                    if (op == "Shape" || op == "Size")
                        return known_shape(i) ? ""
                                              : ": node '" + node.name() + "' (" + op + ") reads '" + i +
                                                    "', whose shape is not known";
                    return origin(i, depth + 1);
                }
            }
            return ": node '" + node.name() + "' (" + op + ") could not be evaluated";
        }
        if (std::find(m_inputs.begin(), m_inputs.end(), name) != m_inputs.end())
            return ": it is graph input '" + name + "', whose values are known only when the network runs";
        return "";
    }

    /// True when a node's optional extra outputs (from `first` on, e.g. a Dropout mask) are unused.
    bool outputs_unused(const ::onnx::NodeProto& node, int first) const {
        for (int k = first; k < node.output_size(); ++k)
            if (!node.output(k).empty() && m_consumed.count(node.output(k))) return false;
        return true;
    }

    bool try_fold(const ::onnx::NodeProto& node) {
        // Graph outputs stay computed by a node (a Constant producing the output is kept, so that
        // the network still has an operator writing its result).
        for (const auto& o : node.output())
            if (is_graph_output(o)) return false;
        if (node.output_size() == 0) return false;
        std::vector<const ConstantTensor*> inputs;
        bool all_constant = true, all_data = true;
        for (const auto& i : node.input()) {
            if (i.empty()) {
                inputs.push_back(nullptr);
                continue;
            }
            auto it = m_constants.find(i);
            if (it == m_constants.end()) {
                inputs.push_back(nullptr);
                all_constant = false;
                all_data = false;
            } else {
                inputs.push_back(&it->second);
                all_data = all_data && it->second.has_data;
            }
        }
        const std::string op = op_of(node);
        if (const FoldRule* rule = fold_table().find(op);
            rule && (rule->reads != FoldReads::input_values || all_data)) {
            std::optional<graph::Shape> input0_shape;
            if (rule->reads == FoldReads::input_shape && node.input_size() > 0)
                input0_shape = known_shape(node.input(0));
            try {
                auto outputs = rule->evaluate(
                    FoldRequest{node, m_opset, inputs, std::move(input0_shape), m_options.max_fold_elements});
                if (static_cast<int>(outputs.size()) > node.output_size()) return false;
                for (const auto& out : outputs)
                    if (out.size() > m_options.max_fold_elements) return false;
                // Optional extra outputs (e.g. a Dropout mask) must be unused for the fold to be valid.
                if (!outputs_unused(node, static_cast<int>(outputs.size()))) return false;
                for (std::size_t k = 0; k < outputs.size(); ++k)
                    add_constant(node.output(static_cast<int>(k)), std::move(outputs[k]));
                return true;
            } catch (const cannot_fold& e) {
                if (!e.why.empty())
                    for (const auto& o : node.output())
                        m_fold_failures[o] = "node '" + node.name() + "' (" + op + ") " + e.why;
            }
        }
        // A layout operator applied to a weight without data: the result is a weight whose shape
        // inference has found.
        if (all_constant && node.input_size() > 0 && is_weight_layout_op(op) && inputs[0]) {
            if (!outputs_unused(node, 1)) return false;
            auto shape = known_shape(node.output(0));
            if (!shape) return false;
            ConstantTensor c;
            c.dtype = m_types[node.output(0)].dtype;
            if (c.dtype == 0) c.dtype = inputs[0]->dtype;
            c.dims = *shape;
            if (m_options.weight_values) follow_values(node, *inputs[0], c);
            add_constant(node.output(0), c);
            return true;
        }
        return false;
    }
    /// Values of a layout operator's output from its input's values (kept weight values only).
    void follow_values(const ::onnx::NodeProto& node, const ConstantTensor& input, const ConstantTensor& output) {
        const auto it = m_values.find(node.input(0));
        if (it == m_values.end()) return;
        auto values = layout_values(node, it->second, input.dims, output.dtype);
        if (values && values->size() == static_cast<std::size_t>(output.size()))
            m_values.insert_or_assign(node.output(0), std::move(*values));
    }
    /// Hand the values of a weight of the built graph to the caller (OnnxImportOptions::weight_values).
    void keep_values(const std::string& name, const ConstantTensor& c) {
        if (!m_options.weight_values) return;
        if (const auto it = m_values.find(name); it != m_values.end())
            (*m_options.weight_values)[name] = std::move(it->second);  // each weight is built once
        else if (c.has_data)
            (*m_options.weight_values)[name] = values_of(c);
    }
    void add_constant(const std::string& name, ConstantTensor c) {
        if (name.empty()) return;
        m_constants[name] = std::move(c);
        m_new_constants.push_back(name);
        m_types[name] = TypeInfo{m_constants[name].dtype, m_constants[name].dims};
    }
    bool is_graph_output(const std::string& name) {
        if (m_graph_outputs.empty())
            for (const auto& o : m_model.graph().output()) m_graph_outputs.insert(o.name());
        return m_graph_outputs.count(name) > 0;
    }

    std::string explain(const ::onnx::NodeProto& node) {
        // Run inference again in strict mode to obtain ONNX's own reason, if it has one.
        ::onnx::ModelProto copy = m_model;
        try {
            ::onnx::ShapeInferenceOptions options(false, 1, true);
            ::onnx::shape_inference::InferShapes(copy, ::onnx::OpSchemaRegistry::Instance(), options);
        } catch (const std::exception& e) {
            return std::string("; ONNX shape inference says: ") + e.what();
        }
        const auto* schema = ::onnx::OpSchemaRegistry::Schema(node.op_type(), m_schema_opset, node.domain());
        if (!schema && !rule_for(node))
            return "; libonnx has no shape inference for this operator at opset " + std::to_string(m_opset) +
                   " and the file declares no shape for it";
        return "";
    }

    /// Constant Gather indices must lie in [-s, s - 1] for the data's extent s along the axis;
    /// shape inference does not look at index values, and a runtime would read out of bounds.
    void check_gather_indices(const ::onnx::NodeProto& node) const {
        if (node.input_size() < 2) return;
        const auto c = m_constants.find(node.input(1));
        if (c == m_constants.end() || !c->second.has_data) return;
        const auto data = known_shape(node.input(0));
        if (!data || data->empty()) return;
        const auto rank = static_cast<std::int64_t>(data->size());
        std::int64_t axis = 0;
        for (const auto& a : node.attribute())
            if (a.name() == "axis") axis = a.i();
        if (axis < -rank || axis >= rank) fail_node(node, "axis ", axis, " is outside a rank-", rank, " input");
        const auto extent = (*data)[static_cast<std::size_t>(axis < 0 ? axis + rank : axis)];
        if (extent <= 0) return;
        const ConstantTensor& idx = c->second;
        for (std::size_t k = 0; k < static_cast<std::size_t>(idx.size()); ++k) {
            const auto j = integer_at(idx, k);
            if (j < -extent || j >= extent)
                fail_node(node, "index ", j, " is out of range for axis ", axis, " of extent ", extent,
                          " (valid: ", -extent, " to ", extent - 1, ")");
        }
    }

    graph::Graph build() {
        const auto& g = m_model.graph();
        graph::Graph out(g.name().empty() ? std::filesystem::path(m_source).stem().string() : g.name());
        std::unordered_map<std::string, int> tensor_id;
        std::size_t values = static_cast<std::size_t>(g.input_size() + g.output_size()) + m_constants.size();
        for (const auto& node : g.node()) values += static_cast<std::size_t>(node.output_size());
        tensor_id.reserve(values);
        out.reserve(static_cast<std::size_t>(g.node_size()), values);
        std::unordered_set<std::string> inputs(m_inputs.begin(), m_inputs.end());
        auto dtype_of = [&](const std::string& name) {
            auto it = m_types.find(name);
            return static_cast<graph::DataType>(it == m_types.end() ? 1 : it->second.dtype);
        };
        auto tensor_for_input = [&](const ::onnx::NodeProto& node, const std::string& name) -> int {
            if (name.empty()) return -1;
            if (auto it = tensor_id.find(name); it != tensor_id.end()) return it->second;
            auto constant = m_constants.find(name);
            int t;
            if (constant != m_constants.end()) {
                const ConstantTensor& c = constant->second;
                t = out.add_weight(name, c.dims, static_cast<graph::DataType>(c.dtype));
                keep_values(name, c);
                if (keeps_data(c)) {
                    std::vector<double> values(static_cast<std::size_t>(c.size()));
                    for (std::size_t k = 0; k < values.size(); ++k) values[k] = c.real_at(k);
                    out.set_data(t, std::move(values));
                }
            } else if (inputs.count(name)) {
                auto shape = known_shape(name);
                if (!shape) fail("graph input '", name, "' has no concrete shape");
                const auto count = checked_numel(*shape);
                if (!count || *count > max_plausible_elements)
                    fail("graph input '", name, "' has an implausible shape ", graph::to_string(*shape));
                t = out.add_input(name, *shape, dtype_of(name));
            } else {
                fail_node(node, "reads value '", name, "' that no remaining node produces");
            }
            tensor_id.emplace(name, t);
            return t;
        };
        for (const auto& node : g.node()) {
            std::vector<int> ins, outs;
            for (const auto& i : node.input()) ins.push_back(tensor_for_input(node, i));
            if (node.op_type() == "Gather") check_gather_indices(node);
            for (const auto& o : node.output()) {
                if (o.empty()) fail_node(node, "has an unnamed output");
                auto shape = output_shape(node, o);
                if (!shape) fail_node(node, "cannot determine the shape of output '", o, "'", why_unknown(node));
                const auto count = checked_numel(*shape);
                if (!count || *count > max_plausible_elements)
                    fail_node(node, "output '", o, "' has an implausible shape ", graph::to_string(*shape));
                const int t = out.add_tensor(o, *shape, dtype_of(o));
                tensor_id.emplace(o, t);
                outs.push_back(t);
            }
            std::vector<graph::Attribute> attributes;
            for (const auto& a : node.attribute()) {
                if (auto value = convert_attribute(a)) attributes.push_back({a.name(), std::move(*value)});
            }
            try {
                out.add_node(op_of(node), node.name(), std::move(ins), std::move(outs), std::move(attributes));
            } catch (const error& e) {
                fail_node(node, e.what());
            }
        }
        for (const auto& o : g.output()) {
            auto it = tensor_id.find(o.name());
            if (it == tensor_id.end()) {
                auto constant = m_constants.find(o.name());
                if (constant == m_constants.end() && !inputs.count(o.name()))
                    fail("graph output '", o.name(), "' is not produced by any node");
                // A graph output that is an input or a constant: keep it as a tensor.
                if (constant != m_constants.end()) {
                    keep_values(o.name(), constant->second);
                    it = tensor_id
                             .emplace(o.name(), out.add_weight(o.name(), constant->second.dims,
                                                               static_cast<graph::DataType>(constant->second.dtype)))
                             .first;
                } else {
                    it = tensor_id
                             .emplace(o.name(), out.add_input(o.name(), known_shape(o.name()).value_or(graph::Shape{}),
                                                              dtype_of(o.name())))
                             .first;
                }
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

    static std::optional<graph::AttrValue> convert_attribute(const ::onnx::AttributeProto& a) {
        using A = ::onnx::AttributeProto;
        switch (a.type()) {
            case A::INT:
                return graph::AttrValue{static_cast<std::int64_t>(a.i())};
            case A::FLOAT:
                return graph::AttrValue{widen(a.f())};
            case A::STRING:
                return graph::AttrValue{a.s()};
            case A::INTS:
                return graph::AttrValue{std::vector<std::int64_t>(a.ints().begin(), a.ints().end())};
            case A::FLOATS: {
                std::vector<double> values;
                for (float x : a.floats()) values.push_back(widen(x));
                return graph::AttrValue{std::move(values)};
            }
            case A::STRINGS:
                return graph::AttrValue{std::vector<std::string>(a.strings().begin(), a.strings().end())};
            default:
                return std::nullopt;  // tensors, graphs, sparse tensors, type protos: not kept
        }
    }

    OnnxImportOptions m_options;
    std::unordered_map<std::string, std::string> m_fold_failures;  ///< why a value could not be computed
    std::unordered_map<std::string, TensorValues> m_values;  ///< whole weights, when asked to keep them
    std::unordered_set<std::string> m_weight_inputs;
    std::unordered_set<std::string> m_consumed;
    std::unordered_set<std::string> m_graph_outputs;
    std::vector<std::string> m_inputs;
    std::vector<std::string> m_new_constants;
    std::unordered_map<std::string, graph::Shape> m_declared;  ///< output shapes the file declares
    bool m_strict_checked = false;
    std::optional<std::string> m_strict_error;
};

}  // namespace detail::onnx_impl

#if DNNCOST_HEADER_ONLY
DNNCOST_FUNC graph::Graph import_onnx_bytes(const std::string& bytes, const std::string& name,
                                            const OnnxImportOptions& options) {
    detail::onnx_impl::Importer importer(name, options);
    try {
        return importer.run(bytes);
    } catch (const error& e) {
        // messages from the tensor readers and graph builder do not know the file: add it
        const std::string what = e.what();
        if (what.rfind("ONNX import of '", 0) == 0) throw;
        raise<onnx_import_error>("ONNX import of '", name, "': ", what);
    } catch (const std::exception& e) {
        raise<onnx_import_error>("ONNX import of '", name, "': ", e.what());
    }
}

DNNCOST_FUNC graph::Graph import_onnx(const std::filesystem::path& path, const OnnxImportOptions& options) {
    return import_onnx_bytes(read_file(path), path.string(), options);
}

DNNCOST_FUNC int onnx_opset(const std::string& bytes, const std::string& name) {
    ::onnx::ModelProto model;
    detail::onnx_impl::parse_model(bytes, name, model);
    for (const auto& o : model.opset_import())
        if (o.domain().empty() || o.domain() == "ai.onnx") return static_cast<int>(o.version());
    raise<onnx_import_error>("ONNX model '", name, "' has no opset for the default domain");
}
#endif

}  // namespace dnncost::io
