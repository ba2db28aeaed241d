#pragma once
/// @file fusion_match.hpp
/// Where fusion rules meet a graph: which nodes a runtime never executes (values fixed at load,
/// operators that only relabel memory), what a consumer's other operands are, and the groups of
/// nodes that match a pattern rule. Shared by the kernel pass and the rule discovery.
#include <algorithm>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <dnncost/cost/analytic.hpp>
#include <dnncost/cost/op_config.hpp>
#include <dnncost/device/fusion_rules.hpp>
#include <dnncost/graph/flat_view.hpp>
#include <dnncost/graph/graph.hpp>

namespace dnncost::device {

/// What a runtime does with a node.
enum class NodeRole {
    compute,   ///< executed, in some kernel
    constant,  ///< computed once at load (all its inputs are constants, or it reads only a shape)
    free       ///< relabels memory only (cost::is_free_operator): no kernel of its own
};

/// The role of every node of `view`, indexed like its nodes, given the graph's topological
/// order, written over `roles`. A Shape or Size node is constant: shapes are static once the
/// graph is validated, so a runtime folds the shape arithmetic behind them.
inline void node_roles_into(const graph::FlatView& view, const std::vector<int>& order, std::vector<NodeRole>& roles) {
    roles.assign(view.num_nodes(), NodeRole::compute);
    // what an op type is, looked up once per distinct type (a graph has few)
    const auto& ops = view.op_names();
    std::vector<char> shape_op(ops.size()), free_op(ops.size());
    for (std::size_t i = 0; i < ops.size(); ++i) {
        shape_op[i] = ops[i] == "Shape" || ops[i] == "Size";
        free_op[i] = cost::is_free_operator(ops[i]);
    }
    for (int v : order) {
        bool constant = shape_op[static_cast<std::size_t>(view.op(v))] != 0;
        if (!constant) {
            constant = true;
            for (int t : view.inputs(v)) {
                if (t < 0 || view.is_weight(t)) continue;
                const int p = view.producer(t);
                if (p >= 0 && roles[static_cast<std::size_t>(p)] == NodeRole::constant) continue;
                constant = false;
                break;
            }
        }
        if (constant)
            roles[static_cast<std::size_t>(v)] = NodeRole::constant;
        else if (free_op[static_cast<std::size_t>(view.op(v))])
            roles[static_cast<std::size_t>(v)] = NodeRole::free;
    }
}

/// The role of every node, indexed like g.nodes(), given the graph's topological order.
inline std::vector<NodeRole> node_roles(const graph::Graph& g, const std::vector<int>& order) {
    graph::FlatView view;
    view.rebuild(g);
    std::vector<NodeRole> roles;
    node_roles_into(view, order, roles);
    return roles;
}
inline std::vector<NodeRole> node_roles(const graph::Graph& g) { return node_roles(g, g.topological_order()); }

/// Per tensor of `view`: 1 when it is a constant (a weight or the output of a constant node),
/// written over `out`.
inline void constant_tensors_into(const graph::FlatView& view, const std::vector<NodeRole>& roles,
                                  std::vector<char>& out) {
    out.resize(view.num_tensors());
    for (std::size_t t = 0; t < out.size(); ++t) {
        const int p = view.producer(static_cast<int>(t));
        out[t] =
            view.is_weight(static_cast<int>(t)) || (p >= 0 && roles[static_cast<std::size_t>(p)] == NodeRole::constant);
    }
}

/// True when tensor `t` is a constant: a weight or the output of a constant node.
inline bool is_constant_tensor(const graph::Graph& g, const std::vector<NodeRole>& roles, int t) {
    const auto& ten = g.tensor(t);
    if (ten.kind == graph::TensorKind::weight) return true;
    return ten.producer >= 0 && roles[static_cast<std::size_t>(ten.producer)] == NodeRole::constant;
}

/// The operands of node `consumer` other than tensor `t`: none, only constants, or at least one
/// activation.
inline Operands operand_class(const graph::Graph& g, const std::vector<NodeRole>& roles, int consumer, int t) {
    bool any = false;
    for (int in : g.node(consumer).inputs) {
        if (in < 0 || in == t) continue;
        if (!is_constant_tensor(g, roles, in)) return Operands::activation;
        any = true;
    }
    return any ? Operands::constant : Operands::none;
}

/// operand_class() on a view, with `constant` from constant_tensors_into().
inline Operands operand_class(const graph::FlatView& view, const std::vector<char>& constant, int consumer, int t) {
    bool any = false;
    for (int in : view.inputs(consumer)) {
        if (in < 0 || in == t) continue;
        if (!constant[static_cast<std::size_t>(in)]) return Operands::activation;
        any = true;
    }
    return any ? Operands::constant : Operands::none;
}

/// Position of every node in a topological order (`order`, or the graph's stable one).
inline std::vector<int> topological_positions(const graph::Graph& g, const std::vector<int>& order) {
    std::vector<int> pos(g.num_nodes(), 0);
    for (std::size_t i = 0; i < order.size(); ++i) pos[static_cast<std::size_t>(order[i])] = static_cast<int>(i);
    return pos;
}
inline std::vector<int> topological_positions(const graph::Graph& g) {
    return topological_positions(g, g.topological_order());
}

/// One match of a pattern rule: its index in FusionRules::patterns and its nodes, in pattern order.
struct PatternMatch {
    std::size_t pattern = 0;
    std::vector<int> nodes;
};

/// Storage of match_patterns_into(), kept from one graph to the next.
struct PatternScratch {
    std::vector<char> claimed, in_group;
    std::vector<int> external, nodes, ops;
};

namespace detail {
/// Grow a pattern of op types `ops` (numbers of the view's op types) from node `start`: each
/// next operator is the earliest unclaimed consumer of a matched node with the next type whose
/// inputs are all matched outputs, constants, or values the group already reads from outside.
/// The intermediates must stay inside the group (only the last operator's outputs leave it), so
/// the group is one kernel with one result. `s.in_group` is all zero before and after.
inline bool grow_pattern(const graph::FlatView& view, const std::vector<NodeRole>& roles,
                         const std::vector<char>& constant, const std::vector<int>& pos, std::span<const int> ops,
                         int start, PatternScratch& s) {
    auto& out = s.nodes;
    auto& in_group = s.in_group;
    out.assign(1, start);
    in_group[static_cast<std::size_t>(start)] = 1;
    s.external.clear();  // activations the group reads from outside
    for (int t : view.inputs(start))
        if (t >= 0 && !constant[static_cast<std::size_t>(t)]) s.external.push_back(t);
    const auto grown = [&] {
        for (std::size_t k = 1; k < ops.size(); ++k) {
            int best = -1;
            for (int m : out)
                for (int o : view.outputs(m))
                    for (int c : view.consumers(o)) {
                        const auto ci = static_cast<std::size_t>(c);
                        if (in_group[ci] || s.claimed[ci] || roles[ci] != NodeRole::compute || view.op(c) != ops[k])
                            continue;
                        bool fits = true;
                        for (int t : view.inputs(c)) {
                            if (t < 0 || constant[static_cast<std::size_t>(t)]) continue;
                            const int prod = view.producer(t);
                            if (prod >= 0 && in_group[static_cast<std::size_t>(prod)]) continue;
                            if (std::find(s.external.begin(), s.external.end(), t) != s.external.end()) continue;
                            fits = false;
                            break;
                        }
                        if (fits && (best < 0 || pos[ci] < pos[static_cast<std::size_t>(best)])) best = c;
                    }
            if (best < 0) return false;
            out.push_back(best);
            in_group[static_cast<std::size_t>(best)] = 1;
        }
        for (std::size_t k = 0; k + 1 < out.size(); ++k)
            for (int t : view.outputs(out[k])) {
                if (view.is_output(t)) return false;
                for (int c : view.consumers(t))
                    if (!in_group[static_cast<std::size_t>(c)]) return false;
            }
        return true;
    }();
    for (int v : out) in_group[static_cast<std::size_t>(v)] = 0;
    return grown;
}
}  // namespace detail

/// The matches of `patterns` in the graph of `view`, disjoint, written over `out`: start nodes
/// are tried in topological order (`order`, with `pos` the position of each node in it) and
/// patterns in the order of the rule set, the first that matches claims its nodes. `constant`:
/// per tensor, as constant_tensors_into(). A pattern with an op type no node has is never tried.
inline void match_patterns_into(const graph::FlatView& view, const std::vector<NodeRole>& roles,
                                const std::vector<char>& constant, const std::vector<PatternRule>& patterns,
                                const std::vector<int>& order, const std::vector<int>& pos, PatternScratch& s,
                                std::vector<PatternMatch>& out) {
    out.clear();
    // each pattern's op types as the view numbers them, one pattern after another in s.ops; a
    // pattern with an op type the view lacks gets -1 as its first, so that it never starts
    auto& ops = s.ops;
    ops.clear();
    bool any = false;
    for (const auto& p : patterns) {
        bool present = !p.ops.empty();
        for (const auto& op : p.ops) {
            ops.push_back(view.find_op(op));
            present = present && ops.back() >= 0;
        }
        if (!present && !p.ops.empty()) ops[ops.size() - p.ops.size()] = -1;
        any = any || present;
    }
    if (!any) return;
    s.claimed.assign(view.num_nodes(), 0);
    s.in_group.assign(view.num_nodes(), 0);
    for (int v : order) {
        const auto vi = static_cast<std::size_t>(v);
        if (s.claimed[vi] || roles[vi] != NodeRole::compute) continue;
        std::size_t at = 0;
        for (std::size_t p = 0; p < patterns.size(); at += patterns[p].ops.size(), ++p) {
            const std::span<const int> pattern_ops(ops.data() + at, patterns[p].ops.size());
            if (pattern_ops.empty() || pattern_ops[0] != view.op(v)) continue;
            if (!detail::grow_pattern(view, roles, constant, pos, pattern_ops, v, s)) continue;
            for (int m : s.nodes) s.claimed[static_cast<std::size_t>(m)] = 1;
            out.push_back({p, s.nodes});
            break;
        }
    }
}

/// The matches of `patterns` in `g` (match_patterns_into()), given its roles and a topological
/// order.
inline std::vector<PatternMatch> match_patterns(const graph::Graph& g, const std::vector<NodeRole>& roles,
                                                const std::vector<PatternRule>& patterns,
                                                const std::vector<int>& order) {
    std::vector<PatternMatch> out;
    if (patterns.empty()) return out;
    graph::FlatView view;
    view.rebuild(g);
    std::vector<char> constant;
    constant_tensors_into(view, roles, constant);
    PatternScratch s;
    match_patterns_into(view, roles, constant, patterns, order, topological_positions(g, order), s, out);
    return out;
}
inline std::vector<PatternMatch> match_patterns(const graph::Graph& g, const std::vector<NodeRole>& roles,
                                                const std::vector<PatternRule>& patterns) {
    return patterns.empty() ? std::vector<PatternMatch>{} : match_patterns(g, roles, patterns, g.topological_order());
}

}  // namespace dnncost::device
