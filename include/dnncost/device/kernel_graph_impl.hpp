#pragma once
/// @file kernel_graph_impl.hpp
/// The definitions of kernel_graph.hpp: the kernel pass. Compiled once into dnncost::compiled in
/// compiled mode (core/config.hpp), included by kernel_graph.hpp in header-only mode.
#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <dnncost/core/config.hpp>
#include <dnncost/core/error.hpp>
#include <dnncost/core/json_string.hpp>
#include <dnncost/cost/analytic.hpp>
#include <dnncost/device/fusion_match.hpp>
#include <dnncost/device/fusion_rules.hpp>
#include <dnncost/device/kernel_graph.hpp>
#include <dnncost/device/kernel_graph_plan.hpp>
#include <dnncost/device/kind_spec.hpp>
#include <dnncost/graph/flat_view.hpp>
#include <dnncost/graph/graph.hpp>

namespace dnncost::device {

namespace detail {
/// Everything the kernel pass needs besides its result, kept from one graph to the next on the
/// same thread: a search prices thousands of networks, and allocating this anew for each was
/// a third of the pass. It holds the storage of the largest graph the thread has seen.
struct KernelPassScratch {
    struct Provider {
        int kernel = -1;
        Layout layout;
    };
    std::vector<int> order, pos, pattern_of, unit_of_match, effective, member_start, member_flat, member_fill;
    std::vector<int> reorder_to_plain, reorder_to_blocked, all, constants, sources, duplicate_of;
    std::vector<char> in_kernel, constant;
    std::vector<Provider> provider;
    std::vector<std::string> fused_kinds;         ///< kind strings of the graph's kernels of several units
    std::vector<cost::detail::CostRule> op_rule;  ///< per op type of the view: its cost rule (cost_rule_of)
    graph::FlatView view;  ///< of the graph being priced, for callers that do not bring their own
    std::vector<BannedFusion> banned;
    std::vector<PatternMatch> matches;
    PatternScratch pattern_scratch;
    KindIndex kinds;
    FusionPlan plan;
    OrderScratch order_scratch;
    Kernel kernel;              ///< the kernel being built
    std::vector<Kernel> spare;  ///< kernels a smaller graph left over, with their storage
};
inline KernelPassScratch& kernel_pass_scratch() {
    thread_local KernelPassScratch s;
    return s;
}
}  // namespace detail

DNNCOST_FUNC std::string KernelGraph::to_json(const graph::Graph& g) const {
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

DNNCOST_FUNC void kernel_graph_into(const graph::FlatView& view, const FusionRules& rules, KernelGraph& kg,
                                    RulesChecked) {
    auto& sc = detail::kernel_pass_scratch();
    const graph::Graph& g = view.graph();
    kg.layout_name = rules.layout.name;
    kg.edges.clear();
    std::size_t used = 0;  // kernels of kg written so far; the rest are storage to reuse
    const auto next_kernel = [&]() -> Kernel& {
        if (used == kg.kernels.size()) {
            if (sc.spare.empty()) {
                kg.kernels.emplace_back();
            } else {
                kg.kernels.push_back(std::move(sc.spare.back()));
                sc.spare.pop_back();
            }
        }
        return kg.kernels[used++];
    };
    // a shape list written over the storage of the old one
    const auto set_shapes = [&](std::vector<graph::Shape>& dst, const std::vector<int>& tensors) {
        dst.resize(tensors.size());
        for (std::size_t i = 0; i < tensors.size(); ++i) {
            const auto s = view.shape(tensors[i]);
            // element by element: a shape is a few numbers, and a copy call costs more than they do
            dst[i].resize(s.size());
            for (std::size_t d = 0; d < s.size(); ++d) dst[i][d] = s[d];
        }
    };
    // a graph whose nodes are already in topological order is its own stable order
    auto& order = sc.order;
    if (view.sorted()) {
        order.resize(g.num_nodes());
        for (std::size_t v = 0; v < order.size(); ++v) order[v] = static_cast<int>(v);
    } else {
        order = g.topological_order();
    }
    node_roles_into(view, order, kg.roles);
    if (!rules.executed.empty())
        for (std::size_t v = 0; v < kg.roles.size(); ++v)
            if (kg.roles[v] == NodeRole::free &&
                rules.is_executed(view.op_names()[static_cast<std::size_t>(view.op(static_cast<int>(v)))]))
                kg.roles[v] = NodeRole::compute;
    const auto& roles = kg.roles;
    auto& constant = sc.constant;
    constant_tensors_into(view, roles, constant);
    const auto is_constant = [&](int t) { return constant[static_cast<std::size_t>(t)] != 0; };
    auto& pos = sc.pos;
    pos.assign(g.num_nodes(), 0);
    for (std::size_t i = 0; i < order.size(); ++i) pos[static_cast<std::size_t>(order[i])] = static_cast<int>(i);
    auto& duplicate_of = sc.duplicate_of;  // per node: the earlier node it repeats, or -1
    duplicate_of.assign(rules.merge_duplicates ? g.num_nodes() : 0, -1);
    if (rules.merge_duplicates)
        for (const int v : order) {
            const auto inputs = view.inputs(v);
            if (kg.roles[static_cast<std::size_t>(v)] != NodeRole::compute || inputs.empty() || inputs[0] < 0) continue;
            bool graph_output = false;
            for (int t : view.outputs(v)) graph_output = graph_output || view.is_output(t);
            if (graph_output) continue;
            // an earlier node that reads the same first input; the nodes' attributes (in the
            // graph's own heap blocks) are read only for one of the same op type and inputs
            for (int w : view.consumers(inputs[0])) {
                if (w == v || duplicate_of[static_cast<std::size_t>(w)] >= 0 ||
                    kg.roles[static_cast<std::size_t>(w)] != NodeRole::compute)
                    continue;
                if (view.op(w) != view.op(v) || !std::ranges::equal(view.inputs(w), inputs) ||
                    view.outputs(w).size() != view.outputs(v).size())
                    continue;
                if (pos[static_cast<std::size_t>(w)] > pos[static_cast<std::size_t>(v)]) continue;
                if (g.node(w).attributes != g.node(v).attributes) continue;
                duplicate_of[static_cast<std::size_t>(v)] = w;
                kg.roles[static_cast<std::size_t>(v)] = NodeRole::free;
                break;
            }
        }

    // units: pattern groups first, then every other compute node, numbered in topological order
    auto& kinds = sc.kinds;
    kinds.reset(view, rules);
    auto& op_rule = sc.op_rule;
    op_rule.resize(view.op_names().size());
    for (std::size_t i = 0; i < op_rule.size(); ++i) op_rule[i] = cost::cost_rule_of(view.op_names()[i]);
    auto& plan = sc.plan;
    plan.clear(g.num_nodes());
    auto& pattern_of = sc.pattern_of;
    pattern_of.assign(g.num_nodes(), -1);
    auto& matches = sc.matches;
    match_patterns_into(view, roles, constant, rules.patterns, order, pos, sc.pattern_scratch, matches);
    for (std::size_t m = 0; m < matches.size(); ++m)
        for (int v : matches[m].nodes) pattern_of[static_cast<std::size_t>(v)] = static_cast<int>(m);
    auto& unit_of_match = sc.unit_of_match;
    unit_of_match.assign(matches.size(), -1);
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

    // fusion, undoing fusions that make the kernels cyclic until none does
    auto& banned = sc.banned;  // sorted, each once
    banned.clear();
    const auto settle = [&] {
        std::sort(banned.begin(), banned.end());
        banned.erase(std::unique(banned.begin(), banned.end()), banned.end());
    };
    for (;;) {
        detail::fuse_units(view, constant, rules, kinds, banned, plan, sc.effective, duplicate_of);
        int cyclic = -1;
        if (detail::order_items(view, pos, plan, cyclic, sc.order_scratch)) break;
        if (cyclic < 0) raise<shape_error>("kernel graph of '", g.name(), "': the graph has a cycle");
        const auto before = banned.size();
        for (const auto& f : plan.fused)
            if (plan.group[static_cast<std::size_t>(f.consumer)] == cyclic)
                banned.emplace_back(f.producer, f.consumer, f.tensor);
        settle();
        if (banned.size() == before)  // a single unit on a cycle: only a malformed pattern match could do this
            raise<shape_error>("kernel graph of '", g.name(), "': unit '",
                               kinds.names[static_cast<std::size_t>(plan.unit_kind[static_cast<std::size_t>(cyclic)])],
                               "' lies on a cycle of kernels");
    }

    // kernels, in the order found; providers of values: (kernel or -1, layout)
    const std::size_t units = plan.units();
    // units of each kernel (by its first unit), in unit order: member_flat[member_start[k] ..)
    auto& member_start = sc.member_start;
    auto& member_flat = sc.member_flat;
    member_start.assign(units + 1, 0);
    member_flat.resize(units);
    for (std::size_t u = 0; u < units; ++u) ++member_start[static_cast<std::size_t>(plan.group[u]) + 1];
    for (std::size_t u = 0; u < units; ++u) member_start[u + 1] += member_start[u];
    {
        auto& fill = sc.member_fill;
        fill.assign(member_start.begin(), member_start.end());
        for (std::size_t u = 0; u < units; ++u)
            member_flat[static_cast<std::size_t>(fill[static_cast<std::size_t>(plan.group[u])]++)] =
                static_cast<int>(u);
    }
    auto& provider = sc.provider;
    provider.assign(view.num_tensors(), {});
    // reorder kernels of each tensor, to the plain and to the blocked layout (the rule set has
    // one block, so these are the only two targets)
    auto& reorder_to_plain = sc.reorder_to_plain;
    auto& reorder_to_blocked = sc.reorder_to_blocked;
    reorder_to_plain.assign(view.num_tensors(), -1);
    reorder_to_blocked.assign(view.num_tensors(), -1);
    kg.kernel_of_node.assign(g.num_nodes(), -1);
    const auto add_edge = [&](int src, int dst, int t) {
        if (src >= 0) kg.edges.push_back({src, dst, t});
    };
    // a kernel without nodes that moves tensor t once in and once out, read from kernel `src`
    const auto add_mover = [&](std::string_view kind, int kind_id, int t, int src, Layout in, Layout out) {
        const int id = static_cast<int>(used);
        Kernel& r = next_kernel();
        r.kind = kind;
        r.kind_id = kind_id;
        r.nodes.clear();
        r.folded.clear();
        r.inputs.assign(1, t);
        r.outputs.assign(1, t);
        set_shapes(r.input_shapes, r.inputs);
        set_shapes(r.output_shapes, r.outputs);
        r.layout = out;
        r.input_layout = in;
        r.cost = cost::NodeCost{};
        r.cost.input_bytes = r.cost.output_bytes = view.bytes(t);
        add_edge(src, id, t);
        return id;
    };
    // the kernel that provides tensor t in layout `want`, adding a reorder when needed
    const auto ensure = [&](int t, Layout want) {
        const auto p = provider[static_cast<std::size_t>(t)];
        if (p.layout == want) return p.kernel;
        int& known = (want.blocked() ? reorder_to_blocked : reorder_to_plain)[static_cast<std::size_t>(t)];
        if (known >= 0) return known;
        known = add_mover("Reorder", 0, t, p.kernel, p.layout, want);
        return known;
    };
    // a kernel a rewrite inserts: one of kind `kind` that moves tensor t, read from kernel `src`
    // in layout `l`
    const auto add_inserted = [&](std::string_view kind, int t, int src, Layout l) {
        const int known = kinds.find(kind);
        return add_mover(kind, known >= 0 ? 1 + known : -2, t, src, l, l);  // -2: numbered with the fused kinds below
    };
    // whether node v is a free operator the rules execute, alone in its kernel
    const auto executed_free = [&](int v) {
        return v >= 0 && roles[static_cast<std::size_t>(v)] == NodeRole::compute &&
               cost::is_free_operator(view.op_names()[static_cast<std::size_t>(view.op(v))]) &&
               plan.nodes_of(static_cast<std::size_t>(plan.unit_of[static_cast<std::size_t>(v)])).size() == 1 &&
               plan.group[static_cast<std::size_t>(plan.unit_of[static_cast<std::size_t>(v)])] ==
                   plan.unit_of[static_cast<std::size_t>(v)] &&
               member_start[static_cast<std::size_t>(plan.unit_of[static_cast<std::size_t>(v)]) + 1] -
                       member_start[static_cast<std::size_t>(plan.unit_of[static_cast<std::size_t>(v)])] ==
                   1;
    };
    auto& in_kernel = sc.in_kernel;
    in_kernel.assign(g.num_nodes(), 0);
    const int conv_op = view.find_op("Conv");
    // whether kernel `item` is a lone Transpose between channels-first and channels-last that a
    // reorder runs (LayoutRule::channels_last_reorders): of a value provided blocked, to NHWC; or
    // to NCHW, of a value that only kernels starting with a fitting anchor read
    const int transpose_op =
        rules.layout.enabled() && rules.layout.channels_last_reorders ? view.find_op("Transpose") : -1;
    const int concat_kind = rules.layout.concat_alignment > 0 ? kinds.find("Concat") : -1;
    const auto absorbed_transpose = [&](int item) {
        if (transpose_op < 0) return false;
        const auto u = static_cast<std::size_t>(item);
        if (member_start[u + 1] - member_start[u] != 1 || plan.nodes_of(u).size() != 1) return false;
        const int v = plan.nodes_of(u).front();
        if (view.op(v) != transpose_op || view.inputs(v).empty() || view.outputs(v).size() != 1) return false;
        const int x = view.inputs(v)[0], y = view.outputs(v)[0];
        if (x < 0 || view.shape(x).size() != 4) return false;
        const auto perm = g.node(v).attr_ints_view("perm");
        const auto is = [&](std::initializer_list<std::int64_t> p) {
            return std::equal(perm.begin(), perm.end(), p.begin(), p.end());
        };
        if (is({0, 2, 3, 1})) return provider[static_cast<std::size_t>(x)].layout.blocked();
        if (!is({0, 3, 1, 2}) || view.is_output(y) || view.consumers(y).empty()) return false;
        for (int c : view.consumers(y)) {
            const int cu = c < 0 ? -1 : plan.unit_of[static_cast<std::size_t>(c)];
            if (cu < 0 || plan.group[static_cast<std::size_t>(cu)] != cu ||
                plan.nodes_of(static_cast<std::size_t>(cu)).front() != c ||
                !kinds.anchor[static_cast<std::size_t>(kinds.op_kind[static_cast<std::size_t>(c)])])
                return false;
            bool narrow = false;
            if (!detail::anchor_fits(view, c, conv_op, rules.layout, narrow) || narrow) return false;
        }
        return true;
    };
    kg.kernels.reserve(plan.item_order.size() + plan.item_order.size() / 2 + 8);  // reorders included, mostly
    kg.edges.reserve(2 * plan.item_order.size());
    // kind numbers: 0 a reorder, 1 + k a kernel of one executed unit of kind k (KindIndex), and
    // after those the kind strings of kernels of several, in order of appearance
    auto& fused_kinds = sc.fused_kinds;
    fused_kinds.clear();
    const auto fused_kind_id = [&](const std::string& kind) {
        auto it = std::find(fused_kinds.begin(), fused_kinds.end(), kind);
        if (it == fused_kinds.end()) it = fused_kinds.insert(it, kind);
        return 1 + static_cast<int>(kinds.names.size()) + static_cast<int>(it - fused_kinds.begin());
    };
    auto& all = sc.all;  // buffers reused kernel after kernel
    auto& constants = sc.constants;
    auto& sources = sc.sources;
    Kernel& k = sc.kernel;  // the kernel being built, before its place (after the reorders it needs) is known
    for (const int item : plan.item_order) {
        if (item < 0) {  // a node without a kernel
            const int v = ~item;
            if (roles[static_cast<std::size_t>(v)] == NodeRole::constant) continue;
            if (!duplicate_of.empty() && duplicate_of[static_cast<std::size_t>(v)] >= 0) {
                const auto outs = view.outputs(v);
                const auto first = view.outputs(duplicate_of[static_cast<std::size_t>(v)]);
                for (std::size_t o = 0; o < outs.size(); ++o)
                    provider[static_cast<std::size_t>(outs[o])] = provider[static_cast<std::size_t>(first[o])];
                continue;
            }
            int src = -1;  // a free operator reads the plain layout and passes its input's provider on
            bool first = true;
            for (int t : view.inputs(v)) {
                if (t < 0 || is_constant(t)) continue;
                const int k = ensure(t, Layout{});
                if (first) src = k;
                first = false;
            }
            for (int t : view.outputs(v)) provider[static_cast<std::size_t>(t)] = {src, Layout{}};
            continue;
        }
        if (absorbed_transpose(item)) {  // the reorder it reads or feeds runs it: no kernel of its own
            const int v = plan.nodes_of(static_cast<std::size_t>(item)).front();
            const int src = ensure(view.inputs(v)[0], Layout{});
            provider[static_cast<std::size_t>(view.outputs(v)[0])] = {src, Layout{}};
            continue;
        }
        k.kind.clear();
        k.nodes.clear();
        k.folded.clear();
        k.inputs.clear();
        k.outputs.clear();
        k.layout = k.input_layout = Layout{};
        k.cost = cost::NodeCost{};
        all.clear();
        int executed_units = 0, unit_kind = -1;
        for (int m = member_start[static_cast<std::size_t>(item)]; m < member_start[static_cast<std::size_t>(item) + 1];
             ++m) {
            const int u = member_flat[static_cast<std::size_t>(m)];
            const auto nodes = plan.nodes_of(static_cast<std::size_t>(u));
            auto& dst = plan.folded[static_cast<std::size_t>(u)] ? k.folded : k.nodes;
            for (int v : nodes) {  // a unit is mostly one node
                all.push_back(v);
                dst.push_back(v);
            }
            if (!plan.folded[static_cast<std::size_t>(u)]) {
                unit_kind = plan.unit_kind[static_cast<std::size_t>(u)];
                ++executed_units;
                KindSpec::append(k.kind, kinds.names[static_cast<std::size_t>(unit_kind)]);
            }
        }
        k.kind_id = executed_units == 1 ? 1 + unit_kind : fused_kind_id(k.kind);
        const RewriteRule* rewrite = rules.rewrites.empty() ? nullptr : rules.rewrite_of(k.kind);
        const auto by_pos = [&](int a, int b) {
            return pos[static_cast<std::size_t>(a)] < pos[static_cast<std::size_t>(b)];
        };
        std::sort(k.nodes.begin(), k.nodes.end(), by_pos);
        std::sort(k.folded.begin(), k.folded.end(), by_pos);
        for (int v : all) in_kernel[static_cast<std::size_t>(v)] = 1;
        for (int v : all)
            for (int t : view.inputs(v)) {
                if (t < 0 || is_constant(t)) continue;
                const int p = view.producer(t);
                if (p >= 0 && in_kernel[static_cast<std::size_t>(p)]) continue;
                if (std::find(k.inputs.begin(), k.inputs.end(), t) == k.inputs.end()) k.inputs.push_back(t);
            }
        for (int v : all)
            for (int t : view.outputs(v)) {
                bool leaves = view.is_output(t);
                for (int c : view.consumers(t)) leaves = leaves || !in_kernel[static_cast<std::size_t>(c)];
                if (leaves) k.outputs.push_back(t);
            }
        // layout
        bool narrow = false;
        if (rules.layout.enabled()) {
            const int a = k.nodes.front();
            const int a_input = view.inputs(a).empty() ? -1 : view.inputs(a)[0];
            const auto b = rules.layout.block;
            const auto fits = [&](int t) {
                const auto s = view.shape(t);
                return s.size() == 4 && block_remainder(s[1], b) == 0;
            };
            bool blocked = false;
            const auto first_kind = static_cast<std::size_t>(kinds.op_kind[static_cast<std::size_t>(k.nodes.front())]);
            if (kinds.anchor[first_kind]) {
                blocked = detail::anchor_fits(view, a, conv_op, rules.layout, narrow);
                for (int t : k.inputs)
                    if (!(narrow && t == a_input) && !fits(t)) blocked = false;
            } else if (kinds.follower[first_kind]) {
                blocked = !k.inputs.empty();
                for (int t : k.inputs)
                    if (!fits(t) || !provider[static_cast<std::size_t>(t)].layout.blocked()) blocked = false;
                if (blocked && static_cast<int>(first_kind) == concat_kind && rules.layout.concat_alignment > 0)
                    for (int t : k.inputs)
                        if (view.shape(t)[1] % rules.layout.concat_alignment != 0) blocked = false;
            }
            for (int t : k.outputs)
                if (!fits(t)) blocked = false;
            if (blocked) k.layout = k.input_layout = Layout{b};
            if (!blocked) narrow = false;
        }
        if (rewrite && rewrite->blocked_only && !k.layout.blocked()) rewrite = nullptr;
        if (rewrite) {
            k.kind = rewrite->as.front();
            const int known = kinds.find(k.kind);
            k.kind_id = known >= 0 ? 1 + known : fused_kind_id(k.kind);
        }
        sources.clear();  // reorders the inputs need come first
        for (int t : k.inputs) {
            const bool plain_read = !k.layout.blocked() || (narrow && t == view.inputs(k.nodes.front())[0]);
            sources.push_back(ensure(t, plain_read ? Layout{} : k.layout));
        }
        // a rewrite's reshapes: on its first node's first input, and on its outputs
        int reshaped_input = -1;
        bool reshape_outputs = false;
        if (rewrite && rewrite->reshape_rank > 0 && !k.layout.blocked()) {
            const auto first_inputs = view.inputs(k.nodes.front());
            const int t = first_inputs.empty() ? -1 : first_inputs[0];
            if (t >= 0 && view.shape(t).size() >= static_cast<std::size_t>(rewrite->reshape_rank)) {
                reshape_outputs = true;
                if (!(executed_free(view.producer(t)) && view.consumers(t).size() == 1)) reshaped_input = t;
            }
        }
        for (std::size_t i = 0; i < sources.size(); ++i)
            if (k.inputs[i] == reshaped_input)
                sources[i] = add_inserted("Reshape", reshaped_input, sources[i], Layout{});
        const int id = static_cast<int>(used);
        for (std::size_t i = 0; i < sources.size(); ++i) add_edge(sources[i], id, k.inputs[i]);
        // costs: arithmetic of the executed nodes, the bytes crossing the kernel's boundary, and
        // the constants its executed nodes read (each once)
        constants.clear();
        for (int v : k.nodes) {
            const auto c = cost::node_arithmetic(view, v, op_rule[static_cast<std::size_t>(view.op(v))]);
            k.cost.macs = cost::detail::add_or_raise(k.cost.macs, c.macs, "kernel MACs");
            k.cost.flops = cost::detail::add_or_raise(k.cost.flops, c.flops, "kernel FLOPs");
            for (int t : view.inputs(v))
                if (t >= 0 && is_constant(t) && std::find(constants.begin(), constants.end(), t) == constants.end())
                    constants.push_back(t);
        }
        for (int t : constants) {
            k.cost.weight_bytes = cost::detail::add_or_raise(k.cost.weight_bytes, view.bytes(t), "kernel bytes");
            if (view.is_weight(t))
                k.cost.params = cost::detail::add_or_raise(k.cost.params, view.elements(t), "kernel parameters");
        }
        for (int t : k.inputs)
            k.cost.input_bytes = cost::detail::add_or_raise(k.cost.input_bytes, view.bytes(t), "kernel bytes");
        for (int t : k.outputs) {
            k.cost.output_bytes = cost::detail::add_or_raise(k.cost.output_bytes, view.bytes(t), "kernel bytes");
            provider[static_cast<std::size_t>(t)] = {id, k.layout};
        }
        (void)k.cost.bytes();  // must fit in 64 bits
        for (int v : all) {
            kg.kernel_of_node[static_cast<std::size_t>(v)] = id;
            in_kernel[static_cast<std::size_t>(v)] = 0;
        }
        // the kernel takes over what k built, and k the storage the kernel held, for the next one
        Kernel& out = next_kernel();
        std::swap(out.kind, k.kind);
        std::swap(out.nodes, k.nodes);
        std::swap(out.folded, k.folded);
        std::swap(out.inputs, k.inputs);
        std::swap(out.outputs, k.outputs);
        set_shapes(out.input_shapes, out.inputs);
        set_shapes(out.output_shapes, out.outputs);
        out.layout = k.layout;
        out.input_layout = k.input_layout;
        out.cost = k.cost;
        out.kind_id = k.kind_id;
        if (rewrite)
            for (std::size_t i = 0; i < kg.kernels[static_cast<std::size_t>(id)].outputs.size(); ++i) {
                const int t = kg.kernels[static_cast<std::size_t>(id)].outputs[i];
                const Layout l = kg.kernels[static_cast<std::size_t>(id)].layout;
                int last = id;
                if (i == 0)  // the further kinds once, on the first output
                    for (std::size_t a = 1; a < rewrite->as.size(); ++a)
                        last = add_inserted(rewrite->as[a], t, last, l);
                const auto readers = view.consumers(t);
                const bool merged = !view.is_output(t) && readers.size() == 1 && executed_free(readers[0]);
                if (reshape_outputs && !merged) last = add_inserted("Reshape", t, last, Layout{});
                if (last != id)
                    provider[static_cast<std::size_t>(t)] = {last, reshape_outputs && !merged ? Layout{} : l};
            }
    }
    // a repeated node's value is computed in its original's kernel
    for (std::size_t v = 0; v < duplicate_of.size(); ++v)
        if (duplicate_of[v] >= 0) kg.kernel_of_node[v] = kg.kernel_of_node[static_cast<std::size_t>(duplicate_of[v])];
    if (!rules.rewrites.empty())
        for (std::size_t i = 0; i < used; ++i)
            if (kg.kernels[i].kind_id == -2) kg.kernels[i].kind_id = fused_kind_id(kg.kernels[i].kind);
    // graph outputs leave in the plain layout
    for (int t : view.outputs())
        if (provider[static_cast<std::size_t>(t)].layout.blocked()) (void)ensure(t, Layout{});
    // kernels past the last are kept, with their storage, for the next graph
    while (kg.kernels.size() > used) {
        sc.spare.push_back(std::move(kg.kernels.back()));
        kg.kernels.pop_back();
    }
}

DNNCOST_FUNC void kernel_graph_into(const graph::FlatView& view, const FusionRules& rules, KernelGraph& kg) {
    rules.check();
    kernel_graph_into(view, rules, kg, rules_checked);
}

DNNCOST_FUNC void kernel_graph_into(const graph::Graph& g, const FusionRules& rules, KernelGraph& kg) {
    auto& view = detail::kernel_pass_scratch().view;
    view.rebuild(g);
    kernel_graph_into(view, rules, kg);
}

DNNCOST_FUNC KernelGraph kernel_graph(const graph::Graph& g, const FusionRules& rules) {
    KernelGraph kg;
    kernel_graph_into(g, rules, kg);
    return kg;
}

}  // namespace dnncost::device
