#pragma once
/// @file perfsage.hpp
/// PerfSAGE (Chai et al., 2023): one GNN predicting several cost quantities of a network at once
/// (latency on several runtimes, latency and peak memory, ...), built from dnncost's layers.
/// - Node features: the scaled operator attributes of features/encode.hpp (kernel, stride,
///   groups, channels, spatial size, MACs, parameters, bytes), the node's edge features (the
///   dimensions of its output tensor) and its memory features (the activation bytes live while
///   it runs under the exact sequential schedule of cost/memory.hpp, and the graph's peak
///   activation and weight bytes), standardised on the training graphs.
/// - Categorical encoding: the operator kind (features/op_kind.hpp: depthwise, grouped and
///   pointwise convolutions apart) selects the first transform's own weight and bias and a
///   trainable embedding, h0 = relu([x | e_type] W_type + b_type) (nn/typed_input.hpp).
/// - 8 GraphSAGE layers h' = relu([h | SUM of neighbours] W + b), max readout, 4 fully
///   connected layers of width 1024, one output per target; the GraphSAGE weights are scaled at
///   initialisation so that each layer keeps its input's scale on the training graphs
///   (PerfSageModel::calibrate).
/// - Each target is divided by its training median; the loss is MAPE + alpha RMSE (alpha 10)
///   over all targets; Adam and the shared epoch loop (train/epoch_loop.hpp: ReduceLROnPlateau,
///   early stopping on the validation score of model_selection.hpp averaged over the targets,
///   best weights restored). The best epoch is always kept: unlike the GNN presets' additive
///   warm start, the untrained network is random and no candidate (so the preset has no `keep`).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <memory>
#include <numeric>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <dnncost/core/config.hpp>
#include <dnncost/core/error.hpp>
#include <dnncost/core/parallel.hpp>
#include <dnncost/core/rng.hpp>
#include <dnncost/core/robust_statistics.hpp>
#include <dnncost/cost/analytic.hpp>
#include <dnncost/cost/memory.hpp>
#include <dnncost/estimators/capabilities.hpp>
#include <dnncost/estimators/estimator.hpp>
#include <dnncost/estimators/model_selection.hpp>
#include <dnncost/estimators/preset_registry.hpp>
#include <dnncost/features/batch.hpp>
#include <dnncost/features/encode.hpp>
#include <dnncost/features/op_kind.hpp>
#include <dnncost/io/serialize.hpp>
#include <dnncost/nn/kernels/thread_precision.hpp>
#include <dnncost/nn/loss/losses.hpp>
#include <dnncost/nn/perfsage_model.hpp>
#include <dnncost/optim/optimizer.hpp>
#include <dnncost/train/epoch_loop.hpp>
#include <dnncost/train/metrics.hpp>

namespace dnncost::estimators {

/// Training recipe of the perfsage preset.
struct PerfSageRecipe {
    float lr = 1e-3f;
    int batch_size = 16;
    int max_epochs = 200;
    int patience = 30;
    float plateau_factor = 0.5f;
    int plateau_patience = 10;
    float alpha = 10.0f;  ///< MAPE + alpha RMSE
};

/// One graph as PerfSAGE reads it: standardised node features, edges and operator-kind ids.
struct PerfSageGraph {
    features::EncodedGraph x;
    std::vector<int> types;
};

/// The perfsage preset's own options (registry.hpp sets them from a preset's settings).
struct PerfSageOptions {
    /// GEMM arithmetic of the fit and later predictions; unset: nn::kernels::default_precision().
    std::optional<nn::Precision> precision{};
};

class PerfSageEstimator final : public Estimator, public MultiTarget, public GemmPrecision, public OperatorVocabulary {
public:
    static constexpr std::string_view kind = "perfsage";
    static constexpr int node_features = 16;  ///< 9 attributes, 4 output dims, 3 memory features
    nn::PerfSageShape shape{};
    PerfSageRecipe recipe{};

    std::string preset() const override { return std::string(kind); }
    std::vector<std::string> vocabulary() const override { return m_types; }
    int max_targets() const override { return 16; }
    std::vector<std::string> target_names() const override { return m_names; }
    void set_precision(nn::Precision p) override { m_precision = p; }
    std::optional<nn::Precision> precision() const override { return m_precision; }
    void set_options(const PerfSageOptions& o) { m_options = o; }
    const PerfSageOptions& options() const { return m_options; }

    /// Raw node features of g (before standardisation), node_features per node, row-major.
    static std::vector<double> raw_node_features(const graph::Graph& g);

    /// Encode graphs with the fitted standardisation and type vocabulary.
    std::vector<PerfSageGraph> encode(std::span<const graph::Graph* const> graphs, ThreadPool* pool = nullptr) const;

    FitResult fit(const train::TrainData& train, const train::TrainData& validation, const FitOptions& o) override {
        train::MultiTrainData t{train.graphs, {train.targets}, {"target"}, train.keep_alive};
        train::MultiTrainData v{validation.graphs, {validation.targets}, {"target"}, validation.keep_alive};
        if (validation.size() == 0) v.targets.clear();
        return fit_targets(t, v, o);
    }

    FitResult fit_targets(const train::MultiTrainData& train, const train::MultiTrainData& validation,
                          const FitOptions& o) override;

    /// Predictions [target][graph] of encoded graphs, in the targets' units.
    std::vector<std::vector<double>> predict_encoded(const std::vector<PerfSageGraph>& x, ThreadPool* pool) const;
    /// Predictions of every target, unchecked (estimators::predict_targets checks them).
    std::vector<std::vector<double>> compute_targets(std::span<const graph::Graph* const> graphs) const override {
        ThreadPool pool(m_threads);
        return predict_encoded(encode(graphs, &pool), &pool);
    }

    double target_scale(std::size_t k) const override { return k < m_target_scale.size() ? m_target_scale[k] : 0.0; }

protected:
    double cost_scale() const override { return target_scale(0); }
    /// The first target's predictions.
    std::vector<Prediction> compute(std::span<const graph::Graph* const> graphs) const override {
        const auto p = compute_targets(graphs);
        std::vector<Prediction> out;
        for (double v : p.at(0)) out.push_back({v, 0.0});
        return out;
    }

public:
    std::string serialize() const override;
    /// Inverse of serialize(). @throws parse_error naming `source`
    static std::unique_ptr<PerfSageEstimator> deserialize(std::string_view bytes, std::string_view source);

private:
    static std::uint64_t config_hash(const nn::PerfSageShape& s, const PerfSageRecipe& t) {
        return io::fnv1a64(dnncost::concat("perfsage;emb=", s.embedding, ";width=", s.width, ";depth=", s.depth,
                                                   ";head=", s.head_layers, "/", s.head_width, ";lr=", t.lr,
                                                   ";batch=", t.batch_size, ";alpha=", t.alpha));
    }
    /// Operator-kind vocabulary and feature standardisation from the training graphs.
    void prepare(std::span<const graph::Graph* const> graphs);
    int type_id(const std::string& kind) const {
        const auto it = std::lower_bound(m_types.begin(), m_types.end(), kind);
        if (it != m_types.end() && *it == kind) return static_cast<int>(it - m_types.begin());
        return std::max<int>(1, static_cast<int>(m_types.size()));  // unknown: TypedInput's mean slot
    }
    void build_batch(const std::vector<PerfSageGraph>& x, const std::vector<std::size_t>& items) const;

    std::vector<std::string> m_types, m_names;
    std::vector<double> m_target_scale, m_mean, m_scale;
    PerfSageOptions m_options;
    nn::Precision m_precision = nn::Precision::fp32;
    unsigned m_threads = 1;
    std::unique_ptr<nn::PerfSageModel<float>> m_model;
    // per-batch buffers; mutable because const predictions fill them too
    mutable features::GraphBatch<float> m_batch;
    mutable std::vector<const features::EncodedGraph*> m_ptrs;
    mutable std::vector<int> m_batch_types;
    Mat<float> m_y, m_dpred;
};

namespace detail {
#if DNNCOST_HEADER_ONLY  // a program of the compiled mode takes these entries from the library
inline RegistryEntry perfsage_entry() {
    return entry_of<PerfSageEstimator>(
        [](PerfSageEstimator& e, const PresetSettings& s) { e.set_options({precision_setting(s)}); },
        "PerfSAGE: per-operator-type input transform, 8 GraphSAGE (sum) layers, max readout, 4 FC "
        "layers of 1024; several targets at once (MAPE + 10 RMSE)",
        {precision_option});
}
#endif

#if !defined(DNNCOST_COMPILED)
/// The "perfsage" preset, registered by including this header (see preset_registry.hpp; the
/// compiled library registers it itself).
inline const bool perfsage_registered = [] {
    register_estimator(std::string(PerfSageEstimator::kind), perfsage_entry());
    return true;
}();
#endif
}  // namespace detail

}  // namespace dnncost::estimators

#if !defined(DNNCOST_COMPILED)
#include <dnncost/estimators/perfsage_impl.hpp>
#endif
