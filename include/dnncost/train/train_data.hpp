#pragma once
/// @file train_data.hpp
/// Measured graphs as an estimator trains on them: each graph with its measured value.
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include <dnncost/graph/graph.hpp>

namespace dnncost::train {

/// graphs[i] has measured value targets[i] (> 0, e.g. latency in ms).
struct TrainData {
    std::vector<const graph::Graph*> graphs;
    std::vector<double> targets;
    /// Keeps graphs built on demand alive as long as this object (Dataset::subset).
    std::shared_ptr<const void> keep_alive{};
    std::size_t size() const { return graphs.size(); }
};

/// Several measured quantities of the same graphs: targets[k][i] is quantity k (named names[k],
/// e.g. latency_ms and peak_memory_bytes) of graphs[i].
struct MultiTrainData {
    std::vector<const graph::Graph*> graphs;
    std::vector<std::vector<double>> targets;
    std::vector<std::string> names;
    std::shared_ptr<const void> keep_alive{};
    std::size_t size() const { return graphs.size(); }
    /// Quantity k alone.
    TrainData target(std::size_t k) const { return {graphs, targets.at(k), keep_alive}; }
};

}  // namespace dnncost::train
