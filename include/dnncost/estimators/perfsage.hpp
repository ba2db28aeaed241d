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

#include <dnncost/core/error.hpp>
#include <dnncost/core/parallel.hpp>
#include <dnncost/core/rng.hpp>
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
    static std::vector<double> raw_node_features(const graph::Graph& g) {
        const auto costs = cost::annotate(g);
        const auto attrs = features::raw_attributes(g, costs);
        const auto order = g.topological_order();
        const auto mem = cost::peak_memory(g, order);
        std::vector<double> live(g.num_nodes(), 0.0);
        for (std::size_t s = 0; s < order.size() && s < mem.live_bytes.size(); ++s)
            live[static_cast<std::size_t>(order[s])] = static_cast<double>(mem.live_bytes[s]);
        std::vector<double> out(g.num_nodes() * node_features, 0.0);
        for (std::size_t i = 0; i < g.num_nodes(); ++i) {
            double* row = out.data() + i * node_features;
            std::copy(attrs[i].begin(), attrs[i].end(), row);
            const auto& n = g.nodes()[i];
            if (!n.outputs.empty()) {  // edge features: the output tensor's last four dimensions
                const auto& shape = g.tensor(n.outputs[0]).shape;
                const std::size_t k = std::min<std::size_t>(4, shape.size());
                for (std::size_t d = 0; d < k; ++d)
                    row[9 + 4 - k + d] =
                        std::log1p(static_cast<double>(std::max<std::int64_t>(0, shape[shape.size() - k + d])));
            }
            row[13] = std::log1p(live[i]);
            row[14] = std::log1p(static_cast<double>(mem.peak_activation_bytes));
            row[15] = std::log1p(static_cast<double>(mem.weight_bytes));
        }
        return out;
    }

    /// Encode graphs with the fitted standardisation and type vocabulary.
    std::vector<PerfSageGraph> encode(std::span<const graph::Graph* const> graphs, ThreadPool* pool = nullptr) const {
        std::vector<PerfSageGraph> out(graphs.size());
        const auto one = [&](std::size_t i) {
            if (!graphs[i]) raise<config_error>("PerfSageEstimator: graph ", i, " is null");
            const auto& g = *graphs[i];
            const auto raw = raw_node_features(g);
            auto& e = out[i];
            e.x.num_nodes = static_cast<int>(g.num_nodes());
            e.x.num_features = node_features;
            e.x.x.resize(raw.size());
            for (std::size_t k = 0; k < raw.size(); ++k) {
                const std::size_t j = k % node_features;
                e.x.x[k] = static_cast<float>((raw[k] - m_mean[j]) * m_scale[j]);
            }
            for (const auto& ed : g.edges()) e.x.edges.emplace_back(ed.src, ed.dst);
            e.types.resize(g.num_nodes());
            for (std::size_t v = 0; v < g.num_nodes(); ++v) e.types[v] = type_id(features::op_kind(g, g.nodes()[v]));
        };
        if (pool && pool->size() > 1 && graphs.size() > 1)
            pool->parallel_for(0, graphs.size(), one);
        else
            for (std::size_t i = 0; i < graphs.size(); ++i) one(i);
        return out;
    }

    FitResult fit(const train::TrainData& train, const train::TrainData& validation, const FitOptions& o) override {
        train::MultiTrainData t{train.graphs, {train.targets}, {"target"}, train.keep_alive};
        train::MultiTrainData v{validation.graphs, {validation.targets}, {"target"}, validation.keep_alive};
        if (validation.size() == 0) v.targets.clear();
        return fit_targets(t, v, o);
    }

    FitResult fit_targets(const train::MultiTrainData& train, const train::MultiTrainData& validation,
                          const FitOptions& o) override {
        const auto t0 = std::chrono::steady_clock::now();
        train::check_train_data(train, "PerfSageEstimator", "training");
        const bool has_val = validation.size() > 0;
        if (has_val) train::check_train_data(validation, "PerfSageEstimator", "validation");
        if (has_val && validation.targets.size() != train.targets.size())
            raise<config_error>("PerfSageEstimator: validation data has ", validation.targets.size(),
                                " targets, training data ", train.targets.size());
        const auto nt = train.targets.size();
        m_names = train.names.size() == nt ? train.names : std::vector<std::string>(nt, "target");
        m_precision = m_options.precision.value_or(nn::kernels::default_precision());
        m_threads = o.threads;
        prepare(train.graphs);
        m_target_scale.assign(nt, 1.0);
        for (std::size_t k = 0; k < nt; ++k) m_target_scale[k] = train::median_high(train.targets[k]);
        shape.types = std::max<int>(1, static_cast<int>(m_types.size()));
        shape.targets = static_cast<int>(nt);
        Rng rng(o.seed);
        m_model = std::make_unique<nn::PerfSageModel<float>>(shape, node_features, rng);
        ThreadPool pool(o.threads);
        const auto xt = encode(train.graphs, &pool);
        const auto xv = has_val ? encode(validation.graphs, &pool) : std::vector<PerfSageGraph>{};
        optim::AdamOptions ao;
        ao.lr = recipe.lr;
        optim::Adam<float> opt(m_model->parameters(), ao);
        train::EpochLoopOptions loop;
        loop.max_epochs = o.max_epochs > 0 ? o.max_epochs : recipe.max_epochs;
        loop.patience = o.patience > 0 ? o.patience : recipe.patience;
        loop.plateau_factor = recipe.plateau_factor;
        loop.plateau_patience = recipe.plateau_patience;
        const auto params = m_model->parameters();
        FitResult result;
        result.validation_metric =
            has_val ? "(1 - spearman) + (1 - within 10%), mean over targets" : "training loss (MAPE + alpha RMSE)";
        Rng shuffle(o.seed ^ 0x7065726673616765ULL);
        std::vector<std::size_t> order(xt.size());
        std::iota(order.begin(), order.end(), 0);
        const nn::kernels::PrecisionScope scope(m_precision);
        {  // data-dependent initialisation on (up to) the first 64 training graphs
            std::vector<std::size_t> first(std::min<std::size_t>(64, xt.size()));
            std::iota(first.begin(), first.end(), 0);
            build_batch(xt, first);
            nn::Context<float> ctx{&m_batch, false, nullptr, &pool, true};
            m_model->calibrate(m_batch_types, ctx);
        }
        const auto epoch = [&] {
            shuffle.shuffle(order.begin(), order.end());
            double total = 0;
            int steps = 0;
            for (std::size_t s = 0; s < order.size(); s += static_cast<std::size_t>(recipe.batch_size)) {
                const std::size_t e = std::min(order.size(), s + static_cast<std::size_t>(recipe.batch_size));
                std::vector<std::size_t> items(order.begin() + static_cast<std::ptrdiff_t>(s),
                                               order.begin() + static_cast<std::ptrdiff_t>(e));
                build_batch(xt, items);
                m_y.resize(static_cast<Index>(items.size()), static_cast<Index>(nt));
                for (std::size_t i = 0; i < items.size(); ++i)
                    for (std::size_t k = 0; k < nt; ++k)
                        m_y(static_cast<Index>(i), static_cast<Index>(k)) =
                            static_cast<float>(train.targets[k][items[i]] / m_target_scale[k]);
                nn::Context<float> ctx{&m_batch, true, &rng, &pool};
                opt.zero_grad();
                const Mat<float>& p = m_model->forward(m_batch_types, ctx);
                const float loss = nn::mape_rmse_loss(p, m_y, m_dpred, recipe.alpha);
                if (!std::isfinite(loss)) raise<error>("PerfSageEstimator: training diverged (loss ", loss, ")");
                m_model->backward(m_dpred, ctx);
                opt.step(&pool);
                total += loss;
                ++steps;
            }
            return steps ? total / steps : 0.0;
        };
        const auto score = [&](double loss) {
            if (!has_val) return loss;
            const auto p = predict_encoded(xv, &pool);
            double sum = 0;
            for (std::size_t k = 0; k < nt; ++k) sum += validation_score(p[k], validation.targets[k]);
            return sum / static_cast<double>(nt);
        };
        const auto run = train::run_epochs<float>(
            loop, params, epoch, score, [](int) { return std::string(); }, [&] { return opt.learning_rate(); },
            [&](double lr) { opt.set_learning_rate(lr); }, o.on_epoch);
        run.restore(params);
        result.epochs = run.epochs;
        result.best_validation = run.best_score;
        result.summary = dnncost::detail::concat("best epoch ", run.best_epoch + 1, " of ", result.epochs, ", ",
                                                 has_val ? "validation score " : "training loss ", run.best_score);
        result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        return result;
    }

    /// Predictions [target][graph] of encoded graphs, in the targets' units.
    std::vector<std::vector<double>> predict_encoded(const std::vector<PerfSageGraph>& x, ThreadPool* pool) const {
        if (!m_model) raise<config_error>("PerfSageEstimator::predict: not trained");
        const auto nt = m_target_scale.size();
        std::vector<std::vector<double>> out(nt, std::vector<double>(x.size()));
        const nn::kernels::PrecisionScope scope(m_precision);
        constexpr std::size_t chunk = 16;
        for (std::size_t s = 0; s < x.size(); s += chunk) {
            std::vector<std::size_t> items;
            for (std::size_t i = s; i < std::min(x.size(), s + chunk); ++i) items.push_back(i);
            build_batch(x, items);
            nn::Context<float> ctx{&m_batch, false, nullptr, pool, true};
            const Mat<float>& p = m_model->forward(m_batch_types, ctx);
            for (std::size_t i = 0; i < items.size(); ++i)
                for (std::size_t k = 0; k < nt; ++k)
                    out[k][items[i]] =
                        static_cast<double>(p(static_cast<Index>(i), static_cast<Index>(k))) * m_target_scale[k];
        }
        return out;
    }
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
    std::string serialize() const override {
        if (!m_model) raise<config_error>("PerfSageEstimator::serialize: not trained");
        io::BinaryWriter w;
        w.put_u32(1);  // payload layout version
        w.put_u32(static_cast<std::uint32_t>(m_precision));
        w.put_string_vector(m_types);
        w.put_string_vector(m_names);
        w.put_f64_vector(m_target_scale);
        w.put_f64_vector(m_mean);
        w.put_f64_vector(m_scale);
        const auto params = m_model->parameters();
        w.put_u64(params.size());
        for (const auto* p : params) {
            w.put_i64(p->value.rows());
            w.put_i64(p->value.cols());
            w.put_f32_vector(std::span<const float>(p->value.data(), static_cast<std::size_t>(p->value.size())));
        }
        return io::write_container(kind, config_hash(shape, recipe), w.bytes());
    }
    /// Inverse of serialize(). @throws parse_error naming `source`
    static std::unique_ptr<PerfSageEstimator> deserialize(std::string_view bytes, std::string_view source) {
        auto e = std::make_unique<PerfSageEstimator>();
        const auto c = io::read_container(bytes, kind, source);
        if (c.config_hash != config_hash(e->shape, e->recipe))
            raise<parse_error>(source, ": perfsage model saved with another configuration (hash mismatch)");
        io::BinaryReader r(c.payload, std::string(source));
        if (const auto v = r.get_u32("payload version"); v != 1) r.fail("unsupported payload version ", v);
        const auto p = r.get_u32("precision");
        if (p > static_cast<std::uint32_t>(nn::Precision::bf16)) r.fail("unknown GEMM precision code ", p);
        e->m_precision = static_cast<nn::Precision>(p);
        e->m_types = r.get_string_vector("operator kinds");
        if (!std::is_sorted(e->m_types.begin(), e->m_types.end())) r.fail("operator kinds not sorted");
        e->m_names = r.get_string_vector("target names");
        e->m_target_scale = r.get_finite_f64_vector("target scales");
        e->m_mean = r.get_finite_f64_vector("feature means");
        e->m_scale = r.get_finite_f64_vector("feature scales");
        const auto nt = e->m_target_scale.size();
        if (nt < 1 || nt > 16 || e->m_names.size() != nt) r.fail("corrupt target list (", nt, " scales)");
        for (double s : e->m_target_scale)
            if (!(s > 0)) r.fail("non-positive target scale");
        if (e->m_mean.size() != node_features || e->m_scale.size() != node_features)
            r.fail("corrupt feature standardisation");
        e->shape.types = std::max<int>(1, static_cast<int>(e->m_types.size()));
        e->shape.targets = static_cast<int>(nt);
        Rng rng(0);
        e->m_model = std::make_unique<nn::PerfSageModel<float>>(e->shape, node_features, rng);
        const auto params = e->m_model->parameters();
        if (const auto n = r.get_u64("parameter count"); n != params.size())
            r.fail("holds ", n, " parameter tensors, the model has ", params.size());
        for (auto* q : params) {
            const auto rows = r.get_i64("parameter rows"), cols = r.get_i64("parameter cols");
            if (rows != q->value.rows() || cols != q->value.cols())
                r.fail("parameter '", q->name, "' is ", rows, "x", cols, ", expected ", q->value.rows(), "x",
                       q->value.cols());
            const auto v = r.get_finite_f32_vector("parameter values");
            if (static_cast<Index>(v.size()) != q->value.size())
                r.fail("parameter '", q->name, "' has ", v.size(), " values");
            std::copy(v.begin(), v.end(), q->value.data());
        }
        r.expect_end("perfsage model");
        return e;
    }

private:
    static std::uint64_t config_hash(const nn::PerfSageShape& s, const PerfSageRecipe& t) {
        return io::fnv1a64(dnncost::detail::concat("perfsage;emb=", s.embedding, ";width=", s.width, ";depth=", s.depth,
                                                   ";head=", s.head_layers, "/", s.head_width, ";lr=", t.lr,
                                                   ";batch=", t.batch_size, ";alpha=", t.alpha));
    }
    /// Operator-kind vocabulary and feature standardisation from the training graphs.
    void prepare(std::span<const graph::Graph* const> graphs) {
        m_types.clear();
        for (const auto* g : graphs)
            for (const auto& n : g->nodes()) m_types.push_back(features::op_kind(*g, n));
        std::sort(m_types.begin(), m_types.end());
        m_types.erase(std::unique(m_types.begin(), m_types.end()), m_types.end());
        std::vector<double> sum(node_features, 0.0), sq(node_features, 0.0);
        double count = 0;
        for (const auto* g : graphs) {
            const auto raw = raw_node_features(*g);
            for (std::size_t k = 0; k < raw.size(); ++k) {
                sum[k % node_features] += raw[k];
                sq[k % node_features] += raw[k] * raw[k];
            }
            count += static_cast<double>(g->num_nodes());
        }
        if (count == 0) raise<config_error>("PerfSageEstimator: the training graphs have no nodes");
        m_mean.assign(node_features, 0.0);
        m_scale.assign(node_features, 1.0);
        for (int j = 0; j < node_features; ++j) {
            m_mean[static_cast<std::size_t>(j)] = sum[static_cast<std::size_t>(j)] / count;
            const double var =
                std::max(0.0, sq[static_cast<std::size_t>(j)] / count -
                                  m_mean[static_cast<std::size_t>(j)] * m_mean[static_cast<std::size_t>(j)]);
            m_scale[static_cast<std::size_t>(j)] = var > 1e-12 ? 1.0 / std::sqrt(var) : 1.0;
        }
    }
    int type_id(const std::string& kind) const {
        const auto it = std::lower_bound(m_types.begin(), m_types.end(), kind);
        if (it != m_types.end() && *it == kind) return static_cast<int>(it - m_types.begin());
        return std::max<int>(1, static_cast<int>(m_types.size()));  // unknown: TypedInput's mean slot
    }
    void build_batch(const std::vector<PerfSageGraph>& x, const std::vector<std::size_t>& items) const {
        m_ptrs.clear();
        m_batch_types.clear();
        for (auto i : items) {
            m_ptrs.push_back(&x[i].x);
            m_batch_types.insert(m_batch_types.end(), x[i].types.begin(), x[i].types.end());
        }
        m_batch.build(m_ptrs);
    }

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
/// The "perfsage" preset, registered by including this header (see preset_registry.hpp).
inline const bool perfsage_registered = [] {
    register_estimator(std::string(PerfSageEstimator::kind),
                       entry_of<PerfSageEstimator>(
                           [](PerfSageEstimator& e, const PresetSettings& s) { e.set_options({precision_setting(s)}); },
                           "PerfSAGE: per-operator-type input transform, 8 GraphSAGE (sum) layers, max readout, 4 FC "
                           "layers of 1024; several targets at once (MAPE + 10 RMSE)",
                           {precision_option}));
    return true;
}();
}  // namespace detail

}  // namespace dnncost::estimators
