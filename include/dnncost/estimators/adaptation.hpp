#pragma once
/// @file adaptation.hpp
/// Few-shot adaptation to an unseen device (MAPLE-Edge): one regressor over
/// [architecture encoding ‖ hardware descriptor], trained on the measurements of a pool of
/// devices plus a few measurements of the new device, cloned so that they weigh in the fit.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <numeric>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <Eigen/Dense>

#include <dnncost/core/config.hpp>
#include <dnncost/core/error.hpp>
#include <dnncost/core/rng.hpp>
#include <dnncost/estimators/gnn_estimator.hpp>
#include <dnncost/estimators/ridge.hpp>
#include <dnncost/features/batch.hpp>
#include <dnncost/features/op_aggregates.hpp>
#include <dnncost/nn/loss/losses.hpp>
#include <dnncost/nn/mlp.hpp>
#include <dnncost/optim/optimizer.hpp>
#include <dnncost/spaces/nb201.hpp>
#include <dnncost/train/metrics.hpp>
#include <dnncost/train/split.hpp>

namespace dnncost::estimators {

// ------------------------------------------------------------------ architecture encoders

/// Width of nb201_encoding().
inline constexpr int nb201_encoding_width =
    dnncost::nb201::num_edges * dnncost::nb201::num_ops + dnncost::nb201::num_ops;

/// NB201 cell encoding: the one-hot operation of each of the six edges, then the cell's count of
/// each operation (the counts are what an additive cost model needs; the one-hot keeps where an
/// operation sits, which decides whether a branch is dead).
/// @throws parse_error for a malformed architecture string
DNNCOST_FUNC std::vector<double> nb201_encoding(std::string_view arch);

/// Encoding of any network: per-operator-type count, MACs and bytes (features::OpAggregates),
/// vocabulary and scaling fitted on `graphs`, as log(1 + value) so that MACs spanning decades
/// stay comparable. One row per graph.
DNNCOST_FUNC Eigen::MatrixXd aggregate_encoding(std::span<const graph::Graph* const> graphs);

// ------------------------------------------------------------------ hardware descriptor

/// Hardware descriptor (a): the latencies of a fixed set of reference networks on a device,
/// normalised. Element 0 is the log of their geometric mean (the device's overall speed), the
/// others each network's log latency minus it (the device's shape: which networks it favours).
/// @throws config_error for an empty set or a non-positive latency
DNNCOST_FUNC std::vector<double> latency_descriptor(std::span<const double> reference_ms);

// ------------------------------------------------------------------ shots

/// @throws config_error when `candidates` rows cannot give `shots` shots and one network to test
inline void check_shot_candidates(std::size_t candidates, std::size_t shots) {
    if (shots == 0) raise<config_error>("choose_shots: needs at least one shot");
    if (candidates <= shots)
        raise<config_error>("only ", candidates, " measured rows on the target device for ", shots,
                            " shots (at least one more is needed to evaluate)");
}

/// The `shots` measurements to take on the new device, among `candidates` (row indices):
/// targeted uniform sampling ranks them by `proxy` (one value per row: a pool device's latency
/// or MACs), cuts the ranking into `shots` bins and draws one per bin; random draws a uniform
/// subset. Sorted row indices.
/// @throws config_error when there are fewer candidates than shots + 1 (one is kept for testing)
DNNCOST_FUNC std::vector<std::size_t> choose_shots(std::span<const std::size_t> candidates, std::span<const double> proxy,
                                             std::size_t shots, train::Sampling sampling, std::uint64_t seed);

// ------------------------------------------------------------------ the regressor

struct AdaptationOptions {
    int clones = 7;                    ///< K: each shot enters the training set K times (itself and K - 1 clones)
    std::size_t pool_networks = 2000;  ///< networks drawn per pool device (0: all)
    std::vector<int> hidden{128, 128};
    int epochs = 60;
    int batch_size = 128;
    double lr = 1e-3;
    /// Epochs on the cloned shots alone after the joint training (0: none), at lr / 10.
    int finetune_epochs = 0;
    /// Shift the log predictions by the mean log residual on the shots (a per-device bias).
    bool calibrate = false;
    /// Stack: the final prediction is a ridge regression, fitted on the shots, over the
    /// regressor's predictions for the new device and for every pool device (the pool devices'
    /// descriptors), so that the shots decide how much of each pool device the new one is like.
    bool stack = true;
    std::uint64_t seed = 0;
};

/// The MAPLE-Edge regressor: an MLP from [architecture encoding ‖ hardware descriptor] to log
/// latency. The descriptor of every device is latency_descriptor() over the same reference
/// networks, the shots: the new device was measured on them, and the pool devices' tables hold
/// them too, so that no measurement beyond the shots is needed. Log latency makes the squared
/// error a relative one, which is what the ±10 % accuracy and the ranking care about.
class MapleEdge {
public:
    /// @param encoding one row per network (all candidates)
    /// @param pool latencies in ms, one row per network and one column per pool device (all known)
    /// @param shots rows measured on the new device, with their latencies `shot_ms`
    /// @throws config_error on mismatched sizes, non-positive latencies or bad options
    void fit(const Eigen::MatrixXd& encoding, const Eigen::MatrixXd& pool, std::span<const std::size_t> shots,
             std::span<const double> shot_ms, const AdaptationOptions& o);

    /// Latencies in ms on the new device of the networks with these encodings (one row each).
    std::vector<double> predict(const Eigen::MatrixXd& encoding) const;
    /// Latencies on a device with the given latencies of the reference networks (reference()).
    std::vector<double> predict_for(const Eigen::MatrixXd& encoding, std::span<const double> reference_ms) const;
    /// The reference networks of the descriptor: the rows of the shots.
    const std::vector<std::size_t>& reference() const { return m_reference; }
    const std::vector<double>& target_descriptor() const { return m_target_descriptor; }

private:
    /// [1 | regressor for the new device | regressor for each pool device], latencies in ms.
    Eigen::MatrixXd stack_features(const Eigen::MatrixXd& encoding) const;
    std::vector<double> descriptor_of(const Eigen::VectorXd& column) const;
    std::vector<double> predict_with(const Eigen::MatrixXd& encoding, const std::vector<double>& h) const;

    std::vector<std::size_t> m_reference;
    std::vector<double> m_target_descriptor;
    std::vector<std::vector<double>> m_pool_descriptors;
    Eigen::VectorXd m_stack;  ///< stacking coefficients, intercept first; empty without stacking
    Eigen::RowVectorXd m_mean, m_scale;
    double m_y_mean = 0.0, m_y_scale = 1.0, m_shift = 0.0;
    std::unique_ptr<nn::Sequential<double>> m_net;
};

/// The floor of few-shot adaptation: a ridge regression over the five NB201 per-cell operation
/// counts fitted on the shots alone (penalty by exact leave-one-out). Latencies in ms for the
/// given architecture strings.
/// @throws parse_error for a malformed architecture string, config_error for fewer than 2 shots
DNNCOST_FUNC std::vector<double> shots_only_ridge(std::span<const std::string> shot_archs, std::span<const double> shot_ms,
                                            std::span<const std::string> archs);

/// The floor for any network: a ridge regression over linear cost features (one row per
/// network, e.g. per-operator-type count, MACs, bytes) fitted on the shots alone, features scaled
/// by their root mean square over the shots, intercept unpenalised, penalty by exact leave-one-out.
/// @throws config_error for fewer than 2 shots or mismatched widths
DNNCOST_FUNC std::vector<double> shots_only_linear_ridge(const Eigen::MatrixXd& shot_features,
                                                   std::span<const double> shot_ms, const Eigen::MatrixXd& features);

}  // namespace dnncost::estimators

#if !defined(DNNCOST_COMPILED)
#include <dnncost/estimators/adaptation_impl.hpp>
#endif
