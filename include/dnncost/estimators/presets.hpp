#pragma once
/// @file presets.hpp
/// Published GNN estimators as compile-time configurations, with the preset names their models
/// are saved under ("hifisage", "brpnas"): `HiFiSage est;` is a GnnEstimator<hifi_sage>.
#include <memory>
#include <string>
#include <string_view>

#include <dnncost/estimators/gnn_estimator.hpp>
#include <dnncost/estimators/preset_registry.hpp>
#include <dnncost/features/batch.hpp>
#include <dnncost/nn/config.hpp>

namespace dnncost::estimators {

/// HiFi-SAGE: operator graph with one-hot operator types, scaled attributes and random-walk
/// positional encoding (self-loops on input nodes); 7 GraphSAGE layers (mean) of width 128
/// with residual connections and dropout 0.06; LCM readout (projection to width 32 first);
/// latency MLP head of 4 layers, width 256; pairwise ranking head (2 layers, dropout 0.01)
/// whose BCE loss is weighted 1.5 and added to a Huber loss on the latency; Adam, lr 1e-3,
/// batch 8, ReduceLROnPlateau x0.5 after 10 epochs, at most 300 epochs, early stopping after
/// 50; labels scaled by a power of ten. dnncost's changes, all because latency is close to a
/// sum of per-operator costs:
/// - the readout concatenates a sum readout to the LCM one (Readout::lcm_sum, the sum scaled by
///   1 / mean training graph size), which expresses a sum over hundreds of nodes directly;
/// - the additive path: prediction = head(readout) + w . (per-operator-type aggregates) + b,
///   with (w, b) warm-started by ridge regression on the training set and the head's last layer
///   initialised at zero, so training starts from an additive cost model and the untrained
///   network is a candidate of the model selection;
/// - compiler-view node features (graph/analysis.hpp: constant, identity-like, dead, and the
///   node's type and attributes again if a graph compiler keeps it), so that the cost on a
///   runtime that prunes dead branches is additive in what is kept.
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
    .head = {.layers = 4, .width = 256, .dropout = 0.0f, .additive_path = true},
    .ranking = {.layers = 2, .width = 256, .dropout = 0.01f, .weight = 1.5f},
    .features = {.rw_steps = 8, .self_loops_on_inputs = true, .drop_output_nodes = false, .compiler_view = true},
    .train = {.lr = 1e-3f,
              .batch_size = 8,
              .plateau_factor = 0.5f,
              .plateau_patience = 10,
              .max_epochs = 300,
              .patience = 50,
              .loss = nn::LossKind::huber,
              .loss_param = 1.0f,
              .pow10_labels = true}};

/// BRP-NAS: 4 GCN layers of width 600, global mean pooling, one linear output, the same
/// training loop, no ranking head; it gets the same compiler-view node features.
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
    .train = {.lr = 1e-3f,
              .batch_size = 8,
              .plateau_factor = 0.5f,
              .plateau_patience = 10,
              .max_epochs = 300,
              .patience = 50,
              .loss = nn::LossKind::huber,
              .loss_param = 1.0f,
              .pow10_labels = true}};

template <>
inline constexpr std::string_view preset_name<hifi_sage> = "hifisage";
template <>
inline constexpr std::string_view preset_name<brp_nas> = "brpnas";
template <>
inline constexpr std::string_view preset_type_name<hifi_sage> = "HiFiSage";
template <>
inline constexpr std::string_view preset_type_name<brp_nas> = "BrpNas";

using HiFiSage = GnnEstimator<hifi_sage>;
using BrpNas = GnnEstimator<brp_nas>;

namespace detail {
inline const PresetOption keep_option{
    "keep",
    "Model selection: auto (the trained network only if it beats the untrained one out of bag) | trained (the best "
    "validation epoch) | untrained (the initial network: its additive path, if any)",
    {"auto", "trained", "untrained"}};

template <class Gnn>
RegistryEntry gnn_entry(std::string_view name, std::string description) {
    const std::string preset(name);
    return {[preset](const PresetSettings& s) {
                auto e = std::make_unique<Gnn>();
                GnnOptions o;
                if (const auto it = s.find("keep"); it != s.end())
                    o.keep = keep_from_string(it->second).value_or(Keep::automatic);
                o.precision = precision_setting(s);
                e->set_options(o);
                return std::unique_ptr<Estimator>(std::move(e));
            },
            [preset](std::string_view b, std::string_view src) {
                return std::unique_ptr<Estimator>(std::make_unique<Gnn>(Gnn::deserialize(b, preset, src)));
            },
            std::move(description),
            {keep_option, precision_option}};
}

#if DNNCOST_HEADER_ONLY  // a program of the compiled mode takes these entries from the library
inline RegistryEntry hifisage_entry() {
    return gnn_entry<HiFiSage>(preset_name<hifi_sage>, "HiFi-SAGE: 7-layer GraphSAGE with LCM readout and a ranking head");
}
inline RegistryEntry brpnas_entry() {
    return gnn_entry<BrpNas>(preset_name<brp_nas>, "BRP-NAS: 4-layer GCN, mean pooling, linear head");
}
#endif

#if !defined(DNNCOST_COMPILED)
/// The "hifisage" and "brpnas" presets, registered by including this header (the compiled library
/// registers them itself).
inline const bool gnn_presets_registered = [] {
    register_estimator(std::string(preset_name<hifi_sage>), hifisage_entry());
    register_estimator(std::string(preset_name<brp_nas>), brpnas_entry());
    return true;
}();
#endif
}  // namespace detail

#if defined(DNNCOST_COMPILED)
// Built once, in the compiled library (src/preset_hifisage.cpp, src/preset_brpnas.cpp).
extern template class GnnEstimator<hifi_sage>;
extern template class GnnEstimator<brp_nas>;
#endif

}  // namespace dnncost::estimators
