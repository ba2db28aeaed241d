#pragma once
/// @file roofline_cost.hpp
/// The roofline model (analytic.hpp) of a device as a CostSource: node by node, in
/// milliseconds, differentiable in channel counts.
///
/// Sequential-execution assumption: the cost of a graph is the sum over its operators, as if
/// they ran one after another with nothing overlapped or fused.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <dnncost/cost/analytic.hpp>
#include <dnncost/cost/op_config.hpp>
#include <dnncost/cost/source.hpp>
#include <dnncost/graph/graph.hpp>

namespace dnncost::cost {

/// The roofline model of a device, in milliseconds, per node.
class RooflineCost : public CostSource {
public:
    explicit RooflineCost(DeviceSpec device) : m_device(std::move(device)) {}
    std::string name() const override { return "roofline"; }
    const DeviceSpec& device() const { return m_device; }

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

protected:
    GraphCost price(const graph::Graph& g) const override {
        GraphCost r;
        for (double s : roofline(g, m_device).per_node) {
            r.per_node_ms.push_back(1e3 * s);
            r.total_ms += 1e3 * s;
        }
        return r;
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

}  // namespace dnncost::cost
