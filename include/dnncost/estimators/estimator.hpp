#pragma once
/// @file estimator.hpp
/// The run-time interface of every learned cost estimator (GNN estimators, the additive
/// baseline, ensembles): fit on measured graphs, predict, save. The CLI and the searches pick an
/// estimator by preset name (registry.hpp) and use it through this interface.
#include <algorithm>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <dnncost/core/error.hpp>
#include <dnncost/features/op_kind.hpp>
#include <dnncost/graph/graph.hpp>
#include <dnncost/nn/precision.hpp>
#include <dnncost/train/train_data.hpp>

namespace dnncost::estimators {

/// Which weights a GNN fit with validation data ends with (FitOptions::keep).
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

/// Options common to every estimator's fit. Preset-specific hyper-parameters live in the
/// preset's own configuration.
struct FitOptions {
    std::uint64_t seed = 0;
    int max_epochs = -1;   ///< -1: the preset's default
    int patience = -1;     ///< early-stopping patience in epochs; -1: the preset's default
    unsigned threads = 0;  ///< 0: hardware concurrency
    /// Arithmetic of the GEMMs for this fit and the model's later predictions (saved with it).
    /// Unset: nn::kernels::default_precision(), i.e. bf16 inputs with fp32 accumulation where the
    /// CPU has a bf16 unit (AMX or AVX512-BF16), fp32 elsewhere. Ignored by estimators without GEMMs.
    std::optional<nn::Precision> precision{};
    /// Model selection of GNN estimators (see Keep). Ignored by estimators without training epochs
    /// and by fits without validation data (they keep the epoch of lowest training loss).
    Keep keep = Keep::automatic;
    /// Called once per epoch with a human-readable progress line; return true to stop.
    std::function<bool(const std::string&)> on_epoch{};
};

struct FitResult {
    int epochs = 0;
    double seconds = 0.0;
    double best_validation = 0.0;  ///< the validation score used for early stopping
    std::string validation_metric;
    std::string summary;  ///< one line on the model selection (which candidate was kept and why), may be empty
};

/// A prediction with its uncertainty (sigma = 0 for a single model).
struct Prediction {
    double mean = 0.0;
    double sigma = 0.0;
};

/// A learned cost estimator.
class Estimator {
public:
    virtual ~Estimator() = default;
    /// Preset name as accepted by make_estimator ("hifisage", "brpnas", "additive", ...).
    virtual std::string preset() const = 0;
    virtual FitResult fit(const train::TrainData& train, const train::TrainData& validation,
                          const FitOptions& options) = 0;
    /// Predictions in the target's own unit, one per graph.
    virtual std::vector<Prediction> predict(std::span<const graph::Graph* const> graphs) const = 0;
    /// The predictions' means alone, one per graph (what the metrics of train/metrics.hpp take).
    std::vector<double> predict_mean(std::span<const graph::Graph* const> graphs) const {
        const auto predictions = predict(graphs);
        std::vector<double> out;
        out.reserve(predictions.size());
        for (const auto& p : predictions) out.push_back(p.mean);
        return out;
    }
    /// Everything needed to predict elsewhere (preset, vocabulary, scaling, weights), as bytes.
    virtual std::string serialize() const = 0;
    /// Run later predictions in this GEMM arithmetic instead of the one the model was trained
    /// with (see FitOptions::precision); a no-op for estimators without GEMMs.
    virtual void set_precision(nn::Precision /*p*/) {}
    /// The GEMM arithmetic of predict(); empty for estimators without GEMMs.
    virtual std::optional<nn::Precision> precision() const { return std::nullopt; }
    /// Operator types seen in training (sorted); empty when the estimator does not keep one.
    virtual std::vector<std::string> vocabulary() const { return {}; }

    /// How many quantities one model of this preset can learn at once.
    virtual int max_targets() const { return 1; }
    /// Learn every quantity of `train` in one model. Presets of one target take exactly one.
    /// @throws config_error for more targets than max_targets()
    virtual FitResult fit_targets(const train::MultiTrainData& train, const train::MultiTrainData& validation,
                                  const FitOptions& options) {
        if (train.targets.size() != 1)
            raise<config_error>("preset '", preset(), "' learns one quantity, ", train.targets.size(),
                                " were given (a multi-target preset such as perfsage learns several)");
        return fit(train.target(0), validation.targets.empty() ? train::TrainData{} : validation.target(0), options);
    }
    /// Predictions of every learned quantity: [target][graph], in the target's own unit.
    virtual std::vector<std::vector<double>> predict_targets(std::span<const graph::Graph* const> graphs) const {
        return {predict_mean(graphs)};
    }
    /// Names of the learned quantities, if the model keeps them (empty otherwise).
    virtual std::vector<std::string> target_names() const { return {}; }
};

/// Operator types of `g` that `est` never saw in training (sorted, each once): its prediction
/// for such a graph is an extrapolation (the types share one `unknown` slot or are ignored).
/// Empty when the estimator keeps no vocabulary.
inline std::vector<std::string> unknown_operators(const Estimator& est, const graph::Graph& g) {
    const auto vocab = est.vocabulary();
    std::vector<std::string> out;
    if (vocab.empty()) return out;
    for (const auto& n : g.nodes()) {
        // a model knows an operator by its kind (op_kind) or, if saved before the split, its type
        const auto kind = features::op_kind(g, n);
        if (!std::binary_search(vocab.begin(), vocab.end(), kind) &&
            !std::binary_search(vocab.begin(), vocab.end(), n.op_type))
            out.push_back(kind);
    }
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
}

}  // namespace dnncost::estimators
