#pragma once
/// @file graph_impl.hpp
/// The definitions of graph.hpp's larger Graph members: compiled once into dnncost::compiled
/// (src/graph.cpp), or included by graph.hpp in header-only mode.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <queue>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <dnncost/core/config.hpp>
#include <dnncost/core/error.hpp>
#include <dnncost/graph/graph.hpp>

namespace dnncost::graph {

DNNCOST_FUNC Graph::Graph(const Graph&) = default;
DNNCOST_FUNC Graph::Graph(Graph&&) noexcept = default;
DNNCOST_FUNC Graph& Graph::operator=(const Graph&) = default;
DNNCOST_FUNC Graph& Graph::operator=(Graph&&) noexcept = default;
DNNCOST_FUNC Graph::~Graph() = default;

DNNCOST_FUNC int Graph::add_tensor(std::string name, Shape shape, DataType dtype, TensorKind kind) {
    if (name.empty()) raise<config_error>("Graph::add_tensor: empty tensor name in graph '", m_name, "'");
    if (m_tensor_index.count(name))
        raise<config_error>("Graph::add_tensor: duplicate tensor name '", name, "' in graph '", m_name, "'");
    const int id = static_cast<int>(m_tensors.size());
    m_tensor_index.emplace(name, id);
    m_tensors.push_back(Tensor{std::move(name), std::move(shape), dtype, kind, -1, {}, false, {}});
    return id;
}

DNNCOST_FUNC int Graph::add_node(std::string op_type, std::string name, std::vector<int> inputs,
                                 std::vector<int> outputs, std::vector<Attribute> attributes) {
    const int id = static_cast<int>(m_nodes.size());
    if (name.empty()) name = op_type + "_" + std::to_string(id);
    for (int t : inputs)
        if (t < -1 || t >= static_cast<int>(m_tensors.size()))
            raise<config_error>("Graph::add_node: node '", name, "' reads unknown tensor index ", t);
    for (int t : outputs) {
        if (t < 0 || t >= static_cast<int>(m_tensors.size()))
            raise<config_error>("Graph::add_node: node '", name, "' writes unknown tensor index ", t);
        auto& ten = m_tensors[static_cast<std::size_t>(t)];
        if (ten.producer >= 0)
            raise<config_error>("Graph::add_node: tensor '", ten.name, "' written by both '",
                                m_nodes[static_cast<std::size_t>(ten.producer)].name, "' and '", name, "'");
        if (ten.kind != TensorKind::activation)
            raise<config_error>("Graph::add_node: node '", name, "' writes input/weight tensor '", ten.name, "'");
        ten.producer = id;
    }
    for (int t : inputs)
        if (t >= 0) m_tensors[static_cast<std::size_t>(t)].consumers.push_back(id);
    m_nodes.push_back(
        Node{std::move(op_type), std::move(name), std::move(attributes), std::move(inputs), std::move(outputs)});
    return id;
}

DNNCOST_FUNC int Graph::add_op(std::string op_type, std::string name, std::vector<int> inputs, Shape out_shape,
                               std::vector<Attribute> attributes, DataType dtype) {
    const int out = add_tensor(name + ":0", std::move(out_shape), dtype);
    add_node(std::move(op_type), std::move(name), std::move(inputs), {out}, std::move(attributes));
    return out;
}

DNNCOST_FUNC void Graph::set_data(int tensor, std::vector<double> values) {
    auto& t = m_tensors.at(static_cast<std::size_t>(tensor));
    if (t.kind != TensorKind::weight)
        raise<config_error>("Graph::set_data: tensor '", t.name, "' is not a weight/constant");
    if (!values.empty() && static_cast<std::int64_t>(values.size()) != t.elements())
        raise<config_error>("Graph::set_data: tensor '", t.name, "' has ", t.elements(), " elements, got ",
                            values.size(), " values");
    t.data = std::move(values);
}

DNNCOST_FUNC int Graph::find_node(std::string_view name) const {
    for (std::size_t i = 0; i < m_nodes.size(); ++i)
        if (m_nodes[i].name == name) return static_cast<int>(i);
    return -1;
}

DNNCOST_FUNC std::vector<int> Graph::outputs() const {
    std::vector<int> r;
    for (std::size_t i = 0; i < m_tensors.size(); ++i)
        if (m_tensors[i].is_output) r.push_back(static_cast<int>(i));
    return r;
}

DNNCOST_FUNC std::vector<Edge> Graph::edges() const {
    std::vector<Edge> e;
    for (std::size_t v = 0; v < m_nodes.size(); ++v)
        for (int t : m_nodes[v].inputs)
            if (t >= 0) {
                const int p = m_tensors[static_cast<std::size_t>(t)].producer;
                if (p >= 0) e.push_back({p, static_cast<int>(v), t});
            }
    return e;
}

DNNCOST_FUNC std::size_t Graph::num_edges() const {
    std::size_t n = 0;
    for (const auto& nd : m_nodes)
        for (int t : nd.inputs)
            if (t >= 0 && m_tensors[static_cast<std::size_t>(t)].producer >= 0) ++n;
    return n;
}

DNNCOST_FUNC std::vector<int> Graph::predecessors(int node_id) const {
    std::vector<int> r;
    for (int t : node(node_id).inputs)
        if (t >= 0) {
            const int p = m_tensors[static_cast<std::size_t>(t)].producer;
            if (p >= 0) r.push_back(p);
        }
    return distinct_in_order(std::move(r));
}

DNNCOST_FUNC std::vector<int> Graph::successors(int node_id) const {
    std::vector<int> r;
    for (int t : node(node_id).outputs)
        for (int c : m_tensors[static_cast<std::size_t>(t)].consumers) r.push_back(c);
    return distinct_in_order(std::move(r));
}

DNNCOST_FUNC std::vector<int> Graph::distinct_in_order(std::vector<int> ids) {
    if (ids.size() < 2) return ids;
    std::vector<std::pair<int, std::size_t>> keyed(ids.size());
    for (std::size_t i = 0; i < ids.size(); ++i) keyed[i] = {ids[i], i};
    std::sort(keyed.begin(), keyed.end());
    std::vector<char> keep(ids.size(), 0);
    for (std::size_t i = 0; i < keyed.size(); ++i)
        if (i == 0 || keyed[i].first != keyed[i - 1].first) keep[keyed[i].second] = 1;
    std::vector<int> r;
    for (std::size_t i = 0; i < ids.size(); ++i)
        if (keep[i]) r.push_back(ids[i]);
    return r;
}

DNNCOST_FUNC std::int64_t Graph::parameter_count(int node_id) const {
    std::int64_t n = 0;
    for (int t : node(node_id).inputs)
        if (t >= 0 && m_tensors[static_cast<std::size_t>(t)].kind == TensorKind::weight)
            n += m_tensors[static_cast<std::size_t>(t)].elements();
    return n;
}

DNNCOST_FUNC std::int64_t Graph::parameter_count() const {
    std::int64_t n = 0;
    for (const auto& t : m_tensors)
        if (t.kind == TensorKind::weight && !t.consumers.empty()) n += t.elements();
    return n;
}

DNNCOST_FUNC std::vector<int> Graph::topological_order() const {
    const std::size_t n = m_nodes.size();
    std::vector<int> indeg(n, 0), order;
    order.reserve(n);
    for (const auto& nd : m_nodes)
        for (int t : nd.outputs)
            for (int c : m_tensors[static_cast<std::size_t>(t)].consumers) ++indeg[static_cast<std::size_t>(c)];
    std::priority_queue<int, std::vector<int>, std::greater<>> ready;
    for (std::size_t i = 0; i < n; ++i)
        if (indeg[i] == 0) ready.push(static_cast<int>(i));
    while (!ready.empty()) {
        const int v = ready.top();
        ready.pop();
        order.push_back(v);
        for (int t : m_nodes[static_cast<std::size_t>(v)].outputs)
            for (int c : m_tensors[static_cast<std::size_t>(t)].consumers)
                if (--indeg[static_cast<std::size_t>(c)] == 0) ready.push(c);
    }
    if (order.size() != n) {
        for (std::size_t i = 0; i < n; ++i)
            if (indeg[i] > 0)
                raise<shape_error>("graph '", m_name, "' has a cycle through node '", m_nodes[i].name, "' (",
                                   m_nodes[i].op_type, ")");
    }
    return order;
}

DNNCOST_FUNC bool Graph::is_topologically_sorted() const {
    for (const auto& e : edges())
        if (e.src >= e.dst) return false;
    return true;
}

DNNCOST_FUNC void Graph::validate() const {
    (void)topological_order();
    for (const auto& nd : m_nodes) {
        for (int t : nd.inputs) {
            if (t < 0) continue;
            const auto& ten = m_tensors[static_cast<std::size_t>(t)];
            if (ten.kind == TensorKind::activation && ten.producer < 0)
                raise<shape_error>("graph '", m_name, "': node '", nd.name, "' (", nd.op_type, ") reads tensor '",
                                   ten.name, "' that no node produces and is not a graph input");
        }
        for (int t : nd.outputs) {
            const auto& ten = m_tensors[static_cast<std::size_t>(t)];
            for (auto d : ten.shape)
                if (d < 0)
                    raise<shape_error>("graph '", m_name, "': node '", nd.name, "' (", nd.op_type, ") output '",
                                       ten.name, "' has unknown shape ", to_string(ten.shape));
        }
        check_node_shapes(nd);
    }
    for (const auto& t : m_tensors) {
        for (auto d : t.shape)
            if (d < 0)
                raise<shape_error>("graph '", m_name, "': tensor '", t.name, "' has unknown shape ",
                                   to_string(t.shape));
        const auto elements = checked_numel(t.shape);
        std::int64_t bytes = 0;
        if (!elements ||
            __builtin_mul_overflow(*elements,
                                   std::max<std::int64_t>(1, static_cast<std::int64_t>(element_size(t.dtype))), &bytes))
            raise<shape_error>("graph '", m_name, "': tensor '", t.name, "' of shape ", to_string(t.shape),
                               " has more than 2^63 bytes");
    }
}

DNNCOST_FUNC bool operator==(const Graph& a, const Graph& b) {
    if (a.m_nodes.size() != b.m_nodes.size() || a.m_tensors.size() != b.m_tensors.size()) return false;
    for (std::size_t i = 0; i < a.m_tensors.size(); ++i) {
        const auto &x = a.m_tensors[i], &y = b.m_tensors[i];
        if (x.name != y.name || x.shape != y.shape || x.dtype != y.dtype || x.kind != y.kind ||
            x.producer != y.producer || x.consumers != y.consumers || x.is_output != y.is_output || x.data != y.data)
            return false;
    }
    for (std::size_t i = 0; i < a.m_nodes.size(); ++i) {
        const auto &x = a.m_nodes[i], &y = b.m_nodes[i];
        if (x.op_type != y.op_type || x.name != y.name || x.inputs != y.inputs || x.outputs != y.outputs) return false;
        if (x.attributes.size() != y.attributes.size()) return false;
        for (const auto& at : x.attributes) {
            const auto* o = y.find_attr(at.name);
            if (!o || !(*o == at.value)) return false;
        }
    }
    return true;
}

DNNCOST_FUNC std::vector<int> Graph::tensors_of_kind(TensorKind k) const {
    std::vector<int> r;
    for (std::size_t i = 0; i < m_tensors.size(); ++i)
        if (m_tensors[i].kind == k) r.push_back(static_cast<int>(i));
    return r;
}

DNNCOST_FUNC void Graph::check_conv_spatial(const Node& nd, const Shape& x, const Shape& w) const {
    if (nd.outputs.empty()) return;
    const Shape& y = m_tensors[static_cast<std::size_t>(nd.outputs[0])].shape;
    const std::size_t n = x.size() - 2;
    const auto unknown = [](const Shape& s) {
        return std::any_of(s.begin(), s.end(), [](std::int64_t d) { return d < 0; });
    };
    if (unknown(x) || unknown(w) || unknown(y)) return;  // reported as an unknown shape by validate()
    if (y.size() != x.size()) shape_fail(nd, "output " + to_string(y) + " and input " + to_string(x) + " ranks differ");
    const auto strides = nd.attr_ints("strides"), dilations = nd.attr_ints("dilations"), pads = nd.attr_ints("pads");
    const std::string auto_pad = nd.attr_string("auto_pad", "NOTSET");
    for (std::size_t i = 0; i < n; ++i) {
        const std::int64_t s = i < strides.size() ? strides[i] : 1, d = i < dilations.size() ? dilations[i] : 1;
        if (s <= 0 || d <= 0) shape_fail(nd, "strides and dilations must be positive");
        const std::int64_t in = x[2 + i], k = w[2 + i];
        std::int64_t span = 0;  // the dilated kernel, d (k - 1) + 1
        if (k < 1 || __builtin_mul_overflow(d, k - 1, &span) || __builtin_add_overflow(span, 1, &span))
            shape_fail(nd,
                       "kernel " + to_string(w) + " with dilations " + std::to_string(d) + " is not a valid kernel");
        std::int64_t out = 0;
        if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
            out = in / s + (in % s != 0);  // ceil(in / s)
        } else {
            const std::int64_t p0 = auto_pad == "VALID" || i >= pads.size() ? 0 : pads[i];
            const std::int64_t p1 = auto_pad == "VALID" || i + n >= pads.size() ? 0 : pads[i + n];
            std::int64_t padded = 0;
            if (p0 < 0 || p1 < 0 || __builtin_add_overflow(in, p0, &padded) ||
                __builtin_add_overflow(padded, p1, &padded))
                shape_fail(nd, "invalid pads");
            if (padded < span)
                shape_fail(nd, "spatial input " + std::to_string(in) + " (padded " + std::to_string(padded) +
                                   ") is smaller than the kernel extent " + std::to_string(span));
            out = (padded - span) / s + 1;
        }
        if (y[2 + i] != out)
            shape_fail(nd, "output " + to_string(y) + " does not follow from input " + to_string(x) + " and kernel " +
                               to_string(w) + " (spatial axis " + std::to_string(i) + " should be " +
                               std::to_string(out) + ")");
    }
}

DNNCOST_FUNC void Graph::shape_fail(const Node& nd, const std::string& why) const {
    raise<shape_error>("graph '", m_name, "': node '", nd.name, "' (", nd.op_type, "): ", why);
}

DNNCOST_FUNC bool Graph::broadcastable(const Shape& a, const Shape& b) {
    for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
        const auto x = a[a.size() - 1 - i], y = b[b.size() - 1 - i];
        if (x != y && x != 1 && y != 1) return false;
    }
    return true;
}

DNNCOST_FUNC void Graph::check_node_shapes(const Node& nd) const {
    const auto has = [&](std::size_t slot) { return nd.inputs.size() > slot && nd.inputs[slot] >= 0; };
    const std::string& op = nd.op_type;
    if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div" || op == "Pow" || op == "Max" || op == "Min" ||
        op == "Sum") {
        for (std::size_t i = 1; i < nd.inputs.size(); ++i)
            if (has(0) && has(i) && !broadcastable(in_shape(nd, 0), in_shape(nd, i)))
                shape_fail(nd, "inputs " + to_string(in_shape(nd, 0)) + " and " + to_string(in_shape(nd, i)) +
                                   " do not broadcast");
    } else if ((op == "Reshape" || op == "Flatten" || op == "Squeeze" || op == "Unsqueeze") && has(0) &&
               !nd.outputs.empty()) {
        // data movement only: the element count must be kept (unknown shapes are reported later)
        const auto& y = m_tensors[static_cast<std::size_t>(nd.outputs[0])].shape;
        const auto a = checked_numel(in_shape(nd, 0)), b = checked_numel(y);
        if (a && b && *a != *b)
            shape_fail(nd, "input " + to_string(in_shape(nd, 0)) + " has " + std::to_string(*a) + " elements, output " +
                               to_string(y) + " has " + std::to_string(*b));
    } else if (op == "Conv" && has(0) && has(1)) {
        const auto &x = in_shape(nd, 0), &w = in_shape(nd, 1);
        if (x.size() < 3 || w.size() != x.size())
            shape_fail(nd, "input " + to_string(x) + " and weight " + to_string(w) + " ranks differ");
        const auto group = nd.attr_int("group", 1);
        std::int64_t wc = 0;
        if (group < 1 || __builtin_mul_overflow(w[1], group, &wc))
            shape_fail(nd, "invalid group " + std::to_string(group) + " for weight " + to_string(w));
        if (x[1] != wc)
            shape_fail(nd, "input channels " + std::to_string(x[1]) + " != weight channels " + std::to_string(w[1]) +
                               " x group " + std::to_string(group));
        check_conv_spatial(nd, x, w);
    } else if (op == "Gemm" && has(0) && has(1)) {
        const auto &a = in_shape(nd, 0), &b = in_shape(nd, 1);
        if (a.size() != 2 || b.size() != 2) shape_fail(nd, "Gemm needs 2-D inputs");
        const auto ka = nd.attr_int("transA", 0) ? a[0] : a[1];
        const auto kb = nd.attr_int("transB", 0) ? b[1] : b[0];
        if (ka != kb)
            shape_fail(nd, "inner dimensions " + std::to_string(ka) + " and " + std::to_string(kb) + " differ");
    } else if (op == "MatMul" && has(0) && has(1)) {
        const auto &a = in_shape(nd, 0), &b = in_shape(nd, 1);
        if (a.empty() || b.empty()) shape_fail(nd, "MatMul of a scalar");
        const auto ka = a.back(), kb = b.size() == 1 ? b[0] : b[b.size() - 2];
        if (ka != kb)
            shape_fail(nd, "inner dimensions " + std::to_string(ka) + " and " + std::to_string(kb) + " differ");
    } else if (op == "Concat" && !nd.inputs.empty() && has(0)) {
        const auto& s0 = in_shape(nd, 0);
        auto axis = nd.attr_int("axis", 1);
        if (axis < 0) axis += static_cast<std::int64_t>(s0.size());
        for (std::size_t i = 1; i < nd.inputs.size(); ++i) {
            if (!has(i)) continue;
            const auto& si = in_shape(nd, i);
            if (si.size() != s0.size()) shape_fail(nd, "inputs of different rank");
            for (std::size_t d = 0; d < s0.size(); ++d)
                if (static_cast<std::int64_t>(d) != axis && si[d] != s0[d])
                    shape_fail(nd, "inputs " + to_string(s0) + " and " + to_string(si) + " differ off the concat axis");
        }
    }
}

}  // namespace dnncost::graph
