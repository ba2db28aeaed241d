#pragma once
/// @file training.hpp
/// The estimator workflows of the command-line tool as library calls that return what they
/// found: train and test on a measured data set (train_estimator), evaluate a saved model on one
/// (evaluate_estimator), price networks (predict_networks). A front end parses, calls one of
/// them and prints the result; every modelling decision (split, upsampling of small search
/// spaces, ensembles, multi-target fits, checks of the predictions) is made here.
#include <algorithm>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <dnncost/core/config.hpp>
#include <dnncost/core/error.hpp>
#include <dnncost/estimators/capabilities.hpp>
#include <dnncost/estimators/ensemble.hpp>
#include <dnncost/estimators/estimator.hpp>
#include <dnncost/estimators/registry.hpp>
#include <dnncost/graph/graph.hpp>
#include <dnncost/spaces/registry.hpp>
#include <dnncost/train/dataset.hpp>
#include <dnncost/train/metrics.hpp>
#include <dnncost/train/split.hpp>
#include <dnncost/train/upsample.hpp>

namespace dnncost::estimators {

/// Operator kinds a model never saw in training, over the networks it predicted.
struct UnknownOperators {
    std::set<std::string> kinds;
    std::size_t inputs = 0;  ///< networks with at least one such operator
    std::size_t total = 0;   ///< networks looked at
    void add(const Estimator& est, std::span<const graph::Graph* const> graphs) {
        for (const graph::Graph* g : graphs) {
            const auto u = unknown_operators(est, *g);
            inputs += !u.empty();
            kinds.insert(u.begin(), u.end());
            ++total;
        }
    }
    /// One line for the user; empty when every operator was seen.
    std::string warning() const {
        if (kinds.empty()) return {};
        std::string list;
        for (const auto& t : kinds) list += (list.empty() ? "" : ", ") + t;
        return dnncost::concat(inputs, " of ", total,
                                       " input(s) contain operator types the model never saw in training (", list,
                                       "): their predictions are extrapolations");
    }
};

namespace detail {
/// A prediction_error of `est` re-raised naming the network (`network`) instead of its position.
[[noreturn]] inline void rethrow_naming(const prediction_error& e, const Estimator& est, std::size_t offset,
                                        const std::string& network) {
    raise_prediction(dnncost::concat(est.name(), ": predicts ", e.value(), " for ", network, " (",
                                             cost_problem(e.value()), ")"),
                     offset + e.index(), e.value());
}
inline std::string item_name(const train::Dataset& ds, std::size_t item) {
    return dnncost::concat("'", ds.key(item), "' (", ds.source(), ":", ds.line(item), ")");
}
}  // namespace detail

/// est's predictions of the data set's items, in chunks (a whole NB201 data set of graphs, 4 GB,
/// is never built at once); operators it never saw are added to `unknown`.
/// @throws prediction_error naming the item (key, file and line) for a negative or non-finite prediction
DNNCOST_FUNC std::vector<Prediction> predict_items(const Estimator& est, const train::Dataset& ds,
                                             const std::vector<std::size_t>& items, UnknownOperators& unknown);

/// predict_items() for every quantity est learnt: [target][item].
DNNCOST_FUNC std::vector<std::vector<double>> predict_target_items(const Estimator& est, const train::Dataset& ds,
                                                             const std::vector<std::size_t>& items,
                                                             UnknownOperators& unknown);

/// The search space a data-set key names ("nb201:|...|"), else `default_space`.
inline std::string space_of_key(const std::string& key, const std::string& default_space) {
    if (const auto q = spaces::split_qualified(key)) return std::string(q->space->name);
    return default_space;
}

// ------------------------------------------------------------------ train

/// What a training run asks for.
struct TrainRequest {
    std::vector<std::string> targets;  ///< measured columns; several for one multi-target model
    std::string preset;
    PresetSettings settings{};  ///< the preset's own options
    int ensemble = 0;           ///< >= 2: an ensemble of that many members (0 or 1: one model)
    train::SplitOptions split{};
    std::vector<double> proxy{};  ///< one value per item, ranking the candidates of uniform sampling
    std::string default_space;    ///< the search space of keys without a SPACE: prefix
    FitOptions fit{};
    /// Told, before the fit, how the data were split and whether small spaces were upsampled.
    std::function<void(const std::string&)> on_note{};
};

/// Accuracy on one measured quantity.
struct TargetAccuracy {
    std::string target;
    train::AccuracyReport accuracy;
};

/// What a training run found.
struct TrainReport {
    std::unique_ptr<Estimator> model;
    train::Split split;
    std::size_t training_examples = 0;  ///< after upsampling of small search spaces
    std::size_t spaces = 1;             ///< search spaces in the training split
    bool upsampled = false;
    FitResult fit;
    std::vector<TargetAccuracy> test;       ///< one per target, on the test split
    std::optional<double> coverage_2sigma;  ///< an ensemble's, on the first target
    UnknownOperators unknown;               ///< in the test split
};

/// Every search space makes up at least this share of a training split with several of them
/// (train::upsample), so that a model of several spaces does not learn the largest one alone.
inline constexpr double min_space_share = 0.10;

/// The training items with those of small search spaces repeated (min_space_share), when the
/// split holds between 2 and 1 / min_space_share - 1 spaces; the items unchanged otherwise.
/// @return the items and the number of spaces
DNNCOST_FUNC std::pair<std::vector<std::size_t>, std::size_t> balance_spaces(const train::Dataset& ds,
                                                                       const std::vector<std::size_t>& items,
                                                                       const std::string& default_space,
                                                                       std::uint64_t seed);

/// Split the data set, fit the requested estimator on the training split (small search spaces
/// upsampled) with early stopping on the validation split, and measure it on the test split.
/// @throws config_error for a request the preset cannot serve (several targets for a one-target
///         preset or an ensemble, an ensemble of fewer than 2 members)
/// @throws prediction_error naming a test item whose prediction is not a cost
DNNCOST_FUNC TrainReport train_estimator(const train::Dataset& ds, const TrainRequest& r);

// ------------------------------------------------------------------ evaluate

/// What evaluating a saved model on a data set found.
struct EvalReport {
    std::vector<TargetAccuracy> targets;     ///< one per requested column, in order
    std::vector<std::string> model_targets;  ///< the quantities a multi-target model learnt, same order
    std::optional<double> coverage_2sigma;   ///< when the predictions carry an uncertainty (an ensemble)
    UnknownOperators unknown;
};

/// est's accuracy on every item of the data set, against each column of `targets`: one column for
/// a single-target model, one per learnt quantity (in its order) for a multi-target one.
/// @throws config_error when the number of columns does not match what the model learnt
/// @throws prediction_error naming an item whose prediction is not a cost
DNNCOST_FUNC EvalReport evaluate_estimator(const Estimator& est, const train::Dataset& ds,
                                     const std::vector<std::string>& targets, const std::string& model_source);

// ------------------------------------------------------------------ predict

/// Predictions for a list of networks: one row per network, one column per learnt quantity.
struct PredictReport {
    std::vector<std::string> columns;         ///< the quantities ("latency" for a single-target model)
    std::vector<std::vector<double>> values;  ///< [network][column]
    std::vector<double> sigma;                ///< per network, when the model gives an uncertainty
    UnknownOperators unknown;
};

/// est's predictions for `graphs`, named `names` in messages.
/// @throws prediction_error naming the network for a prediction that is not a cost
DNNCOST_FUNC PredictReport predict_networks(const Estimator& est, std::span<const graph::Graph* const> graphs,
                                      const std::vector<std::string>& names);

}  // namespace dnncost::estimators

#if !defined(DNNCOST_COMPILED)
#include <dnncost/estimators/training_impl.hpp>
#endif
