#pragma once
/// @file graph.hpp
/// The operator graph: nodes are operators, edges are tensors (producer -> consumer).
/// Everything downstream (cost annotation, feature encoding, estimators, searches) reads this.
///
/// Graph's larger member functions are defined in graph_impl.hpp: compiled into dnncost::compiled
/// in compiled mode (core/config.hpp), included at the end of this header otherwise.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <numeric>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include <dnncost/core/config.hpp>
#include <dnncost/core/error.hpp>

namespace dnncost::graph {

/// Tensor shape; an empty shape is a scalar. A negative dimension means "unknown" and is
/// rejected by Graph::validate().
using Shape = std::vector<std::int64_t>;

inline std::string to_string(const Shape& s);

/// Number of elements, or nullopt when a dimension is negative (unknown) or the product would
/// overflow int64 (a corrupt or hostile shape).
inline std::optional<std::int64_t> checked_numel(const Shape& s) {
    std::int64_t n = 1;
    for (auto d : s)
        if (d < 0 || __builtin_mul_overflow(n, d, &n)) return std::nullopt;
    return n;
}

/// Number of elements of a known shape (1 for a scalar).
/// @throws shape_error for an unknown (negative) dimension or a count beyond int64: shapes
/// Graph::validate() rejects, met in a graph that was never validated
inline std::int64_t numel(const Shape& s) {
    if (const auto n = checked_numel(s)) return *n;
    raise<shape_error>("shape ", to_string(s), " is unknown or has more elements than a 64-bit count holds");
}

/// "[1,3,224,224]"
inline std::string to_string(const Shape& s) {
    std::string out = "[";
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (i) out += ',';
        out += std::to_string(s[i]);
    }
    return out + "]";
}

/// Element types, numbered as in ONNX's TensorProto.DataType so that import/export is 1:1.
enum class DataType : int {
    undefined = 0,
    float32 = 1,
    uint8 = 2,
    int8 = 3,
    uint16 = 4,
    int16 = 5,
    int32 = 6,
    int64 = 7,
    string = 8,
    boolean = 9,
    float16 = 10,
    float64 = 11,
    uint32 = 12,
    uint64 = 13,
    bfloat16 = 16
};

/// Bytes per element (0 for undefined/string).
inline std::size_t element_size(DataType t) {
    switch (t) {
        case DataType::boolean:
        case DataType::uint8:
        case DataType::int8:
            return 1;
        case DataType::uint16:
        case DataType::int16:
        case DataType::float16:
        case DataType::bfloat16:
            return 2;
        case DataType::float32:
        case DataType::int32:
        case DataType::uint32:
            return 4;
        case DataType::int64:
        case DataType::float64:
        case DataType::uint64:
            return 8;
        default:
            return 0;
    }
}

/// What a tensor is: an activation computed by a node, a graph input, or a weight/constant
/// (initializer) whose elements count as parameters of the nodes that consume it.
enum class TensorKind { activation, input, weight };

/// An edge of the operator graph: one value, produced by at most one node, read by any number.
struct Tensor {
    std::string name;
    Shape shape;
    DataType dtype = DataType::float32;
    TensorKind kind = TensorKind::activation;
    int producer = -1;           ///< node index, -1 for inputs and weights
    std::vector<int> consumers;  ///< node indices, one entry per input slot that reads it
    bool is_output = false;      ///< a graph output
    /// Values of a small constant (row-major), when known; empty = unknown. Lets graph analyses
    /// (graph/analysis.hpp) see e.g. a multiplication by zero the way a graph compiler does.
    std::vector<double> data;
    /// @throws shape_error naming the tensor for an unknown dimension or a count beyond int64
    std::int64_t elements() const {
        if (const auto n = checked_numel(shape)) return *n;
        raise<shape_error>("tensor '", name, "' ", to_string(shape),
                           " is unknown or has more elements than a 64-bit count holds");
    }
    /// @throws shape_error naming the tensor when the size overflows int64
    std::int64_t bytes() const {
        std::int64_t b = 0;
        if (__builtin_mul_overflow(elements(), static_cast<std::int64_t>(element_size(dtype)), &b))
            raise<shape_error>("tensor '", name, "' ", to_string(shape), " has more bytes than a 64-bit count holds");
        return b;
    }
};

/// Attribute value: the ONNX attribute kinds the cost model and the estimators read.
using AttrValue = std::variant<std::int64_t, double, std::string, std::vector<std::int64_t>, std::vector<double>,
                               std::vector<std::string>>;

/// An attribute value read as an integer list (one integer as a list of one): a view into the
/// value, or nullopt for a value of another type.
inline std::optional<std::span<const std::int64_t>> attr_value_ints(const AttrValue& v) {
    if (const auto* list = std::get_if<std::vector<std::int64_t>>(&v)) return std::span<const std::int64_t>(*list);
    if (const auto* one = std::get_if<std::int64_t>(&v)) return std::span<const std::int64_t>(one, 1);
    return std::nullopt;
}
/// An attribute value read as an integer (a float truncated), or nullopt for a value of another type.
inline std::optional<std::int64_t> attr_value_int(const AttrValue& v) {
    if (const auto* i = std::get_if<std::int64_t>(&v)) return *i;
    if (const auto* d = std::get_if<double>(&v)) return static_cast<std::int64_t>(*d);
    return std::nullopt;
}

struct Attribute {
    std::string name;
    AttrValue value;
    friend bool operator==(const Attribute&, const Attribute&) = default;
};

/// An operator: ONNX op type (e.g. "Conv"), a unique name, attributes and tensor indices.
struct Node {
    std::string op_type;
    std::string name;
    std::vector<Attribute> attributes;
    std::vector<int> inputs;   ///< tensor indices; -1 for an omitted optional input
    std::vector<int> outputs;  ///< tensor indices

    const AttrValue* find_attr(std::string_view key) const {
        for (const auto& a : attributes)
            if (a.name == key) return &a.value;
        return nullptr;
    }
    bool has_attr(std::string_view key) const { return find_attr(key) != nullptr; }
    std::int64_t attr_int(std::string_view key, std::int64_t fallback) const {
        const auto* v = find_attr(key);
        if (!v) return fallback;
        if (const auto i = attr_value_int(*v)) return *i;
        raise<parse_error>("node '", name, "' (", op_type, "): attribute '", key, "' is not an integer");
    }
    double attr_float(std::string_view key, double fallback) const {
        const auto* v = find_attr(key);
        if (!v) return fallback;
        if (const auto* d = std::get_if<double>(v)) return *d;
        if (const auto* i = std::get_if<std::int64_t>(v)) return static_cast<double>(*i);
        raise<parse_error>("node '", name, "' (", op_type, "): attribute '", key, "' is not a number");
    }
    std::vector<std::int64_t> attr_ints(std::string_view key, std::vector<std::int64_t> fallback = {}) const {
        if (!find_attr(key)) return fallback;
        const auto ints = attr_ints_view(key);
        return {ints.begin(), ints.end()};
    }
    /// attr_ints() without a copy, for the hot paths of pricing: a view into this node (empty
    /// when the attribute is absent), valid while the node is.
    std::span<const std::int64_t> attr_ints_view(std::string_view key) const {
        const auto* v = find_attr(key);
        if (!v) return {};
        if (const auto ints = attr_value_ints(*v)) return *ints;
        raise<parse_error>("node '", name, "' (", op_type, "): attribute '", key, "' is not an integer list");
    }
    std::string attr_string(std::string_view key, std::string fallback = {}) const {
        const auto* v = find_attr(key);
        if (!v) return fallback;
        if (const auto* s = std::get_if<std::string>(v)) return *s;
        raise<parse_error>("node '", name, "' (", op_type, "): attribute '", key, "' is not a string");
    }
    void set_attr(std::string key, AttrValue value) {
        for (auto& a : attributes)
            if (a.name == key) {
                a.value = std::move(value);
                return;
            }
        attributes.push_back({std::move(key), std::move(value)});
    }
};

/// A directed node-to-node edge, carried by one tensor (one per consuming input slot).
struct Edge {
    int src;
    int dst;
    int tensor;
    friend bool operator==(const Edge&, const Edge&) = default;
};

/// The operator graph. A value type: copying is cheap (flat vectors, no pointers).
class Graph {
public:
    Graph() = default;
    explicit Graph(std::string name) : m_name(std::move(name)) {}
    // Out of line (graph_impl.hpp): copying and destroying a graph's vectors and name index is
    // code every program that holds graphs would otherwise compile again.
    Graph(const Graph&);
    Graph(Graph&&) noexcept;
    Graph& operator=(const Graph&);
    Graph& operator=(Graph&&) noexcept;
    ~Graph();

    const std::string& name() const { return m_name; }
    void set_name(std::string n) { m_name = std::move(n); }
    /// Room for `nodes` nodes and `tensors` tensors (a hint for importers of large models).
    void reserve(std::size_t nodes, std::size_t tensors) {
        m_nodes.reserve(nodes);
        m_tensors.reserve(tensors);
        m_tensor_index.reserve(tensors);
    }

    // ------------------------------------------------------------------ building
    /// Add a tensor; names must be unique within the graph.
    int add_tensor(std::string name, Shape shape, DataType dtype = DataType::float32,
                   TensorKind kind = TensorKind::activation);
    int add_input(std::string name, Shape shape, DataType dtype = DataType::float32) {
        return add_tensor(std::move(name), std::move(shape), dtype, TensorKind::input);
    }
    int add_weight(std::string name, Shape shape, DataType dtype = DataType::float32) {
        return add_tensor(std::move(name), std::move(shape), dtype, TensorKind::weight);
    }
    /// Add a node reading `inputs` and writing `outputs` (tensor indices, outputs not yet produced).
    int add_node(std::string op_type, std::string name, std::vector<int> inputs, std::vector<int> outputs,
                 std::vector<Attribute> attributes = {});
    /// Convenience: add a node with one fresh output tensor named after the node; returns the
    /// output tensor index.
    int add_op(std::string op_type, std::string name, std::vector<int> inputs, Shape out_shape,
               std::vector<Attribute> attributes = {}, DataType dtype = DataType::float32);
    void mark_output(int tensor) { m_tensors.at(static_cast<std::size_t>(tensor)).is_output = true; }
    /// Attach the values of a constant (weight) tensor; `values` must hold one value per element.
    void set_data(int tensor, std::vector<double> values);

    // ------------------------------------------------------------------ access
    std::size_t num_nodes() const { return m_nodes.size(); }
    std::size_t num_tensors() const { return m_tensors.size(); }
    const std::vector<Node>& nodes() const { return m_nodes; }
    const std::vector<Tensor>& tensors() const { return m_tensors; }
    const Node& node(int i) const { return m_nodes.at(static_cast<std::size_t>(i)); }
    Node& node(int i) { return m_nodes.at(static_cast<std::size_t>(i)); }
    const Tensor& tensor(int i) const { return m_tensors.at(static_cast<std::size_t>(i)); }
    /// Shapes may be refined after construction (e.g. by shape inference).
    void set_shape(int tensor, Shape s) { m_tensors.at(static_cast<std::size_t>(tensor)).shape = std::move(s); }
    /// Tensor index by name, or -1.
    int find_tensor(std::string_view name) const {
        auto it = m_tensor_index.find(std::string(name));
        return it == m_tensor_index.end() ? -1 : it->second;
    }
    /// Node index by name, or -1.
    int find_node(std::string_view name) const;
    std::vector<int> inputs() const { return tensors_of_kind(TensorKind::input); }
    std::vector<int> weights() const { return tensors_of_kind(TensorKind::weight); }
    std::vector<int> outputs() const;

    /// Node-to-node edges in node order then input-slot order; a tensor read twice by one node
    /// gives two edges (a multi-edge).
    std::vector<Edge> edges() const;
    std::size_t num_edges() const;
    /// Distinct producer nodes of a node's inputs, in input order.
    std::vector<int> predecessors(int node_id) const;
    /// Distinct consumer nodes of a node's outputs.
    std::vector<int> successors(int node_id) const;
    /// `ids` without repeats, first occurrences kept in order (O(n log n), for wide fan-outs).
    static std::vector<int> distinct_in_order(std::vector<int> ids);

    /// Number of parameters of a node: elements of the weight tensors it reads.
    std::int64_t parameter_count(int node_id) const;
    std::int64_t parameter_count() const;

    /// Kahn's algorithm, stable (the smallest ready index first, from a min-heap: O(E + N log N)).
    /// Throws naming a node on a cycle.
    std::vector<int> topological_order() const;
    bool is_topologically_sorted() const;

    /// Structural checks: cycles, dangling inputs (an activation nobody produces), unknown or
    /// negative dimensions, and the shape rules of common operators. Throws shape_error naming
    /// the node and tensor.
    void validate() const;

    /// Structural equality (names, op types, attributes, wiring, shapes, kinds, constant data).
    friend bool operator==(const Graph& a, const Graph& b);

private:
    std::vector<int> tensors_of_kind(TensorKind k) const;
    const Shape& in_shape(const Node& nd, std::size_t slot) const {
        return m_tensors[static_cast<std::size_t>(nd.inputs[slot])].shape;
    }
    /// The spatial output size of a Conv follows from input, kernel, strides, dilations and
    /// padding; an output that disagrees, or an input too small for the kernel, is an error
    /// (rather than a cost computed for a shape that cannot exist).
    void check_conv_spatial(const Node& nd, const Shape& x, const Shape& w) const;
    [[noreturn]] void shape_fail(const Node& nd, const std::string& why) const;
    static bool broadcastable(const Shape& a, const Shape& b);
    void check_node_shapes(const Node& nd) const;

    std::string m_name;
    std::vector<Node> m_nodes;
    std::vector<Tensor> m_tensors;
    std::unordered_map<std::string, int> m_tensor_index;
};

}  // namespace dnncost::graph

namespace dnncost {
using graph::Graph;
}

#if !defined(DNNCOST_COMPILED)
#include <dnncost/graph/graph_impl.hpp>
#endif
