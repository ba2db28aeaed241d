#pragma once
/// @file perfsage_impl.hpp
/// The definitions of perfsage.hpp's PerfSageEstimator: compiled once into dnncost::compiled in compiled
/// mode (core/config.hpp), included by perfsage.hpp in header-only mode.
#include <dnncost/estimators/perfsage.hpp>

namespace dnncost::estimators {

DNNCOST_FUNC auto PerfSageEstimator::raw_node_features(const graph::Graph& g) -> std::vector<double> {
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

DNNCOST_FUNC auto PerfSageEstimator::encode(std::span<const graph::Graph* const> graphs, ThreadPool* pool) const
    -> std::vector<PerfSageGraph> {
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

DNNCOST_FUNC auto PerfSageEstimator::fit_targets(const train::MultiTrainData& train,
                                                 const train::MultiTrainData& validation, const FitOptions& o)
    -> FitResult {
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
    for (std::size_t k = 0; k < nt; ++k) m_target_scale[k] = median_high(train.targets[k]);
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
    result.summary = dnncost::concat("best epoch ", run.best_epoch + 1, " of ", result.epochs, ", ",
                                             has_val ? "validation score " : "training loss ", run.best_score);
    result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return result;
}

DNNCOST_FUNC auto PerfSageEstimator::predict_encoded(const std::vector<PerfSageGraph>& x, ThreadPool* pool) const
    -> std::vector<std::vector<double>> {
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

DNNCOST_FUNC auto PerfSageEstimator::serialize() const -> std::string {
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

DNNCOST_FUNC auto PerfSageEstimator::deserialize(std::string_view bytes, std::string_view source)
    -> std::unique_ptr<PerfSageEstimator> {
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

DNNCOST_FUNC auto PerfSageEstimator::prepare(std::span<const graph::Graph* const> graphs) -> void {
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
        const double var = std::max(0.0, sq[static_cast<std::size_t>(j)] / count -
                                             m_mean[static_cast<std::size_t>(j)] * m_mean[static_cast<std::size_t>(j)]);
        m_scale[static_cast<std::size_t>(j)] = var > 1e-12 ? 1.0 / std::sqrt(var) : 1.0;
    }
}

DNNCOST_FUNC auto PerfSageEstimator::build_batch(const std::vector<PerfSageGraph>& x,
                                                 const std::vector<std::size_t>& items) const -> void {
    m_ptrs.clear();
    m_batch_types.clear();
    for (auto i : items) {
        m_ptrs.push_back(&x[i].x);
        m_batch_types.insert(m_batch_types.end(), x[i].types.begin(), x[i].types.end());
    }
    m_batch.build(m_ptrs);
}

}  // namespace dnncost::estimators
