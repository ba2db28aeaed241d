#pragma once
/// @file prune.hpp
/// Channel pruning of a real network by keep ratios: a genome gives one ratio per channel group
/// of channels.hpp; applying it gives the pruned operator graph, with every activation, weight,
/// bias, BatchNorm parameter, group count and reshape target resized consistently, ready to be
/// written as ONNX with weights (io::export_onnx, WeightData::random) and measured.
///
/// Only shapes change: which channels are kept is the training recipe's business (magnitude,
/// learned masks, ...), and a runtime's speed depends on the counts alone.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <dnncost/core/config.hpp>
#include <dnncost/core/error.hpp>
#include <dnncost/graph/graph.hpp>
#include <dnncost/search/compression/channels.hpp>

namespace dnncost::search::compression {

/// The keep-ratio steps from `lowest` to `highest` (inclusive) by `step`.
/// @throws config_error unless 0 < lowest <= highest <= 1 and step > 0 (and at most 1000 steps)
DNNCOST_FUNC std::vector<double> keep_steps(double lowest = 0.25, double highest = 1.0, double step = 0.125);

/// A network and its channel analysis: prices nothing, prunes.
class Pruner {
public:
    explicit Pruner(graph::Graph g) : m_graph(std::move(g)), m_analysis(analyse_channels(m_graph)) {}

    const graph::Graph& graph() const { return m_graph; }
    const ChannelAnalysis& analysis() const { return m_analysis; }
    const std::vector<ChannelGroup>& groups() const { return m_analysis.groups; }
    std::size_t num_groups() const { return m_analysis.groups.size(); }

    /// The pruned channel count of a group at keep ratio r: the nearest multiple of the group's
    /// `multiple`, at least one multiple and at most the unpruned count.
    static std::int64_t kept_channels(const ChannelGroup& g, double r);

    /// The pruned graph for one keep ratio per group (in (0, 1]).
    /// @throws config_error for a wrong ratio count or a ratio outside (0, 1]
    graph::Graph apply(std::span<const double> ratios) const;

    /// The pruned graph for a genome of step indices into `steps`.
    graph::Graph apply_genome(std::span<const int> genome, std::span<const double> steps) const {
        return apply(ratios_of(genome, steps));
    }

    /// Keep ratios of a genome of step indices. @throws config_error for an index out of range
    std::vector<double> ratios_of(std::span<const int> genome, std::span<const double> steps) const;

    /// The built-in accuracy *proxy* (not an accuracy): the parameter-weighted mean of the
    /// square roots of the keep ratios, sum_g P_g sqrt(r_g) / sum_g P_g, where P_g counts the
    /// weights of the layers writing group g. 1 for the unpruned network, strictly increasing in
    /// every ratio, with diminishing loss for light pruning as trained networks tend to show.
    double proxy_accuracy(std::span<const double> ratios) const;

private:
    graph::Graph m_graph;
    ChannelAnalysis m_analysis;
};

}  // namespace dnncost::search::compression

#if !defined(DNNCOST_COMPILED)
#include <dnncost/search/compression/prune_impl.hpp>
#endif
