#pragma once
/// @file kernel_graph_plan.hpp
/// The grouping step of the kernel pass (device/kernel_graph.hpp): the units of a graph (pattern
/// groups and single compute nodes), their fusion by the rules, and the topological order of the
/// resulting kernels, on integer kinds; with the scratch storage a caller that runs the pass on
/// many graphs keeps from one graph to the next.
#include <algorithm>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include <dnncost/device/fusion_match.hpp>
#include <dnncost/device/fusion_rules.hpp>
#include <dnncost/graph/flat_view.hpp>
#include <dnncost/graph/graph.hpp>

namespace dnncost::device {

namespace detail {

/// The units of a graph (pattern groups and single compute nodes) and the fused groups of units.
struct FusionPlan {
    /// nodes of unit u, in topological order: unit_flat[unit_start[u] .. unit_start[u + 1])
    std::vector<int> unit_start{0};
    std::vector<int> unit_flat;
    std::vector<int> unit_kind;  ///< per unit: an id into KindIndex::names
    std::vector<int> unit_of;    ///< per node; -1 for a node without a kernel
    std::vector<int> group;      ///< per unit: the first unit of its kernel
    std::vector<char> folded;    ///< per unit
    /// per unit, when a rule asks for blocked operands: a kernel it starts may run blocked (it
    /// is a layout anchor whose channels fit the block, or a follower all of whose activations
    /// come from such kernels)
    std::vector<char> blockable;
    struct Fused {
        int producer, consumer, tensor;
    };
    std::vector<Fused> fused;
    std::vector<int> item_order;  ///< kernels (as their first unit) and kernel-less nodes (as ~node)

    /// No units yet, for a graph of `nodes` nodes (the storage stays).
    void clear(std::size_t nodes) {
        unit_start.assign(1, 0);
        unit_flat.clear();
        unit_kind.clear();
        unit_of.assign(nodes, -1);
        group.clear();
        folded.clear();
        blockable.clear();
        fused.clear();
        item_order.clear();
    }
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
    std::vector<int> op_kind;                   ///< per node
    std::vector<std::vector<int>> by_consumer;  ///< per kind: rules with it as consumer, in rule order (may be longer)
    std::vector<int> producer;                  ///< per rule: its producer's kind, -1 when absent
    std::vector<std::vector<int>> after;        ///< per rule: kinds of its `after` list present (may be longer)
    std::vector<char> anchor, follower;         ///< per kind: of the layout rule

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
    /// Indexes the kinds of the graph of `view` and `rules`, over the storage of an earlier
    /// graph's index: the graph's op types keep the view's numbers.
    void reset(const graph::FlatView& view, const FusionRules& rules) {
        names.assign(view.op_names().begin(), view.op_names().end());
        op_kind.resize(view.num_nodes());
        for (std::size_t v = 0; v < op_kind.size(); ++v) op_kind[v] = view.op(static_cast<int>(v));
        for (const auto& p : rules.patterns) (void)intern(p.name);
        by_consumer.resize(std::max(by_consumer.size(), names.size()));
        for (auto& b : by_consumer) b.clear();
        producer.resize(rules.fusions.size());
        after.resize(std::max(after.size(), rules.fusions.size()));
        for (auto& a : after) a.clear();
        for (std::size_t r = 0; r < rules.fusions.size(); ++r) {
            const auto& f = rules.fusions[r];
            producer[r] = find(f.producer);
            for (const auto& a : f.after)
                if (const int k = find(a); k >= 0) after[r].push_back(k);
            if (const int c = find(f.consumer); c >= 0)
                by_consumer[static_cast<std::size_t>(c)].push_back(static_cast<int>(r));
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

/// A fusion undone: (producer unit, consumer unit, tensor).
using BannedFusion = std::tuple<int, int, int>;

inline bool anchor_fits(const graph::FlatView& g, int a, int conv, const LayoutRule& layout, bool& narrow);

/// Whether every activation input of node n (the one it would fuse on included) comes from a
/// kernel that may run blocked (FusionPlan::blockable of its first unit), units before n's
/// being grouped already. `duplicate_of`: per node, the earlier node it repeats (-1: none), or
/// empty.
inline bool operands_blockable(const graph::FlatView& g, const std::vector<char>& constant, const FusionPlan& plan,
                               const std::vector<int>& duplicate_of, int n) {
    for (int o : g.inputs(n)) {
        if (o < 0 || constant[static_cast<std::size_t>(o)]) continue;
        int p = g.producer(o);
        if (p >= 0 && !duplicate_of.empty() && duplicate_of[static_cast<std::size_t>(p)] >= 0)
            p = duplicate_of[static_cast<std::size_t>(p)];
        const int u = p < 0 ? -1 : plan.unit_of[static_cast<std::size_t>(p)];
        if (u < 0 || !plan.blockable[static_cast<std::size_t>(plan.group[static_cast<std::size_t>(u)])]) return false;
    }
    return true;
}

/// Whether tensor t of unit u is read by units u and v alone and is no graph output: the
/// sole-consumer condition of fusing v onto it. ONNX Runtime fuses a producer into its consumer
/// only when the consumer is the one reader of the value between them; a value that two units
/// of one kernel read (a convolution's output to both its Relu and a residual Add) keeps them
/// apart. The condition depends on the units alone, not on how they group, so it is checked as
/// each fusion is made.
inline bool read_only_by(const graph::FlatView& g, const FusionPlan& plan, int t, int u, int v) {
    if (g.is_output(t)) return false;
    for (int c : g.consumers(t)) {
        const int uc = plan.unit_of[static_cast<std::size_t>(c)];
        if (uc != u && uc != v) return false;
    }
    return true;
}

/// Groups units by the fusion rules, skipping `banned` (sorted). `constant`: per tensor, as
/// constant_tensors_into(); `duplicate_of`: as operands_blockable(); `effective` is scratch.
inline void fuse_units(const graph::FlatView& g, const std::vector<char>& constant, const FusionRules& rules,
                       const KindIndex& kinds, const std::vector<BannedFusion>& banned, FusionPlan& plan,
                       std::vector<int>& effective, const std::vector<int>& duplicate_of) {
    const std::size_t units = plan.units();
    plan.group.resize(units);
    plan.folded.assign(units, 0);
    plan.fused.clear();
    effective.resize(units);  // the unit whose kind a unit shows: a folded one its producer's
    const bool layout_operands = std::any_of(rules.fusions.begin(), rules.fusions.end(), [](const FusionRule& r) {
        return r.blocked_operands || r.blocked_producer;
    });
    plan.blockable.assign(layout_operands ? units : 0, 0);
    const int conv_op = layout_operands ? g.find_op("Conv") : -1;
    const int concat_kind = rules.layout.concat_alignment > 0 ? kinds.find("Concat") : -1;
    for (std::size_t v = 0; v < units; ++v) {
        plan.group[v] = static_cast<int>(v);
        effective[v] = static_cast<int>(v);
        if (layout_operands) {
            const auto kind = static_cast<std::size_t>(plan.unit_kind[v]);
            bool narrow = false;
            bool b = rules.layout.enabled() && kinds.anchor[kind] &&
                     anchor_fits(g, plan.nodes_of(v).front(), conv_op, rules.layout, narrow);
            if (rules.layout.enabled() && !kinds.anchor[kind] && kinds.follower[kind]) {
                b = true;
                const bool aligned = rules.layout.concat_alignment > 0 && static_cast<int>(kind) == concat_kind;
                for (int n : plan.nodes_of(v))
                    for (int t : g.inputs(n)) {
                        if (t < 0 || constant[static_cast<std::size_t>(t)]) continue;
                        if (aligned && (g.shape(t).size() < 2 || g.shape(t)[1] % rules.layout.concat_alignment != 0))
                            b = false;
                        int p = g.producer(t);
                        if (p >= 0 && !duplicate_of.empty() && duplicate_of[static_cast<std::size_t>(p)] >= 0)
                            p = duplicate_of[static_cast<std::size_t>(p)];
                        const int u = p < 0 ? -1 : plan.unit_of[static_cast<std::size_t>(p)];
                        if (u == static_cast<int>(v)) continue;
                        if (u < 0 || !plan.blockable[static_cast<std::size_t>(plan.group[static_cast<std::size_t>(u)])])
                            b = false;
                    }
            }
            plan.blockable[v] = b;
        }
        // does any rule take this kind as a consumer?
        if (kinds.by_consumer[static_cast<std::size_t>(plan.unit_kind[v])].empty()) continue;
        bool joined = false;
        for (int n : plan.nodes_of(v)) {
            for (int t : g.inputs(n)) {
                if (joined || t < 0 || constant[static_cast<std::size_t>(t)]) continue;
                const int p = g.producer(t);
                if (p < 0 || plan.unit_of[static_cast<std::size_t>(p)] < 0) continue;
                const int u = plan.unit_of[static_cast<std::size_t>(p)];
                if (u == static_cast<int>(v) ||
                    (!banned.empty() &&
                     std::binary_search(banned.begin(), banned.end(), BannedFusion{u, static_cast<int>(v), t})))
                    continue;
                const auto gu = static_cast<std::size_t>(plan.group[static_cast<std::size_t>(u)]);
                const auto* rule = kinds.find_rule(
                    rules, plan.unit_kind[static_cast<std::size_t>(effective[static_cast<std::size_t>(u)])],
                    plan.unit_kind[v], operand_class(g, constant, n, t), plan.unit_kind[gu]);
                if (!rule) continue;
                if (rule->sole_consumer && !read_only_by(g, plan, t, u, static_cast<int>(v))) continue;
                if (rule->blocked_operands && plan.blockable[gu] &&
                    !operands_blockable(g, constant, plan, duplicate_of, n))
                    continue;
                if (rule->blocked_producer && !plan.blockable[gu]) continue;
                plan.group[v] = static_cast<int>(gu);
                plan.folded[v] = rule->fold;
                if (rule->fold) effective[v] = effective[static_cast<std::size_t>(u)];
                plan.fused.push_back({u, static_cast<int>(v), t});
                joined = true;
            }
        }
    }
}

/// Orders the kernels and kernel-less nodes topologically (earliest first node first); returns
/// false when the grouping is cyclic, with `cyclic` set to the earliest kernel left unordered.
/// Scratch of order_items, kept from one graph to the next.
struct OrderScratch {
    std::vector<int> key, indeg, start, succ, fill, at_key;
    std::vector<std::pair<int, int>> ready;  ///< a min-heap of (key, item)
};

inline bool order_items(const graph::FlatView& g, const std::vector<int>& pos, FusionPlan& plan, int& cyclic,
                        OrderScratch& scratch) {
    const std::size_t n = g.num_nodes();
    // item of a node: its kernel's first unit, or units + node for a kernel-less node
    const auto units = static_cast<int>(plan.units());
    const auto item_of = [&](int node) {
        const int u = plan.unit_of[static_cast<std::size_t>(node)];
        return u >= 0 ? plan.group[static_cast<std::size_t>(u)] : units + node;
    };
    const std::size_t items = plan.units() + n;
    auto& key = scratch.key;
    key.assign(items, -1);
    for (std::size_t v = 0; v < n; ++v) {
        const int it = item_of(static_cast<int>(v));
        auto& k = key[static_cast<std::size_t>(it)];
        if (k < 0 || pos[v] < k) k = pos[v];
    }
    // the graph's edges between items: producer -> consumer of every input
    const auto for_each_edge = [&](const auto& f) {
        for (std::size_t v = 0; v < n; ++v)
            for (int t : g.inputs(static_cast<int>(v)))
                if (t >= 0)
                    if (const int p = g.producer(t); p >= 0) f(p, static_cast<int>(v));
    };
    // When every edge runs from an earlier key to a later one (the grouping never reaches back,
    // as for most graphs), the earliest-ready order below is the order of the keys: each is the
    // position of one item's first node, so one pass over the positions lists them.
    bool forward = true;
    for_each_edge([&](int src, int dst) {
        const int a = item_of(src), b = item_of(dst);
        if (a != b && key[static_cast<std::size_t>(a)] > key[static_cast<std::size_t>(b)]) forward = false;
    });
    if (forward) {
        auto& at_key = scratch.at_key;
        at_key.assign(n, -1);
        for (std::size_t i = 0; i < items; ++i)
            if (key[i] >= 0) at_key[static_cast<std::size_t>(key[i])] = static_cast<int>(i);
        plan.item_order.clear();
        for (const int it : at_key)
            if (it >= 0) plan.item_order.push_back(it < units ? it : ~(it - units));
        return true;
    }
    auto& indeg = scratch.indeg;
    indeg.assign(items, 0);
    // successors of each item, in compressed rows (the order of a row does not matter, keys are
    // unique)
    auto& start = scratch.start;
    auto& succ = scratch.succ;
    start.assign(items + 1, 0);
    for_each_edge([&](int src, int dst) {
        const int a = item_of(src), b = item_of(dst);
        if (a == b) return;
        ++start[static_cast<std::size_t>(a) + 1];
        ++indeg[static_cast<std::size_t>(b)];
    });
    for (std::size_t i = 0; i < items; ++i) start[i + 1] += start[i];
    succ.resize(static_cast<std::size_t>(start[items]));
    {
        auto& fill = scratch.fill;
        fill.assign(start.begin(), start.end());
        for_each_edge([&](int src, int dst) {
            const int a = item_of(src), b = item_of(dst);
            if (a != b) succ[static_cast<std::size_t>(fill[static_cast<std::size_t>(a)]++)] = b;
        });
    }
    // the earliest ready item first; keys are unique, so the order is the graph's alone
    auto& ready = scratch.ready;
    ready.clear();
    const auto later = std::greater<std::pair<int, int>>{};
    const auto push = [&](int k, int item) {
        ready.emplace_back(k, item);
        std::push_heap(ready.begin(), ready.end(), later);
    };
    std::size_t live = 0;
    for (std::size_t i = 0; i < items; ++i)
        if (key[i] >= 0) {
            ++live;
            if (indeg[i] == 0) push(key[i], static_cast<int>(i));
        }
    plan.item_order.clear();
    while (!ready.empty()) {
        std::pop_heap(ready.begin(), ready.end(), later);
        const int it = ready.back().second;
        ready.pop_back();
        plan.item_order.push_back(it < units ? it : ~(it - units));
        for (int j = start[static_cast<std::size_t>(it)]; j < start[static_cast<std::size_t>(it) + 1]; ++j) {
            const int s = succ[static_cast<std::size_t>(j)];
            if (--indeg[static_cast<std::size_t>(s)] == 0) push(key[static_cast<std::size_t>(s)], s);
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
/// reads its first input in the plain layout (a narrow first convolution). `conv`: the number
/// of op type "Conv" in the view (FlatView::find_op).
inline bool anchor_fits(const graph::FlatView& g, int a, int conv, const LayoutRule& layout, bool& narrow) {
    narrow = false;
    const auto b = layout.block;
    const auto in = g.inputs(a);
    const auto out = g.outputs(a);
    if (in.empty() || in[0] < 0 || out.empty()) return false;
    const auto x = g.shape(in[0]);
    const auto y = g.shape(out[0]);
    if (x.size() != 4 || y.size() != 4 || block_remainder(y[1], b) != 0) return false;
    const std::int64_t c = x[1], k = y[1];
    const bool is_conv = g.op(a) == conv;
    const auto group = is_conv ? g.group(a) : 1;
    if (group > 1) return group == c && c == k && block_remainder(c, b) == 0;  // depthwise only
    if (block_remainder(c, b) == 0) return true;
    narrow = layout.narrow_input && is_conv && c < b;
    return narrow;
}

}  // namespace detail

}  // namespace dnncost::device
