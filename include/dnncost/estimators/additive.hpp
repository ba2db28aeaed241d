#pragma once
/// @file additive.hpp
/// The additive baseline: the lookup-table view of cost, learned. A network's cost is modelled
/// as a sum over its operators, each operator type contributing in proportion to how often it
/// occurs, how many MACs it performs and how many bytes it moves (features::OpAggregates).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <memory>
#include <numeric>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <Eigen/Dense>

#include <dnncost/core/config.hpp>
#include <dnncost/core/error.hpp>
#include <dnncost/estimators/additive_header.hpp>
#include <dnncost/estimators/capabilities.hpp>
#include <dnncost/estimators/estimator.hpp>
#include <dnncost/estimators/preset_registry.hpp>
#include <dnncost/estimators/ridge.hpp>
#include <dnncost/features/op_aggregates.hpp>
#include <dnncost/graph/graph.hpp>
#include <dnncost/io/serialize.hpp>
#include <dnncost/train/metrics.hpp>
#include <dnncost/train/train_data.hpp>

namespace dnncost::estimators {

/// cost(g) = b + sum over op types t of ( a_t count_t(g) + m_t macs_t(g) + c_t bytes_t(g) )
///
/// The vocabulary of operator types is taken from the training graphs (types unseen in
/// training contribute nothing at prediction time). Every type's count, MACs and bytes are
/// scaled by the spread of the graphs' total count, MACs and bytes, so the ridge penalty weighs
/// each type's cost per operator, MAC and byte on one physical scale: a type the training graphs
/// barely vary in keeps a small weight instead of one that explodes on other networks. The coefficients come from a closed-form
/// ridge regression (RidgeFit) that minimises the squared *relative* error
///
///     (1/n) sum_i ((y_i - f(g_i)) / y_i)^2 + lambda |w|^2        (intercept not penalised)
///
/// because the metrics that matter (MAPE, error-bound accuracy) are relative: an absolute loss
/// would let the slowest networks dominate the fit. Items whose value is below 5 % of the
/// training median ("degenerate", see train/metrics.hpp) get no weight in that loss. Plain
/// squared error is the other candidate loss, for data where the relative fit chases a tail of
/// cheap outliers (a runtime that skips branches the graph still contains). Loss and lambda are
/// chosen together on the validation items, or by leave-one-out without any, and so is whether
/// the coefficients are held non-negative (RidgeFit::Signs); the final model is
/// fitted on the training set only, so that it sees exactly the samples the other estimators
/// train on.
///
/// The fit is closed-form: it needs no seed, its one solve counts as one epoch (any max_epochs
/// bound holds), there is nothing to stop early and it runs on one thread. Its own options are
/// the coefficient signs (set_signs) and the family scaling.

class AdditiveEstimator final : public Estimator, public OperatorVocabulary, public HeaderExport {
public:
    /// The fitted error: squared relative error (degenerate items ignored) or plain squared error.
    using Loss = RidgeFit::Loss;
    static std::string loss_name(Loss l) { return l == Loss::relative ? "relative" : "absolute"; }
    static constexpr std::string_view kind = "additive";
    /// Per operator type: occurrence count, MACs, bytes moved.
    static constexpr int features_per_type = features::OpAggregates::per_type;
    static constexpr std::string_view config =
        "additive/v2;features=count,macs,bytes;loss=relative|absolute;grid=1e-8..1e2x0.5dec";

    std::string preset() const override { return std::string(kind); }

    /// Raw (unscaled) features of one graph for a given vocabulary, features_per_type per type.
    static std::vector<double> raw_features(const graph::Graph& g, const std::vector<std::string>& vocabulary) {
        return features::OpAggregates::raw(g, vocabulary);
    }

    FitResult fit(const train::TrainData& train, const train::TrainData& validation,
                  const FitOptions& options) override;

    /// The model as a C++ header (estimators/additive_header.hpp).
    std::string export_header(const std::string& name, const std::string& source) const override {
        if (m_target_scale <= 0) raise<config_error>("additive: export_header called before fit or load");
        return additive_header(m_features, m_weights, m_intercept, m_target_scale, config, name, source);
    }

protected:
    double cost_scale() const override { return m_target_scale; }
    std::vector<Prediction> compute(std::span<const graph::Graph* const> graphs) const override;

public:
    std::vector<std::string> vocabulary() const override {
        auto v = m_features.vocabulary;
        std::sort(v.begin(), v.end());
        return v;
    }
    std::string serialize() const override;

    /// Rebuild a model saved by serialize(). @throws parse_error naming `source`.
    static std::unique_ptr<AdditiveEstimator> deserialize(std::string_view bytes,
                                                          std::string_view source = "<memory>");

    /// Whether the next fit() scales each count, MACs or bytes feature by the spread of the
    /// graphs' totals of that family (the default) or by its own spread. The first keeps a type
    /// that barely varies in training from extrapolating wildly on networks unlike the training
    /// ones (features::OpAggregates::family_scaling); a saved model stores its scales either way.
    void set_family_scaling(bool on) { m_family_scaling = on; }
    bool family_scaling() const { return m_family_scaling; }
    /// Signs of the next fit()'s coefficients: either (default: free or non-negative, whichever
    /// validates better), nonnegative (every operator costs time: the safer choice for networks
    /// unlike the training ones), or free.
    void set_signs(RidgeFit::Signs signs) { m_signs = signs; }
    RidgeFit::Signs signs() const { return m_signs; }

    /// Inspection: the chosen ridge strength, feature names and their standardised weights.
    double lambda() const { return m_lambda; }
    Loss loss() const { return m_loss; }
    const std::vector<std::string>& feature_names() const { return m_features.names; }
    const std::vector<double>& weights() const { return m_weights; }
    /// The fitted features' vocabulary and scaling, intercept and target scale (what
    /// export-header writes out): prediction = (intercept + weights . features) * target_scale.
    const features::OpAggregates& features() const { return m_features; }
    double intercept() const { return m_intercept; }
    double target_scale() const { return m_target_scale; }

private:
    static std::string fmt(double v) {
        std::ostringstream os;
        os.precision(3);
        os << v;
        return os.str();
    }
    features::OpAggregates m_features;
    bool m_family_scaling = true;
    RidgeFit::Signs m_signs = RidgeFit::Signs::either;
    std::vector<double> m_weights;
    double m_intercept = 0.0, m_target_scale = 0.0, m_lambda = 0.0;
    Loss m_loss = Loss::relative;
};

namespace detail {
inline const PresetOption coefficients_option{
    "coefficients",
    "Signs of the per-operator costs: either (free or non-negative, whichever validates better) | nonnegative "
    "(every operator costs time; safer for networks unlike the training ones) | free",
    {"either", "nonnegative", "free"}};

#if DNNCOST_HEADER_ONLY  // a program of the compiled mode takes these entries from the library
inline RegistryEntry additive_entry() {
    return entry_of<AdditiveEstimator>(
        [](AdditiveEstimator& e, const PresetSettings& s) {
            if (const auto it = s.find("coefficients"); it != s.end()) e.set_signs(RidgeFit::parse_signs(it->second));
        },
        "ridge regression over per-operator-type counts, MACs and bytes (milliseconds to train)", {coefficients_option});
}
#endif

#if !defined(DNNCOST_COMPILED)
/// The "additive" preset, registered by including this header (see preset_registry.hpp; the
/// compiled library registers it itself).
inline const bool additive_registered = [] {
    register_estimator(std::string(AdditiveEstimator::kind), additive_entry());
    return true;
}();
#endif
}  // namespace detail

}  // namespace dnncost::estimators

#if !defined(DNNCOST_COMPILED)
#include <dnncost/estimators/additive_impl.hpp>
#endif
