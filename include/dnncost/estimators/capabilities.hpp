#pragma once
/// @file capabilities.hpp
/// What only some estimators can do, as small interfaces beside the Estimator core, and free
/// functions that use them through any Estimator: the callers (the CLI, the searches) never
/// ask which preset a model is.
///
/// - GemmPrecision: the arithmetic of the model's matrix products (the GNN presets);
/// - OperatorVocabulary: the operator kinds seen in training (to warn about unseen ones);
/// - MultiTarget: several measured quantities learnt by one model (perfsage);
/// - HeaderExport: the model as one self-contained C++ header (additive, hifisage, brpnas);
/// - GraphEmbedding: a network as a vector (the trained GNN presets), for adaptation.
#include <algorithm>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <Eigen/Core>

#include <dnncost/core/error.hpp>
#include <dnncost/estimators/estimator.hpp>
#include <dnncost/features/op_kind.hpp>
#include <dnncost/graph/graph.hpp>
#include <dnncost/nn/precision.hpp>
#include <dnncost/train/train_data.hpp>

namespace dnncost::estimators {

/// An estimator whose predictions run GEMMs in a chosen arithmetic (saved with the model).
class GemmPrecision {
public:
    virtual ~GemmPrecision() = default;
    /// Run later predictions in `p` instead of the arithmetic the model was trained with.
    virtual void set_precision(nn::Precision p) = 0;
    /// The arithmetic of predict(); empty when the estimator holds no GEMMs yet (an empty ensemble).
    virtual std::optional<nn::Precision> precision() const = 0;
};

/// An estimator that keeps the operator kinds it saw in training.
class OperatorVocabulary {
public:
    virtual ~OperatorVocabulary() = default;
    /// Operator kinds seen in training, sorted; empty before fit.
    virtual std::vector<std::string> vocabulary() const = 0;
};

/// An estimator that learns several quantities of a network in one model.
class MultiTarget {
public:
    virtual ~MultiTarget() = default;
    virtual int max_targets() const = 0;
    /// Learn every quantity of `train` in one model. @throws config_error for more than max_targets()
    virtual FitResult fit_targets(const train::MultiTrainData& train, const train::MultiTrainData& validation,
                                  const FitOptions& options) = 0;
    /// Predictions of every learnt quantity: [target][graph], in the targets' units, unchecked.
    virtual std::vector<std::vector<double>> compute_targets(std::span<const graph::Graph* const> graphs) const = 0;
    /// Names of the learnt quantities.
    virtual std::vector<std::string> target_names() const = 0;
    /// The typical value of quantity k (its label scale; see floor_costs).
    virtual double target_scale(std::size_t k) const = 0;
};

/// An estimator that can be written as a C++ header with a predict(graph) of its own.
class HeaderExport {
public:
    virtual ~HeaderExport() = default;
    /// The header text: namespace `name`, `source` named in its comment.
    virtual std::string export_header(const std::string& name, const std::string& source) const = 0;
};

/// An estimator that maps a network to a vector (a trained GNN's graph embedding).
class GraphEmbedding {
public:
    virtual ~GraphEmbedding() = default;
    /// One row per graph.
    virtual Eigen::MatrixXd embed(std::span<const graph::Graph* const> graphs) const = 0;
};

// ------------------------------------------------------------------ through any estimator

/// The GEMM arithmetic of est's predictions; empty for an estimator without GEMMs.
inline std::optional<nn::Precision> precision_of(const Estimator& est) {
    if (const auto* p = dynamic_cast<const GemmPrecision*>(&est)) return p->precision();
    return std::nullopt;
}
/// Run est's later predictions in `p`; a no-op for an estimator without GEMMs.
inline void set_precision(Estimator& est, nn::Precision p) {
    if (auto* g = dynamic_cast<GemmPrecision*>(&est)) g->set_precision(p);
}

/// Operator kinds est saw in training (sorted); empty when it keeps none.
inline std::vector<std::string> vocabulary_of(const Estimator& est) {
    if (const auto* v = dynamic_cast<const OperatorVocabulary*>(&est)) return v->vocabulary();
    return {};
}

/// Operator types of `g` that `est` never saw in training (sorted, each once): its prediction
/// for such a graph is an extrapolation (the types share one `unknown` slot or are ignored).
/// Empty when the estimator keeps no vocabulary.
inline std::vector<std::string> unknown_operators(const Estimator& est, const graph::Graph& g) {
    const auto vocab = vocabulary_of(est);
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

/// How many quantities one model of est's kind learns at once (1 without MultiTarget).
inline int max_targets(const Estimator& est) {
    if (const auto* m = dynamic_cast<const MultiTarget*>(&est)) return m->max_targets();
    return 1;
}
/// Names of the quantities est learnt; empty for a single-target estimator.
inline std::vector<std::string> target_names(const Estimator& est) {
    if (const auto* m = dynamic_cast<const MultiTarget*>(&est)) return m->target_names();
    return {};
}
/// Learn every quantity of `train` with est: in one model when est learns several, else the
/// one quantity with fit(). @throws config_error for more quantities than est learns
inline FitResult fit_targets(Estimator& est, const train::MultiTrainData& train,
                             const train::MultiTrainData& validation, const FitOptions& options) {
    if (auto* m = dynamic_cast<MultiTarget*>(&est)) return m->fit_targets(train, validation, options);
    if (train.targets.size() != 1)
        raise<config_error>("preset '", est.preset(), "' learns one quantity, ", train.targets.size(),
                            " were given (a multi-target preset such as perfsage learns several)");
    return est.fit(train.target(0), validation.targets.empty() ? train::TrainData{} : validation.target(0), options);
}
/// Predictions of every quantity est learnt: [target][graph]; each floored as predict() floors.
/// @throws prediction_error naming the model and the graph's position
inline std::vector<std::vector<double>> predict_targets(const Estimator& est,
                                                        std::span<const graph::Graph* const> graphs) {
    const auto* m = dynamic_cast<const MultiTarget*>(&est);
    if (!m) return {est.predict_mean(graphs)};
    auto out = m->compute_targets(graphs);
    const auto names = m->target_names();
    for (std::size_t k = 0; k < out.size(); ++k)
        floor_costs(out[k], k < names.size() ? dnncost::concat(est.name(), ", target ", names[k]) : est.name(),
                    graphs, m->target_scale(k));
    return out;
}

/// est as a C++ header (namespace `name`). @throws config_error for an estimator without one
inline std::string export_header(const Estimator& est, const std::string& name, const std::string& source) {
    const auto* h = dynamic_cast<const HeaderExport*>(&est);
    if (!h)
        raise<config_error>(source, ": a '", est.preset(),
                            "' model cannot be written as a header (the additive, hifisage and brpnas presets can)");
    return h->export_header(name, source);
}

/// est's embedding of each graph, one row each. @throws config_error for an estimator without one
inline Eigen::MatrixXd embed(const Estimator& est, std::span<const graph::Graph* const> graphs) {
    const auto* e = dynamic_cast<const GraphEmbedding*>(&est);
    if (!e) raise<config_error>(est.name(), " has no graph embedding (a trained hifisage or brpnas model has one)");
    return e->embed(graphs);
}

}  // namespace dnncost::estimators
