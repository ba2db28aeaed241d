#pragma once
/// @file presets.hpp
/// Published GNN estimators as compile-time configurations, and adapters that expose them
/// through the run-time CostEstimator interface ("hifisage", "brpnas").
///
/// HiFi-SAGE: operator graph with one-hot operator types, scaled attributes and random-walk
/// positional encoding (self-loops on input nodes); 7 GraphSAGE layers (mean) of width 128
/// with residual connections and dropout 0.06; LCM readout (projection to width 32 first); latency MLP head of 4 layers,
/// width 256; pairwise ranking head (2 layers, dropout 0.01) whose BCE loss is weighted 1.5 and
/// added to a Huber loss on the latency; Adam, lr 1e-3, batch 8, ReduceLROnPlateau x0.5 after
/// 10 epochs, at most 300 epochs, early stopping after 50; labels scaled by a power of ten.
/// dnncost's changes, all because latency is close to a sum of per-operator costs (see the
/// README for the measurements):
/// - the readout concatenates a sum readout to the LCM one (Readout::lcm_sum, the sum scaled by
///   1 / mean training graph size): the GRU monoid alone struggles to express a sum over ~200
///   nodes;
/// - an additive path: prediction = head(readout) + w . (sum of input node features) + b, with
///   (w, b) warm-started by ridge regression on the training set and the head's last layer
///   initialised near zero, so training starts from a linear per-operator cost model and the
///   untrained network is the first early-stopping candidate (a GNN that does not beat the
///   ridge on validation data falls back to it);
/// - compiler-view node features (graph/analysis.hpp: constant, identity-like, dead, and the
///   node's type and attributes again if a graph compiler keeps it), so that devices whose
///   runtime prunes dead branches (TFLite on pixel3) are additive in what is kept.
///
/// BRP-NAS: 4 GCN layers of width 600, global mean pooling, one linear output, the same
/// training loop, no ranking head; it gets the same compiler-view node features.
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include <dnncost/estimators/estimator.hpp>
#include <dnncost/nn/model.hpp>

namespace dnncost::estimators {

inline constexpr nn::GnnConfig hifi_sage{
    .conv = nn::Conv::sage,
    .aggr = nn::Aggr::mean,
    .direction = features::Direction::predecessors,
    .depth = 7,
    .width = 128,
    .residual = true,
    .dropout = 0.06f,
    .act = nn::Act::relu,
    .readout = nn::Readout::lcm_sum,
    .readout_width = 32,
    .head = {.layers = 4, .width = 256, .dropout = 0.0f, .additive_skip = true},
    .ranking = {.layers = 2, .width = 256, .dropout = 0.01f, .weight = 1.5f},
    .features = {.rw_steps = 8, .self_loops_on_inputs = true, .drop_output_nodes = false, .compiler_view = true},
    .train = {.lr = 1e-3f, .batch_size = 8, .plateau_factor = 0.5f, .plateau_patience = 10, .max_epochs = 300,
              .patience = 50, .loss = nn::LossKind::huber, .loss_param = 1.0f, .pow10_labels = true}};

inline constexpr nn::GnnConfig brp_nas{
    .conv = nn::Conv::gcn,
    .direction = features::Direction::predecessors,
    .depth = 4,
    .width = 600,
    .residual = false,
    .dropout = 0.0f,
    .act = nn::Act::relu,
    .readout = nn::Readout::mean,
    .head = {.layers = 1, .width = 1},
    .ranking = {},
    .features = {.rw_steps = 0, .self_loops_on_inputs = false, .drop_output_nodes = false, .compiler_view = true},
    .train = {.lr = 1e-3f, .batch_size = 8, .plateau_factor = 0.5f, .plateau_patience = 10, .max_epochs = 300,
              .patience = 50, .loss = nn::LossKind::huber, .loss_param = 1.0f, .pow10_labels = true}};

using HiFiSage = nn::Estimator<hifi_sage>;
using BrpNas = nn::Estimator<brp_nas>;

/// A compile-time configured estimator behind the run-time interface.
template <nn::GnnConfig C>
class GnnCostEstimator final : public CostEstimator {
public:
    explicit GnnCostEstimator(std::string preset) : m_preset(std::move(preset)) {}
    std::string preset() const override { return m_preset; }
    FitResult fit(const TrainData& train, const TrainData& validation, const FitOptions& options) override {
        m_threads = options.threads;
        return m_model.fit(train, validation, options);
    }
    std::vector<Prediction> predict(std::span<const graph::Graph* const> graphs) const override {
        const auto mean = m_model.predict(graphs, m_threads);
        std::vector<Prediction> out;
        out.reserve(mean.size());
        for (double m : mean) out.push_back({m, 0.0});
        return out;
    }
    /// Weights, encoder, label scale and optimiser state (a training checkpoint).
    std::string serialize() const override { return m_model.save(m_preset, true); }
    /// @throws parse_error on another preset/configuration, truncation or corruption
    static std::unique_ptr<GnnCostEstimator> deserialize(std::string_view bytes, std::string preset,
                                                         std::string_view source = "<memory>") {
        auto e = std::make_unique<GnnCostEstimator>(std::move(preset));
        e->m_model = nn::Estimator<C>::load(bytes, e->m_preset, source);
        return e;
    }
    nn::Estimator<C>& estimator() { return m_model; }
    void set_precision(nn::Precision p) override { m_model.set_precision(p); }
    std::optional<nn::Precision> precision() const override { return m_model.precision(); }
    std::vector<std::string> vocabulary() const override { return m_model.encoder().vocabulary(); }

private:
    std::string m_preset;
    unsigned m_threads = 0;
    mutable nn::Estimator<C> m_model;  // forward passes reuse internal buffers
};

using HiFiSageEstimator = GnnCostEstimator<hifi_sage>;
using BrpNasEstimator = GnnCostEstimator<brp_nas>;

/// "hifisage" or "brpnas" -> a fresh estimator; nullptr for another name.
inline std::unique_ptr<CostEstimator> make_gnn_estimator(std::string_view name) {
    if (name == "hifisage") return std::make_unique<HiFiSageEstimator>("hifisage");
    if (name == "brpnas") return std::make_unique<BrpNasEstimator>("brpnas");
    return nullptr;
}
/// Load a serialized "hifisage"/"brpnas" model; the preset is read from the container kind.
inline std::unique_ptr<CostEstimator> load_gnn_estimator(std::string_view bytes, std::string_view source = "<memory>") {
    const auto c = io::read_container(bytes, std::nullopt, source);
    if (c.kind == "hifisage") return HiFiSageEstimator::deserialize(bytes, "hifisage", source);
    if (c.kind == "brpnas") return BrpNasEstimator::deserialize(bytes, "brpnas", source);
    raise<parse_error>(source, ": holds a '", c.kind, "' model, not a GNN preset (hifisage, brpnas)");
}

}  // namespace dnncost::estimators
