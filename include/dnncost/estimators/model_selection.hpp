#pragma once
/// @file model_selection.hpp
/// The statistics a GNN estimator's fit chooses with: the validation score, the bootstrapped
/// out-of-bag gain of training over the untrained network, and the test of whether a device
/// pays for the operators a graph compiler removes.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <numeric>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include <Eigen/Core>

#include <dnncost/core/config.hpp>
#include <dnncost/core/error.hpp>
#include <dnncost/core/rng.hpp>
#include <dnncost/train/metrics.hpp>

namespace dnncost::estimators {

/// Which weights a GNN fit with validation data ends with (GnnOptions::keep).
enum class Keep : std::uint8_t {
    automatic,  ///< the trained network only if its bootstrapped out-of-bag gain over the untrained one exceeds its standard error
    trained,    ///< always the best validation epoch (the published recipe: early stopping on validation)
    untrained,  ///< always the initial network; with an additive path, its closed-form ridge warm start
};
inline std::string_view to_string(Keep k) {
    return k == Keep::trained ? "trained" : k == Keep::untrained ? "untrained" : "auto";
}
/// "auto" | "trained" | "untrained"; nullopt for anything else.
inline std::optional<Keep> keep_from_string(std::string_view s) {
    if (s == "auto") return Keep::automatic;
    if (s == "trained") return Keep::trained;
    if (s == "untrained") return Keep::untrained;
    return std::nullopt;
}

/// An Eigen vector as a std::vector (the metrics take std::vector).
inline std::vector<double> to_std_vector(const Eigen::VectorXd& v) {
    return std::vector<double>(v.data(), v.data() + v.size());
}

/// The score of validation predictions used for early stopping, the learning-rate schedule and
/// model selection (lower is better): (1 - Spearman rho) + (1 - fraction of items within
/// +-10 %), the two figures an estimator of this kind is judged by (ranking and error-bound
/// accuracy). Not MAPE: a few degenerate architectures have near-zero cost and would dominate
/// a mean of relative errors. Not the median relative error either: training can lower the
/// median while pushing more items past 10 %, which the error-bound figure counts against it.
inline double validation_score(const std::vector<double>& pred, const std::vector<double>& y) {
    const double rho = train::spearman(pred, y);  // NaN when either side is constant: no rank information
    return (1.0 - (std::isnan(rho) ? 0.0 : rho)) + (1.0 - train::error_bound_accuracy(pred, y, 0.10));
}

/// How much better (lower) the validation score of the trained network is than that of the
/// untrained one, and the standard error of that difference (selection_improvement).
struct Improvement {
    double mean = 0.0;  ///< score(untrained) - score(trained)
    double se = 0.0;    ///< its standard error
};

/// Out-of-bag estimate of what training buys over the untrained network, selection included.
/// Picking the best of a few hundred epochs on ~100 validation items is biased: on a device
/// whose cost is additive the "best" epoch mostly fits validation noise and is worse on new
/// data than the additive warm start. So the whole selection is bootstrapped: per resample the
/// best epoch is chosen on the in-bag items, and its score is compared with the untrained
/// network's on the out-of-bag items (~37 %), which played no part in the choice. fit() keeps
/// the trained network only if the mean out-of-bag improvement exceeds its standard error (the
/// spread of the improvement over resamples): the one-standard-error rule, prefer the simpler
/// model unless the evidence is clear.
/// @param epochs validation predictions of every epoch
DNNCOST_FUNC Improvement selection_improvement(const std::vector<double>& untrained,
                                         const std::vector<std::vector<double>>& epochs, const std::vector<double>& y,
                                         std::uint64_t seed, int resamples = 200);

/// The share of the removed operators' cost that a device does not pay, estimated from labelled
/// networks and the additive baseline's predictions. For network i, removed_i is what the
/// baseline charges it for the operators a graph compiler removes (dead branches, identity-like
/// and constant operators: its coefficients times the eager-minus-kept aggregates), its charge
/// share is removed_i / y_i and its relative residual (y_i - baseline_i) / y_i. A device that
/// skips those operators leaves the baseline over-predicting by about removed_i, so the residual
/// falls with the charge share at slope -1; one that runs them gives slope 0. The ordinary
/// least-squares slope of residual on charge share (with intercept) is minus the unpaid share;
/// `se` is its usual standard error. The share is the part of the effect that the baseline's
/// per-type rates cannot absorb: removal that varies within an operator type (dead branches)
/// shows in full, removal of a steady fraction of a type partly becomes a lower rate. So it is
/// near 0 wherever the device pays for the removed operators, and can stay below 1 on one that
/// skips them. Items below `degenerate` are left out. No verdict (share and se 0, `verdict`
/// false) with fewer than 3 items, when the charge share does not vary (no labelled network has
/// removed operators) or when a value is not finite.
struct UnpaidShare {
    double share = 0.0;
    double se = 0.0;
    std::size_t n = 0;     ///< items used
    bool verdict = false;  ///< false: too few items, or the charge share constant
    /// The warm start's rule: the device skips most of what a compiler removes, by two standard
    /// errors. A size of effect, not significance alone: a removed operator's cost can be
    /// measurably but negligibly off, which is no reason to change the model.
    bool compiled() const { return verdict && share - 2.0 * se > 0.5; }
};
/// @throws shape_error when the three inputs differ in length
DNNCOST_FUNC UnpaidShare unpaid_share(std::span<const double> removed_cost, std::span<const double> predicted,
                                std::span<const double> y, double degenerate);

}  // namespace dnncost::estimators

#if !defined(DNNCOST_COMPILED)
#include <dnncost/estimators/model_selection_impl.hpp>
#endif
