#pragma once
/// @file gnn_estimator.hpp
/// A GNN cost estimator configured at compile time (a GnnConfig as template argument): it owns
/// the feature encoder, the label scale and the network, trains it (Adam/AdamW and the shared
/// epoch loop of train/epoch_loop.hpp, the untrained network as a candidate), predicts, and
/// saves everything to a versioned, checksummed container.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <numeric>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <dnncost/core/error.hpp>
#include <dnncost/core/matrix.hpp>
#include <dnncost/core/parallel.hpp>
#include <dnncost/core/rng.hpp>
#include <dnncost/core/robust_statistics.hpp>
#include <dnncost/cost/analytic.hpp>
#include <dnncost/estimators/capabilities.hpp>
#include <dnncost/estimators/estimator.hpp>
#include <dnncost/estimators/gnn_header.hpp>
#include <dnncost/estimators/model_selection.hpp>
#include <dnncost/estimators/warm_start.hpp>
#include <dnncost/features/batch.hpp>
#include <dnncost/features/encode.hpp>
#include <dnncost/features/op_aggregates.hpp>
#include <dnncost/graph/analysis.hpp>
#include <dnncost/graph/graph.hpp>
#include <dnncost/io/serialize.hpp>
#include <dnncost/nn/config.hpp>
#include <dnncost/nn/gnn_model.hpp>
#include <dnncost/nn/heads.hpp>
#include <dnncost/nn/kernels/cpu_features.hpp>
#include <dnncost/nn/kernels/frozen_weights.hpp>
#include <dnncost/nn/kernels/thread_precision.hpp>
#include <dnncost/nn/loss/losses.hpp>
#include <dnncost/nn/precision.hpp>
#include <dnncost/optim/optimizer.hpp>
#include <dnncost/train/epoch_loop.hpp>
#include <dnncost/train/metrics.hpp>
#include <dnncost/train/train_data.hpp>

namespace dnncost::estimators {

/// The name models of configuration C are saved under (their container kind) and the registry
/// knows them by. The presets specialise it (presets.hpp); any other configuration is "gnn"
/// unless given a name at construction.
template <nn::GnnConfig C>
inline constexpr std::string_view preset_name = "gnn";
/// The C++ type the presets give configuration C ("HiFiSage"), which an exported header names;
/// empty for a configuration without one (it cannot be exported).
template <nn::GnnConfig C>
inline constexpr std::string_view preset_type_name = "";

/// The GNN presets' own options (registry.hpp sets them from a preset's settings).
struct GnnOptions {
    /// Model selection of a fit with validation data (see Keep); a fit without validation data
    /// keeps the epoch of lowest training loss.
    Keep keep = Keep::automatic;
    /// Arithmetic of the GEMMs for the fit and the model's later predictions (saved with it).
    /// Unset: nn::kernels::default_precision(), i.e. bf16 inputs with fp32 accumulation where the
    /// CPU has a bf16 unit (AMX or AVX512-BF16), fp32 elsewhere.
    std::optional<nn::Precision> precision{};
};

/// A compile-time configured GNN cost estimator (float weights), usable directly or through the
/// run-time Estimator interface. Its predictions reuse internal buffers: one estimator must not
/// predict on several threads at once (it parallelises each call itself).
template <nn::GnnConfig C>
class GnnEstimator final : public Estimator,
                           public GemmPrecision,
                           public OperatorVocabulary,
                           public HeaderExport,
                           public GraphEmbedding {
    static_assert(C.depth >= 1, "GnnConfig: depth must be >= 1");
    static_assert(C.width >= 1, "GnnConfig: width must be >= 1");
    static_assert(C.dropout >= 0.0f && C.dropout < 1.0f, "GnnConfig: dropout must be in [0, 1)");
    static_assert(C.head.layers >= 1, "GnnConfig: the regression head needs at least one layer");
    static_assert(C.ranking.layers == 0 || C.ranking.weight > 0.0f,
                  "GnnConfig: a ranking head needs a positive loss weight");
    static_assert(nn::config_valid(C), "GnnConfig: invalid configuration (see nn::config_problem)");

public:
    using Scalar = float;
    static constexpr nn::GnnConfig config = C;
    static std::uint64_t config_hash() { return nn::config_hash(C); }

    /// An untrained estimator saved under the configuration's preset name (preset_name).
    GnnEstimator() : GnnEstimator(std::string(preset_name<C>)) {}
    /// An untrained estimator saved under `preset` (the container kind load() expects).
    explicit GnnEstimator(std::string preset) : m_preset(std::move(preset)), m_encoder(encode_options()) {}

    std::string preset() const override { return m_preset; }
    std::vector<std::string> vocabulary() const override { return m_encoder.vocabulary(); }
    /// The options of later fits.
    void set_options(const GnnOptions& o) { m_options = o; }
    const GnnOptions& options() const { return m_options; }

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
    /// nn/tensor.hpp).
    void set_precision(nn::Precision p) override { m_precision = p; }
    std::optional<nn::Precision> precision() const override { return m_precision; }
    /// Threads of later predictions through the Estimator interface (0: hardware concurrency);
    /// fit() sets it to FitOptions::threads.
    void set_threads(unsigned threads) { m_threads = threads; }
    const features::FeatureEncoder& encoder() const { return m_encoder; }
    nn::GnnModel<float>& model() {
        if (!m_model) raise<config_error>("GnnEstimator: not trained");
        return *m_model;
    }
    double label_scale() const { return m_scale; }
    /// The last warm start's test of the compiler-kept aggregates (unpaid_share), if it made one.
    const std::optional<UnpaidShare>& warm_start_test() const { return m_warm_test; }

    /// Fit the encoder and label scale on `train`, build the network from `seed`.
    void prepare(const train::TrainData& train, std::uint64_t seed);

    /// Graphs encoded with the fitted encoder: node features, edges and (with an additive path)
    /// the graph-level aggregates. With graph_level_only, the aggregates alone (no node features,
    /// edges or random walks): all that predict_additive_path() reads, for a model whose network adds
    /// nothing; such graphs keep their node count but no node data, so a batch built from them
    /// (the network's path) is a shape_error.
    std::vector<features::EncodedGraph> encode(std::span<const graph::Graph* const> graphs, ThreadPool* pool = nullptr,
                                               bool graph_level_only = false) const;

    /// One pass over the encoded training graphs in shuffled mini-batches; returns the mean loss.
    double train_epoch(const std::vector<features::EncodedGraph>& x, const std::vector<double>& targets, Rng& rng,
                       ThreadPool* pool);

    /// Graphs per forward pass at inference: few enough that a layer's [x | aggregate] operand
    /// (2 NB201 graphs x ~250 nodes x 256 floats, 0.5 MB) and its packed copies stay in a core's
    /// L2 cache, enough that each GEMM still has rows to spread over.
    static constexpr std::size_t inference_chunk = 2;

    /// Predictions in the target's unit for encoded graphs. The graphs are cut into one
    /// contiguous range per pool thread, each run on its own model replica in chunks of
    /// inference_chunk graphs; every graph's prediction is written to its own slot.
    std::vector<double> predict_encoded(const std::vector<features::EncodedGraph>& x, ThreadPool* pool) const;
    /// predict_encoded() when the network's output is identically zero (GnnModel::network_is_zero,
    /// e.g. the untrained network kept by fit): the additive path alone, in the same chunks of
    /// inference_chunk graphs and with the same products, so the same numbers as running the
    /// network, at the cost of a ridge regression.
    std::vector<double> predict_additive_path(const std::vector<features::EncodedGraph>& x) const;
    /// Predictions in the target's unit on `threads` threads (0: hardware concurrency). A model
    /// whose network adds nothing (network_is_zero) encodes only the graph-level aggregates its
    /// additive path reads.
    /// Floored at zero as Estimator::predict floors. @throws prediction_error as it does
    std::vector<double> predict_mean(std::span<const graph::Graph* const> graphs, unsigned threads) const {
        auto out = unchecked_mean(graphs, threads);
        floor_costs(out, name(), graphs, m_scale);
        return out;
    }
    using Estimator::predict_mean;

    /// The graph embeddings (the readout's output, the input of the regression head), one row per graph.
    Eigen::MatrixXd embed(std::span<const graph::Graph* const> graphs) const override;

    /// The model as a C++ header (estimators/gnn_header.hpp).
    /// @throws config_error for a configuration without a preset type name
    std::string export_header(const std::string& name, const std::string& source) const override {
        if (preset_type_name<C>.empty())
            raise<config_error>(source, ": the '", m_preset,
                                "' configuration has no preset type a header could name (hifisage and brpnas have)");
        if (!m_model) raise<config_error>("GnnEstimator::export_header: not trained");
        return gnn_header(serialize(false), m_model->parameters(), std::string(preset_type_name<C>), name, source);
    }

    /// The whole training recipe of the configuration.
    FitResult fit(const train::TrainData& train, const train::TrainData& validation, const FitOptions& o) override;

    /// Encoder, label scale, weights and (optionally) the optimiser state, in a container of kind
    /// preset() whose config hash covers the preset name and configuration.
    std::string serialize(bool with_optimizer) const;
    /// A training checkpoint: serialize() with the optimiser state.
    std::string serialize() const override { return serialize(true); }
    /// Inverse of serialize(). Throws parse_error on a file of another preset or configuration
    /// (config hash), truncation or corruption (checksum).
    static GnnEstimator deserialize(std::string_view bytes, std::string_view preset = preset_name<C>,
                                    std::string_view source = "<memory>");

    /// Warm start of the additive path (estimators::warm_start_additive_path).
    /// @param xt, xv the encodings of train.graphs and validation.graphs
    /// @return whether the additive baseline alone was kept (no compiler-kept aggregates)
    /// @throws shape_error when an encoding does not match its data
    bool warm_start_additive_path(const train::TrainData& train, const std::vector<features::EncodedGraph>& xt,
                                  const train::TrainData& validation, const std::vector<features::EncodedGraph>& xv);

private:
    static std::uint64_t hash_for(std::string_view preset) { return io::fnv1a64(preset, config_hash()); }

    double cost_scale() const override { return m_scale; }
    std::vector<Prediction> compute(std::span<const graph::Graph* const> graphs) const override {
        const auto mean = unchecked_mean(graphs, m_threads);
        std::vector<Prediction> out;
        out.reserve(mean.size());
        for (double m : mean) out.push_back({m, 0.0});
        return out;
    }
    std::vector<double> unchecked_mean(std::span<const graph::Graph* const> graphs, unsigned threads) const {
        if (!m_model) raise<config_error>("GnnEstimator::predict: not trained");
        ThreadPool pool(threads);
        if (m_model->network_is_zero()) return predict_additive_path(encode(graphs, &pool, true));
        return predict_encoded(encode(graphs, &pool), &pool);
    }
    /// One model replica per extra pool thread (data parallelism in training and inference).
    void ensure_replicas(ThreadPool* pool) const {
        const std::size_t want = pool && pool->size() > 1 ? pool->size() - 1 : 0;
        if (m_model->replica_count() >= want) return;
        std::vector<std::unique_ptr<nn::GnnModel<float>>> replicas;
        Rng unused(0);  // replica weights are copied from the model before use
        for (std::size_t i = 0; i < want; ++i) replicas.push_back(make_model(unused));
        m_model->set_replicas(std::move(replicas));
    }
    std::unique_ptr<nn::GnnModel<float>> make_model(Rng& rng) const {
        return std::make_unique<nn::GnnModel<float>>(C, m_encoder.num_features(), rng, nn::build::conv<float, C.conv>,
                                                     nn::build::readout<float, C.readout>, m_sum_scale,
                                                     static_cast<Index>(m_additive.size()));
    }
    void make_optimizer() {
        optim::AdamOptions ao;
        ao.lr = C.train.lr;
        ao.weight_decay = C.train.weight_decay;
        ao.decoupled = C.train.weight_decay > 0;
        m_opt = std::make_unique<optim::Adam<float>>(m_model->trainable_parameters(), ao);
    }

    std::string m_preset;
    GnnOptions m_options;
    unsigned m_threads = 0;
    features::FeatureEncoder m_encoder;
    nn::Precision m_precision = nn::Precision::fp32;
    features::OpAggregates m_additive;  ///< graph-level inputs of the additive path (empty without one)
    double m_scale = 1.0;
    double m_sum_scale = 1.0;  ///< 1 / mean training graph size, for sum readouts
    std::optional<UnpaidShare>
        m_warm_test;  ///< the last warm start's test of the compiler-kept aggregates, if it made one
    std::unique_ptr<nn::GnnModel<float>> m_model;
    std::unique_ptr<optim::Adam<float>> m_opt;
    // Reused per batch, so training and prediction allocate nothing per step once shapes
    // settle; mutable because const predictions fill them too.
    features::GraphBatch<float> m_batch;
    mutable std::vector<const features::EncodedGraph*> m_ptrs;
    mutable std::vector<std::pair<features::GraphBatch<float>, std::vector<const features::EncodedGraph*>>> m_infer;
    Mat<float> m_y, m_dpred, m_dlogits;
};

template <nn::GnnConfig C>
auto GnnEstimator<C>::prepare(const train::TrainData& train, std::uint64_t seed) -> void {
    train::check_train_data(train, "GnnEstimator", "training");
    m_encoder = features::FeatureEncoder(encode_options());
    m_encoder.fit(train.graphs);
    m_scale = C.train.pow10_labels
                  ? std::pow(10.0, std::round(std::log10(std::max(std::abs(median_high(train.targets)), 1e-30))))
                  : 1.0;
    double nodes = 0;
    for (const auto* g : train.graphs) nodes += static_cast<double>(g->num_nodes());
    m_sum_scale = train.size() / std::max(nodes, 1.0);
    m_additive = {};
    m_additive.compiled = C.features.compiler_view;
    m_additive.family_scaling = true;  // as the additive baseline scales them
    if constexpr (C.head.additive_path) m_additive.fit(train.graphs);
    Rng rng(seed);
    m_model = make_model(rng);
    make_optimizer();
}

template <nn::GnnConfig C>
auto GnnEstimator<C>::encode(std::span<const graph::Graph* const> graphs, ThreadPool* pool, bool graph_level_only) const
    -> std::vector<features::EncodedGraph> {
    if (graph_level_only && !C.head.additive_path)
        raise<config_error>("GnnEstimator::encode: graph-level features only, but the model has no additive path");
    std::vector<features::EncodedGraph> out(graphs.size());
    const std::size_t parts = pool ? std::min(pool->size(), graphs.size()) : 1;
    const auto run = [&](std::size_t t) {  // contiguous ranges; each graph encodes independently
        for (std::size_t i = graphs.size() * t / parts; i < graphs.size() * (t + 1) / parts; ++i) {
            if (!graphs[i]) raise<config_error>("GnnEstimator: graph ", i, " passed to predict is null");
            const graph::Graph& g = *graphs[i];
            // per-node costs and analysis once, for the node features and the additive aggregates
            const auto costs = cost::annotate(g);
            const bool analysed = (m_encoder.options().compiler_view && !graph_level_only) ||
                                  (C.head.additive_path && m_additive.compiled);
            const auto flags = analysed ? graph::analyse(g) : std::vector<graph::NodeAnalysis>{};
            if (graph_level_only) {
                out[i].num_nodes = static_cast<int>(g.num_nodes());
                out[i].num_features = m_encoder.num_features();
            } else {
                out[i] = m_encoder.encode(g, costs, flags);
            }
            if constexpr (C.head.additive_path) {
                const auto f = m_additive.transform(g, costs, flags);
                out[i].graph_x.assign(f.begin(), f.end());
            }
        }
    };
    if (parts > 1)
        pool->parallel_for(0, parts, run);
    else if (!graphs.empty())
        run(0);
    return out;
}

template <nn::GnnConfig C>
auto GnnEstimator<C>::train_epoch(const std::vector<features::EncodedGraph>& x, const std::vector<double>& targets,
                                  Rng& rng, ThreadPool* pool) -> double {
    if (!m_model) raise<config_error>("GnnEstimator::train_epoch: call prepare() first");
    ensure_replicas(pool);
    const nn::kernels::PrecisionScope scope(m_precision);
    std::vector<std::size_t> order(x.size());
    std::iota(order.begin(), order.end(), 0);
    rng.shuffle(order.begin(), order.end());
    const auto params = m_opt->parameters();
    const std::vector<nn::LossTerm> terms{{C.train.loss, 1.0, C.train.loss_param}};
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
        nn::Context<float> ctx{&m_batch, true, &rng, pool};
        m_opt->zero_grad();
        const Mat<float>& p = m_model->forward(ctx);
        float loss = nn::weighted_loss(terms, p, m_y, m_dpred);
        const Mat<float>* dl = nullptr;
        if (const auto* logits = m_model->rank_logits(); logits && logits->rows() > 0) {
            const Mat<float> labels = nn::pairwise_labels(m_y, nn::PairwiseRankingHead<float>::pairs(m_y.rows()));
            loss += C.ranking.weight * nn::pairwise_bce_loss(*logits, labels, m_dlogits);
            m_dlogits *= C.ranking.weight;
            dl = &m_dlogits;
        }
        if (!std::isfinite(loss)) raise<error>("GnnEstimator: training diverged (loss ", loss, ")");
        m_model->backward(m_dpred, dl, ctx);
        if (C.train.clip_norm > 0) optim::clip_grad_norm(params, C.train.clip_norm);
        m_opt->step(pool);
        total += loss;
        ++steps;
    }
    return steps ? total / steps : 0.0;
}

template <nn::GnnConfig C>
auto GnnEstimator<C>::predict_encoded(const std::vector<features::EncodedGraph>& x, ThreadPool* pool) const
    -> std::vector<double> {
    if (!m_model) raise<config_error>("GnnEstimator::predict: not trained");
    std::vector<double> out(x.size());
    if (x.empty()) return out;
    if (m_model->network_is_zero()) return predict_additive_path(x);
    ensure_replicas(pool);
    const std::size_t chunks = (x.size() + inference_chunk - 1) / inference_chunk;
    const std::size_t workers = std::min(chunks, m_model->replica_count() + 1);
    if (workers > 1) m_model->sync_replicas(true);
    if (m_infer.size() < workers) m_infer.resize(workers);
    const auto run = [&](std::size_t w) {
        const nn::kernels::PrecisionScope scope(m_precision);
        nn::GnnModel<float>& model = w == 0 ? *m_model : m_model->replica(w - 1);
        std::vector<const float*> weights;  // unchanged until this call returns: pack them once
        for (const auto* p : model.parameters()) weights.push_back(p->value.data());
        const nn::kernels::FrozenWeightsScope frozen(std::move(weights));
        auto& [batch, ptrs] = m_infer[w];
        for (std::size_t c = chunks * w / workers; c < chunks * (w + 1) / workers; ++c) {
            const std::size_t s = c * inference_chunk, e = std::min(x.size(), s + inference_chunk);
            ptrs.clear();
            for (std::size_t i = s; i < e; ++i) ptrs.push_back(&x[i]);
            batch.build(ptrs);
            nn::Context<float> ctx{&batch, false, nullptr, workers > 1 ? nullptr : pool, true};
            const Mat<float>& p = model.forward(ctx);
            for (Index i = 0; i < p.rows(); ++i)
                out[s + static_cast<std::size_t>(i)] = static_cast<double>(p(i, 0)) * m_scale;
        }
    };
    if (workers > 1)
        pool->parallel_for(0, workers, run);
    else
        run(0);
    return out;
}

template <nn::GnnConfig C>
auto GnnEstimator<C>::predict_additive_path(const std::vector<features::EncodedGraph>& x) const -> std::vector<double> {
    std::vector<double> out(x.size());
    Mat<float> gx;
    for (std::size_t s = 0; s < x.size(); s += inference_chunk) {
        const std::size_t e = std::min(x.size(), s + inference_chunk);
        m_ptrs.clear();
        for (std::size_t i = s; i < e; ++i) m_ptrs.push_back(&x[i]);
        features::GraphBatch<float>::stack_graph_features(m_ptrs, gx);
        const Mat<float>& p = m_model->forward_additive_path(gx);
        for (Index i = 0; i < p.rows(); ++i)
            out[s + static_cast<std::size_t>(i)] = static_cast<double>(p(i, 0)) * m_scale;
    }
    return out;
}

template <nn::GnnConfig C>
auto GnnEstimator<C>::embed(std::span<const graph::Graph* const> graphs) const -> Eigen::MatrixXd {
    if (!m_model) raise<config_error>("GnnEstimator::embed: not trained");
    const auto encoded = encode(graphs);
    Eigen::MatrixXd x;
    constexpr std::size_t chunk = 256;
    features::GraphBatch<float> batch;
    for (std::size_t s = 0; s < encoded.size(); s += chunk) {
        std::vector<const features::EncodedGraph*> ptrs;
        for (std::size_t i = s; i < std::min(encoded.size(), s + chunk); ++i) ptrs.push_back(&encoded[i]);
        batch.build(ptrs);
        nn::Context<float> ctx{&batch, false, nullptr, nullptr, true};
        const auto& e = m_model->embed(ctx);
        if (x.size() == 0) x.resize(static_cast<Index>(encoded.size()), e.cols());
        x.middleRows(static_cast<Index>(s), e.rows()) = e.template cast<double>();
    }
    return x;
}

template <nn::GnnConfig C>
auto GnnEstimator<C>::fit(const train::TrainData& train, const train::TrainData& validation, const FitOptions& o)
    -> FitResult {
    const auto t0 = std::chrono::steady_clock::now();
    prepare(train, o.seed);
    m_threads = o.threads;
    m_precision = m_options.precision.value_or(nn::kernels::default_precision());  // this fit and later predictions
    if (validation.size() > 0) train::check_train_data(validation, "GnnEstimator", "validation");
    ThreadPool pool(o.threads);
    Rng rng(o.seed ^ 0x7261696eULL);
    const auto xt = encode(train.graphs, &pool);
    const auto xv = encode(validation.graphs, &pool);
    std::string warm;
    if (m_model->has_additive_path()) {
        const bool alone = warm_start_additive_path(train, xt, validation, xv);
        warm = dnncost::concat("; additive path: ",
                                       alone ? "additive baseline" : "additive baseline + compiler-kept aggregates");
        if (m_warm_test)
            warm += dnncost::concat(" (unpaid share of the removed operators' cost ", m_warm_test->share,
                                            ", se ", m_warm_test->se, ")");
    }
    train::EpochLoopOptions loop;
    loop.max_epochs = o.max_epochs > 0 ? o.max_epochs : C.train.max_epochs;
    loop.patience = o.patience > 0 ? o.patience : C.train.patience;
    loop.plateau_factor = C.train.plateau_factor;
    loop.plateau_patience = C.train.plateau_patience;
    const auto params = m_opt->parameters();
    FitResult result;
    const bool has_val = validation.size() > 0;
    result.validation_metric = has_val ? "(1 - spearman) + (1 - within 10%)" : "training loss";
    double untrained = 0;
    std::vector<double> p_untrained;
    std::vector<std::vector<double>> p_epochs;  // validation predictions per epoch
    std::vector<Mat<float>> initial;
    if (has_val) {
        // The untrained network is a candidate too: with the additive path it is the ridge
        // solution, which the trained GNN must beat on validation data to be kept.
        p_untrained = predict_encoded(xv, &pool);
        untrained = validation_score(p_untrained, validation.targets);
        for (auto* p : params) initial.push_back(p->value);
    }
    const auto run = train::run_epochs<float>(
        loop, params, [&] { return train_epoch(xt, train.targets, rng, &pool); },
        [&](double loss) {
            if (!has_val) return loss;
            p_epochs.push_back(predict_encoded(xv, &pool));
            return validation_score(p_epochs.back(), validation.targets);
        },
        [&](int epoch) {
            return epoch == 0 && has_val ? dnncost::concat(" (untrained: val ", untrained, warm, ")")
                                         : std::string();
        },
        [&] { return m_opt->learning_rate(); }, [&](double lr) { m_opt->set_learning_rate(lr); }, o.on_epoch);
    result.epochs = run.epochs;
    auto best = run.best_weights;
    double best_score = run.best_score;
    if (has_val) {
        const auto gain = selection_improvement(p_untrained, p_epochs, validation.targets, o.seed);
        const Keep keep = m_options.keep;
        const bool forced = keep != Keep::automatic;
        const bool keep_trained = !best.empty() && (forced ? keep == Keep::trained : gain.mean > gain.se);
        if (!keep_trained) {
            best = std::move(initial);
            best_score = untrained;
        }
        result.validation_metric += keep_trained ? "; trained network kept" : "; untrained network kept";
        result.trained_kept = keep_trained ? 1.0 : 0.0;
        result.summary = dnncost::concat(
            "best epoch ", run.best_epoch + 1, " val ", run.best_score, " vs untrained ", untrained, warm,
            "; out-of-bag improvement ", gain.mean, " (se ", gain.se, ") -> ",
            keep_trained ? "trained network kept" : "untrained network kept",
            forced ? dnncost::concat(" (keep = ", to_string(keep), ")") : std::string());
    }
    for (std::size_t i = 0; i < best.size(); ++i) params[i]->value = best[i];
    result.best_validation = best_score;
    result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return result;
}

template <nn::GnnConfig C>
auto GnnEstimator<C>::serialize(bool with_optimizer) const -> std::string {
    if (!m_model) raise<config_error>("GnnEstimator::serialize: not trained");
    io::BinaryWriter w;
    // payload layout version (2: the additive path's graph-level features; 3: precision;
    // 4: operator kinds with convolutions split, features/op_kind.hpp)
    w.put_u32(4);
    w.put_string(m_preset);
    w.put_u32(static_cast<std::uint32_t>(m_precision));
    w.put_bool(m_encoder.options().split_convs);
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
    return io::write_container(m_preset, hash_for(m_preset), w.bytes());
}

template <nn::GnnConfig C>
auto GnnEstimator<C>::deserialize(std::string_view bytes, std::string_view preset, std::string_view source)
    -> GnnEstimator {
    const auto c = io::read_container(bytes, preset, source);
    if (c.config_hash != hash_for(preset))
        raise<parse_error>(source, ": '", preset, "' model was saved with another configuration (config hash 0x",
                           std::hex, c.config_hash, ", this build expects 0x", hash_for(preset), ")");
    io::BinaryReader r(c.payload, std::string(source));
    const auto version = r.get_u32("payload version");
    if (version < 2 || version > 4)
        r.fail("unsupported payload version ", version, " (this build reads versions 2 to 4; retrain the model)");
    if (const auto name = r.get_string("preset"); name != preset)
        r.fail("payload preset '", name, "', expected '", preset, "'");
    GnnEstimator e{std::string(preset)};
    if (version >= 3) {  // version 2 models were trained and predict in fp32
        const auto p = r.get_u32("precision");
        if (p > static_cast<std::uint32_t>(nn::Precision::bf16)) r.fail("unknown GEMM precision code ", p);
        e.m_precision = static_cast<nn::Precision>(p);
    }
    const bool split_convs = version >= 4 && r.get_bool("split convolutions");
    e.m_encoder = features::FeatureEncoder::load(r, split_convs);
    e.m_additive = features::OpAggregates::load(r, split_convs);
    if (!C.head.additive_path && e.m_additive.size() > 0)
        r.fail("additive features stored for a model without an additive path");
    e.m_scale = r.get_finite_f64("label scale");
    e.m_sum_scale = r.get_finite_f64("sum readout scale");
    if (!(e.m_sum_scale > 0) || !(e.m_scale > 0)) r.fail("corrupt scales ", e.m_scale, ", ", e.m_sum_scale);
    const auto in = r.get_i64("input width");
    if (in != e.m_encoder.num_features())
        r.fail("input width ", in, " does not match the encoder's ", e.m_encoder.num_features());
    Rng rng(0);
    e.m_model = e.make_model(rng);
    const auto params = e.m_model->parameters();
    if (const auto n = r.get_u64("parameter count"); n != params.size())
        r.fail("holds ", n, " parameter tensors, the model has ", params.size());
    for (auto* p : params) {
        r.get_string("parameter name");
        const auto rows = r.get_i64("parameter rows"), cols = r.get_i64("parameter cols");
        if (rows != p->value.rows() || cols != p->value.cols())
            r.fail("parameter '", p->name, "' is ", rows, "x", cols, ", expected ", p->value.rows(), "x",
                   p->value.cols());
        const auto v = r.get_finite_f32_vector("parameter values");
        if (static_cast<Index>(v.size()) != p->value.size())
            r.fail("parameter '", p->name, "' has ", v.size(), " values");
        std::copy(v.begin(), v.end(), p->value.data());
    }
    e.make_optimizer();
    if (r.get_bool("has optimiser state")) e.m_opt->load_state(r);
    r.expect_end();
    return e;
}

template <nn::GnnConfig C>
auto GnnEstimator<C>::warm_start_additive_path(const train::TrainData& train,
                                               const std::vector<features::EncodedGraph>& xt,
                                               const train::TrainData& validation,
                                               const std::vector<features::EncodedGraph>& xv) -> bool {
    if (!m_model) raise<config_error>("GnnEstimator::warm_start_additive_path: call prepare() first");
    if (m_model->graph_features() != static_cast<Index>(m_additive.size()))
        raise<config_error>("GnnEstimator: the model's additive path reads ", m_model->graph_features(),
                            " graph-level features, ", m_additive.size(), " were fitted");
    m_warm_test.reset();
    auto start = estimators::warm_start_additive_path(m_additive, train, xt, validation, xv, m_scale,
                                                      static_cast<std::size_t>(m_model->additive_path_width()));
    m_model->set_additive_path(start.weights, start.bias);
    m_warm_test = start.compiler_test;
    return start.baseline_only;
}

}  // namespace dnncost::estimators
