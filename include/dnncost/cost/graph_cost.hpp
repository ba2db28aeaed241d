#pragma once
/// @file graph_cost.hpp
/// The latency of a whole graph through one interface, whatever prices it: the roofline model,
/// a measured operator table, or (estimators/estimator_cost.hpp) a trained estimator. The
/// roofline and the table also give the derivative of the cost with respect to each layer's
/// input and output channel counts, for use as a regulariser in training (a differentiable
/// cost term next to the loss).
///
/// Sequential-execution assumption: the roofline and table costs of a graph are sums over its
/// operators, as if they ran one after another with nothing overlapped or fused. A runtime that
/// fuses operators (a Conv with its activation, an Add into a Conv) breaks that assumption; see
/// docs/cost_tables.md for how much on ONNX Runtime.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <dnncost/core/error.hpp>
#include <dnncost/cost/analytic.hpp>
#include <dnncost/cost/op_config.hpp>
#include <dnncost/cost/op_table.hpp>
#include <dnncost/graph/graph.hpp>

namespace dnncost::cost {

/// The cost of a graph in milliseconds; per_node_ms is indexed like g.nodes() (empty for
/// sources that price the graph as a whole).
struct GraphCost {
    double total_ms = 0;
    std::vector<double> per_node_ms;
    /// Nodes the source had no figure for and priced another way (e.g. by the roofline), as
    /// "name (op): reason".
    std::vector<std::string> fallbacks;
};

/// d cost / d C and d cost / d K of one node (ms per channel), C and K as in op_config.
struct ChannelGradient {
    int node = -1;
    std::int64_t c = 0, k = 0;
    double d_c = 0, d_k = 0;
};

/// Something that prices graphs.
class CostSource {
public:
    virtual ~CostSource() = default;
    /// "roofline", "table", or the estimator preset.
    virtual std::string name() const = 0;
    virtual GraphCost cost(const graph::Graph& g) const = 0;
    /// Derivatives with respect to the channel counts of every node that has them (op_config);
    /// nullopt when the source is not differentiable in channel counts.
    virtual std::optional<std::vector<ChannelGradient>> channel_gradient(const graph::Graph& /*g*/) const {
        return std::nullopt;
    }
};

/// The roofline model (analytic.hpp) of a device, in milliseconds.
class RooflineCost : public CostSource {
public:
    explicit RooflineCost(DeviceSpec device) : m_device(std::move(device)) {}
    std::string name() const override { return "roofline"; }
    const DeviceSpec& device() const { return m_device; }
    GraphCost cost(const graph::Graph& g) const override {
        GraphCost r;
        for (double s : roofline(g, m_device).per_node) {
            r.per_node_ms.push_back(1e3 * s);
            r.total_ms += 1e3 * s;
        }
        return r;
    }
    /// The roofline latency of a node is max(FLOPs / peak, bytes / bandwidth) + overhead, where
    /// FLOPs and bytes are linear in C at fixed K and in K at fixed C (products of channel
    /// counts and fixed sizes). The derivative is that of the active term, which a difference
    /// over one step (one group of channels for a grouped convolution) gives exactly.
    std::optional<std::vector<ChannelGradient>> channel_gradient(const graph::Graph& g) const override {
        std::vector<ChannelGradient> out;
        for (std::size_t i = 0; i < g.num_nodes(); ++i) {
            const int id = static_cast<int>(i);
            const auto cfg = op_config(g, id);
            if (!cfg) continue;
            out.push_back(node_gradient(g, id, *cfg));
        }
        return out;
    }
    /// Roofline milliseconds of node `id` with C input and K output channels.
    double node_ms(const graph::Graph& g, int id, std::int64_t C, std::int64_t K) const {
        const auto s = single_op_graph(g, id, C, K);
        return 1e3 * roofline_seconds(node_cost(s, 0), m_device);
    }

private:
    ChannelGradient node_gradient(const graph::Graph& g, int id, const OpConfig& cfg) const {
        ChannelGradient r{id, cfg.c, cfg.k, 0, 0};
        const auto terms = [&](std::int64_t C, std::int64_t K) {
            const auto c = node_cost(single_op_graph(g, id, C, K), 0);
            return std::pair{static_cast<double>(c.flops) / m_device.peak_flops,
                             static_cast<double>(c.bytes()) / m_device.bandwidth};
        };
        const auto [f0, b0] = terms(cfg.c, cfg.k);
        const bool compute_bound = f0 >= b0;
        const std::int64_t step = cfg.key.groups > 1 ? cfg.key.groups : 1;
        const auto [fc, bc] = terms(cfg.c + step, cfg.k);
        r.d_c = 1e3 * (compute_bound ? fc - f0 : bc - b0) / static_cast<double>(step);
        if (spans_two_channel_counts(cfg.key)) {
            const auto [fk, bk] = terms(cfg.c, cfg.k + step);
            r.d_k = 1e3 * (compute_bound ? fk - f0 : bk - b0) / static_cast<double>(step);
        }
        return r;
    }
    DeviceSpec m_device;
};

/// What a table does with a node it has no entry for.
enum class MissingEntry {
    error,     ///< raise an error naming the node and its configuration
    roofline,  ///< price it with the roofline model of a device, and report it in GraphCost::fallbacks
};

struct TableCostOptions {
    QueryOptions query;
    MissingEntry missing = MissingEntry::error;
    DeviceSpec fallback_device;  ///< for MissingEntry::roofline
};

/// A measured operator table: the sum over a graph's operators of their table latencies (free
/// operators, see is_free_operator, cost nothing).
class TableCost : public CostSource {
public:
    TableCost(std::shared_ptr<const OpTable> table, TableCostOptions options)
        : m_table(std::move(table)), m_options(std::move(options)) {
        if (!m_table) raise<config_error>("TableCost: no table");
    }
    std::string name() const override { return "table"; }
    const OpTable& table() const { return *m_table; }

    /// @throws config_error naming the node for a node without entry under MissingEntry::error,
    /// or a query outside the table without extrapolation
    GraphCost cost(const graph::Graph& g) const override {
        GraphCost r;
        const RooflineCost roof(m_options.fallback_device);
        for (std::size_t i = 0; i < g.num_nodes(); ++i) {
            const int id = static_cast<int>(i);
            const auto& n = g.node(id);
            double ms = 0;
            if (!is_free_operator(n.op_type)) {
                std::string why;
                const auto cfg = op_config(g, id, &why);
                if (cfg && m_table->contains(cfg->key)) {
                    ms = query(n, *cfg).value;
                } else {
                    if (cfg) why = "no table entry for " + to_string(cfg->key);
                    if (m_options.missing == MissingEntry::error)
                        raise<config_error>("table cost: node '", n.name, "' (", n.op_type, "): ", why);
                    ms = 1e3 * roofline_seconds(node_cost(g, id), m_options.fallback_device);
                    r.fallbacks.push_back(n.name + " (" + n.op_type + "): " + why);
                }
            }
            r.per_node_ms.push_back(ms);
            r.total_ms += ms;
        }
        return r;
    }
    /// The slope of the table's interpolant at each node's channel counts (zero in step mode,
    /// where the cost is piecewise constant). Nodes without an entry are left out.
    std::optional<std::vector<ChannelGradient>> channel_gradient(const graph::Graph& g) const override {
        std::vector<ChannelGradient> out;
        for (std::size_t i = 0; i < g.num_nodes(); ++i) {
            const int id = static_cast<int>(i);
            const auto cfg = op_config(g, id);
            if (!cfg || !m_table->contains(cfg->key)) continue;
            const auto v = query(g.node(id), *cfg);
            out.push_back({id, cfg->c, cfg->k, v.gradient[0], v.gradient[1]});
        }
        return out;
    }

private:
    GridValue query(const graph::Node& n, const OpConfig& cfg) const {
        try {
            return m_table->query(cfg.key, static_cast<double>(cfg.c), static_cast<double>(cfg.k), m_options.query);
        } catch (const config_error& e) {
            raise<config_error>("table cost: node '", n.name, "': ", e.what());
        }
    }
    std::shared_ptr<const OpTable> m_table;
    TableCostOptions m_options;
};

}  // namespace dnncost::cost
