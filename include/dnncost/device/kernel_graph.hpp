#pragma once
/// @file kernel_graph.hpp
/// The kernels a runtime executes for an operator graph under a device's fusion rules
/// (device/fusion_rules.hpp): the unit a per-kernel latency model prices.
///
/// The pass, in order:
/// 1. Nodes computed at load (constant inputs only, shape arithmetic) and free operators
///    (reshape-like: cost::is_free_operator) get no kernel, except free operators the rules
///    list as executed (FusionRules::executed), which are compute nodes like any other. Under
///    merge-duplicates, a node with the operator, attributes and inputs of an earlier one gets no
///    kernel either: its outputs are the earlier node's.
/// 2. Pattern rules replace their matched groups by one unit of the pattern's name.
/// 3. In topological order, a unit joins the kernel of a producer when a fusion rule holds for
///    the pair (producer kind, consumer kind, the consumer's other operands, the kind that starts
///    the producer's kernel); a unit joins at most one kernel. A folded unit (BatchNorm into Conv)
///    is kept in the kernel but executes nothing, and a later rule sees its producer's kind in
///    its place, so Conv -> BatchNorm -> Add -> Relu chains into one "Conv+Add+Relu".
///    A rule with a sole-consumer condition joins a unit only when the intermediate is read by
///    that unit alone and is no graph output. A fusion that would make the kernels cyclic is
///    undone and the pass repeated; that only ever removes fusions, so the pass ends.
/// 4. Each kernel gets a layout (LayoutRule): blocked when it starts with an anchor whose
///    channel counts fit the block, or with a follower all of whose inputs are blocked.
///    A value that crosses layouts gets a reorder kernel (one per value and target layout);
///    free operators and graph outputs read the plain layout.
/// 5. A kernel whose kind has a rewrite rule (and, if the rule says so, that runs blocked) takes
///    the rule's first kind; each further kind of the rule is a kernel of no node (like a
///    reorder) after it, reading what the one before wrote of the kernel's first output. When
///    the kernel runs plain and its first node's first input has the rule's reshape rank or
///    more, a Reshape kernel of no node comes before it and one after the last, except where an
///    executed free operator already reshapes that value for it alone (the runtime merges
///    adjacent reshapes).
/// Everything is deterministic: ties go to the earlier node in the graph's topological order.
///
/// The pass is defined in kernel_graph_impl.hpp: compiled into dnncost::compiled in compiled mode
/// (core/config.hpp), included at the end of this header otherwise.
#include <algorithm>
#include <cstdint>
#include <span>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <dnncost/core/config.hpp>
#include <dnncost/cost/analytic.hpp>
#include <dnncost/device/fusion_match.hpp>
#include <dnncost/device/fusion_rules.hpp>
#include <dnncost/graph/flat_view.hpp>
#include <dnncost/graph/graph.hpp>

namespace dnncost::device {

/// A memory layout of activations: plain (NCHW) or blocked by `block` channels.
struct Layout {
    std::int64_t block = 0;
    bool blocked() const { return block > 0; }
    friend bool operator==(const Layout&, const Layout&) = default;
};

/// One kernel. A reorder kernel has no nodes; it converts `inputs[0]` from `input_layout` to
/// `layout`. A kernel a rewrite rule inserts (a "Reshape", or a later kind of the rule) has no
/// nodes either: it reads and writes `inputs[0]`, the value of the rewritten kernel.
struct Kernel {
    std::string kind;          ///< its executed units as a KindSpec writes them ("Conv+Add+Relu"), or "Reorder"
    std::vector<int> nodes;    ///< executed nodes, in topological order
    std::vector<int> folded;   ///< nodes folded into the kernel's constants at load
    std::vector<int> inputs;   ///< activations it reads (graph tensor ids), each once
    std::vector<int> outputs;  ///< values it writes that are read elsewhere or are graph outputs
    std::vector<graph::Shape> input_shapes, output_shapes;
    Layout layout;
    Layout input_layout;  ///< = layout except for a reorder
    cost::NodeCost cost;  ///< MACs and FLOPs of its executed nodes; bytes it moves; weights
    /// Its kind as a small number of its kernel graph: kernels of one kernel graph with the same
    /// number have the same kind string, so that a caller can tell kinds apart without reading
    /// strings (two numbers may still name one string). -1: none given (a kernel built by hand).
    int kind_id = -1;
    /// Runs no node of the graph: a layout reorder or an inserted reshape, both pure data
    /// movement and priced alike.
    bool is_reorder() const { return nodes.empty(); }
    /// A reorder between layouts (not a kernel a rewrite rule inserts).
    bool is_layout_reorder() const { return nodes.empty() && kind == "Reorder"; }
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
    /// per graph node; -1 for a node without a kernel; a node repeating an earlier one
    /// (merge-duplicates) has the earlier one's
    std::vector<int> kernel_of_node;
    std::vector<NodeRole> roles;  ///< per graph node
    std::string layout_name = "NCHWc";

    /// "NCHW" or e.g. "NCHWc16".
    std::string layout_string(const Layout& l) const {
        return l.blocked() ? layout_name + std::to_string(l.block) : std::string("NCHW");
    }
    std::size_t num_reorders() const {
        return static_cast<std::size_t>(
            std::count_if(kernels.begin(), kernels.end(), [](const Kernel& k) { return k.is_layout_reorder(); }));
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
    cost::NodeCost total_cost() const {
        cost::NodeCost t;
        for (const auto& k : kernels) t += k.cost;
        return t;
    }

    /// One JSON object: the kernels (kind, layout, node names, shapes, counts) and the edges.
    std::string to_json(const graph::Graph& g) const;
};

/// The kernel graph of the graph of `view` under `rules`, written over `kg`: the same result as
/// kernel_graph(), reusing the storage of the kernels `kg` held, for a caller that builds many
/// (a kernel's vectors are most of the pass's allocations) and that keeps the graph's flat view
/// for what it reads next (the kernels' features).
/// @throws as kernel_graph(); `kg` is then left in an unspecified but valid state
DNNCOST_FUNC void kernel_graph_into(const graph::FlatView& view, const FusionRules& rules, KernelGraph& kg);

/// Tells kernel_graph_into() that its rules are already checked (FusionRules::check()): for a
/// caller that builds the kernel graphs of many networks under one rule set and checks it once.
struct RulesChecked {
    explicit RulesChecked() = default;
};
inline constexpr RulesChecked rules_checked{};

/// kernel_graph_into() under rules the caller has checked.
DNNCOST_FUNC void kernel_graph_into(const graph::FlatView& view, const FusionRules& rules, KernelGraph& kg,
                                    RulesChecked);

/// kernel_graph_into() on `g`, its flat view built in this thread's scratch.
DNNCOST_FUNC void kernel_graph_into(const graph::Graph& g, const FusionRules& rules, KernelGraph& kg);

/// The kernel graph of `g` under `rules`.
/// @throws shape_error for a cyclic graph or a node whose cost cannot be computed (see node_cost);
/// config_error for an invalid rule set (FusionRules::check)
DNNCOST_FUNC KernelGraph kernel_graph(const graph::Graph& g, const FusionRules& rules);

}  // namespace dnncost::device

#if !defined(DNNCOST_COMPILED)
#include <dnncost/device/kernel_graph_impl.hpp>
#endif
