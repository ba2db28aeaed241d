#pragma once
/// @file estimator.hpp
/// The run-time interface of every learned cost estimator (GNN estimators, the additive
/// baseline, ensembles): fit on measured graphs, predict, serialize, and the name of its preset.
/// Nothing else: what only some presets have (GEMM arithmetic, several targets, an operator
/// vocabulary, a header export, a graph embedding) is an optional capability
/// (capabilities.hpp), and a preset's own hyper-parameters are its options (registry.hpp).
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <dnncost/core/error.hpp>
#include <dnncost/graph/graph.hpp>
#include <dnncost/train/train_data.hpp>

namespace dnncost::estimators {

/// Options common to every estimator's fit; every preset honours each of them. A preset's own
/// hyper-parameters (GEMM arithmetic, model selection, coefficient signs) are set on the preset
/// before fit (registry.hpp: PresetSettings).
struct FitOptions {
    std::uint64_t seed = 0;
    /// Upper bound on training epochs; -1: the preset's default. A closed-form fit (the additive
    /// baseline) is one epoch and meets any bound.
    int max_epochs = -1;
    /// Early-stopping patience in epochs; -1: the preset's default. Without epochs to stop
    /// (a closed-form fit) there is nothing to stop early.
    int patience = -1;
    unsigned threads = 0;  ///< at most this many threads (0: hardware concurrency)
    /// Called once per epoch with a human-readable progress line; return true to stop.
    std::function<bool(const std::string&)> on_epoch{};
};

struct FitResult {
    int epochs = 0;
    double seconds = 0.0;
    double best_validation = 0.0;  ///< the validation score used for early stopping
    std::string validation_metric;
    std::string summary;  ///< one line on the model selection (which candidate was kept and why), may be empty
    /// The share of the fitted networks that ended trained rather than untrained (GNN model
    /// selection): 1 or 0 for one network, the members' mean for an ensemble; empty for a fit
    /// that made no such choice (no validation data, no network).
    std::optional<double> trained_kept;
};

/// A prediction with its uncertainty (sigma = 0 for a single model).
struct Prediction {
    double mean = 0.0;
    double sigma = 0.0;
};

/// A prediction that is not a cost (negative or not finite): what a corrupted model, or a linear
/// model extrapolating far below its training data, would return. `index` is the graph's
/// position in the call, so that a caller can name the network.
class prediction_error : public error {
public:
    prediction_error(const std::string& message, std::size_t index, double value)
        : error(message), m_index(index), m_value(value) {}
    std::size_t index() const { return m_index; }
    double value() const { return m_value; }

private:
    std::size_t m_index;
    double m_value;
};

/// Why `v` is not a cost, in words; empty when it is one (finite and >= 0).
inline std::string cost_problem(double v) {
    if (std::isfinite(v) && v >= 0) return {};
    return std::isfinite(v)
               ? "far below zero: the model file is corrupt"
               : "not a number: the model file is corrupt or the network lies far outside its training data";
}

/// Throw a prediction_error (print and abort when built without exceptions, as raise() does).
[[noreturn]] inline void raise_prediction(const std::string& message, std::size_t index, double value) {
#if defined(__cpp_exceptions) || defined(__EXCEPTIONS)
    throw prediction_error(printable(message), index, value);
#else
    (void)index;
    (void)value;
    std::fputs(("dnncost: error: " + printable(message) + "\n").c_str(), stderr);
    std::abort();
#endif
}

/// How far below zero a prediction may fall and still be an extrapolation, in units of the
/// model's cost scale (its typical training target): further is a corrupt model, not a fit.
inline constexpr double max_extrapolation_below_zero = 1e3;

/// Makes every value a cost: a value below zero by at most max_extrapolation_below_zero times
/// `scale` (a linear model extrapolating past its data) becomes 0, the least a network can
/// cost; a non-finite value or one further below zero is an error.
/// @param model   the model, as the message names it (its file, or its preset)
/// @param graphs  the networks predicted, to name the one at fault (may be empty)
/// @param scale   the model's cost scale; 0: no value below zero is accepted
/// @throws prediction_error naming the model, the value and the network
inline void floor_costs(std::span<double> values, std::string_view model, std::span<const graph::Graph* const> graphs,
                        double scale) {
    for (std::size_t i = 0; i < values.size(); ++i) {
        double& v = values[i];
        if (std::isfinite(v) && v >= 0) continue;
        if (std::isfinite(v) && v >= -max_extrapolation_below_zero * scale) {
            v = 0.0;
            continue;
        }
        const std::string network =
            i < graphs.size() && graphs[i] && !graphs[i]->name().empty()
                ? dnncost::concat("network '", graphs[i]->name(), "' (", i + 1, " of ", values.size(), ")")
                : dnncost::concat("network ", i + 1, " of ", values.size());
        raise_prediction(dnncost::concat(model, ": predicts ", v, " for ", network, " (", cost_problem(v), ")"),
                         i, v);
    }
}

/// A learned cost estimator.
class Estimator {
public:
    virtual ~Estimator() = default;
    /// Preset name as accepted by make_estimator ("hifisage", "brpnas", "additive", ...).
    virtual std::string preset() const = 0;
    virtual FitResult fit(const train::TrainData& train, const train::TrainData& validation,
                          const FitOptions& options) = 0;
    /// Predictions in the target's own unit, one per graph; never negative or non-finite: a
    /// linear extrapolation below zero is 0 (floor_costs).
    /// @throws prediction_error naming the model (name()) and the network for a value that is
    ///         not finite or far below zero (a corrupt model)
    std::vector<Prediction> predict(std::span<const graph::Graph* const> graphs) const {
        auto out = compute(graphs);
        std::vector<double> values;
        values.reserve(out.size());
        for (const auto& p : out) values.push_back(p.mean);
        floor_costs(values, name(), graphs, cost_scale());
        for (std::size_t i = 0; i < out.size(); ++i) {
            out[i].mean = values[i];
            if (!std::isfinite(out[i].sigma))
                raise_prediction(dnncost::concat(name(), ": uncertainty ", out[i].sigma, " of network ", i + 1,
                                                         " is not finite"),
                                 i, out[i].sigma);
        }
        return out;
    }
    /// The predictions' means alone, one per graph (what the metrics of train/metrics.hpp take).
    std::vector<double> predict_mean(std::span<const graph::Graph* const> graphs) const {
        const auto predictions = predict(graphs);
        std::vector<double> out;
        out.reserve(predictions.size());
        for (const auto& p : predictions) out.push_back(p.mean);
        return out;
    }
    /// Everything needed to predict elsewhere (preset, vocabulary, scaling, weights), as bytes;
    /// registry.hpp's load_estimator() is the inverse.
    virtual std::string serialize() const = 0;

    /// Where the model came from (its file, set by load_estimator_file), for messages; empty
    /// for a model made in memory.
    const std::string& source() const { return m_source; }
    void set_source(std::string source) { m_source = std::move(source); }
    /// The model as messages name it: "FILE (PRESET model)" or "PRESET model".
    std::string name() const {
        return m_source.empty() ? dnncost::concat(preset(), " model")
                                : dnncost::concat(m_source, " (", preset(), " model)");
    }

protected:
    /// The predictions predict() checks and returns.
    virtual std::vector<Prediction> compute(std::span<const graph::Graph* const> graphs) const = 0;
    /// The model's typical cost (its label scale), which bounds how far below zero a prediction
    /// may extrapolate before it is an error (floor_costs); 0: not at all.
    virtual double cost_scale() const { return 0.0; }

private:
    std::string m_source;
};

}  // namespace dnncost::estimators
