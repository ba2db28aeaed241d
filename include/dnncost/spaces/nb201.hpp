#pragma once
/// @file nb201.hpp
/// The NAS-Bench-201 search space: architecture strings, a canonical index, enumeration, and
/// the operator-level graph of the full CIFAR network (32x32 input).
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <dnncost/core/config.hpp>
#include <dnncost/core/error.hpp>
#include <dnncost/graph/graph.hpp>

namespace dnncost::nb201 {

/// The five candidate operations, in the canonical order used by the index.
enum class Op : std::uint8_t { none = 0, skip_connect = 1, nor_conv_1x1 = 2, nor_conv_3x3 = 3, avg_pool_3x3 = 4 };
inline constexpr std::array<std::string_view, 5> op_names{"none", "skip_connect", "nor_conv_1x1", "nor_conv_3x3",
                                                          "avg_pool_3x3"};
inline constexpr int num_edges = 6;
inline constexpr int num_ops = 5;
inline constexpr std::int64_t num_architectures = 15625;  // 5^6
/// (to, from) of the six cell edges in string order: 1<-0 | 2<-0 2<-1 | 3<-0 3<-1 3<-2.
inline constexpr std::array<std::array<int, 2>, 6> edge_nodes{{{1, 0}, {2, 0}, {2, 1}, {3, 0}, {3, 1}, {3, 2}}};

/// One cell, edge ops in string order.
struct Arch {
    std::array<Op, 6> ops{};
    friend bool operator==(const Arch&, const Arch&) = default;
};

inline Op op_from_name(std::string_view s) {
    for (std::size_t i = 0; i < op_names.size(); ++i)
        if (op_names[i] == s) return static_cast<Op>(i);
    raise<parse_error>("nb201: unknown operation '", s,
                       "' (expected none, skip_connect, nor_conv_1x1, nor_conv_3x3 or avg_pool_3x3)");
}

/// Parse `|op~0|+|op~0|op~1|+|op~0|op~1|op~2|`. Throws parse_error saying what is wrong.
DNNCOST_FUNC Arch parse(std::string_view text);

DNNCOST_FUNC std::string to_string(const Arch& a);

/// Canonical index in [0, 15625): the six ops as base-5 digits, first edge most significant.
/// (This is dnncost's own order, not the row order of the NAS-Bench-201 API file.)
inline std::int64_t to_index(const Arch& a) {
    std::int64_t idx = 0;
    for (auto op : a.ops) idx = idx * num_ops + static_cast<std::int64_t>(op);
    return idx;
}
DNNCOST_FUNC Arch from_index(std::int64_t idx);
/// All 15,625 architectures in index order.
inline std::vector<Arch> enumerate() {
    std::vector<Arch> all;
    all.reserve(num_architectures);
    for (std::int64_t i = 0; i < num_architectures; ++i) all.push_back(from_index(i));
    return all;
}

/// Network (as in the reference implementation): stem Conv3x3(3->16)+BN; three stages of five
/// cells with C = 16, 32, 64; between stages a ResNet basic block with stride 2
/// (ReLU-Conv3x3/2-BN, ReLU-Conv3x3-BN, shortcut AvgPool2x2/2 + Conv1x1, Add); then BN, ReLU,
/// global average pooling, flatten, Linear(64 -> 10).
/// Cell: node 0 is the input; node i (1..3) is the sum of op(i<-j)(node j) for j < i; node 3 is
/// the output. nor_conv_KxK = ReLU -> Conv(KxK) -> BN, avg_pool_3x3 = AveragePool(3, stride 1,
/// pad 1, count_include_pad = 0), skip_connect = identity, none = multiplication by zero.
///
/// By default the graph is what an eager runtime executes: every edge operator runs, even when
/// its input is all zeros or its result is never used. With `prune` the graph is what a graph
/// compiler keeps: zero operators are removed, operators whose inputs are all constant are
/// folded away, and operators that cannot reach the network output are dropped.
struct Nb201Options {
    std::int64_t batch = 1;
    std::int64_t input_size = 32;
    std::int64_t num_classes = 10;
    std::array<std::int64_t, 3> channels{16, 32, 64};
    int cells_per_stage = 5;
    bool prune = false;  ///< graph-compiler view instead of the eager one
};

namespace detail {

/// Builds the network, tracking for the pruned view which tensors are compile-time constants.
class Builder {
public:
    explicit Builder(const Nb201Options& o, const Arch& a) : m_opt(o), m_arch(a) {
        m_g.set_name("nb201" + to_string(a));
    }

    graph::Graph build();

private:
    struct Value {
        int tensor = -1;        ///< -1: an all-zero value that was never materialised (pruned view)
        bool constant = false;  ///< compile-time constant (pruned view only)
    };

    const graph::Shape& shape(const Value& v) const { return m_g.tensor(v.tensor).shape; }

    Value emit(const std::string& op, const std::string& name, std::vector<int> inputs, graph::Shape out,
               std::vector<graph::Attribute> attrs, bool constant) {
        if (m_opt.prune && constant) return Value{m_zero_placeholder(out), true};
        return Value{m_g.add_op(op, name, std::move(inputs), std::move(out), std::move(attrs)), false};
    }
    // In the pruned view a folded constant still needs a tensor to carry its shape; it is a
    // weight-like constant that no node produces.
    int m_zero_placeholder(const graph::Shape& s) {
        return m_g.add_weight("const" + std::to_string(m_const_counter++), s);
    }

    Value op_out(const Value& x, const std::string& op, const std::string& name, graph::Shape out,
                 std::vector<graph::Attribute> attrs) {
        return emit(op, name, {x.tensor}, std::move(out), std::move(attrs), x.constant);
    }
    Value unary(const Value& x, const std::string& op, const std::string& name) {
        return op_out(x, op, name, shape(x), {});
    }
    Value conv(const Value& x, std::int64_t cout, std::int64_t k, std::int64_t stride, const std::string& name,
               bool bias);
    Value bn(const Value& x, const std::string& name);
    Value relu_conv_bn(const Value& x, std::int64_t cout, std::int64_t k, std::int64_t stride, const std::string& name);
    Value add(const Value& a, const Value& b, const std::string& name) {
        return emit("Add", name, {a.tensor, b.tensor}, shape(a), {}, a.constant && b.constant);
    }
    Value resblock(const Value& x, std::int64_t planes, const std::string& name);
    Value cell(const Value& x, const std::string& name);
    int zero_scalar();

    // Pruned view: drop nodes whose outputs cannot reach a graph output, and unused constants.
    static graph::Graph remove_dead(graph::Graph g);

    const Nb201Options& m_opt;
    const Arch& m_arch;
    graph::Graph m_g;
    int m_zero = -1;
    int m_const_counter = 0;
    graph::Shape m_cell_shape;
};

}  // namespace detail

/// The operator graph of the full network for one architecture.
/// @throws config_error for options no network can be built with
inline void check_options(const Nb201Options& opt) {
    if (opt.batch < 1 || opt.input_size < 4 || opt.num_classes < 1 || opt.cells_per_stage < 1)
        raise<config_error>("nb201::build_graph: invalid options (batch ", opt.batch, ", input ", opt.input_size,
                            ", classes ", opt.num_classes, ", cells ", opt.cells_per_stage, ")");
}
inline graph::Graph build_graph(const Arch& arch, const Nb201Options& opt = {}) {
    check_options(opt);
    return detail::Builder(opt, arch).build();
}
inline graph::Graph build_graph(std::string_view arch, const Nb201Options& opt = {}) {
    return build_graph(parse(arch), opt);
}

/// Per-cell operator counts (edges of each op kind), the additive view of the architecture.
inline std::array<int, 5> op_counts(const Arch& a) {
    std::array<int, 5> c{};
    for (auto op : a.ops) ++c[static_cast<std::size_t>(op)];
    return c;
}

/// The other string of the same network, if the cell has one: when edge 2<-1 is `none`, nodes 1
/// and 2 both depend on node 0 alone, and exchanging them (edges 1<-0 with 2<-0, 3<-1 with 3<-2)
/// computes the same function with the same operators on the same shapes. The compiled
/// (pruned) graphs are isomorphic; in the eager ones only the multiplication by zero of edge
/// 2<-1 reads the other node. Returns nullopt when edge 2<-1 is not `none` or the exchange gives
/// the same string. NAS-Bench-201 lists such twins as separate architectures and the latency
/// tables measured each, so a twin pair is two measurements of one network (bench/noise.cpp
/// uses them to estimate the measurement noise, which bounds what any estimator can reach).
DNNCOST_FUNC std::optional<Arch> isomorphic_twin(const Arch& a);

}  // namespace dnncost::nb201

#if !defined(DNNCOST_COMPILED)
#include <dnncost/spaces/nb201_impl.hpp>
#endif
