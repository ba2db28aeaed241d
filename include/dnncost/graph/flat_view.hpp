#pragma once
/// @file flat_view.hpp
/// A compact, read-only view of a Graph's structure for passes that walk a graph many times:
/// op types as small integers, node inputs and outputs, tensor consumers and shapes in flat
/// compressed rows, per-tensor producers, flags and sizes in plain arrays, and the windows
/// (kernel shape, strides, group) of convolutions and pooling. A Graph keeps each
/// node and tensor in its own heap objects (names, attribute lists, vectors); a pass that visits
/// them again and again spends its time waiting for memory. Built once per graph (rebuild()
/// reuses the storage of the previous graph), it describes the graph it was built from only
/// while that graph is unchanged.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <variant>
#include <vector>

#include <dnncost/graph/graph.hpp>

namespace dnncost::graph {

/// Operators over a window (kernel shape, strides, group): convolutions and pooling.
inline bool is_window_operator(std::string_view op) {
    return op == "Conv" || op == "ConvTranspose" || op == "MaxPool" || op == "AveragePool" || op == "LpPool";
}

class FlatView {
public:
    /// Describes `g` (which must outlive the view's use), over the storage of the last graph.
    void rebuild(const Graph& g) {
        m_graph = &g;
        const std::size_t n = g.num_nodes(), nt = g.num_tensors();
        // tensors first, in storage order; a Tensor's own consumer list is not read: it is the
        // transpose of the nodes' inputs, built below from memory already read
        m_producer.resize(nt);
        m_weight.resize(nt);
        m_is_output.resize(nt);
        m_elements.resize(nt);
        m_bytes.resize(nt);
        m_shape_start.assign(1, 0);
        m_shape_flat.clear();
        m_outputs.clear();
        // each shape and input list is a heap block of its own, mostly not in cache: asking for
        // the blocks a few tensors (nodes) ahead overlaps the waits, and asking for the tensors
        // (nodes) themselves twice as far ahead has the blocks' addresses there in time
        constexpr std::size_t ahead = 8;
        for (std::size_t t = 0; t < nt; ++t) {
            if (t + 2 * ahead < nt) prefetch_object(g.tensors()[t + 2 * ahead]);
            if (t + ahead < nt) __builtin_prefetch(g.tensors()[t + ahead].shape.data());
            const auto& ten = g.tensors()[t];
            m_producer[t] = ten.producer;
            m_weight[t] = ten.kind == TensorKind::weight;
            m_is_output[t] = ten.is_output;
            if (ten.is_output) m_outputs.push_back(static_cast<int>(t));
            // element by element: a shape is a few numbers, and a copy call costs more than they do
            for (const auto d : ten.shape) m_shape_flat.push_back(d);
            m_shape_start.push_back(static_cast<int>(m_shape_flat.size()));
            // sizes that Tensor::elements()/bytes() would refuse are marked -1: asked for, they
            // raise the tensor's own error
            const auto e = checked_numel(ten.shape);
            std::int64_t b = -1;
            if (e && __builtin_mul_overflow(*e, static_cast<std::int64_t>(element_size(ten.dtype)), &b)) b = -1;
            m_elements[t] = e ? *e : -1;
            m_bytes[t] = b;
        }
        m_op_names.clear();
        m_window_op.clear();
        m_op.resize(n);
        m_window.resize(n);
        m_window_flat.clear();
        m_in_start.assign(1, 0);
        m_out_start.assign(1, 0);
        m_in_flat.clear();
        m_out_flat.clear();
        m_sorted = true;
        m_cons_start.assign(nt + 1, 0);
        for (std::size_t v = 0; v < n; ++v) {
            if (v + 2 * ahead < n) prefetch_object(g.nodes()[v + 2 * ahead]);
            if (v + ahead < n) {
                const auto& next = g.nodes()[v + ahead];
                __builtin_prefetch(next.inputs.data());
                __builtin_prefetch(next.outputs.data());
                __builtin_prefetch(next.op_type.data());
                // an attribute list spans several lines (a convolution's five attributes, six)
                const auto* list = reinterpret_cast<const char*>(next.attributes.data());
                const std::size_t list_bytes = next.attributes.size() * sizeof(Attribute);
                for (std::size_t at = 0; at < list_bytes && at < 512; at += 64) __builtin_prefetch(list + at);
            }
            // and, half as far ahead (its attribute list asked for above has come), the integer
            // lists of a node's attributes: a window's kernel shape and strides are blocks of their own
            if (v + ahead / 2 < n)
                for (const auto& a : g.nodes()[v + ahead / 2].attributes)
                    if (const auto* list = std::get_if<std::vector<std::int64_t>>(&a.value))
                        __builtin_prefetch(list->data());
            const auto& node = g.nodes()[v];
            m_op[v] = intern(node.op_type);
            if (m_window_op[static_cast<std::size_t>(m_op[v])])
                read_window(v, node);
            else
                m_window[v] = Window{};
            for (int t : node.inputs) {
                m_in_flat.push_back(t);
                if (t < 0) continue;
                ++m_cons_start[static_cast<std::size_t>(t) + 1];
                if (m_producer[static_cast<std::size_t>(t)] >= static_cast<int>(v)) m_sorted = false;
            }
            m_in_start.push_back(static_cast<int>(m_in_flat.size()));
            for (int t : node.outputs) m_out_flat.push_back(t);
            m_out_start.push_back(static_cast<int>(m_out_flat.size()));
        }
        for (std::size_t t = 0; t < nt; ++t) m_cons_start[t + 1] += m_cons_start[t];
        m_cons_flat.resize(static_cast<std::size_t>(m_cons_start[nt]));
        m_cons_fill.assign(m_cons_start.begin(), m_cons_start.end() - 1);
        for (std::size_t v = 0; v < n; ++v)
            for (int t : inputs(static_cast<int>(v)))
                if (t >= 0) m_cons_flat[static_cast<std::size_t>(m_cons_fill[static_cast<std::size_t>(t)]++)] = static_cast<int>(v);
    }

    const Graph& graph() const { return *m_graph; }
    std::size_t num_nodes() const { return m_op.size(); }
    std::size_t num_tensors() const { return m_producer.size(); }
    /// True when every node's producers come before it: node order is a topological order.
    bool sorted() const { return m_sorted; }

    /// The distinct op types, numbered in order of first appearance among the nodes.
    const std::vector<std::string_view>& op_names() const { return m_op_names; }
    /// Node v's op type as an index into op_names().
    int op(int v) const { return m_op[static_cast<std::size_t>(v)]; }
    /// The number of op type `name` in this graph, or -1 when no node has it.
    int find_op(std::string_view name) const {
        for (std::size_t i = 0; i < m_op_names.size(); ++i)
            if (m_op_names[i] == name) return static_cast<int>(i);
        return -1;
    }

    /// Node v's input tensors (-1 for an omitted optional input) and outputs, in slot order.
    std::span<const int> inputs(int v) const { return row(m_in_start, m_in_flat, v); }
    std::span<const int> outputs(int v) const { return row(m_out_start, m_out_flat, v); }

    int producer(int t) const { return m_producer[static_cast<std::size_t>(t)]; }
    bool is_weight(int t) const { return m_weight[static_cast<std::size_t>(t)] != 0; }
    bool is_output(int t) const { return m_is_output[static_cast<std::size_t>(t)] != 0; }
    /// Consumers of tensor t, one entry per input slot that reads it, in node order.
    std::span<const int> consumers(int t) const { return row(m_cons_start, m_cons_flat, t); }
    std::span<const std::int64_t> shape(int t) const {
        const auto i = static_cast<std::size_t>(t);
        return {m_shape_flat.data() + m_shape_start[i], static_cast<std::size_t>(m_shape_start[i + 1] - m_shape_start[i])};
    }
    /// Whether tensor t's elements and bytes are in range (elements() and bytes() then raise nothing).
    bool sized(int t) const { return m_bytes[static_cast<std::size_t>(t)] >= 0; }
    /// As Tensor::elements() and Tensor::bytes(), with the same errors.
    std::int64_t elements(int t) const {
        const auto e = m_elements[static_cast<std::size_t>(t)];
        return e >= 0 ? e : m_graph->tensor(t).elements();
    }
    std::int64_t bytes(int t) const {
        const auto b = m_bytes[static_cast<std::size_t>(t)];
        return b >= 0 ? b : m_graph->tensor(t).bytes();
    }
    /// The graph outputs, in tensor order (as Graph::outputs()).
    const std::vector<int>& outputs() const { return m_outputs; }

    /// Node v's attributes kernel_shape and strides (as Node::attr_ints_view) and group (as
    /// Node::attr_int, 1 when absent). Passes ask for the windows of convolutions and pooling again
    /// and again: theirs are read once, by rebuild(); any other node's, or one of a type these do
    /// not read, come from the node itself (with its errors).
    std::span<const std::int64_t> kernel_shape(int v) const {
        const auto& w = m_window[static_cast<std::size_t>(v)];
        if (!w.read) return m_graph->node(v).attr_ints_view("kernel_shape");
        return {m_window_flat.data() + w.kernel_shape, static_cast<std::size_t>(w.kernel_shape_size)};
    }
    std::span<const std::int64_t> strides(int v) const {
        const auto& w = m_window[static_cast<std::size_t>(v)];
        if (!w.read) return m_graph->node(v).attr_ints_view("strides");
        return {m_window_flat.data() + w.strides, static_cast<std::size_t>(w.strides_size)};
    }
    std::int64_t group(int v) const {
        const auto& w = m_window[static_cast<std::size_t>(v)];
        return w.read ? w.group : m_graph->node(v).attr_int("group", 1);
    }

private:
    /// A node's window attributes: kernel_shape and strides as runs of m_window_flat, group.
    struct Window {
        int kernel_shape = 0, kernel_shape_size = 0;
        int strides = 0, strides_size = 0;
        std::int64_t group = 1;
        bool read = false;  ///< false: ask the node
    };

    /// Asks for every cache line of object `x`.
    template <class T>
    static void prefetch_object(const T& x) {
        const auto* p = reinterpret_cast<const char*>(&x);
        for (std::size_t at = 0; at < sizeof(T); at += 64) __builtin_prefetch(p + at);
    }
    int intern(std::string_view name) {
        for (std::size_t i = 0; i < m_op_names.size(); ++i)
            if (m_op_names[i] == name) return static_cast<int>(i);
        m_op_names.push_back(name);
        m_window_op.push_back(is_window_operator(name));
        return static_cast<int>(m_op_names.size()) - 1;
    }
    /// The window of node v (`node`), read as Node::attr_ints_view and Node::attr_int read it (the
    /// first attribute of each name, the same conversions); left to the node when one has another
    /// type, so that asking for it raises the node's error.
    void read_window(std::size_t v, const Node& node) {
        Window w;
        w.read = true;
        bool kernel_seen = false, strides_seen = false, group_seen = false;
        const auto ints = [&](const AttrValue& value, int& start, int& size) {
            start = static_cast<int>(m_window_flat.size());
            if (const auto list = attr_value_ints(value)) {
                m_window_flat.insert(m_window_flat.end(), list->begin(), list->end());
                size = static_cast<int>(list->size());
            } else {
                w.read = false;
            }
        };
        for (const auto& a : node.attributes) {
            if (!kernel_seen && std::string_view(a.name) == "kernel_shape") {
                kernel_seen = true;
                ints(a.value, w.kernel_shape, w.kernel_shape_size);
            } else if (!strides_seen && std::string_view(a.name) == "strides") {
                strides_seen = true;
                ints(a.value, w.strides, w.strides_size);
            } else if (!group_seen && std::string_view(a.name) == "group") {
                group_seen = true;
                if (const auto i = attr_value_int(a.value))
                    w.group = *i;
                else
                    w.read = false;
            }
        }
        m_window[v] = w;
    }
    static std::span<const int> row(const std::vector<int>& start, const std::vector<int>& flat, int i) {
        const auto s = static_cast<std::size_t>(i);
        return {flat.data() + start[s], static_cast<std::size_t>(start[s + 1] - start[s])};
    }

    const Graph* m_graph = nullptr;
    std::vector<std::string_view> m_op_names;
    std::vector<int> m_op;
    std::vector<int> m_in_start, m_in_flat, m_out_start, m_out_flat;
    std::vector<int> m_producer;
    std::vector<char> m_weight, m_is_output;
    std::vector<int> m_cons_start, m_cons_flat, m_cons_fill;
    std::vector<int> m_shape_start;
    std::vector<std::int64_t> m_shape_flat;
    std::vector<std::int64_t> m_elements, m_bytes;
    std::vector<int> m_outputs;
    std::vector<char> m_window_op;  ///< per op type: a convolution or pooling over a window
    std::vector<Window> m_window;   ///< per node
    std::vector<std::int64_t> m_window_flat;
    bool m_sorted = true;
};

}  // namespace dnncost::graph
