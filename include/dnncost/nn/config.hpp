#pragma once
/// @file config.hpp
/// Compile-time model configuration. A GnnConfig is a literal class type, usable as a C++20
/// template argument: `GnnEstimator<cfg>` instantiates only the layer kinds cfg names, and
/// `validate()` turns impossible structures into compile errors (static_assert) or, for the
/// run-time path, config_error.
#include <cstdint>
#include <string>

#include <dnncost/core/error.hpp>
#include <dnncost/features/batch.hpp>
#include <dnncost/io/serialize.hpp>
#include <dnncost/nn/activations.hpp>
#include <dnncost/nn/gnn/aggregate.hpp>
#include <dnncost/nn/loss/losses.hpp>

namespace dnncost::nn {

/// Message passing layer kinds.
enum class Conv : int { sage, gcn, gin, edge_conv, mr_conv };
/// Graph readouts. lcm_sum concatenates the LCM readout with a sum readout so that a sum of
/// per-node contributions (how latency composes) is directly expressible.
enum class Readout : int { sum, mean, max, sum_mean_max, lcm, lcm_sum };

struct HeadConfig {
    int layers = 2;   ///< Linear layers of the regression MLP (1 = a single linear output)
    int width = 128;  ///< hidden width
    float dropout = 0.0f;
    /// The additive path: add a linear model of graph-level features (the estimator's
    /// per-operator-type aggregates) to the prediction, warm-started by ridge regression, so
    /// that the GNN learns a correction to an additive cost model.
    bool additive_path = false;
};
struct RankingConfig {
    int layers = 0;  ///< 0 disables the pairwise ranking head
    int width = 128;
    float dropout = 0.0f;
    float weight = 0.0f;  ///< weight of the pairwise BCE loss
};
struct FeatureConfig {
    int rw_steps = 8;
    bool self_loops_on_inputs = false;
    bool drop_output_nodes = false;
    bool compiler_view = false;  ///< graph-compiler node flags (features/encode.hpp)
};
struct TrainConfig {
    float lr = 1e-3f;
    int batch_size = 8;
    float plateau_factor = 0.5f;
    int plateau_patience = 10;
    int max_epochs = 300;
    int patience = 50;
    LossKind loss = LossKind::huber;
    float loss_param = 1.0f;    ///< huber delta or the alpha of MAPE + alpha RMSE
    bool pow10_labels = true;   ///< divide labels by a power of ten that brings their median near 1
    float weight_decay = 0.0f;  ///< AdamW decoupled decay (0 = plain Adam)
    float clip_norm = 0.0f;     ///< global gradient-norm clip (0 = off)
};

/// The structure and training recipe of a GNN estimator.
struct GnnConfig {
    Conv conv = Conv::sage;
    Aggr aggr = Aggr::mean;  ///< GraphSAGE aggregation
    features::Direction direction = features::Direction::predecessors;
    int depth = 3;
    int width = 128;
    bool residual = true;
    float dropout = 0.0f;
    Act act = Act::relu;
    bool layer_norm = false;
    bool sage_normalize = false;
    Readout readout = Readout::mean;
    int readout_width = 0;  ///< LCM monoid width (0: the layer width)
    HeadConfig head{};
    RankingConfig ranking{};
    FeatureConfig features{};
    TrainConfig train{};
};

/// Empty string if cfg is valid, else what is wrong (usable in constant expressions).
constexpr const char* config_problem(const GnnConfig& c) {
    if (c.depth < 1) return "depth must be >= 1";
    if (c.width < 1) return "width must be >= 1";
    if (!(c.dropout >= 0.0f && c.dropout < 1.0f)) return "dropout must be in [0, 1)";
    if (c.readout_width < 0) return "readout_width must be >= 0";
    if (c.head.layers < 1 || c.head.width < 1) return "head needs >= 1 layer and a positive width";
    if (!(c.head.dropout >= 0.0f && c.head.dropout < 1.0f)) return "head dropout must be in [0, 1)";
    if (c.ranking.layers < 0 || (c.ranking.layers > 0 && c.ranking.width < 1)) return "ranking head: bad layers/width";
    if (!(c.ranking.dropout >= 0.0f && c.ranking.dropout < 1.0f)) return "ranking dropout must be in [0, 1)";
    if (c.ranking.weight < 0.0f) return "ranking weight must be >= 0";
    if (c.features.rw_steps < 0 || c.features.rw_steps > 64) return "rw_steps must be in [0, 64]";
    if (!(c.train.lr > 0.0f)) return "learning rate must be positive";
    if (c.train.batch_size < 1) return "batch_size must be >= 1";
    if (!(c.train.plateau_factor > 0.0f && c.train.plateau_factor < 1.0f)) return "plateau_factor must be in (0, 1)";
    if (c.train.plateau_patience < 0 || c.train.max_epochs < 1 || c.train.patience < 1) return "bad epochs/patience";
    if (!(c.train.loss_param > 0.0f)) return "loss_param must be positive";
    if (c.train.weight_decay < 0.0f || c.train.clip_norm < 0.0f) return "weight_decay and clip_norm must be >= 0";
    return "";
}
constexpr bool config_valid(const GnnConfig& c) { return config_problem(c)[0] == '\0'; }

/// Throws config_error naming the problem (run-time configurations).
inline void validate(const GnnConfig& c) {
    if (!config_valid(c)) raise<config_error>("GnnConfig: ", config_problem(c));
}

/// Canonical text of every field; its hash identifies a configuration in saved files.
inline std::string to_string(const GnnConfig& c) {
    return dnncost::concat(
        "conv=", int(c.conv), ";aggr=", int(c.aggr), ";dir=", int(c.direction), ";depth=", c.depth, ";width=", c.width,
        ";res=", c.residual, ";drop=", c.dropout, ";act=", int(c.act), ";ln=", c.layer_norm, ";norm=", c.sage_normalize,
        ";readout=", int(c.readout), ";rw=", c.readout_width, ";head=", c.head.layers, "/", c.head.width, "/",
        c.head.dropout, "/", c.head.additive_path, ";rank=", c.ranking.layers, "/", c.ranking.width, "/",
        c.ranking.dropout, "/", c.ranking.weight, ";feat=", c.features.rw_steps, "/", c.features.self_loops_on_inputs,
        "/", c.features.drop_output_nodes, "/", c.features.compiler_view, ";train=", c.train.lr, "/",
        c.train.batch_size, "/", c.train.plateau_factor, "/", c.train.plateau_patience, "/", c.train.max_epochs, "/",
        c.train.patience, "/", int(c.train.loss), "/", c.train.loss_param, "/", c.train.pow10_labels, "/",
        c.train.weight_decay, "/", c.train.clip_norm);
}
inline std::uint64_t config_hash(const GnnConfig& c) { return io::fnv1a64(to_string(c)); }

}  // namespace dnncost::nn
