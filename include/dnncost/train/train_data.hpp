#pragma once
/// @file train_data.hpp
/// Measured graphs as an estimator trains on them: each graph with its measured value.
#include <cstddef>
#include <memory>
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

}  // namespace dnncost::train
