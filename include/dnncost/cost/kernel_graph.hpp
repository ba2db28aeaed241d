#pragma once
/// @file kernel_graph.hpp
/// The kernels a runtime executes for an operator graph under a device's fusion rules
/// (cost/fusion_rules.hpp): the unit a per-kernel latency model prices.
///
/// The pass, in order:
/// 1. Nodes computed at load (constant inputs only, shape arithmetic) and free operators
///    (reshape-like: cost::is_free_operator) get no kernel.
/// 2. Pattern rules replace their matched groups by one unit of the pattern's name.
/// 3. In topological order, a unit joins the kernel of a producer when a fusion rule holds for
///    the pair (producer kind, consumer kind, the consumer's other operands, the kind that starts
///    the producer's kernel); a unit joins at most one kernel. A folded unit (BatchNorm into Conv)
///    is kept in the kernel but executes nothing, and a later rule sees its producer's kind in
///    its place, so Conv -> BatchNorm -> Add -> Relu chains into one "Conv+Add+Relu".
///    A fusion whose intermediate would be read outside the kernel (against a sole-consumer
///    condition) is undone and the pass repeated; so is any fusion that would make the kernels
///    cyclic. Both only ever remove fusions, so the pass ends.
/// 4. Each kernel gets a layout (LayoutRule): blocked when it starts with an anchor whose
///    channel counts fit the block, or with a follower all of whose inputs are blocked.
///    A value that crosses layouts gets a reorder kernel (one per value and target layout);
///    free operators and graph outputs read the plain layout.
/// Everything is deterministic: ties go to the earlier node in the graph's topological order.
#include <algorithm>
#include <cstdint>
#include <queue>
#include <set>
#include <span>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <dnncost/core/error.hpp>
#include <dnncost/core/json_string.hpp>
#include <dnncost/cost/analytic.hpp>
#include <dnncost/cost/fusion_match.hpp>
#include <dnncost/cost/fusion_rules.hpp>
#include <dnncost/graph/graph.hpp>

namespace dnncost::cost {

/// A memory layout of activations: plain (NCHW) or blocked by `block` channels.
struct Layout {
    std::int64_t block = 0;
    bool blocked() const { return block > 0; }
    friend bool operator==(const Layout&, const Layout&) = default;
};

/// One kernel. A reorder kernel has no nodes; it converts `inputs[0]` from `input_layout` to
/// `layout`.
struct Kernel {
    std::string kind;          ///< "Conv+Add+Relu", a pattern name, or "Reorder"
    std::vector<int> nodes;    ///< executed nodes, in topological order
    std::vector<int> folded;   ///< nodes folded into the kernel's constants at load
    std::vector<int> inputs;   ///< activations it reads (graph tensor ids), each once
    std::vector<int> outputs;  ///< values it writes that are read elsewhere or are graph outputs
    std::vector<graph::Shape> input_shapes, output_shapes;
    Layout layout;
    Layout input_layout;  ///< = layout except for a reorder
    NodeCost cost;        ///< MACs and FLOPs of its executed nodes; bytes it moves; weights
    bool is_reorder() const { return nodes.empty(); }
};

/// A value passed from kernel `src` to kernel `dst` (`tensor`: the graph tensor it carries).
struct KernelEdge {
    int src = -1;
    int dst = -1;
    int tensor = -1;
    friend bool operator==(const KernelEdge&, const KernelEdge&) = default;
};

/// The kernels of a graph in execution (topological) order, and the values between them.
struct KernelGraph {
    std::vector<Kernel> kernels;
    std::vector<KernelEdge> edges;
    std::vector<int> kernel_of_node;  ///< per graph node; -1 for a node without a kernel
    std::vector<NodeRole> roles;      ///< per graph node
    std::string layout_name = "NCHWc";

    /// "NCHW" or e.g. "NCHWc16".
    std::string layout_string(const Layout& l) const {
        return l.blocked() ? layout_name + std::to_string(l.block) : std::string("NCHW");
    }
    std::size_t num_reorders() const {
        return static_cast<std::size_t>(
            std::count_if(kernels.begin(), kernels.end(), [](const Kernel& k) { return k.is_reorder(); }));
    }
    std::vector<int> predecessors(int k) const {
        std::vector<int> r;
        for (const auto& e : edges)
            if (e.dst == k) r.push_back(e.src);
        return graph::Graph::distinct_in_order(std::move(r));
    }
    std::vector<int> successors(int k) const {
        std::vector<int> r;
        for (const auto& e : edges)
            if (e.src == k) r.push_back(e.dst);
        return graph::Graph::distinct_in_order(std::move(r));
    }
    /// Sum over kernels.
    NodeCost total_cost() const {
        NodeCost t;
        for (const auto& k : kernels) t += k.cost;
        return t;
    }

    /// One JSON object: the kernels (kind, layout, node names, shapes, counts) and the edges.
    std::string to_json(const graph::Graph& g) const {
        const auto str = [](const std::string& s) { return json_quote(s); };
        const auto names = [&](const std::vector<int>& ids) {
            std::string o = "[";
            for (std::size_t i = 0; i < ids.size(); ++i) o += (i ? ", " : "") + str(g.node(ids[i]).name);
            return o + "]";
        };
        const auto shapes = [](const std::vector<graph::Shape>& v) {
            std::string o = "[";
            for (std::size_t i = 0; i < v.size(); ++i) o += (i ? ", " : "") + graph::to_string(v[i]);
            return o + "]";
        };
        std::string o = "{\"kernels\": [";
        for (std::size_t i = 0; i < kernels.size(); ++i) {
            const auto& k = kernels[i];
            o += std::string(i ? ", " : "") + "{\"kind\": " + str(k.kind) +
                 ", \"layout\": " + str(layout_string(k.layout)) +
                 ", \"input_layout\": " + str(layout_string(k.input_layout)) + ", \"nodes\": " + names(k.nodes) +
                 ", \"folded\": " + names(k.folded) + ", \"inputs\": " + shapes(k.input_shapes) +
                 ", \"outputs\": " + shapes(k.output_shapes) + ", \"macs\": " + std::to_string(k.cost.macs) +
                 ", \"flops\": " + std::to_string(k.cost.flops) + ", \"params\": " + std::to_string(k.cost.params) +
                 ", \"bytes\": " + std::to_string(k.cost.bytes()) + "}";
        }
        o += "], \"edges\": [";
        for (std::size_t i = 0; i < edges.size(); ++i)
            o += std::string(i ? ", " : "") + "[" + std::to_string(edges[i].src) + ", " + std::to_string(edges[i].dst) +
                 ", " + str(g.tensor(edges[i].tensor).name) + "]";
        return o + "]}";
    }
};

namespace detail {

/// The units of a graph (pattern groups and single compute nodes) and the fused groups of units.
struct FusionPlan {
    /// nodes of unit u, in topological order: unit_flat[unit_start[u] .. unit_start[u + 1])
    std::vector<int> unit_start{0};
    std::vector<int> unit_flat;
    std::vector<int> unit_kind;  ///< per unit: an id into KindIndex::names
    std::vector<int> unit_of;  ///< per node; -1 for a node without a kernel
    std::vector<int> group;    ///< per unit: the first unit of its kernel
    std::vector<char> folded;  ///< per unit
    struct Fused {
        int producer, consumer, tensor;
        const FusionRule* rule;
    };
    std::vector<Fused> fused;
    std::vector<int> item_order;  ///< kernels (as their first unit) and kernel-less nodes (as ~node)

    std::size_t units() const { return unit_kind.size(); }
    std::span<const int> nodes_of(std::size_t u) const {
        return {unit_flat.data() + unit_start[u], static_cast<std::size_t>(unit_start[u + 1] - unit_start[u])};
    }
    void add_unit(std::span<const int> nodes, int kind) {
        unit_flat.insert(unit_flat.end(), nodes.begin(), nodes.end());
        unit_start.push_back(static_cast<int>(unit_flat.size()));
        unit_kind.push_back(kind);
    }
};

/// The operator kinds of one graph (op types and pattern names) as small integers, and the
/// fusion rules indexed by them, so that the pass compares integers, not strings.
struct KindIndex {
    std::vector<std::string_view> names;
    std::vector<int> op_kind;                    ///< per node
    std::vector<std::vector<int>> by_consumer;   ///< per kind: rules with it as consumer, in rule order
    std::vector<int> producer;                   ///< per rule: its producer's kind, -1 when absent
    std::vector<std::vector<int>> after;         ///< per rule: kinds of its `after` list present
    std::vector<char> anchor, follower;          ///< per kind: of the layout rule

    int intern(std::string_view name) {
        for (std::size_t i = 0; i < names.size(); ++i)
            if (names[i] == name) return static_cast<int>(i);
        names.push_back(name);
        return static_cast<int>(names.size()) - 1;
    }
    int find(std::string_view name) const {
        for (std::size_t i = 0; i < names.size(); ++i)
            if (names[i] == name) return static_cast<int>(i);
        return -1;
    }
    KindIndex(const graph::Graph& g, const FusionRules& rules) {
        op_kind.resize(g.num_nodes());
        for (std::size_t v = 0; v < g.num_nodes(); ++v) op_kind[v] = intern(g.node(static_cast<int>(v)).op_type);
        for (const auto& p : rules.patterns) (void)intern(p.name);
        by_consumer.resize(names.size());
        producer.resize(rules.fusions.size());
        after.resize(rules.fusions.size());
        for (std::size_t r = 0; r < rules.fusions.size(); ++r) {
            const auto& f = rules.fusions[r];
            producer[r] = find(f.producer);
            for (const auto& a : f.after)
                if (const int k = find(a); k >= 0) after[r].push_back(k);
            if (const int c = find(f.consumer); c >= 0) by_consumer[static_cast<std::size_t>(c)].push_back(static_cast<int>(r));
        }
        anchor.assign(names.size(), 0);
        follower.assign(names.size(), 0);
        for (std::size_t k = 0; k < names.size(); ++k) {
            anchor[k] = rules.layout.is_anchor(names[k]);
            follower[k] = rules.layout.is_follower(names[k]);
        }
    }
    /// As FusionRules::find, on kinds of this index.
    const FusionRule* find_rule(const FusionRules& rules, int producer_kind, int consumer_kind, Operands operands,
                                int anchor_kind) const {
        for (int r : by_consumer[static_cast<std::size_t>(consumer_kind)]) {
            const auto& rule = rules.fusions[static_cast<std::size_t>(r)];
            if (producer[static_cast<std::size_t>(r)] != producer_kind) continue;
            if (rule.operands != Operands::any && rule.operands != operands) continue;
            const auto& a = after[static_cast<std::size_t>(r)];
            if (!rule.after.empty() && std::find(a.begin(), a.end(), anchor_kind) == a.end()) continue;
            return &rule;
        }
        return nullptr;
    }
};

/// Groups units by the fusion rules, skipping `banned` (producer unit, consumer unit, tensor).
inline void fuse_units(const graph::Graph& g, const std::vector<NodeRole>& roles, const FusionRules& rules,
                       const KindIndex& kinds, const std::set<std::tuple<int, int, int>>& banned, FusionPlan& plan) {
    const std::size_t units = plan.units();
    plan.group.resize(units);
    plan.folded.assign(units, 0);
    plan.fused.clear();
    std::vector<int> effective(units);  // the unit whose kind a unit shows: a folded one its producer's
    for (std::size_t v = 0; v < units; ++v) {
        plan.group[v] = static_cast<int>(v);
        effective[v] = static_cast<int>(v);
        // does any rule take this kind as a consumer?
        if (kinds.by_consumer[static_cast<std::size_t>(plan.unit_kind[v])].empty()) continue;
        bool joined = false;
        for (int n : plan.nodes_of(v)) {
            for (int t : g.node(n).inputs) {
                if (joined || t < 0 || is_constant_tensor(g, roles, t)) continue;
                const int p = g.tensor(t).producer;
                if (p < 0 || plan.unit_of[static_cast<std::size_t>(p)] < 0) continue;
                const int u = plan.unit_of[static_cast<std::size_t>(p)];
                if (u == static_cast<int>(v) || (!banned.empty() && banned.count({u, static_cast<int>(v), t}))) continue;
                const auto gu = static_cast<std::size_t>(plan.group[static_cast<std::size_t>(u)]);
                const auto* rule = kinds.find_rule(
                    rules, plan.unit_kind[static_cast<std::size_t>(effective[static_cast<std::size_t>(u)])],
                    plan.unit_kind[v], operand_class(g, roles, n, t), plan.unit_kind[gu]);
                if (!rule) continue;
                plan.group[v] = static_cast<int>(gu);
                plan.folded[v] = rule->fold;
                if (rule->fold) effective[v] = effective[static_cast<std::size_t>(u)];
                plan.fused.push_back({u, static_cast<int>(v), t, rule});
                joined = true;
            }
        }
    }
}

/// Fusions that break a sole-consumer condition: the intermediate is a graph output or is read
/// by a node outside the kernel.
inline std::vector<std::tuple<int, int, int>> sole_consumer_violations(const graph::Graph& g, const FusionPlan& plan) {
    std::vector<std::tuple<int, int, int>> out;
    for (const auto& f : plan.fused) {
        if (!f.rule->sole_consumer) continue;
        const auto& ten = g.tensor(f.tensor);
        const int kernel = plan.group[static_cast<std::size_t>(f.consumer)];
        bool ok = !ten.is_output;
        for (int c : ten.consumers) {
            const int u = plan.unit_of[static_cast<std::size_t>(c)];
            if (u < 0 || plan.group[static_cast<std::size_t>(u)] != kernel) ok = false;
        }
        if (!ok) out.emplace_back(f.producer, f.consumer, f.tensor);
    }
    return out;
}

/// Orders the kernels and kernel-less nodes topologically (earliest first node first); returns
/// false when the grouping is cyclic, with `cyclic` set to the earliest kernel left unordered.
inline bool order_items(const graph::Graph& g, const std::vector<int>& pos, FusionPlan& plan, int& cyclic) {
    const std::size_t n = g.num_nodes();
    // item of a node: its kernel's first unit, or units + node for a kernel-less node
    const auto units = static_cast<int>(plan.units());
    const auto item_of = [&](int node) {
        const int u = plan.unit_of[static_cast<std::size_t>(node)];
        return u >= 0 ? plan.group[static_cast<std::size_t>(u)] : units + node;
    };
    const std::size_t items = plan.units() + n;
    std::vector<int> key(items, -1), indeg(items, 0);
    for (std::size_t v = 0; v < n; ++v) {
        const int it = item_of(static_cast<int>(v));
        auto& k = key[static_cast<std::size_t>(it)];
        if (k < 0 || pos[v] < k) k = pos[v];
    }
    // successors of each item, in compressed rows (the graph's edges: producer -> consumer of
    // every input; the order of a row does not matter, keys are unique)
    const auto for_each_edge = [&](const auto& f) {
        for (std::size_t v = 0; v < n; ++v)
            for (int t : g.node(static_cast<int>(v)).inputs)
                if (t >= 0)
                    if (const int p = g.tensor(t).producer; p >= 0) f(p, static_cast<int>(v));
    };
    std::vector<int> start(items + 1, 0), succ;
    for_each_edge([&](int src, int dst) {
        const int a = item_of(src), b = item_of(dst);
        if (a == b) return;
        ++start[static_cast<std::size_t>(a) + 1];
        ++indeg[static_cast<std::size_t>(b)];
    });
    for (std::size_t i = 0; i < items; ++i) start[i + 1] += start[i];
    succ.resize(static_cast<std::size_t>(start[items]));
    {
        auto fill = start;
        for_each_edge([&](int src, int dst) {
            const int a = item_of(src), b = item_of(dst);
            if (a != b) succ[static_cast<std::size_t>(fill[static_cast<std::size_t>(a)]++)] = b;
        });
    }
    using Entry = std::pair<int, int>;  // (key, item)
    std::priority_queue<Entry, std::vector<Entry>, std::greater<>> ready;
    std::size_t live = 0;
    for (std::size_t i = 0; i < items; ++i)
        if (key[i] >= 0) {
            ++live;
            if (indeg[i] == 0) ready.push({key[i], static_cast<int>(i)});
        }
    plan.item_order.clear();
    while (!ready.empty()) {
        const int it = ready.top().second;
        ready.pop();
        plan.item_order.push_back(it < units ? it : ~(it - units));
        for (int j = start[static_cast<std::size_t>(it)]; j < start[static_cast<std::size_t>(it) + 1]; ++j) {
            const int s = succ[static_cast<std::size_t>(j)];
            if (--indeg[static_cast<std::size_t>(s)] == 0) ready.push({key[static_cast<std::size_t>(s)], s});
        }
    }
    if (plan.item_order.size() == live) return true;
    cyclic = -1;
    for (int u = 0; u < units; ++u)
        if (key[static_cast<std::size_t>(u)] >= 0 && indeg[static_cast<std::size_t>(u)] > 0 &&
            (cyclic < 0 || key[static_cast<std::size_t>(u)] < key[static_cast<std::size_t>(cyclic)]))
            cyclic = u;
    return false;
}

/// Whether a kernel starting with anchor node `a` can run blocked by `block`, and whether it
/// reads its first input in the plain layout (a narrow first convolution).
inline bool anchor_fits(const graph::Graph& g, const graph::Node& a, const LayoutRule& layout, bool& narrow) {
    narrow = false;
    const auto b = layout.block;
    if (a.inputs.empty() || a.inputs[0] < 0 || a.outputs.empty()) return false;
    const auto& x = g.tensor(a.inputs[0]).shape;
    const auto& y = g.tensor(a.outputs[0]).shape;
    if (x.size() != 4 || y.size() != 4 || y[1] % b != 0) return false;
    const std::int64_t c = x[1], k = y[1];
    const auto group = a.op_type == "Conv" ? a.attr_int("group", 1) : 1;
    if (group > 1) return group == c && c == k && c % b == 0;  // depthwise only
    if (c % b == 0) return true;
    narrow = layout.narrow_input && a.op_type == "Conv" && c < b;
    return narrow;
}

}  // namespace detail

/// The kernel graph of `g` under `rules`, written over `kg`: the same result as kernel_graph(),
/// reusing the storage of the kernels `kg` held, for a caller that builds many (a kernel's
/// vectors are most of the pass's allocations).
/// @throws as kernel_graph(); `kg` is then left in an unspecified but valid state
inline void kernel_graph_into(const graph::Graph& g, const FusionRules& rules, KernelGraph& kg) {
    rules.check();
    kg.layout_name = rules.layout.name;
    kg.edges.clear();
    std::size_t used = 0;  // kernels of kg written so far; the rest are storage to reuse
    const auto next_kernel = [&]() -> Kernel& {
        if (used == kg.kernels.size()) kg.kernels.emplace_back();
        return kg.kernels[used++];
    };
    // a shape list written over the storage of the old one
    const auto set_shapes = [&](std::vector<graph::Shape>& dst, const std::vector<int>& tensors) {
        dst.resize(tensors.size());
        for (std::size_t i = 0; i < tensors.size(); ++i) {
            const auto& s = g.tensor(tensors[i]).shape;
            dst[i].assign(s.begin(), s.end());
        }
    };
    // a graph whose nodes are already in topological order is its own stable order
    bool sorted = true;
    for (std::size_t v = 0; v < g.num_nodes() && sorted; ++v)
        for (int t : g.node(static_cast<int>(v)).inputs)
            if (t >= 0 && g.tensor(t).producer >= static_cast<int>(v)) sorted = false;
    std::vector<int> order;
    if (sorted) {
        order.resize(g.num_nodes());
        for (std::size_t v = 0; v < order.size(); ++v) order[v] = static_cast<int>(v);
    } else {
        order = g.topological_order();
    }
    kg.roles = node_roles(g, order);
    const auto& roles = kg.roles;
    const auto pos = topological_positions(g, order);

    // units: pattern groups first, then every other compute node, numbered in topological order
    const detail::KindIndex kinds(g, rules);
    detail::FusionPlan plan;
    plan.unit_of.assign(g.num_nodes(), -1);
    plan.unit_kind.reserve(g.num_nodes());
    plan.unit_flat.reserve(g.num_nodes());
    plan.unit_start.reserve(g.num_nodes() + 1);
    std::vector<int> pattern_of(g.num_nodes(), -1);
    const auto matches = match_patterns(g, roles, rules.patterns, order);
    for (std::size_t m = 0; m < matches.size(); ++m)
        for (int v : matches[m].nodes) pattern_of[static_cast<std::size_t>(v)] = static_cast<int>(m);
    std::vector<int> unit_of_match(matches.size(), -1);
    for (int v : order) {
        const auto vi = static_cast<std::size_t>(v);
        if (roles[vi] != NodeRole::compute) continue;
        const int m = pattern_of[vi];
        if (m >= 0 && unit_of_match[static_cast<std::size_t>(m)] >= 0) {
            plan.unit_of[vi] = unit_of_match[static_cast<std::size_t>(m)];
            continue;
        }
        plan.unit_of[vi] = static_cast<int>(plan.units());
        if (m >= 0) {
            unit_of_match[static_cast<std::size_t>(m)] = plan.unit_of[vi];
            auto nodes = matches[static_cast<std::size_t>(m)].nodes;
            std::sort(nodes.begin(), nodes.end(), [&](int a, int b) {
                return pos[static_cast<std::size_t>(a)] < pos[static_cast<std::size_t>(b)];
            });
            plan.add_unit(nodes, kinds.find(rules.patterns[matches[static_cast<std::size_t>(m)].pattern].name));
        } else {
            plan.add_unit(std::span<const int>(&v, 1), kinds.op_kind[vi]);
        }
    }

    // fusion, undoing fusions that break a condition or a cycle until none does
    std::set<std::tuple<int, int, int>> banned;
    for (;;) {
        detail::fuse_units(g, roles, rules, kinds, banned, plan);
        const auto bad = detail::sole_consumer_violations(g, plan);
        if (!bad.empty()) {
            banned.insert(bad.begin(), bad.end());
            continue;
        }
        int cyclic = -1;
        if (detail::order_items(g, pos, plan, cyclic)) break;
        if (cyclic < 0) raise<shape_error>("kernel graph of '", g.name(), "': the graph has a cycle");
        const auto before = banned.size();
        for (const auto& f : plan.fused)
            if (plan.group[static_cast<std::size_t>(f.consumer)] == cyclic)
                banned.insert({f.producer, f.consumer, f.tensor});
        if (banned.size() == before)  // a single unit on a cycle: only a malformed pattern match could do this
            raise<shape_error>("kernel graph of '", g.name(), "': unit '",
                               kinds.names[static_cast<std::size_t>(plan.unit_kind[static_cast<std::size_t>(cyclic)])],
                               "' lies on a cycle of kernels");
    }

    // kernels, in the order found; providers of values: (kernel or -1, layout)
    const std::size_t units = plan.units();
    // units of each kernel (by its first unit), in unit order: member_flat[member_start[k] ..)
    std::vector<int> member_start(units + 1, 0), member_flat(units);
    for (std::size_t u = 0; u < units; ++u) ++member_start[static_cast<std::size_t>(plan.group[u]) + 1];
    for (std::size_t u = 0; u < units; ++u) member_start[u + 1] += member_start[u];
    {
        auto fill = member_start;
        for (std::size_t u = 0; u < units; ++u)
            member_flat[static_cast<std::size_t>(fill[static_cast<std::size_t>(plan.group[u])]++)] = static_cast<int>(u);
    }
    struct Provider {
        int kernel = -1;
        Layout layout;
    };
    std::vector<Provider> provider(g.num_tensors());
    // reorder kernels of each tensor, to the plain and to the blocked layout (the rule set has
    // one block, so these are the only two targets)
    std::vector<int> reorder_to_plain(g.num_tensors(), -1), reorder_to_blocked(g.num_tensors(), -1);
    kg.kernel_of_node.assign(g.num_nodes(), -1);
    const auto add_edge = [&](int src, int dst, int t) {
        if (src >= 0) kg.edges.push_back({src, dst, t});
    };
    // the kernel that provides tensor t in layout `want`, adding a reorder when needed
    const auto ensure = [&](int t, Layout want) {
        const auto p = provider[static_cast<std::size_t>(t)];
        if (p.layout == want) return p.kernel;
        int& known = (want.blocked() ? reorder_to_blocked : reorder_to_plain)[static_cast<std::size_t>(t)];
        if (known >= 0) return known;
        const int id = static_cast<int>(used);
        Kernel& r = next_kernel();
        r.kind = "Reorder";
        r.nodes.clear();
        r.folded.clear();
        r.inputs.assign(1, t);
        r.outputs.assign(1, t);
        set_shapes(r.input_shapes, r.inputs);
        set_shapes(r.output_shapes, r.outputs);
        r.layout = want;
        r.input_layout = p.layout;
        r.cost = NodeCost{};
        r.cost.input_bytes = r.cost.output_bytes = g.tensor(t).bytes();
        add_edge(p.kernel, id, t);
        known = id;
        return id;
    };
    std::vector<char> in_kernel(g.num_nodes(), 0);
    kg.kernels.reserve(plan.item_order.size() + plan.item_order.size() / 2 + 8);  // reorders included, mostly
    kg.edges.reserve(2 * plan.item_order.size());
    std::vector<int> all, constants, sources;  // buffers reused kernel after kernel
    Kernel k;  // the kernel being built, before its place (after the reorders it needs) is known
    for (const int item : plan.item_order) {
        if (item < 0) {  // a node without a kernel
            const int v = ~item;
            if (roles[static_cast<std::size_t>(v)] == NodeRole::constant) continue;
            int src = -1;  // a free operator reads the plain layout and passes its input's provider on
            bool first = true;
            for (int t : g.node(v).inputs) {
                if (t < 0 || is_constant_tensor(g, roles, t)) continue;
                const int k = ensure(t, Layout{});
                if (first) src = k;
                first = false;
            }
            for (int t : g.node(v).outputs) provider[static_cast<std::size_t>(t)] = {src, Layout{}};
            continue;
        }
        k.kind.clear();
        k.nodes.clear();
        k.folded.clear();
        k.inputs.clear();
        k.outputs.clear();
        k.layout = k.input_layout = Layout{};
        k.cost = NodeCost{};
        all.clear();
        for (int m = member_start[static_cast<std::size_t>(item)]; m < member_start[static_cast<std::size_t>(item) + 1];
             ++m) {
            const int u = member_flat[static_cast<std::size_t>(m)];
            const auto nodes = plan.nodes_of(static_cast<std::size_t>(u));
            all.insert(all.end(), nodes.begin(), nodes.end());
            auto& dst = plan.folded[static_cast<std::size_t>(u)] ? k.folded : k.nodes;
            dst.insert(dst.end(), nodes.begin(), nodes.end());
            if (!plan.folded[static_cast<std::size_t>(u)]) {
                if (!k.kind.empty()) k.kind += '+';
                k.kind += kinds.names[static_cast<std::size_t>(plan.unit_kind[static_cast<std::size_t>(u)])];
            }
        }
        const auto by_pos = [&](int a, int b) {
            return pos[static_cast<std::size_t>(a)] < pos[static_cast<std::size_t>(b)];
        };
        std::sort(k.nodes.begin(), k.nodes.end(), by_pos);
        std::sort(k.folded.begin(), k.folded.end(), by_pos);
        for (int v : all) in_kernel[static_cast<std::size_t>(v)] = 1;
        for (int v : all)
            for (int t : g.node(v).inputs) {
                if (t < 0 || is_constant_tensor(g, roles, t)) continue;
                const int p = g.tensor(t).producer;
                if (p >= 0 && in_kernel[static_cast<std::size_t>(p)]) continue;
                if (std::find(k.inputs.begin(), k.inputs.end(), t) == k.inputs.end()) k.inputs.push_back(t);
            }
        for (int v : all)
            for (int t : g.node(v).outputs) {
                const auto& ten = g.tensor(t);
                bool leaves = ten.is_output;
                for (int c : ten.consumers) leaves = leaves || !in_kernel[static_cast<std::size_t>(c)];
                if (leaves) k.outputs.push_back(t);
            }
        // layout
        bool narrow = false;
        if (rules.layout.enabled()) {
            const auto& a = g.node(k.nodes.front());
            const auto b = rules.layout.block;
            const auto fits = [&](int t) {
                const auto& s = g.tensor(t).shape;
                return s.size() == 4 && s[1] % b == 0;
            };
            bool blocked = false;
            const auto first_kind = static_cast<std::size_t>(kinds.op_kind[static_cast<std::size_t>(k.nodes.front())]);
            if (kinds.anchor[first_kind]) {
                blocked = detail::anchor_fits(g, a, rules.layout, narrow);
                for (int t : k.inputs)
                    if (!(narrow && t == a.inputs[0]) && !fits(t)) blocked = false;
            } else if (kinds.follower[first_kind]) {
                blocked = !k.inputs.empty();
                for (int t : k.inputs)
                    if (!fits(t) || !provider[static_cast<std::size_t>(t)].layout.blocked()) blocked = false;
            }
            for (int t : k.outputs)
                if (!fits(t)) blocked = false;
            if (blocked) k.layout = k.input_layout = Layout{b};
            if (!blocked) narrow = false;
        }
        sources.clear();  // reorders the inputs need come first
        for (int t : k.inputs) {
            const bool plain_read = !k.layout.blocked() || (narrow && t == g.node(k.nodes.front()).inputs[0]);
            sources.push_back(ensure(t, plain_read ? Layout{} : k.layout));
        }
        const int id = static_cast<int>(used);
        for (std::size_t i = 0; i < sources.size(); ++i) add_edge(sources[i], id, k.inputs[i]);
        // costs: arithmetic of the executed nodes, the bytes crossing the kernel's boundary, and
        // the constants its executed nodes read (each once)
        constants.clear();
        for (int v : k.nodes) {
            const auto c = node_cost(g, v);
            k.cost.macs = detail::add_or_raise(k.cost.macs, c.macs, "kernel MACs");
            k.cost.flops = detail::add_or_raise(k.cost.flops, c.flops, "kernel FLOPs");
            for (int t : g.node(v).inputs)
                if (t >= 0 && is_constant_tensor(g, roles, t) &&
                    std::find(constants.begin(), constants.end(), t) == constants.end())
                    constants.push_back(t);
        }
        for (int t : constants) {
            const auto& ten = g.tensor(t);
            k.cost.weight_bytes = detail::add_or_raise(k.cost.weight_bytes, ten.bytes(), "kernel bytes");
            if (ten.kind == graph::TensorKind::weight)
                k.cost.params = detail::add_or_raise(k.cost.params, ten.elements(), "kernel parameters");
        }
        for (int t : k.inputs)
            k.cost.input_bytes = detail::add_or_raise(k.cost.input_bytes, g.tensor(t).bytes(), "kernel bytes");
        for (int t : k.outputs) {
            k.cost.output_bytes = detail::add_or_raise(k.cost.output_bytes, g.tensor(t).bytes(), "kernel bytes");
            provider[static_cast<std::size_t>(t)] = {id, k.layout};
        }
        (void)k.cost.bytes();  // must fit in 64 bits
        for (int v : all) {
            kg.kernel_of_node[static_cast<std::size_t>(v)] = id;
            in_kernel[static_cast<std::size_t>(v)] = 0;
        }
        Kernel& out = next_kernel();  // copied over its storage
        out.kind = k.kind;
        out.nodes = k.nodes;
        out.folded = k.folded;
        out.inputs = k.inputs;
        out.outputs = k.outputs;
        set_shapes(out.input_shapes, k.inputs);
        set_shapes(out.output_shapes, k.outputs);
        out.layout = k.layout;
        out.input_layout = k.input_layout;
        out.cost = k.cost;
    }
    // graph outputs leave in the plain layout
    for (int t : g.outputs())
        if (provider[static_cast<std::size_t>(t)].layout.blocked()) (void)ensure(t, Layout{});
    kg.kernels.resize(used);
}

/// The kernel graph of `g` under `rules`.
/// @throws shape_error for a cyclic graph or a node whose cost cannot be computed (see node_cost);
/// config_error for an invalid rule set (FusionRules::check)
inline KernelGraph kernel_graph(const graph::Graph& g, const FusionRules& rules) {
    KernelGraph kg;
    kernel_graph_into(g, rules, kg);
    return kg;
}

}  // namespace dnncost::cost
