#pragma once
/// @file source.hpp
/// The one interface for pricing a graph: a graph in, a latency in milliseconds out, and
/// optionally a breakdown of that latency by node or by kernel. The roofline (roofline_cost.hpp),
/// the measured operator tables (table_cost.hpp), the trained estimators (through
/// estimators/estimator_cost.hpp) and kernel-level device models all implement it, so that code
/// pricing graphs (a compression search, `dnncost table price`, a mapping platform through
/// search/mapping/cost_source.hpp) takes any of them.
///
/// A breakdown by node suits sources that price operator by operator. A runtime that fuses
/// operators runs one kernel for several nodes (a Conv with its Relu, a LayerNorm pattern of
/// seven operators) and its time cannot be split among them honestly, so a source may report
/// kernels instead: named groups of node ids, each with its own latency.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <dnncost/core/error.hpp>
#include <dnncost/graph/graph.hpp>

namespace dnncost::cost {

/// Nodes a runtime executes as one kernel, and the kernel's latency.
struct KernelCost {
    std::string name;        ///< what the kernel is, e.g. "Conv+Relu"
    std::vector<int> nodes;  ///< ids of the graph's nodes it runs; a node belongs to at most one kernel
    double ms = 0;
};

/// How a GraphCost splits its total.
enum class Breakdown {
    none,     ///< the total only (a whole-graph estimator)
    nodes,    ///< GraphCost::per_node_ms
    kernels,  ///< GraphCost::kernels
};

/// The cost of a graph in milliseconds. A source fills at most one breakdown; either adds up to
/// total_ms.
struct GraphCost {
    double total_ms = 0;
    /// Indexed like g.nodes(); empty for sources that do not price node by node.
    std::vector<double> per_node_ms;
    /// Nodes (or kernels) the source had no figure for and priced another way (e.g. by the
    /// roofline), as "name (op): reason"; a source may give one line for all those of one reason.
    std::vector<std::string> fallbacks;
    /// Kernels a learnt source priced beyond the work of every sample it learnt from, one line
    /// per kind: "kernels 3, 7 (Gemm): up to 2.3x the work of the largest sample".
    std::vector<std::string> beyond_samples;
    /// Empty for sources that do not price kernel by kernel. Nodes in no kernel cost nothing
    /// (folded away or free, such as a Reshape the runtime aliases).
    std::vector<KernelCost> kernels;
    /// Time of the run itself (launch, input and output copies), in no node or kernel; part of
    /// the total a kernel breakdown adds up to.
    double run_overhead_ms = 0;

    Breakdown breakdown() const {
        if (!kernels.empty()) return Breakdown::kernels;
        if (!per_node_ms.empty()) return Breakdown::nodes;
        return Breakdown::none;
    }

    /// The breakdown as kernels, whichever the source gave: its kernels, or one kernel per
    /// node (named by its operator type, nodes that cost nothing left out); empty without a
    /// breakdown. `g` is the graph that was priced.
    std::vector<KernelCost> by_kernel(const graph::Graph& g) const {
        if (breakdown() != Breakdown::nodes) return kernels;
        std::vector<KernelCost> r;
        for (std::size_t i = 0; i < per_node_ms.size() && i < g.num_nodes(); ++i)
            if (per_node_ms[i] > 0)
                r.push_back({g.node(static_cast<int>(i)).op_type, {static_cast<int>(i)}, per_node_ms[i]});
        return r;
    }
};

/// d cost / d C and d cost / d K of one node (ms per channel), C and K as in op_config.
struct ChannelGradient {
    int node = -1;
    std::int64_t c = 0, k = 0;
    double d_c = 0, d_k = 0;
};

/// Checks what a source returned for graph `g`: a finite, non-negative total; at most one
/// breakdown; per-node figures for every node, or kernels over node ids of `g` with no node in
/// two kernels; every part finite and non-negative; the parts adding up to the total (to a
/// relative 1e-9, the rounding of a sum taken in another order).
/// @throws error naming the source, the graph and the node or kernel at fault
inline void check_graph_cost(const GraphCost& c, const graph::Graph& g, const std::string& source) {
    const auto fail = [&](const auto&... what) {
        raise<error>("cost source '", source, "' pricing graph '", g.name(), "': ", what...);
    };
    const auto valid = [](double v) { return std::isfinite(v) && v >= 0; };
    if (!valid(c.total_ms)) fail("latency ", c.total_ms, " ms is negative or not finite");
    if (!c.per_node_ms.empty() && !c.kernels.empty()) fail("both a per-node and a per-kernel breakdown");
    if (!valid(c.run_overhead_ms)) fail("run overhead ", c.run_overhead_ms, " ms is negative or not finite");
    double sum = c.run_overhead_ms;
    if (!c.per_node_ms.empty()) {
        if (c.per_node_ms.size() != g.num_nodes())
            fail(c.per_node_ms.size(), " per-node figures for ", g.num_nodes(), " nodes");
        for (std::size_t i = 0; i < c.per_node_ms.size(); ++i) {
            if (!valid(c.per_node_ms[i]))
                fail("node '", g.node(static_cast<int>(i)).name, "' costs ", c.per_node_ms[i], " ms");
            sum += c.per_node_ms[i];
        }
    }
    if (!c.kernels.empty()) {
        std::vector<int> owner(g.num_nodes(), -1);
        for (std::size_t k = 0; k < c.kernels.size(); ++k) {
            const auto& kernel = c.kernels[k];
            if (!valid(kernel.ms)) fail("kernel ", k, " '", kernel.name, "' costs ", kernel.ms, " ms");
            if (kernel.nodes.empty()) fail("kernel ", k, " '", kernel.name, "' runs no node");
            for (int id : kernel.nodes) {
                if (id < 0 || static_cast<std::size_t>(id) >= g.num_nodes())
                    fail("kernel ", k, " '", kernel.name, "' names node ", id, " of ", g.num_nodes());
                if (owner[static_cast<std::size_t>(id)] >= 0)
                    fail("node '", g.node(id).name, "' is in kernel ", owner[static_cast<std::size_t>(id)],
                         " and in kernel ", k, " '", kernel.name, "'");
                owner[static_cast<std::size_t>(id)] = static_cast<int>(k);
            }
            sum += kernel.ms;
        }
    }
    if (c.breakdown() != Breakdown::none && !(std::abs(sum - c.total_ms) <= 1e-9 * std::max(1.0, c.total_ms)))
        fail("the breakdown adds up to ", sum, " ms, not the total ", c.total_ms, " ms");
}

/// Something that prices graphs: the one interface every cost model joins.
///
/// Implement name() and price(); callers use cost(), which checks what price() returned
/// (check_graph_cost), so no source hands on a negative, non-finite or inconsistent figure.
class CostSource {
public:
    virtual ~CostSource() = default;
    /// "roofline", "table", or the estimator preset.
    virtual std::string name() const = 0;
    /// The cost of `g`. @throws error when the source's figures fail check_graph_cost
    GraphCost cost(const graph::Graph& g) const {
        GraphCost r = price(g);
        check_graph_cost(r, g, name());
        return r;
    }
    /// Derivatives with respect to the channel counts of every node that has them (op_config);
    /// nullopt when the source is not differentiable in channel counts.
    virtual std::optional<std::vector<ChannelGradient>> channel_gradient(const graph::Graph& /*g*/) const {
        return std::nullopt;
    }

protected:
    /// The source's own pricing of `g`, checked by cost().
    virtual GraphCost price(const graph::Graph& g) const = 0;
};

}  // namespace dnncost::cost
