#pragma once
/// @file train_data.hpp
/// Measured graphs as an estimator trains on them: each graph with its measured value.
#include <cmath>
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <dnncost/core/config.hpp>
#include <dnncost/core/error.hpp>
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

/// What every fit checks of its data before using it: as many targets as graphs, no null graph,
/// every target positive and finite (a cost), and at least one item unless `may_be_empty`.
/// @param who   the estimator, first word of the message ("additive", "GnnEstimator")
/// @param what  "training" or "validation"
/// @throws shape_error for mismatched sizes, config_error for the rest
DNNCOST_FUNC void check_train_data(const TrainData& d, std::string_view who, std::string_view what,
                             bool may_be_empty = false);

/// check_train_data() for several targets of the same graphs (at least one target).
DNNCOST_FUNC void check_train_data(const MultiTrainData& d, std::string_view who, std::string_view what,
                             bool may_be_empty = false);

}  // namespace dnncost::train

#if !defined(DNNCOST_COMPILED)
#include <dnncost/train/train_data_impl.hpp>
#endif
