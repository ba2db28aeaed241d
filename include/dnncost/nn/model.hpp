#pragma once
/// @file model.hpp
/// The GNN estimator: encoder blocks (conv -> [LayerNorm] -> activation -> [dropout], with
/// residual connections), a graph readout, a regression head and an optional pairwise ranking
/// head; plus `Estimator<Config>`, which owns the feature encoder, the label scale and the
/// training loop (Adam/AdamW, ReduceLROnPlateau, early stopping with best-weights restore) and
/// saves everything to a versioned, checksummed container.
///
/// Validation score used for early stopping, the LR schedule and model selection (lower is
/// better): (1 - Spearman rho) + (1 - fraction of items within +-10 %), the two figures an
/// estimator of this kind is judged by (ranking and error-bound accuracy). Not MAPE: a few
/// degenerate architectures have near-zero latency and would dominate a mean of relative
/// errors. Not the median relative error either (an earlier choice): on near-additive CPU
/// latencies (NB201 on gold_6240) training lowered the median error while pushing more items
/// past 10 %, so the score preferred networks that were worse by the error-bound metric.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <memory>
#include <numeric>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <Eigen/Dense>

#include <dnncost/estimators/additive.hpp>
#include <dnncost/estimators/estimator.hpp>
#include <dnncost/features/encode.hpp>
#include <dnncost/nn/config.hpp>
#include <dnncost/nn/gnn/edge_conv.hpp>
#include <dnncost/nn/gnn/gcn.hpp>
#include <dnncost/nn/gnn/gin.hpp>
#include <dnncost/nn/gnn/mr_conv.hpp>
#include <dnncost/nn/gnn/residual.hpp>
#include <dnncost/nn/gnn/sage.hpp>
#include <dnncost/nn/gnn/sage_block.hpp>
#include <dnncost/nn/heads.hpp>
#include <dnncost/nn/layer_norm.hpp>
#include <dnncost/nn/readout/lcm.hpp>
#include <dnncost/nn/readout/pooling.hpp>
#include <dnncost/optim/optimizer.hpp>
#include <dnncost/optim/schedule.hpp>
#include <dnncost/train/metrics.hpp>

namespace dnncost::nn {

namespace build {
/// The message-passing layer of kind K (only K's class is instantiated).
template <class T, Conv K>
ModulePtr<T> conv(const GnnConfig& c, Index in, Index out, Rng& rng) {
    if constexpr (K == Conv::sage)
        return std::make_unique<SageConv<T>>(in, out, rng, c.aggr, c.direction, true, c.sage_normalize);
    else if constexpr (K == Conv::gcn)
        return std::make_unique<GcnConv<T>>(in, out, rng, c.direction);
    else if constexpr (K == Conv::gin)
        return std::make_unique<GinConv<T>>(in, std::vector<Index>{out, out}, rng, c.direction, c.act);
    else if constexpr (K == Conv::edge_conv)
        return std::make_unique<EdgeConv<T>>(in, out, rng, c.direction);
    else
        return std::make_unique<MrConv<T>>(in, out, rng, c.direction);
}
template <class T>
ModulePtr<T> conv_runtime(const GnnConfig& c, Index in, Index out, Rng& rng) {
    switch (c.conv) {
        case Conv::sage: return conv<T, Conv::sage>(c, in, out, rng);
        case Conv::gcn: return conv<T, Conv::gcn>(c, in, out, rng);
        case Conv::gin: return conv<T, Conv::gin>(c, in, out, rng);
        case Conv::edge_conv: return conv<T, Conv::edge_conv>(c, in, out, rng);
        case Conv::mr_conv: return conv<T, Conv::mr_conv>(c, in, out, rng);
    }
    raise<config_error>("GnnConfig: unknown conv kind ", int(c.conv));
}
template <class T, Readout R>
ModulePtr<T> readout(const GnnConfig& c, Index in, Rng& rng, double sum_scale = 1.0) {
    const Index lw = c.readout_width > 0 ? c.readout_width : in;
    if constexpr (R == Readout::sum) return std::make_unique<Pooling<T>>(pool_sum, sum_scale);
    else if constexpr (R == Readout::mean) return std::make_unique<Pooling<T>>(pool_mean);
    else if constexpr (R == Readout::max) return std::make_unique<Pooling<T>>(pool_max);
    else if constexpr (R == Readout::sum_mean_max) return std::make_unique<Pooling<T>>(pool_sum | pool_mean | pool_max, sum_scale);
    else if constexpr (R == Readout::lcm) return std::make_unique<LcmReadout<T>>(in, lw, rng, true);
    else {
        auto cat = std::make_unique<ConcatReadout<T>>();
        cat->add(std::make_unique<LcmReadout<T>>(in, lw, rng, true));
        cat->add(std::make_unique<Pooling<T>>(pool_sum, sum_scale));
        return cat;
    }
}
template <class T>
ModulePtr<T> readout_runtime(const GnnConfig& c, Index in, Rng& rng, double sum_scale = 1.0) {
    switch (c.readout) {
        case Readout::sum: return readout<T, Readout::sum>(c, in, rng, sum_scale);
        case Readout::mean: return readout<T, Readout::mean>(c, in, rng, sum_scale);
        case Readout::max: return readout<T, Readout::max>(c, in, rng, sum_scale);
        case Readout::sum_mean_max: return readout<T, Readout::sum_mean_max>(c, in, rng, sum_scale);
        case Readout::lcm: return readout<T, Readout::lcm>(c, in, rng, sum_scale);
        case Readout::lcm_sum: return readout<T, Readout::lcm_sum>(c, in, rng, sum_scale);
    }
    raise<config_error>("GnnConfig: unknown readout ", int(c.readout));
}
}  // namespace build

/// The network of a GnnConfig: node features -> one prediction per graph (+ ranking logits).
template <class T>
class GnnModel {
public:
    /// Build with factories for the conv and readout (compile-time or run-time choice).
    template <class ConvF, class ReadoutF>
    /// @param sum_scale factor of sum readouts (the Estimator uses 1 / mean training graph size)
    /// @param graph_features width of the batch's graph-level features, inputs of the additive path
    GnnModel(const GnnConfig& c, Index in_features, Rng& rng, ConvF&& make_conv, ReadoutF&& make_readout,
             double sum_scale = 1.0, Index graph_features = 0) {
        validate(c);
        if (in_features < 1) raise<config_error>("GnnModel: input feature width must be positive, got ", in_features);
        Index w = in_features;
        for (int d = 0; d < c.depth; ++d) {
            if (fusable_sage_block(c, w)) {  // same maths, parameters and initialisation, fewer passes
                m_encoder.add(std::make_unique<SageResidualBlock<T>>(w, rng, c.aggr, c.direction, c.dropout));
                continue;
            }
            auto block = std::make_unique<Sequential<T>>();
            block->add(make_conv(c, w, static_cast<Index>(c.width), rng));
            if (c.layer_norm) block->add(std::make_unique<LayerNorm<T>>(c.width));
            block->add(make_activation<T>(c.act));
            if (c.dropout > 0) block->add(std::make_unique<Dropout<T>>(c.dropout));
            if (c.residual) m_encoder.add(std::make_unique<Residual<T>>(std::move(block), w, rng));
            else m_encoder.add(std::move(block));
            w = c.width;
        }
        m_readout = make_readout(c, w, rng, sum_scale);
        const Index e = m_readout->output_width(w);
        m_head = make_regression_head<T>(e, c.head.layers, c.head.width, 1, c.act, c.head.dropout, rng);
        if (graph_features < 0) raise<config_error>("GnnModel: negative graph-level feature width ", graph_features);
        if (graph_features > 0 && !c.head.additive_skip)
            raise<config_error>("GnnModel: graph-level features feed the additive path, which this configuration lacks");
        if (c.head.additive_skip) {
            m_skip_scale = sum_scale;
            m_graph_features = graph_features;
            m_skip_w = Parameter<T>("skip.weight", graph_features > 0 ? graph_features : in_features, 1);
            m_skip_b = Parameter<T>("skip.bias", 1, 1);
            // The head's last layer starts at zero, so that the untrained prediction is exactly
            // the additive path (warm-started by Estimator::fit) and the GNN learns a
            // correction to it (its gradient reaches the hidden layers from the first step on).
            std::vector<Parameter<T>*> hp;
            m_head->collect_parameters(hp);
            for (std::size_t k = hp.size() >= 2 ? hp.size() - 2 : 0; k < hp.size(); ++k) hp[k]->value.setZero();
            if (hp.size() >= 2) {
                m_out_w = hp[hp.size() - 2];
                m_out_b = hp[hp.size() - 1];
            }
        }
        if (c.ranking.layers > 0)
            m_rank = std::make_unique<PairwiseRankingHead<T>>(e, c.ranking.layers, c.ranking.width, c.ranking.dropout, rng, c.act);
        m_in = in_features;
    }
    /// Run-time configured model (the CLI path): every layer kind is compiled in.
    GnnModel(const GnnConfig& c, Index in_features, Rng& rng, double sum_scale = 1.0, Index graph_features = 0)
        : GnnModel(c, in_features, rng, build::conv_runtime<T>, build::readout_runtime<T>, sum_scale, graph_features) {}

    /// Predictions (graphs x 1) for ctx.batch; in training also the ranking logits.
    const Mat<T>& forward(const Context<T>& ctx) {
        const auto& b = ctx.graphs("GnnModel");
        detail::check_width<T>("GnnModel", m_in, b.x.cols());
        m_emb = &embed(ctx);
        const Mat<T>& p = m_head->forward(*m_emb, ctx);
        m_logits = (m_rank && ctx.training) ? &m_rank->forward(*m_emb, ctx) : nullptr;
        if (!has_skip()) return p;
        skip_inputs(b, m_skip_in);
        additive(m_skip_in) += p;
        return m_pred;
    }
    bool has_skip() const { return m_skip_w.value.size() > 0; }
    /// True when the network adds nothing to any prediction: the additive path reads graph-level
    /// features and the regression head's last layer (weights and bias) is all zero, as before
    /// training and whenever Estimator::fit keeps the untrained network. forward() then returns
    /// what forward_additive() computes (the head's zero output added to it changes no bit), and
    /// the Estimator predicts with the latter, without running the network.
    bool network_is_zero() const {
        return has_skip() && m_graph_features > 0 && m_out_w && m_out_b && m_out_w->value.isZero(0) && m_out_b->value.isZero(0);
    }
    /// The additive path alone for graph-level features gx (graphs x graph_features): the same
    /// products, in the same order, as forward() computes for a batch with those features.
    /// @throws shape_error on a width other than graph_features()
    const Mat<T>& forward_additive(const Mat<T>& gx) {
        if (!has_skip() || gx.cols() != m_graph_features)
            raise<shape_error>("GnnModel: ", gx.cols(), " graph-level features given, the additive path reads ", m_graph_features);
        return additive(gx);
    }
    /// Inputs of the additive path, one row per graph: the batch's graph-level features when the
    /// model was built with some (the Estimator's per-operator-type aggregates), else the sum of
    /// the graph's node features x (1 / mean training graph size).
    template <class B>
    void skip_inputs(const B& b, Mat<T>& out) const {
        if (b.graph_x.cols() != m_graph_features)
            raise<shape_error>("GnnModel: the batch has ", b.graph_x.cols(), " graph-level features, the additive path reads ",
                               m_graph_features);
        if (m_graph_features > 0) {
            out = b.graph_x;
            return;
        }
        out.setZero(b.num_graphs(), b.x.cols());
        for (int g = 0; g < b.num_graphs(); ++g)
            out.row(g) = b.x.middleRows(b.offset(g), b.graph_size(g)).colwise().sum() * static_cast<T>(m_skip_scale);
    }
    Index graph_features() const { return m_graph_features; }
    /// Set the additive path (e.g. to a ridge solution): weight per input feature and bias.
    void set_skip(const std::vector<double>& w, double bias) {
        if (!has_skip() || static_cast<Index>(w.size()) != m_skip_w.value.rows())
            raise<config_error>("GnnModel::set_skip: the model has no additive path of width ", w.size());
        for (std::size_t j = 0; j < w.size(); ++j) m_skip_w.value(static_cast<Index>(j), 0) = static_cast<T>(w[j]);
        m_skip_b.value(0, 0) = static_cast<T>(bias);
    }
    double skip_scale() const { return m_skip_scale; }
    const Mat<T>* rank_logits() const { return m_logits; }
    bool has_ranking_head() const { return m_rank != nullptr; }
    /// Backward from dLoss/dprediction and (if the ranking head ran) dLoss/dlogits.
    void backward(const Mat<T>& dpred, const Mat<T>* dlogits, const Context<T>& ctx) {
        if (has_skip()) {
            m_skip_w.grad.noalias() += m_skip_in.transpose() * dpred;
            m_skip_b.grad(0, 0) += dpred.sum();
        }
        m_demb = m_head->backward(dpred, ctx);
        if (dlogits && m_rank) m_demb += m_rank->backward(*dlogits, ctx);
        embed_backward(m_demb, ctx);
    }
    std::vector<Parameter<T>*> parameters() {
        std::vector<Parameter<T>*> p;
        m_encoder.collect_parameters(p);
        m_readout->collect_parameters(p);
        m_head->collect_parameters(p);
        if (m_rank) m_rank->collect_parameters(p);
        if (has_skip()) {
            p.push_back(&m_skip_w);
            p.push_back(&m_skip_b);
        }
        return p;
    }
    Index input_width() const { return m_in; }
    /// The parameters an optimiser updates: all but the additive path, which keeps its
    /// closed-form ridge solution (set_skip). Adam's per-weight steps of ~lr would shift a
    /// standardised linear model by several per cent per step and undo the warm start, so the
    /// network learns a correction to a fixed additive cost model instead (its gradients are
    /// still computed, e.g. for gradient checks).
    std::vector<Parameter<T>*> trainable_parameters() {
        auto p = parameters();
        if (has_skip()) p.resize(p.size() - 2);  // skip.weight and skip.bias come last
        return p;
    }

    /// Graph embeddings (graphs x readout width) of ctx.batch: the encoder, then the readout.
    /// Data parallelism: with replicas and a pool of >= 2 threads the batch's graphs are cut
    /// into one contiguous shard per thread (balanced by node count); shard 0 runs on this
    /// model and shard s on replica s - 1, each single-threaded on its own buffers, with a
    /// dropout stream seeded serially from ctx.rng. Every layer before the readout is per graph,
    /// so sharding changes nothing but the dropout draws; results depend on the thread count
    /// only, never on timing.
    const Mat<T>& embed(const Context<T>& ctx) {
        const auto& b = ctx.graphs("GnnModel");
        m_nshards = shard_count(ctx, b);
        if (m_nshards <= 1) return m_readout->forward(m_encoder.forward(b.x, ctx), ctx);
        sync_replicas(false);
        const int g = b.num_graphs();
        m_bounds.assign(m_nshards + 1, 0);
        m_bounds[m_nshards] = g;
        for (std::size_t s = 1; s < m_nshards; ++s) {
            const double target = static_cast<double>(b.num_nodes()) * static_cast<double>(s) / static_cast<double>(m_nshards);
            int k = m_bounds[s - 1] + 1;
            while (k < g - static_cast<int>(m_nshards - s) && b.offset(k) < target) ++k;
            m_bounds[s] = k;
        }
        if (m_shard.size() < m_nshards) m_shard.resize(m_nshards);
        for (std::size_t s = 0; s < m_nshards; ++s)
            if (ctx.rng) m_shard[s].rng = Rng(ctx.rng->split());
        const Precision prec = kernels::precision();  // the pool threads run at the caller's precision
        ctx.pool->parallel_for(0, m_nshards, [&](std::size_t s) {
            const kernels::PrecisionScope scope(prec);
            GnnModel& m = s == 0 ? *this : *m_replicas[s - 1];
            Shard& sh = m_shard[s];
            sh.batch.slice(b, m_bounds[s], m_bounds[s + 1]);
            sh.ctx = Context<T>{&sh.batch, ctx.training, ctx.rng ? &sh.rng : nullptr, nullptr, ctx.no_grad};
            sh.emb = &m.m_readout->forward(m.m_encoder.forward(sh.batch.x, sh.ctx), sh.ctx);
        });
        m_emb_all.resize(g, m_shard[0].emb->cols());
        for (std::size_t s = 0; s < m_nshards; ++s) m_emb_all.middleRows(m_bounds[s], m_bounds[s + 1] - m_bounds[s]) = *m_shard[s].emb;
        return m_emb_all;
    }
    /// Backward of embed(): adds the encoder's and readout's parameter gradients; the replicas'
    /// gradients are summed into this model's in shard order (a fixed reduction).
    void embed_backward(const Mat<T>& demb, const Context<T>& ctx) {
        if (m_nshards <= 1) {
            m_encoder.backward(m_readout->backward(demb, ctx), ctx);
            return;
        }
        const Precision prec = kernels::precision();
        ctx.pool->parallel_for(0, m_nshards, [&](std::size_t s) {
            const kernels::PrecisionScope scope(prec);
            GnnModel& m = s == 0 ? *this : *m_replicas[s - 1];
            Shard& sh = m_shard[s];
            if (s > 0)
                for (auto* p : m_replica_trunk[s - 1]) p->grad.setZero();
            sh.demb = demb.middleRows(m_bounds[s], m_bounds[s + 1] - m_bounds[s]);
            m.m_encoder.backward(m.m_readout->backward(sh.demb, sh.ctx), sh.ctx);
        });
        for (std::size_t s = 1; s < m_nshards; ++s)
            for (std::size_t i = 0; i < m_trunk.size(); ++i) m_trunk[i]->grad += m_replica_trunk[s - 1][i]->grad;
    }
    /// Give this model structurally identical copies (own buffers, own parameters) for data
    /// parallelism; their weights are overwritten from this model before every use.
    void set_replicas(std::vector<std::unique_ptr<GnnModel>> replicas) {
        m_trunk.clear();
        m_encoder.collect_parameters(m_trunk);
        m_readout->collect_parameters(m_trunk);
        const auto mine = parameters();
        m_replica_trunk.clear();
        m_replica_all.clear();
        for (auto& r : replicas) {
            auto all = r->parameters();
            if (all.size() != mine.size()) raise<config_error>("GnnModel::set_replicas: a replica has another structure");
            for (std::size_t i = 0; i < all.size(); ++i)
                if (all[i]->value.rows() != mine[i]->value.rows() || all[i]->value.cols() != mine[i]->value.cols())
                    raise<config_error>("GnnModel::set_replicas: parameter ", i, " of a replica has another shape");
            m_replica_trunk.emplace_back(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(m_trunk.size()));
            m_replica_all.push_back(std::move(all));
        }
        m_replicas = std::move(replicas);
    }
    std::size_t replica_count() const { return m_replicas.size(); }
    GnnModel& replica(std::size_t i) { return *m_replicas.at(i); }
    /// Copy this model's weights into the replicas (only the encoder's and readout's unless whole).
    void sync_replicas(bool whole) {
        const auto mine = parameters();
        for (std::size_t r = 0; r < m_replicas.size(); ++r) {
            const std::size_t n = whole ? mine.size() : m_trunk.size();
            for (std::size_t i = 0; i < n; ++i) m_replica_all[r][i]->value = mine[i]->value;
        }
    }
    std::string describe() const {
        return m_encoder.kind() + " -> " + m_readout->kind() + " -> " + m_head->kind() +
               (has_skip() ? " + additive path" : "") + (m_rank ? " + " + m_rank->kind() : std::string());
    }

private:
    Index m_in = 0;
    Sequential<T> m_encoder;
    ModulePtr<T> m_readout;
    std::unique_ptr<Sequential<T>> m_head;
    std::unique_ptr<PairwiseRankingHead<T>> m_rank;
    /// m_pred = the additive path for its inputs (skip_inputs), one row per graph.
    Mat<T>& additive(const Mat<T>& in) {
        m_pred.noalias() = in * m_skip_w.value;
        m_pred.array() += m_skip_b.value(0, 0);
        return m_pred;
    }
    /// Residual(SageConv -> ReLU -> Dropout) with equal widths runs as one fused module.
    static bool fusable_sage_block(const GnnConfig& c, Index in) {
        return c.conv == Conv::sage && c.residual && c.act == Act::relu && !c.layer_norm && !c.sage_normalize &&
               c.aggr != Aggr::max && in == static_cast<Index>(c.width);
    }
    // data parallelism (embed / embed_backward)
    struct Shard {
        features::GraphBatch<T> batch;
        Context<T> ctx;
        Rng rng;
        const Mat<T>* emb = nullptr;
        Mat<T> demb;
    };
    std::size_t shard_count(const Context<T>& ctx, const features::GraphBatch<T>& b) const {
        if (!ctx.pool || ctx.pool->size() < 2 || m_replicas.empty()) return 1;
        return std::min({ctx.pool->size(), m_replicas.size() + 1, static_cast<std::size_t>(b.num_graphs())});
    }
    std::vector<std::unique_ptr<GnnModel>> m_replicas;
    std::vector<Parameter<T>*> m_trunk;
    std::vector<std::vector<Parameter<T>*>> m_replica_trunk, m_replica_all;
    std::vector<Shard> m_shard;
    std::vector<int> m_bounds;
    std::size_t m_nshards = 1;
    Mat<T> m_emb_all;
    const Mat<T>* m_emb = nullptr;
    const Mat<T>* m_logits = nullptr;
    Mat<T> m_demb;
    // additive path: prediction += inputs . w + b, inputs = the batch's graph-level features, or
    // without them the sum of node features x m_skip_scale (skip_inputs)
    double m_skip_scale = 1.0;
    Index m_graph_features = 0;
    Parameter<T> m_skip_w, m_skip_b;
    Mat<T> m_skip_in, m_pred;
    const Parameter<T>* m_out_w = nullptr;  ///< the regression head's last layer (zero-initialised with an additive path)
    const Parameter<T>* m_out_b = nullptr;
};

/// An Eigen vector as a std::vector (the metrics take std::vector).
inline std::vector<double> to_std_vector(const Eigen::VectorXd& v) { return std::vector<double>(v.data(), v.data() + v.size()); }

/// The validation score (lower is better) documented at the top of this file.
inline double validation_score(const std::vector<double>& pred, const std::vector<double>& y) {
    const double rho = train::spearman(pred, y);  // NaN when either side is constant: no rank information
    return (1.0 - (std::isnan(rho) ? 0.0 : rho)) + (1.0 - train::error_bound_accuracy(pred, y, 0.10));
}

/// How much better (lower) the validation score of the trained network is than that of the
/// untrained one, and the standard error of that difference (selection_improvement).
struct Improvement {
    double mean = 0.0;  ///< score(untrained) - score(trained)
    double se = 0.0;    ///< its standard error
};

/// The share of the removed operators' cost that a device does not pay, estimated from labelled
/// networks and the additive baseline's predictions. s_i is what the baseline charges network i
/// for the operators a graph compiler removes (dead branches, identity-like and constant
/// operators: its coefficients times the eager-minus-kept aggregates), u_i = s_i / y_i and r_i =
/// (y_i - baseline_i) / y_i its relative residual. A device that skips those operators leaves the
/// baseline over-predicting by about s_i, so r falls with u at slope -1; one that runs them gives
/// slope 0. The ordinary least-squares slope of r on u (with intercept) is minus the unpaid
/// share; `se` is its usual standard error. The share is the part of the effect that the
/// baseline's per-type rates cannot absorb: removal that varies within an operator type (dead
/// branches) shows in full, removal of a steady fraction of a type partly becomes a lower rate.
/// So it is near 0 wherever the device pays for the removed operators, and can stay below 1 on
/// one that skips them (tests/test_nn_select.cpp, 200 NB201 networks whose labels cost MACs plus
/// 0.002 per kept operator: 0.89; plus 0.02 per kept operator, overhead-dominated: 0.44). Items below `degenerate` are
/// left out. No verdict (share and se 0, `verdict` false) with fewer than 3 items, when u does
/// not vary (no labelled network has removed operators) or when a value is not finite.
/// The warm start uses the compiler-kept aggregates only where share - 2 se > 1/2: a size of
/// effect, not significance alone, because on GPUs the removed operators' cost is measurably
/// but negligibly off (README, Presets, change 2).
struct UnpaidShare {
    double share = 0.0;
    double se = 0.0;
    std::size_t n = 0;     ///< items used
    bool verdict = false;  ///< false: too few items, or u constant
    /// The warm start's rule: the device skips most of what a compiler removes, by two standard errors.
    bool compiled() const { return verdict && share - 2.0 * se > 0.5; }
};
/// @throws shape_error when the three inputs differ in length
inline UnpaidShare unpaid_share(std::span<const double> removed_cost, std::span<const double> predicted,
                                std::span<const double> y, double degenerate) {
    if (removed_cost.size() != y.size() || predicted.size() != y.size())
        raise<shape_error>("unpaid_share: ", removed_cost.size(), " removed costs and ", predicted.size(), " predictions for ",
                           y.size(), " labels");
    std::vector<double> u, r;
    for (std::size_t i = 0; i < y.size(); ++i) {
        if (!(y[i] >= degenerate) || !(y[i] > 0)) continue;
        u.push_back(removed_cost[i] / y[i]);
        r.push_back((y[i] - predicted[i]) / y[i]);
    }
    UnpaidShare out;
    out.n = u.size();
    if (u.size() < 3) return out;
    const double n = static_cast<double>(u.size());
    const double mu = std::accumulate(u.begin(), u.end(), 0.0) / n, mr = std::accumulate(r.begin(), r.end(), 0.0) / n;
    double suu = 0, sur = 0;
    for (std::size_t i = 0; i < u.size(); ++i) {
        suu += (u[i] - mu) * (u[i] - mu);
        sur += (u[i] - mu) * (r[i] - mr);
    }
    if (!(suu > 1e-12 * std::max(1.0, mu * mu) * n) || !std::isfinite(suu) || !std::isfinite(sur)) return out;
    const double slope = sur / suu;
    double sse = 0;
    for (std::size_t i = 0; i < u.size(); ++i) {
        const double e = r[i] - mr - slope * (u[i] - mu);
        sse += e * e;
    }
    out.share = -slope;
    out.se = std::sqrt(sse / (n - 2.0) / suu);
    out.verdict = std::isfinite(out.share) && std::isfinite(out.se);
    return out;
}

/// Out-of-bag estimate of what training buys over the untrained network, selection included.
/// Picking the best of a few hundred epochs on ~100 validation items is biased: on a device
/// whose cost is additive the "best" epoch mostly fits validation noise and is worse on new
/// data than the additive warm start. So the whole selection is bootstrapped: per resample the
/// best epoch is chosen on the in-bag items, and its score is compared with the untrained
/// network's on the out-of-bag items (~37 %), which played no part in the choice. fit() keeps
/// the trained network only if the mean out-of-bag improvement exceeds its standard error (the
/// spread of the improvement over resamples): the one-standard-error rule, prefer the simpler
/// model unless the evidence is clear.
/// @param epochs validation predictions of every epoch
inline Improvement selection_improvement(const std::vector<double>& untrained, const std::vector<std::vector<double>>& epochs,
                                         const std::vector<double>& y, std::uint64_t seed, int resamples = 200) {
    Improvement r;
    const std::size_t n = y.size();
    if (epochs.empty() || n < 10) return r;
    Rng rng(seed ^ 0x6f6f6262ULL);
    std::vector<std::size_t> count(n);
    std::vector<double> a, b, t;
    double s = 0, s2 = 0;
    int used = 0;
    for (int k = 0; k < resamples; ++k) {
        std::fill(count.begin(), count.end(), 0);
        for (std::size_t i = 0; i < n; ++i) ++count[static_cast<std::size_t>(rng.below(n))];
        const auto subset = [&](const std::vector<double>& p, bool in_bag, std::vector<double>& out, std::vector<double>& truth) {
            out.clear();
            truth.clear();
            for (std::size_t i = 0; i < n; ++i)
                for (std::size_t c = 0; c < (in_bag ? count[i] : (count[i] == 0 ? 1u : 0u)); ++c) {
                    out.push_back(p[i]);
                    truth.push_back(y[i]);
                }
        };
        std::size_t best = 0;
        double best_score = std::numeric_limits<double>::infinity();
        for (std::size_t e = 0; e < epochs.size(); ++e) {
            subset(epochs[e], true, a, t);
            const double sc = validation_score(a, t);
            if (sc < best_score) {
                best_score = sc;
                best = e;
            }
        }
        subset(untrained, false, a, t);
        if (a.size() < 5) continue;
        const double su = validation_score(a, t);
        subset(epochs[best], false, b, t);
        const double d = su - validation_score(b, t);
        s += d;
        s2 += d * d;
        ++used;
    }
    if (used == 0) return r;
    r.mean = s / used;
    r.se = std::sqrt(std::max(0.0, s2 / used - r.mean * r.mean));
    return r;
}

/// A compile-time configured GNN cost estimator (float weights).
template <GnnConfig C>
class Estimator {
    static_assert(C.depth >= 1, "GnnConfig: depth must be >= 1");
    static_assert(C.width >= 1, "GnnConfig: width must be >= 1");
    static_assert(C.dropout >= 0.0f && C.dropout < 1.0f, "GnnConfig: dropout must be in [0, 1)");
    static_assert(C.head.layers >= 1, "GnnConfig: the regression head needs at least one layer");
    static_assert(C.ranking.layers == 0 || C.ranking.weight > 0.0f, "GnnConfig: a ranking head needs a positive loss weight");
    static_assert(config_valid(C), "GnnConfig: invalid configuration (see nn::config_problem)");

public:
    using Scalar = float;
    static constexpr GnnConfig config = C;
    static std::uint64_t config_hash() { return nn::config_hash(C); }

    Estimator() : m_encoder(encode_options()) {}

    static features::EncodeOptions encode_options() {
        features::EncodeOptions o;
        o.rw_steps = C.features.rw_steps;
        o.self_loops_on_inputs = C.features.self_loops_on_inputs;
        o.drop_output_nodes = C.features.drop_output_nodes;
        o.compiler_view = C.features.compiler_view;
        return o;
    }

    bool trained() const { return m_model != nullptr; }
    /// GEMM arithmetic of training and prediction, saved with the model (bf16 runs on the AMX
    /// tile unit or with AVX512-BF16 when the CPU has either and is emulated otherwise; see
    /// nn/bf16.hpp).
    void set_precision(Precision p) { m_precision = p; }
    Precision precision() const { return m_precision; }
    const features::FeatureEncoder& encoder() const { return m_encoder; }
    GnnModel<float>& model() {
        if (!m_model) raise<config_error>("Estimator: not trained");
        return *m_model;
    }
    double label_scale() const { return m_scale; }
    /// The last warm start's test of the compiler-kept aggregates (unpaid_share), if it made one.
    const std::optional<UnpaidShare>& warm_start_test() const { return m_warm_test; }

    /// Fit the encoder and label scale on `train`, build the network from `seed`.
    void prepare(const estimators::TrainData& train, std::uint64_t seed) {
        check_data(train, "training");
        m_encoder = features::FeatureEncoder(encode_options());
        m_encoder.fit(train.graphs);
        std::vector<double> y = train.targets;
        std::nth_element(y.begin(), y.begin() + static_cast<std::ptrdiff_t>(y.size() / 2), y.end());
        m_scale = C.train.pow10_labels ? std::pow(10.0, std::round(std::log10(std::max(std::abs(y[y.size() / 2]), 1e-30)))) : 1.0;
        double nodes = 0;
        for (const auto* g : train.graphs) nodes += static_cast<double>(g->num_nodes());
        m_sum_scale = train.size() / std::max(nodes, 1.0);
        m_additive = {};
        m_additive.compiled = C.features.compiler_view;
        if constexpr (C.head.additive_skip) m_additive.fit(train.graphs);
        Rng rng(seed);
        m_model = make_model(rng);
        make_optimizer();
    }

    /// Graphs encoded with the fitted encoder: node features, edges and (with an additive path)
    /// the graph-level aggregates. With graph_level_only, the aggregates alone (no node features,
    /// edges or random walks): all that predict_additive() reads, for a model whose network adds
    /// nothing; such graphs keep their node count but no node data, so a batch built from them
    /// (the network's path) is a shape_error.
    std::vector<features::EncodedGraph> encode(std::span<const graph::Graph* const> graphs, ThreadPool* pool = nullptr,
                                               bool graph_level_only = false) const {
        if (graph_level_only && !C.head.additive_skip)
            raise<config_error>("Estimator::encode: graph-level features only, but the model has no additive path");
        std::vector<features::EncodedGraph> out(graphs.size());
        const std::size_t parts = pool ? std::min(pool->size(), graphs.size()) : 1;
        const auto run = [&](std::size_t t) {  // contiguous ranges; each graph encodes independently
            for (std::size_t i = graphs.size() * t / parts; i < graphs.size() * (t + 1) / parts; ++i) {
                if (!graphs[i]) raise<config_error>("Estimator: graph ", i, " passed to predict is null");
                const graph::Graph& g = *graphs[i];
                // per-node costs and analysis once, for the node features and the additive aggregates
                const auto costs = cost::annotate(g);
                const bool analysed = (m_encoder.options().compiler_view && !graph_level_only) ||
                                      (C.head.additive_skip && m_additive.compiled);
                const auto flags = analysed ? graph::analyse(g) : std::vector<graph::NodeAnalysis>{};
                if (graph_level_only) {
                    out[i].num_nodes = static_cast<int>(g.num_nodes());
                    out[i].num_features = m_encoder.num_features();
                } else {
                    out[i] = m_encoder.encode(g, costs, flags);
                }
                if constexpr (C.head.additive_skip) {
                    const auto f = m_additive.transform(g, costs, flags);
                    out[i].graph_x.assign(f.begin(), f.end());
                }
            }
        };
        if (parts > 1) pool->parallel_for(0, parts, run);
        else if (!graphs.empty()) run(0);
        return out;
    }

    /// One pass over the encoded training graphs in shuffled mini-batches; returns the mean loss.
    double train_epoch(const std::vector<features::EncodedGraph>& x, const std::vector<double>& targets, Rng& rng,
                       ThreadPool* pool) {
        if (!m_model) raise<config_error>("Estimator::train_epoch: call prepare() first");
        ensure_replicas(pool);
        const kernels::PrecisionScope scope(m_precision);
        std::vector<std::size_t> order(x.size());
        std::iota(order.begin(), order.end(), 0);
        rng.shuffle(order.begin(), order.end());
        const auto params = m_opt->parameters();
        const std::vector<LossTerm> terms{{C.train.loss, 1.0, C.train.loss_param}};
        double total = 0;
        int steps = 0;
        for (std::size_t s = 0; s < order.size(); s += static_cast<std::size_t>(C.train.batch_size)) {
            const std::size_t e = std::min(order.size(), s + static_cast<std::size_t>(C.train.batch_size));
            m_ptrs.clear();
            m_y.resize(static_cast<Index>(e - s), 1);
            for (std::size_t i = s; i < e; ++i) {
                m_ptrs.push_back(&x[order[i]]);
                m_y(static_cast<Index>(i - s), 0) = static_cast<float>(targets[order[i]] / m_scale);
            }
            m_batch.build(m_ptrs);
            Context<float> ctx{&m_batch, true, &rng, pool};
            m_opt->zero_grad();
            const Mat<float>& p = m_model->forward(ctx);
            float loss = weighted_loss(terms, p, m_y, m_dpred);
            const Mat<float>* dl = nullptr;
            if (const auto* logits = m_model->rank_logits(); logits && logits->rows() > 0) {
                const Mat<float> labels = pairwise_labels(m_y, PairwiseRankingHead<float>::pairs(m_y.rows()));
                loss += C.ranking.weight * pairwise_bce_loss(*logits, labels, m_dlogits);
                m_dlogits *= C.ranking.weight;
                dl = &m_dlogits;
            }
            if (!std::isfinite(loss)) raise<error>("Estimator: training diverged (loss ", loss, ")");
            m_model->backward(m_dpred, dl, ctx);
            if (C.train.clip_norm > 0) optim::clip_grad_norm(params, C.train.clip_norm);
            m_opt->step(pool);
            total += loss;
            ++steps;
        }
        return steps ? total / steps : 0.0;
    }

    /// Graphs per forward pass at inference: few enough that a layer's [x | aggregate] operand
    /// (2 NB201 graphs x ~250 nodes x 256 floats, 0.5 MB) and its packed copies stay in a core's
    /// L2 cache. bench_gnn inference, 1 thread: 2 graphs beat 1, 4, 8 and 16 (16: 1.6x slower).
    static constexpr std::size_t inference_chunk = 2;

    /// Predictions in the target's unit for encoded graphs. The graphs are cut into one
    /// contiguous range per pool thread, each run on its own model replica in chunks of
    /// inference_chunk graphs; every graph's prediction is written to its own slot.
    std::vector<double> predict_encoded(const std::vector<features::EncodedGraph>& x, ThreadPool* pool) {
        if (!m_model) raise<config_error>("Estimator::predict: not trained");
        std::vector<double> out(x.size());
        if (x.empty()) return out;
        if (m_model->network_is_zero()) return predict_additive(x);
        ensure_replicas(pool);
        const std::size_t chunks = (x.size() + inference_chunk - 1) / inference_chunk;
        const std::size_t workers = std::min(chunks, m_model->replica_count() + 1);
        if (workers > 1) m_model->sync_replicas(true);
        if (m_infer.size() < workers) m_infer.resize(workers);
        const auto run = [&](std::size_t w) {
            const kernels::PrecisionScope scope(m_precision);
            GnnModel<float>& model = w == 0 ? *m_model : m_model->replica(w - 1);
            std::vector<const float*> weights;  // unchanged until this call returns: pack them once
            for (const auto* p : model.parameters()) weights.push_back(p->value.data());
            const kernels::FrozenWeightsScope frozen(std::move(weights));
            auto& [batch, ptrs] = m_infer[w];
            for (std::size_t c = chunks * w / workers; c < chunks * (w + 1) / workers; ++c) {
                const std::size_t s = c * inference_chunk, e = std::min(x.size(), s + inference_chunk);
                ptrs.clear();
                for (std::size_t i = s; i < e; ++i) ptrs.push_back(&x[i]);
                batch.build(ptrs);
                Context<float> ctx{&batch, false, nullptr, workers > 1 ? nullptr : pool, true};
                const Mat<float>& p = model.forward(ctx);
                for (Index i = 0; i < p.rows(); ++i) out[s + static_cast<std::size_t>(i)] = static_cast<double>(p(i, 0)) * m_scale;
            }
        };
        if (workers > 1) pool->parallel_for(0, workers, run);
        else run(0);
        return out;
    }
    /// predict_encoded() when the network's output is identically zero (GnnModel::network_is_zero,
    /// e.g. the untrained network kept by fit): the additive path alone, in the same chunks of
    /// inference_chunk graphs and with the same products, so the same numbers as running the
    /// network, at the cost of a ridge regression.
    std::vector<double> predict_additive(const std::vector<features::EncodedGraph>& x) {
        std::vector<double> out(x.size());
        Mat<float> gx;
        for (std::size_t s = 0; s < x.size(); s += inference_chunk) {
            const std::size_t e = std::min(x.size(), s + inference_chunk);
            m_ptrs.clear();
            for (std::size_t i = s; i < e; ++i) m_ptrs.push_back(&x[i]);
            features::GraphBatch<float>::stack_graph_features(m_ptrs, gx);
            const Mat<float>& p = m_model->forward_additive(gx);
            for (Index i = 0; i < p.rows(); ++i) out[s + static_cast<std::size_t>(i)] = static_cast<double>(p(i, 0)) * m_scale;
        }
        return out;
    }
    /// Predictions in the target's unit. A model whose network adds nothing (network_is_zero)
    /// encodes only the graph-level aggregates its additive path reads.
    std::vector<double> predict(std::span<const graph::Graph* const> graphs, unsigned threads = 0) {
        if (!m_model) raise<config_error>("Estimator::predict: not trained");
        ThreadPool pool(threads);
        if (m_model->network_is_zero()) return predict_additive(encode(graphs, &pool, true));
        return predict_encoded(encode(graphs, &pool), &pool);
    }

    /// The whole training recipe of the configuration.
    estimators::FitResult fit(const estimators::TrainData& train, const estimators::TrainData& validation,
                              const estimators::FitOptions& o = {}) {
        const auto t0 = std::chrono::steady_clock::now();
        prepare(train, o.seed);
        m_precision = o.precision.value_or(kernels::default_precision());  // for this fit and later predictions
        if (validation.size() > 0) check_data(validation, "validation");
        ThreadPool pool(o.threads);
        Rng rng(o.seed ^ 0x7261696eULL);
        const auto xt = encode(train.graphs, &pool);
        const auto xv = encode(validation.graphs, &pool);
        std::string warm;
        if (m_model->has_skip()) {
            const bool alone = warm_start_skip(train, xt, validation, xv);
            warm = dnncost::detail::concat("; additive path: ", alone ? "additive baseline" : "additive baseline + compiler-kept aggregates");
            if (m_warm_test)
                warm += dnncost::detail::concat(" (unpaid share of the removed operators' cost ", m_warm_test->share, ", se ",
                                                m_warm_test->se, ")");
        }
        const int max_epochs = o.max_epochs > 0 ? o.max_epochs : C.train.max_epochs;
        const int patience = o.patience > 0 ? o.patience : C.train.patience;
        optim::ReduceLROnPlateau plateau(C.train.plateau_factor, C.train.plateau_patience);
        optim::EarlyStopping stop(patience);
        const auto params = m_opt->parameters();
        std::vector<Mat<float>> best;
        estimators::FitResult r;
        r.validation_metric = validation.size() > 0 ? "(1 - spearman) + (1 - within 10%)" : "training loss";
        double untrained = 0;
        std::vector<double> p_untrained;
        std::vector<std::vector<double>> p_epochs;  // validation predictions per epoch
        std::vector<Mat<float>> initial;
        if (validation.size() > 0) {
            // The untrained network is a candidate too: with the additive path it is the ridge
            // solution, which the trained GNN must beat on validation data to be kept.
            p_untrained = predict_encoded(xv, &pool);
            untrained = validation_score(p_untrained, validation.targets);
            for (auto* p : params) initial.push_back(p->value);
        }
        for (int epoch = 0; epoch < max_epochs; ++epoch) {
            const double loss = train_epoch(xt, train.targets, rng, &pool);
            std::vector<double> pv;
            if (validation.size() > 0) pv = predict_encoded(xv, &pool);
            const double score = validation.size() > 0 ? validation_score(pv, validation.targets) : loss;
            if (stop.update(score, epoch)) {
                best.clear();
                for (auto* p : params) best.push_back(p->value);
            }
            if (validation.size() > 0) p_epochs.push_back(std::move(pv));
            m_opt->set_learning_rate(plateau.step(score, m_opt->learning_rate()));
            r.epochs = epoch + 1;
            bool user_stop = false;
            if (o.on_epoch)
                user_stop = o.on_epoch(dnncost::detail::concat("epoch ", epoch + 1, " loss ", loss, " val ", score, " lr ",
                                                      m_opt->learning_rate(),
                                                      epoch == 0 && validation.size() > 0
                                                          ? dnncost::detail::concat(" (untrained: val ", untrained, warm, ")")
                                                          : std::string()));
            if (stop.should_stop() || user_stop) break;
        }
        double best_score = stop.best();
        if (validation.size() > 0) {
            const auto d = selection_improvement(p_untrained, p_epochs, validation.targets, o.seed);
            const bool forced = o.keep != estimators::Keep::automatic;
            const bool keep_trained = !best.empty() && (forced ? o.keep == estimators::Keep::trained : d.mean > d.se);
            if (!keep_trained) {
                best = std::move(initial);
                best_score = untrained;
            }
            r.validation_metric += keep_trained ? "; trained network kept" : "; untrained network kept";
            r.summary = dnncost::detail::concat("best epoch ", stop.best_epoch() + 1, " val ", stop.best(), " vs untrained ",
                                                untrained, warm, "; out-of-bag improvement ", d.mean, " (se ", d.se, ") -> ",
                                                keep_trained ? "trained network kept" : "untrained network kept",
                                                forced ? dnncost::detail::concat(" (keep = ", estimators::to_string(o.keep), ")") : std::string());
        }
        for (std::size_t i = 0; i < best.size(); ++i) params[i]->value = best[i];
        r.best_validation = best_score;
        r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        return r;
    }

    /// Serialize encoder, label scale, weights and (optionally) the optimiser state into a
    /// container of kind `preset`, whose config hash covers the preset name and configuration.
    std::string save(std::string_view preset, bool with_optimizer = true) const {
        if (!m_model) raise<config_error>("Estimator::save: not trained");
        io::BinaryWriter w;
        w.put_u32(3);  // payload layout version (2: the additive path's graph-level features; 3: precision)
        w.put_string(preset);
        w.put_u32(static_cast<std::uint32_t>(m_precision));
        m_encoder.save(w);
        m_additive.save(w);
        w.put_f64(m_scale);
        w.put_f64(m_sum_scale);
        w.put_i64(m_model->input_width());
        const auto params = m_model->parameters();
        w.put_u64(params.size());
        for (const auto* p : params) {
            w.put_string(p->name);
            w.put_i64(p->value.rows());
            w.put_i64(p->value.cols());
            w.put_f32_vector(std::span<const float>(p->value.data(), static_cast<std::size_t>(p->value.size())));
        }
        w.put_bool(with_optimizer);
        if (with_optimizer) m_opt->save_state(w);
        return io::write_container(preset, hash_for(preset), w.bytes());
    }
    /// Inverse of save(). Throws parse_error on a file of another preset or configuration
    /// (config hash), truncation or corruption (checksum).
    static Estimator load(std::string_view bytes, std::string_view preset, std::string_view source = "<memory>") {
        const auto c = io::read_container(bytes, preset, source);
        if (c.config_hash != hash_for(preset))
            raise<parse_error>(source, ": '", preset, "' model was saved with another configuration (config hash 0x",
                               std::hex, c.config_hash, ", this build expects 0x", hash_for(preset), ")");
        io::BinaryReader r(c.payload, std::string(source));
        const auto version = r.get_u32("payload version");
        if (version != 2 && version != 3)
            r.fail("unsupported payload version ", version, " (this build reads versions 2 and 3; retrain the model)");
        if (const auto name = r.get_string("preset"); name != preset) r.fail("payload preset '", name, "', expected '", preset, "'");
        Estimator e;
        if (version >= 3) {  // version 2 models were trained and predict in fp32
            const auto p = r.get_u32("precision");
            if (p > static_cast<std::uint32_t>(Precision::bf16)) r.fail("unknown GEMM precision code ", p);
            e.m_precision = static_cast<Precision>(p);
        }
        e.m_encoder = features::FeatureEncoder::load(r);
        e.m_additive = estimators::AdditiveFeatures::load(r);
        if (!C.head.additive_skip && e.m_additive.size() > 0) r.fail("additive features stored for a model without an additive path");
        e.m_scale = r.get_finite_f64("label scale");
        e.m_sum_scale = r.get_finite_f64("sum readout scale");
        if (!(e.m_sum_scale > 0) || !(e.m_scale > 0)) r.fail("corrupt scales ", e.m_scale, ", ", e.m_sum_scale);
        const auto in = r.get_i64("input width");
        if (in != e.m_encoder.num_features()) r.fail("input width ", in, " does not match the encoder's ", e.m_encoder.num_features());
        Rng rng(0);
        e.m_model = e.make_model(rng);
        const auto params = e.m_model->parameters();
        if (const auto n = r.get_u64("parameter count"); n != params.size())
            r.fail("holds ", n, " parameter tensors, the model has ", params.size());
        for (auto* p : params) {
            r.get_string("parameter name");
            const auto rows = r.get_i64("parameter rows"), cols = r.get_i64("parameter cols");
            if (rows != p->value.rows() || cols != p->value.cols())
                r.fail("parameter '", p->name, "' is ", rows, "x", cols, ", expected ", p->value.rows(), "x", p->value.cols());
            const auto v = r.get_finite_f32_vector("parameter values");
            if (static_cast<Index>(v.size()) != p->value.size()) r.fail("parameter '", p->name, "' has ", v.size(), " values");
            std::copy(v.begin(), v.end(), p->value.data());
        }
        e.make_optimizer();
        if (r.get_bool("has optimiser state")) e.m_opt->load_state(r);
        r.expect_end();
        return e;
    }

    /// Warm start of the additive path with the additive baseline's ridge solver
    /// (estimators::RidgeFit) on the per-operator-type aggregates (the graph-level features).
    /// Two candidates: (a) the additive baseline itself (aggregates over all operators; loss
    /// and lambda chosen by the validation MAPE, exactly as AdditiveEstimator), and, with the
    /// compiler view, (b) the same plus the aggregates over the operators a graph compiler
    /// keeps, with loss and lambda chosen by the validation score. (b) replaces (a) only if the
    /// labelled networks (training + validation) show that the device skips most of what a
    /// compiler removes: unpaid_share() of (a)'s charge for the removed operators, above 1/2 by
    /// two standard errors (UnpaidShare::compiled).
    /// Without validation data: (a), with leave-one-out selection.
    /// @param xt, xv the encodings of train.graphs and validation.graphs
    /// @return whether candidate (a), the baseline alone, was kept
    /// @throws shape_error when an encoding does not match its data
    bool warm_start_skip(const estimators::TrainData& train, const std::vector<features::EncodedGraph>& xt,
                         const estimators::TrainData& validation, const std::vector<features::EncodedGraph>& xv) {
        const auto& yt = train.targets;
        const auto& yv = validation.targets;
        if (xt.size() != yt.size() || xv.size() != yv.size() || train.graphs.size() != yt.size() ||
            validation.graphs.size() != yv.size())
            raise<shape_error>("Estimator::warm_start_skip: ", xt.size(), " + ", xv.size(), " encoded graphs for ", yt.size(),
                               " + ", yv.size(), " labels");
        const Index k = static_cast<Index>(m_additive.size());
        if (m_model->graph_features() != k)
            raise<config_error>("Estimator: the model's additive path reads ", m_model->graph_features(),
                                " graph-level features, ", k, " were fitted");
        m_warm_test.reset();
        if (k == 0) {  // no aggregate varies over the training graphs: the path is their mean label
            const double mean = std::accumulate(yt.begin(), yt.end(), 0.0) / static_cast<double>(yt.size());
            m_model->set_skip(std::vector<double>(static_cast<std::size_t>(m_encoder.num_features()), 0.0), mean / m_scale);
            return true;
        }
        std::vector<Index> eager;  // columns of candidate (a)
        for (Index j = 0; j < k; ++j)
            if (!m_additive.is_compiled_feature(m_additive.keep[static_cast<std::size_t>(j)])) eager.push_back(j);
        const auto design = [&](const std::vector<features::EncodedGraph>& x, bool all) {
            const Index w = all ? k : static_cast<Index>(eager.size());
            Eigen::MatrixXd d(static_cast<Index>(x.size()), 1 + w);
            d.col(0).setOnes();
            for (std::size_t i = 0; i < x.size(); ++i)
                for (Index c = 0; c < w; ++c)
                    d(static_cast<Index>(i), 1 + c) = x[i].graph_x[static_cast<std::size_t>(all ? c : eager[static_cast<std::size_t>(c)])];
            return d;
        };
        const Index n = static_cast<Index>(xt.size());
        const double y_scale = std::accumulate(yt.begin(), yt.end(), 0.0) / static_cast<double>(n);
        const Eigen::VectorXd y = Eigen::Map<const Eigen::VectorXd>(yt.data(), n) / y_scale;
        std::vector<double> sorted(yt);
        std::nth_element(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(sorted.size() / 2), sorted.end());
        const double degenerate = 0.05 * sorted[sorted.size() / 2] / y_scale;
        const bool has_val = !xv.empty();
        Eigen::VectorXd y_val;
        if (has_val) y_val = Eigen::Map<const Eigen::VectorXd>(yv.data(), static_cast<Index>(yv.size())) / y_scale;
        const Eigen::MatrixXd xa = design(xt, false), xa_val = has_val ? design(xv, false) : Eigen::MatrixXd();
        estimators::RidgeFit best = estimators::RidgeFit::select(xa, y, has_val ? &xa_val : nullptr, has_val ? &y_val : nullptr, degenerate);
        bool all = false;
        if (has_val && static_cast<Index>(eager.size()) < k) {
            // what (a) charges each labelled network for the operators a compiler removes
            const std::size_t half = m_additive.vocabulary.size() * estimators::AdditiveFeatures::per_type;
            std::vector<double> removed, predicted, truth;
            const auto charge = [&](const estimators::TrainData& d, const Eigen::MatrixXd& x, const Eigen::VectorXd& yy) {
                const Eigen::VectorXd p = x * best.beta;
                for (std::size_t i = 0; i < d.size(); ++i) {
                    if (!d.graphs[i]) raise<config_error>("Estimator::warm_start_skip: labelled graph ", i, " is null");
                    const auto raw = estimators::AdditiveFeatures::raw(*d.graphs[i], m_additive.vocabulary, true);
                    double s = 0;
                    for (std::size_t c = 0; c < eager.size(); ++c) {
                        const auto f = static_cast<std::size_t>(eager[c]);
                        const auto j = static_cast<std::size_t>(m_additive.keep[f]);
                        s += best.beta(static_cast<Index>(c) + 1) / m_additive.scale[f] * (raw[j] - raw[half + j]);
                    }
                    removed.push_back(s);
                    predicted.push_back(p(static_cast<Index>(i)));
                    truth.push_back(yy(static_cast<Index>(i)));
                }
            };
            charge(train, xa, y);
            charge(validation, xa_val, y_val);
            m_warm_test = unpaid_share(removed, predicted, truth, degenerate);
            if (m_warm_test->compiled()) {
                const Eigen::MatrixXd xb = design(xt, true), xb_val = design(xv, true);
                const auto scorer = [](const Eigen::VectorXd& p, const Eigen::VectorXd& t) {
                    return validation_score(to_std_vector(p), to_std_vector(t));
                };
                best = estimators::RidgeFit::select(xb, y, &xb_val, &y_val, degenerate, scorer);
                all = true;
            }
        }
        // back to the path's units: labels divided by m_scale
        const double r = y_scale / m_scale;
        std::vector<double> w(static_cast<std::size_t>(k), 0.0);
        for (Index c = 0; c + 1 < best.beta.size(); ++c)
            w[static_cast<std::size_t>(all ? c : eager[static_cast<std::size_t>(c)])] = best.beta(1 + c) * r;
        m_model->set_skip(w, best.beta(0) * r);
        return !all;
    }

private:
    static std::uint64_t hash_for(std::string_view preset) { return io::fnv1a64(preset, config_hash()); }
    static void check_data(const estimators::TrainData& d, const char* what) {
        if (d.graphs.size() != d.targets.size())
            raise<shape_error>("Estimator: ", what, " data has ", d.graphs.size(), " graphs and ", d.targets.size(), " targets");
        if (d.graphs.empty()) raise<config_error>("Estimator: empty ", what, " data");
        for (std::size_t i = 0; i < d.size(); ++i) {
            if (!d.graphs[i]) raise<config_error>("Estimator: ", what, " graph ", i, " is null");
            if (!std::isfinite(d.targets[i]) || !(d.targets[i] > 0))
                raise<config_error>("Estimator: ", what, " target ", i, " is ", d.targets[i], " (costs must be positive and finite)");
        }
    }
    /// One model replica per extra pool thread (data parallelism in training and inference).
    void ensure_replicas(ThreadPool* pool) {
        const std::size_t want = pool && pool->size() > 1 ? pool->size() - 1 : 0;
        if (m_model->replica_count() >= want) return;
        std::vector<std::unique_ptr<GnnModel<float>>> r;
        Rng unused(0);  // replica weights are copied from the model before use
        for (std::size_t i = 0; i < want; ++i) r.push_back(make_model(unused));
        m_model->set_replicas(std::move(r));
    }
    std::unique_ptr<GnnModel<float>> make_model(Rng& rng) const {
        return std::make_unique<GnnModel<float>>(C, m_encoder.num_features(), rng, build::conv<float, C.conv>,
                                                 build::readout<float, C.readout>, m_sum_scale,
                                                 static_cast<Index>(m_additive.size()));
    }
    void make_optimizer() {
        optim::AdamOptions ao;
        ao.lr = C.train.lr;
        ao.weight_decay = C.train.weight_decay;
        ao.decoupled = C.train.weight_decay > 0;
        m_opt = std::make_unique<optim::Adam<float>>(m_model->trainable_parameters(), ao);
    }

    features::FeatureEncoder m_encoder;
    Precision m_precision = Precision::fp32;
    estimators::AdditiveFeatures m_additive;  ///< graph-level inputs of the additive path (empty without one)
    double m_scale = 1.0;
    double m_sum_scale = 1.0;  ///< 1 / mean training graph size, for sum readouts
    std::optional<UnpaidShare> m_warm_test;  ///< the last warm start's test of the compiler-kept aggregates, if it made one
    std::unique_ptr<GnnModel<float>> m_model;
    std::unique_ptr<optim::Adam<float>> m_opt;
    // reused per batch, so training allocates nothing per step once shapes settle
    features::GraphBatch<float> m_batch;
    std::vector<const features::EncodedGraph*> m_ptrs;
    std::vector<std::pair<features::GraphBatch<float>, std::vector<const features::EncodedGraph*>>> m_infer;
    Mat<float> m_y, m_dpred, m_dlogits;
};

}  // namespace dnncost::nn

namespace dnncost {
using nn::Estimator;
using nn::GnnConfig;
}  // namespace dnncost
