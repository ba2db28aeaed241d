#pragma once
/// @file table_cost.hpp
/// A measured operator table (op_table.hpp) as a CostSource: node by node, in milliseconds,
/// differentiable in channel counts through the table's interpolant.
///
/// Sequential-execution assumption: the cost of a graph is the sum over its operators, as if
/// they ran one after another with nothing overlapped or fused. A runtime that fuses operators
/// (a Conv with its activation, an Add into a Conv) breaks that assumption; see
/// docs/cost_tables.md for how much on ONNX Runtime.
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <dnncost/core/error.hpp>
#include <dnncost/cost/analytic.hpp>
#include <dnncost/cost/op_config.hpp>
#include <dnncost/cost/op_table.hpp>
#include <dnncost/cost/source.hpp>
#include <dnncost/graph/graph.hpp>

namespace dnncost::cost {

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

protected:
    /// @throws config_error naming the node for a node without entry under MissingEntry::error,
    /// or a query outside the table without extrapolation
    GraphCost price(const graph::Graph& g) const override {
        GraphCost r;
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
