#pragma once
/// @file tabular_choice.hpp
/// Choose the regressor of one kernel kind by held-out accuracy, and load a saved one of any
/// implementation. Gradient-boosted trees take part when the build has the optional
/// dnncost::xgboost target (DNNCOST_HAS_XGBOOST); roofline_candidates() puts every candidate on a
/// roofline base, so that whichever wins extrapolates with the work.
///
/// The larger functions are defined in tabular_choice_impl.hpp: compiled into dnncost::compiled in
/// compiled mode (core/config.hpp), included at the end of this header otherwise.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <numeric>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <dnncost/core/config.hpp>
#include <dnncost/core/rng.hpp>
#include <dnncost/device/mlp_regressor.hpp>
#include <dnncost/device/roofline_regressor.hpp>
#include <dnncost/device/tabular_regressor.hpp>
#include <dnncost/io/serialize.hpp>
#include <dnncost/train/metrics.hpp>
#if defined(DNNCOST_HAS_XGBOOST)
#include <dnncost/device/gbt_regressor.hpp>
#endif

namespace dnncost::device {

/// A regressor that may be chosen: a name for reports and a factory of fresh, unfitted models.
struct TabularCandidate {
    std::string name;
    std::function<std::unique_ptr<TabularRegressor>()> make;
};

/// The MLP, and the gradient-boosted trees alone and on a linear base when this build has
/// XGBoost, all seeded with `seed`.
DNNCOST_FUNC std::vector<TabularCandidate> default_tabular_candidates(std::uint64_t seed = 1);

/// The candidates of `all` named in `names`, in the order of `names`; no names: all of them.
/// @throws config_error for a name no candidate has (naming those there are) or named twice
inline std::vector<TabularCandidate> select_candidates(std::vector<TabularCandidate> all,
                                                       const std::vector<std::string>& names) {
    if (names.empty()) return all;
    std::string known;
    for (const auto& c : all) known += (known.empty() ? "" : ", ") + c.name;
    std::vector<TabularCandidate> out;
    for (const auto& n : names) {
        const auto it = std::find_if(all.begin(), all.end(), [&](const TabularCandidate& c) { return c.name == n; });
        if (it == all.end()) {
            const bool taken = std::any_of(out.begin(), out.end(), [&](const TabularCandidate& c) { return c.name == n; });
            raise<config_error>("regressor '", n, "' ", taken ? "is named twice" : "is not a candidate here",
                                " (candidates: ", known, ")");
        }
        out.push_back(std::move(*it));
        all.erase(it);
    }
    return out;
}

/// Every candidate of `inner` as the correction of a RooflineRegressor, named "roofline-<name>".
DNNCOST_FUNC std::vector<TabularCandidate> roofline_candidates(std::vector<TabularCandidate> inner,
                                                               const RooflineRegressorOptions& options = {});

/// Held-out accuracy of one candidate. Fractions, not percentages.
struct TabularScore {
    std::string name;
    double mape = 0;
    double within_10 = 0;  ///< fraction of held-out rows within ±10 %
    /// MAPE on the rows of the largest work, fit without them: how the candidate extrapolates.
    /// Empty when the choice held none out (too few rows, or no size feature).
    std::optional<double> beyond_mape;
};

struct TabularChoiceOptions {
    double held_out_fraction = 0.2;  ///< of the rows, never seen by any candidate's fit
    std::uint64_t seed = 1;          ///< of the held-out split
    /// A second test: the largest rows, this fraction of them, held out from a second fit of every
    /// candidate. Real networks' kernels are often larger than every sample, and a candidate that
    /// fits the sampled range well may grow wrongly beyond it. 0: no second test, the choice is by
    /// the random held-out part alone.
    double beyond_fraction = 0.1;
    /// The size of a row: the first of these features that varies over the rows (the work, or the
    /// data read by a kind that does no arithmetic).
    std::vector<std::string> size_features{"log_flops", "log_input_bytes"};
    /// Refit the chosen candidate on every row once chosen (the scores stay those of the
    /// held-out comparison).
    bool refit_on_all = true;
};

struct TabularChoice {
    std::unique_ptr<TabularRegressor> model;  ///< the chosen regressor, fitted
    std::string chosen;                       ///< its candidate name
    std::vector<TabularScore> scores;         ///< every candidate, in the order given
    Index held_out_rows = 0;
    Index beyond_rows = 0;  ///< rows of the beyond test; 0: none was made
};

/// The rows of a seeded held-out split: `held` (about `fraction` of the rows, at least one) and
/// `train` (at least one). Where `groups` names a group per row, whole groups are drawn: the rows
/// of one non-empty group land on one side, so the held-out rows are of groups no fit saw (the
/// kernels of whole networks, as a model meets a user's network). An empty name is a group of its
/// own; without `groups` single rows are drawn. Where the groups drawn would hold out more than
/// twice the fraction (a group of many of the rows), single rows are drawn instead.
struct HeldOutSplit {
    std::vector<Index> held, train;
};
/// @throws config_error for a fraction outside (0, 1) or `groups` of another length than `n`;
///         shape_error for fewer than two rows
DNNCOST_FUNC HeldOutSplit held_out_split(Index n, double fraction, std::uint64_t seed,
                                         std::span<const std::string> groups = {});

/// Split the rows of one kernel kind (held_out_split, by `groups` when given) into training and
/// held-out parts, fit every candidate on the training part and score it on the held-out part.
/// With a beyond test (at least 3 rows held out and 10 left, and a size feature that varies), fit
/// every candidate again without the largest rows and score it on them. Keep the candidate with
/// the lowest mean of the two MAPEs, or of the held-out MAPE alone without a beyond test (a tie
/// goes to the earlier one).
/// @throws config_error for no candidates or a bad fraction; whatever a candidate's fit throws
DNNCOST_FUNC TabularChoice choose_tabular_regressor(const Mat<double>& x, std::span<const double> latency_ms,
                                                    const std::vector<std::string>& feature_names,
                                                    const std::vector<TabularCandidate>& candidates,
                                                    const TabularChoiceOptions& options = {},
                                                    std::span<const std::string> groups = {});

/// Load a regressor saved by TabularRegressor::save, whatever its implementation.
/// @throws parse_error naming `source` for a damaged file or a kind this build cannot read
///         (a "tabular-gbt" model, or a roofline one on it, needs a build with XGBoost)
DNNCOST_FUNC std::unique_ptr<TabularRegressor> load_tabular_regressor(std::string_view bytes,
                                                                      const std::string& source = "<memory>");

}  // namespace dnncost::device

#if !defined(DNNCOST_COMPILED)
#include <dnncost/device/tabular_choice_impl.hpp>
#endif
