#pragma once
/// @file gnn_model.hpp
/// The network of a GnnConfig: encoder blocks (conv -> [LayerNorm] -> activation -> [dropout],
/// with residual connections), a graph readout, a regression head, an optional pairwise ranking
/// head and an optional additive path (a linear model of graph-level features added to the
/// prediction). Node features in, one prediction per graph out.
#include <algorithm>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include <dnncost/core/error.hpp>
#include <dnncost/core/matrix.hpp>
#include <dnncost/core/parallel.hpp>
#include <dnncost/core/rng.hpp>
#include <dnncost/features/batch.hpp>
#include <dnncost/nn/config.hpp>
#include <dnncost/nn/dropout.hpp>
#include <dnncost/nn/gnn/edge_conv.hpp>
#include <dnncost/nn/gnn/gcn.hpp>
#include <dnncost/nn/gnn/gin.hpp>
#include <dnncost/nn/gnn/mr_conv.hpp>
#include <dnncost/nn/gnn/residual.hpp>
#include <dnncost/nn/gnn/sage.hpp>
#include <dnncost/nn/gnn/sage_block.hpp>
#include <dnncost/nn/heads.hpp>
#include <dnncost/nn/kernels/thread_precision.hpp>
#include <dnncost/nn/layer_norm.hpp>
#include <dnncost/nn/module.hpp>
#include <dnncost/nn/readout/lcm.hpp>
#include <dnncost/nn/readout/pooling.hpp>

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
        case Conv::sage:
            return conv<T, Conv::sage>(c, in, out, rng);
        case Conv::gcn:
            return conv<T, Conv::gcn>(c, in, out, rng);
        case Conv::gin:
            return conv<T, Conv::gin>(c, in, out, rng);
        case Conv::edge_conv:
            return conv<T, Conv::edge_conv>(c, in, out, rng);
        case Conv::mr_conv:
            return conv<T, Conv::mr_conv>(c, in, out, rng);
    }
    raise<config_error>("GnnConfig: unknown conv kind ", int(c.conv));
}
template <class T, Readout R>
ModulePtr<T> readout(const GnnConfig& c, Index in, Rng& rng, double sum_scale = 1.0) {
    const Index lw = c.readout_width > 0 ? c.readout_width : in;
    if constexpr (R == Readout::sum)
        return std::make_unique<Pooling<T>>(pool_sum, sum_scale);
    else if constexpr (R == Readout::mean)
        return std::make_unique<Pooling<T>>(pool_mean);
    else if constexpr (R == Readout::max)
        return std::make_unique<Pooling<T>>(pool_max);
    else if constexpr (R == Readout::sum_mean_max)
        return std::make_unique<Pooling<T>>(pool_sum | pool_mean | pool_max, sum_scale);
    else if constexpr (R == Readout::lcm)
        return std::make_unique<LcmReadout<T>>(in, lw, rng, true);
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
        case Readout::sum:
            return readout<T, Readout::sum>(c, in, rng, sum_scale);
        case Readout::mean:
            return readout<T, Readout::mean>(c, in, rng, sum_scale);
        case Readout::max:
            return readout<T, Readout::max>(c, in, rng, sum_scale);
        case Readout::sum_mean_max:
            return readout<T, Readout::sum_mean_max>(c, in, rng, sum_scale);
        case Readout::lcm:
            return readout<T, Readout::lcm>(c, in, rng, sum_scale);
        case Readout::lcm_sum:
            return readout<T, Readout::lcm_sum>(c, in, rng, sum_scale);
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
    /// @param sum_scale factor of sum readouts (the estimators use 1 / mean training graph size)
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
            if (c.residual)
                m_encoder.add(std::make_unique<Residual<T>>(std::move(block), w, rng));
            else
                m_encoder.add(std::move(block));
            w = c.width;
        }
        m_readout = make_readout(c, w, rng, sum_scale);
        const Index e = m_readout->output_width(w);
        m_head = make_regression_head<T>(e, c.head.layers, c.head.width, 1, c.act, c.head.dropout, rng);
        if (graph_features < 0) raise<config_error>("GnnModel: negative graph-level feature width ", graph_features);
        if (graph_features > 0 && !c.head.additive_path)
            raise<config_error>(
                "GnnModel: graph-level features feed the additive path, which this configuration lacks");
        if (c.head.additive_path) {
            m_node_sum_scale = sum_scale;
            m_graph_features = graph_features;
            m_additive_weight = Parameter<T>("additive.weight", graph_features > 0 ? graph_features : in_features, 1);
            m_additive_bias = Parameter<T>("additive.bias", 1, 1);
            // The head's last layer starts at zero, so that the untrained prediction is exactly
            // the additive path (warm-started by GnnEstimator::fit) and the GNN learns a
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
            m_rank = std::make_unique<PairwiseRankingHead<T>>(e, c.ranking.layers, c.ranking.width, c.ranking.dropout,
                                                              rng, c.act);
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
        if (!has_additive_path()) return p;
        additive_path_inputs(b, m_additive_in);
        additive_path(m_additive_in) += p;
        return m_pred;
    }
    bool has_additive_path() const { return m_additive_weight.value.size() > 0; }
    /// True when the network adds nothing to any prediction: the additive path reads graph-level
    /// features and the regression head's last layer (weights and bias) is all zero, as before
    /// training and whenever GnnEstimator::fit keeps the untrained network. forward() then
    /// returns what forward_additive_path() computes (the head's zero output added to it changes
    /// no bit), and the estimator predicts with the latter, without running the network.
    bool network_is_zero() const {
        return has_additive_path() && m_graph_features > 0 && m_out_w && m_out_b && m_out_w->value.isZero(0) &&
               m_out_b->value.isZero(0);
    }
    /// The additive path alone for graph-level features gx (graphs x graph_features): the same
    /// products, in the same order, as forward() computes for a batch with those features.
    /// @throws shape_error on a width other than graph_features()
    const Mat<T>& forward_additive_path(const Mat<T>& gx) {
        if (!has_additive_path() || gx.cols() != m_graph_features)
            raise<shape_error>("GnnModel: ", gx.cols(), " graph-level features given, the additive path reads ",
                               m_graph_features);
        return additive_path(gx);
    }
    /// Inputs of the additive path, one row per graph: the batch's graph-level features when the
    /// model was built with some (the estimator's per-operator-type aggregates), else the sum of
    /// the graph's node features x (1 / mean training graph size).
    template <class B>
    void additive_path_inputs(const B& b, Mat<T>& out) const {
        if (b.graph_x.cols() != m_graph_features)
            raise<shape_error>("GnnModel: the batch has ", b.graph_x.cols(),
                               " graph-level features, the additive path reads ", m_graph_features);
        if (m_graph_features > 0) {
            out = b.graph_x;
            return;
        }
        out.setZero(b.num_graphs(), b.x.cols());
        for (int g = 0; g < b.num_graphs(); ++g)
            out.row(g) =
                b.x.middleRows(b.offset(g), b.graph_size(g)).colwise().sum() * static_cast<T>(m_node_sum_scale);
    }
    Index graph_features() const { return m_graph_features; }
    /// Number of inputs of the additive path (0 without one).
    Index additive_path_width() const { return m_additive_weight.value.rows(); }
    /// Set the additive path (e.g. to a ridge solution): weight per input feature and bias.
    void set_additive_path(const std::vector<double>& w, double bias) {
        if (!has_additive_path() || static_cast<Index>(w.size()) != m_additive_weight.value.rows())
            raise<config_error>("GnnModel::set_additive_path: the model has no additive path of width ", w.size());
        for (std::size_t j = 0; j < w.size(); ++j)
            m_additive_weight.value(static_cast<Index>(j), 0) = static_cast<T>(w[j]);
        m_additive_bias.value(0, 0) = static_cast<T>(bias);
    }
    const Mat<T>* rank_logits() const { return m_logits; }
    bool has_ranking_head() const { return m_rank != nullptr; }
    /// Backward from dLoss/dprediction and (if the ranking head ran) dLoss/dlogits.
    void backward(const Mat<T>& dpred, const Mat<T>* dlogits, const Context<T>& ctx) {
        if (has_additive_path()) {
            m_additive_weight.grad.noalias() += m_additive_in.transpose() * dpred;
            m_additive_bias.grad(0, 0) += dpred.sum();
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
        if (has_additive_path()) {
            p.push_back(&m_additive_weight);
            p.push_back(&m_additive_bias);
        }
        return p;
    }
    Index input_width() const { return m_in; }
    /// The parameters an optimiser updates: all but the additive path, which keeps its
    /// closed-form ridge solution (set_additive_path). Adam's per-weight steps of ~lr would shift a
    /// standardised linear model by several per cent per step and undo the warm start, so the
    /// network learns a correction to a fixed additive cost model instead (its gradients are
    /// still computed, e.g. for gradient checks).
    std::vector<Parameter<T>*> trainable_parameters() {
        auto p = parameters();
        if (has_additive_path()) p.resize(p.size() - 2);  // additive.weight and additive.bias come last
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
            const double target =
                static_cast<double>(b.num_nodes()) * static_cast<double>(s) / static_cast<double>(m_nshards);
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
        for (std::size_t s = 0; s < m_nshards; ++s)
            m_emb_all.middleRows(m_bounds[s], m_bounds[s + 1] - m_bounds[s]) = *m_shard[s].emb;
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
            if (all.size() != mine.size())
                raise<config_error>("GnnModel::set_replicas: a replica has another structure");
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
               (has_additive_path() ? " + additive path" : "") + (m_rank ? " + " + m_rank->kind() : std::string());
    }

private:
    Index m_in = 0;
    Sequential<T> m_encoder;
    ModulePtr<T> m_readout;
    std::unique_ptr<Sequential<T>> m_head;
    std::unique_ptr<PairwiseRankingHead<T>> m_rank;
    /// m_pred = the additive path for its inputs (additive_path_inputs), one row per graph.
    Mat<T>& additive_path(const Mat<T>& in) {
        m_pred.noalias() = in * m_additive_weight.value;
        m_pred.array() += m_additive_bias.value(0, 0);
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
    // without them the sum of node features x m_node_sum_scale (additive_path_inputs)
    double m_node_sum_scale = 1.0;
    Index m_graph_features = 0;
    Parameter<T> m_additive_weight, m_additive_bias;
    Mat<T> m_additive_in, m_pred;
    const Parameter<T>* m_out_w =
        nullptr;  ///< the regression head's last layer (zero-initialised with an additive path)
    const Parameter<T>* m_out_b = nullptr;
};

}  // namespace dnncost::nn
