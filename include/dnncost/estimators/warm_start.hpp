#pragma once
/// @file warm_start.hpp
/// The starting point of a GNN estimator's additive path: the additive baseline's ridge solution
/// on the per-operator-type aggregates, with the compiler-kept aggregates added where the
/// labelled networks show that the device skips what a graph compiler removes.
#include <algorithm>
#include <cstddef>
#include <numeric>
#include <optional>
#include <vector>

#include <Eigen/Dense>

#include <dnncost/core/config.hpp>
#include <dnncost/core/error.hpp>
#include <dnncost/core/matrix.hpp>
#include <dnncost/estimators/model_selection.hpp>
#include <dnncost/estimators/ridge.hpp>
#include <dnncost/features/encode.hpp>
#include <dnncost/features/op_aggregates.hpp>
#include <dnncost/train/train_data.hpp>

namespace dnncost::estimators {

/// Weights and bias of an additive path, and how they were chosen.
struct AdditivePathStart {
    std::vector<double> weights;  ///< one per input of the path, in label units / label_scale
    double bias = 0.0;
    bool baseline_only = true;                 ///< candidate (a) below, the additive baseline alone, was kept
    std::optional<UnpaidShare> compiler_test;  ///< the test of the compiler-kept aggregates, if one was made
};

/// Warm start of the additive path with the additive baseline's ridge solver (RidgeFit) on the
/// per-operator-type aggregates (the encodings' graph-level features). Two candidates: (a) the
/// additive baseline itself (aggregates over all operators; loss and lambda chosen by the
/// validation MAPE, exactly as AdditiveEstimator), and, when the aggregates include the
/// compiler-kept ones, (b) the same plus those, with loss and lambda chosen by the validation
/// score. (b) replaces (a) only if the labelled networks (training + validation) show that the
/// device skips most of what a compiler removes: unpaid_share() of (a)'s charge for the removed
/// operators, above 1/2 by two standard errors (UnpaidShare::compiled). Without validation data:
/// (a), with leave-one-out selection. When no aggregate varies over the training graphs, the
/// path is their mean label.
/// @param train_encoded, validation_encoded the encodings of train.graphs and validation.graphs
/// @param label_scale what the network's labels are divided by
/// @param path_width the path's number of inputs: aggregates.size(), or the node feature width
///        when no aggregate varies (the path then reads summed node features)
/// @throws shape_error when an encoding does not match its data, config_error on a null graph
///         or a path width that does not match the aggregates
DNNCOST_FUNC AdditivePathStart warm_start_additive_path(const features::OpAggregates& aggregates,
                                                  const train::TrainData& train,
                                                  const std::vector<features::EncodedGraph>& train_encoded,
                                                  const train::TrainData& validation,
                                                  const std::vector<features::EncodedGraph>& validation_encoded,
                                                  double label_scale, std::size_t path_width);

}  // namespace dnncost::estimators

#if !defined(DNNCOST_COMPILED)
#include <dnncost/estimators/warm_start_impl.hpp>
#endif
