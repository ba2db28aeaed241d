#pragma once
/// @file adaptation_impl.hpp
/// The definitions of adaptation.hpp: compiled once into dnncost::compiled in compiled mode
/// (core/config.hpp), included by adaptation.hpp in header-only mode.
#include <dnncost/estimators/adaptation.hpp>

DNNCOST_FUNC auto dnncost::estimators::nb201_encoding(std::string_view arch) -> std::vector<double> {
    namespace nb = dnncost::nb201;
    const auto a = nb::parse(arch);
    std::vector<double> x(nb201_encoding_width, 0.0);
    for (int e = 0; e < nb::num_edges; ++e)
        x[static_cast<std::size_t>(e * nb::num_ops + static_cast<int>(a.ops[static_cast<std::size_t>(e)]))] = 1;
    const auto counts = nb::op_counts(a);
    for (int k = 0; k < nb::num_ops; ++k)
        x[static_cast<std::size_t>(nb::num_edges * nb::num_ops + k)] = counts[static_cast<std::size_t>(k)];
    return x;
}

DNNCOST_FUNC auto dnncost::estimators::aggregate_encoding(std::span<const graph::Graph* const> graphs)
    -> Eigen::MatrixXd {
    if (graphs.empty()) return {};
    std::vector<std::string> vocab;
    for (const auto* g : graphs)
        for (const auto& n : g->nodes()) vocab.push_back(n.op_type);
    std::sort(vocab.begin(), vocab.end());
    vocab.erase(std::unique(vocab.begin(), vocab.end()), vocab.end());
    Eigen::MatrixXd x(static_cast<Index>(graphs.size()),
                      static_cast<Index>(vocab.size()) * features::OpAggregates::per_type);
    for (std::size_t i = 0; i < graphs.size(); ++i) {
        const auto f = features::OpAggregates::raw(*graphs[i], vocab);
        for (std::size_t j = 0; j < f.size(); ++j) x(static_cast<Index>(i), static_cast<Index>(j)) = std::log1p(f[j]);
    }
    return x;
}

DNNCOST_FUNC auto dnncost::estimators::latency_descriptor(std::span<const double> reference_ms) -> std::vector<double> {
    if (reference_ms.empty()) raise<config_error>("latency_descriptor: no reference network");
    double mean = 0.0;
    for (double v : reference_ms) {
        if (!(v > 0) || !std::isfinite(v))
            raise<config_error>("latency_descriptor: reference latency ", v, " is not positive and finite");
        mean += std::log(v);
    }
    mean /= static_cast<double>(reference_ms.size());
    std::vector<double> h{mean};
    for (double v : reference_ms) h.push_back(std::log(v) - mean);
    return h;
}

DNNCOST_FUNC auto dnncost::estimators::choose_shots(std::span<const std::size_t> candidates,
                                                    std::span<const double> proxy, std::size_t shots,
                                                    train::Sampling sampling, std::uint64_t seed)
    -> std::vector<std::size_t> {
    check_shot_candidates(candidates.size(), shots);
    std::vector<double> p;
    if (sampling == train::Sampling::uniform) {
        p.reserve(candidates.size());
        for (auto r : candidates) p.push_back(proxy[r]);
    }
    const auto split = train::make_split(candidates.size(), {shots, 0, 0, sampling, seed}, p);
    std::vector<std::size_t> out;
    for (auto i : split.train) out.push_back(candidates[i]);
    std::sort(out.begin(), out.end());
    return out;
}

DNNCOST_FUNC auto dnncost::estimators::shots_only_ridge(std::span<const std::string> shot_archs,
                                                        std::span<const double> shot_ms,
                                                        std::span<const std::string> archs) -> std::vector<double> {
    namespace nb = dnncost::nb201;
    if (shot_archs.size() < 2 || shot_archs.size() != shot_ms.size())
        raise<config_error>("shots_only_ridge: needs at least 2 shots with one latency each, got ", shot_archs.size(),
                            " and ", shot_ms.size());
    const auto row = [](const std::string& a) {
        const auto c = nb::op_counts(nb::parse(a));
        Eigen::RowVectorXd r(1 + nb::num_ops);
        r(0) = 1;
        for (int k = 0; k < nb::num_ops; ++k) r(1 + k) = c[static_cast<std::size_t>(k)];
        return r;
    };
    const Index n = static_cast<Index>(shot_archs.size());
    Eigen::MatrixXd x(n, 1 + nb::num_ops);
    Eigen::VectorXd y(n);
    for (Index i = 0; i < n; ++i) {
        x.row(i) = row(shot_archs[static_cast<std::size_t>(i)]);
        y(i) = shot_ms[static_cast<std::size_t>(i)];
    }
    const double scale = y.mean();
    const double degenerate = train::degenerate_threshold(shot_ms) / scale;
    const auto fit = RidgeFit::select(x, y / scale, nullptr, nullptr, degenerate);
    std::vector<double> out;
    out.reserve(archs.size());
    for (const auto& a : archs) out.push_back(row(a).dot(fit.beta) * scale);
    return out;
}

DNNCOST_FUNC auto dnncost::estimators::shots_only_linear_ridge(const Eigen::MatrixXd& shot_features,
                                                               std::span<const double> shot_ms,
                                                               const Eigen::MatrixXd& features) -> std::vector<double> {
    const Index n = shot_features.rows(), p = shot_features.cols();
    if (n < 2 || static_cast<std::size_t>(n) != shot_ms.size() || features.cols() != p)
        raise<config_error>("shots_only_linear_ridge: ", n, " shots, ", shot_ms.size(), " latencies, ", p, " and ",
                            features.cols(), " features");
    Eigen::RowVectorXd scale = shot_features.array().square().colwise().mean().sqrt();
    for (Index j = 0; j < p; ++j)
        if (!(scale(j) > 0)) scale(j) = 1.0;
    const auto design = [&](const Eigen::MatrixXd& f) {
        Eigen::MatrixXd x(f.rows(), p + 1);
        x.col(0).setOnes();
        x.rightCols(p) = f.array().rowwise() / scale.array();
        return x;
    };
    const Eigen::Map<const Eigen::VectorXd> y(shot_ms.data(), n);
    const double y_scale = y.mean();
    const auto fit = RidgeFit::select(design(shot_features), y / y_scale, nullptr, nullptr,
                                      train::degenerate_threshold(shot_ms) / y_scale);
    const Eigen::VectorXd pred = design(features) * fit.beta * y_scale;
    return {pred.data(), pred.data() + pred.size()};
}

// ------------------------------------------------------------------ MapleEdge

DNNCOST_FUNC void dnncost::estimators::MapleEdge::fit(const Eigen::MatrixXd& encoding, const Eigen::MatrixXd& pool,
                                                      std::span<const std::size_t> shots,
                                                      std::span<const double> shot_ms, const AdaptationOptions& o) {
    const Index n = encoding.rows();
    if (pool.rows() != n || pool.cols() < 1)
        raise<config_error>("MapleEdge: ", pool.rows(), " pool rows x ", pool.cols(), " devices for ", n,
                            " encoded networks");
    if (shots.empty() || shots.size() != shot_ms.size())
        raise<config_error>("MapleEdge: ", shots.size(), " shots with ", shot_ms.size(), " latencies");
    if (o.clones < 1 || o.epochs < 1 || o.batch_size < 1 || !(o.lr > 0) || o.hidden.empty())
        raise<config_error>("MapleEdge: bad options (clones, epochs, batch size >= 1, lr > 0, a hidden layer)");
    for (auto s : shots)
        if (static_cast<Index>(s) >= n) raise<config_error>("MapleEdge: shot row ", s, " out of range");
    if (!(pool.array() > 0).all() || !pool.allFinite())
        raise<config_error>("MapleEdge: pool latencies must be positive and finite");

    m_reference.assign(shots.begin(), shots.end());
    m_target_descriptor = latency_descriptor(shot_ms);
    std::vector<std::vector<double>> pool_descriptor;
    for (Index d = 0; d < pool.cols(); ++d) pool_descriptor.push_back(descriptor_of(pool.col(d)));

    Rng rng(o.seed);
    // the pool rows: pool_networks random networks per device, plus the shots on every device
    std::vector<std::pair<std::size_t, Index>> rows;  // (network, device; -1 the new device)
    std::vector<double> y;
    for (Index d = 0; d < pool.cols(); ++d) {
        std::vector<std::size_t> order(static_cast<std::size_t>(n));
        std::iota(order.begin(), order.end(), std::size_t{0});
        rng.shuffle(order.begin(), order.end());
        const std::size_t take = o.pool_networks == 0 ? order.size() : std::min(order.size(), o.pool_networks);
        for (std::size_t k = 0; k < take; ++k) {
            rows.emplace_back(order[k], d);
            y.push_back(std::log(pool(static_cast<Index>(order[k]), d)));
        }
    }
    for (int c = 0; c < o.clones; ++c)
        for (std::size_t s = 0; s < shots.size(); ++s) {
            if (!(shot_ms[s] > 0) || !std::isfinite(shot_ms[s]))
                raise<config_error>("MapleEdge: shot latency ", shot_ms[s], " is not positive and finite");
            rows.emplace_back(shots[s], -1);
            y.push_back(std::log(shot_ms[s]));
        }

    const Index width = encoding.cols() + static_cast<Index>(m_target_descriptor.size());
    Eigen::MatrixXd x(static_cast<Index>(rows.size()), width);
    for (std::size_t r = 0; r < rows.size(); ++r) {
        const auto& h =
            rows[r].second < 0 ? m_target_descriptor : pool_descriptor[static_cast<std::size_t>(rows[r].second)];
        x.row(static_cast<Index>(r)) << encoding.row(static_cast<Index>(rows[r].first)),
            Eigen::Map<const Eigen::RowVectorXd>(h.data(), static_cast<Index>(h.size()));
    }
    m_mean = x.colwise().mean();
    m_scale = ((x.rowwise() - m_mean).array().square().colwise().mean()).sqrt();
    for (Index j = 0; j < m_scale.size(); ++j)
        if (!(m_scale(j) > 1e-12)) m_scale(j) = 1.0;
    const Eigen::Map<const Eigen::VectorXd> yv(y.data(), static_cast<Index>(y.size()));
    m_y_mean = yv.mean();
    m_y_scale = std::sqrt((yv.array() - m_y_mean).square().mean());
    if (!(m_y_scale > 1e-12)) m_y_scale = 1.0;

    Mat<double> xs = ((x.rowwise() - m_mean).array().rowwise() / m_scale.array()).matrix();
    Mat<double> ys = ((yv.array() - m_y_mean) / m_y_scale).matrix();
    std::vector<Index> dims{width};
    for (int h : o.hidden) dims.push_back(h);
    dims.push_back(1);
    m_net = nn::make_mlp<double>(dims, nn::Act::relu, 0.0, rng);
    std::vector<nn::Parameter<double>*> params;
    m_net->collect_parameters(params);
    optim::Adam<double> adam(params, {.lr = o.lr});

    std::vector<Index> order(static_cast<std::size_t>(xs.rows()));
    std::iota(order.begin(), order.end(), Index{0});
    Mat<double> xb, yb, grad;
    const nn::Context<double> ctx{nullptr, true, &rng, nullptr, false};
    for (int epoch = 0; epoch < o.epochs; ++epoch) {
        // cosine decay: the last epochs settle instead of jumping around the minimum
        adam.set_learning_rate(o.lr * 0.5 * (1 + std::cos(3.141592653589793 * epoch / o.epochs)) + 1e-6);
        rng.shuffle(order.begin(), order.end());
        for (std::size_t s = 0; s < order.size(); s += static_cast<std::size_t>(o.batch_size)) {
            const auto e = std::min(order.size(), s + static_cast<std::size_t>(o.batch_size));
            xb.resize(static_cast<Index>(e - s), xs.cols());
            yb.resize(static_cast<Index>(e - s), 1);
            for (std::size_t k = s; k < e; ++k) {
                xb.row(static_cast<Index>(k - s)) = xs.row(order[k]);
                yb(static_cast<Index>(k - s), 0) = ys(order[k], 0);
            }
            adam.zero_grad();
            const auto& p = m_net->forward(xb, ctx);
            (void)nn::mse_loss(p, yb, grad);
            m_net->backward(grad, ctx);
            adam.step();
        }
    }
    const auto shot_begin = static_cast<Index>(rows.size() - shots.size() * static_cast<std::size_t>(o.clones));
    if (o.finetune_epochs > 0) {
        const Mat<double> xf = xs.bottomRows(xs.rows() - shot_begin), yf = ys.bottomRows(ys.rows() - shot_begin);
        adam.set_learning_rate(o.lr * 0.1);
        for (int epoch = 0; epoch < o.finetune_epochs; ++epoch) {
            adam.zero_grad();
            const auto& p = m_net->forward(xf, ctx);
            (void)nn::mse_loss(p, yf, grad);
            m_net->backward(grad, ctx);
            adam.step();
        }
    }
    m_shift = 0.0;
    m_pool_descriptors = pool_descriptor;
    m_stack.resize(0);
    if (o.stack) {
        Eigen::MatrixXd shot_encoding(static_cast<Index>(shots.size()), encoding.cols());
        for (std::size_t s = 0; s < shots.size(); ++s)
            shot_encoding.row(static_cast<Index>(s)) = encoding.row(static_cast<Index>(shots[s]));
        const Eigen::MatrixXd f = stack_features(shot_encoding);
        const Eigen::Map<const Eigen::VectorXd> y_ms(shot_ms.data(), static_cast<Index>(shot_ms.size()));
        const double scale = y_ms.mean();
        const auto fit =
            RidgeFit::select(f / scale, y_ms / scale, nullptr, nullptr, train::degenerate_threshold(shot_ms) / scale);
        m_stack = fit.beta;
        m_stack(0) *= scale;  // the intercept column is 1, not 1 / scale
    }
    if (o.calibrate) {
        const nn::Context<double> infer{nullptr, false, nullptr, nullptr, true};
        const Mat<double> xf = xs.bottomRows(static_cast<Index>(shots.size()));
        const auto& p = m_net->forward(xf, infer);
        for (Index i = 0; i < p.rows(); ++i)
            m_shift += (ys(ys.rows() - p.rows() + i, 0) - p(i, 0)) * m_y_scale / static_cast<double>(p.rows());
    }
}

DNNCOST_FUNC std::vector<double> dnncost::estimators::MapleEdge::predict(const Eigen::MatrixXd& encoding) const {
    if (m_stack.size() == 0) return predict_with(encoding, m_target_descriptor);
    const Eigen::VectorXd p = stack_features(encoding) * m_stack;
    return {p.data(), p.data() + p.size()};
}

DNNCOST_FUNC std::vector<double> dnncost::estimators::MapleEdge::predict_for(
    const Eigen::MatrixXd& encoding, std::span<const double> reference_ms) const {
    return predict_with(encoding, latency_descriptor(reference_ms));
}

DNNCOST_FUNC Eigen::MatrixXd dnncost::estimators::MapleEdge::stack_features(const Eigen::MatrixXd& encoding) const {
    Eigen::MatrixXd f(encoding.rows(), 2 + static_cast<Index>(m_pool_descriptors.size()));
    f.col(0).setOnes();
    const auto put = [&](Index c, const std::vector<double>& h) {
        const auto p = predict_with(encoding, h);
        for (Index i = 0; i < f.rows(); ++i) f(i, c) = p[static_cast<std::size_t>(i)];
    };
    put(1, m_target_descriptor);
    for (std::size_t d = 0; d < m_pool_descriptors.size(); ++d) put(2 + static_cast<Index>(d), m_pool_descriptors[d]);
    return f;
}

DNNCOST_FUNC std::vector<double> dnncost::estimators::MapleEdge::descriptor_of(const Eigen::VectorXd& column) const {
    std::vector<double> ref;
    for (auto r : m_reference) ref.push_back(column(static_cast<Index>(r)));
    return latency_descriptor(ref);
}

DNNCOST_FUNC std::vector<double> dnncost::estimators::MapleEdge::predict_with(const Eigen::MatrixXd& encoding,
                                                                              const std::vector<double>& h) const {
    if (!m_net) raise<config_error>("MapleEdge: predict called before fit");
    const Index width = encoding.cols() + static_cast<Index>(h.size());
    if (width != m_mean.size())
        raise<shape_error>("MapleEdge: ", encoding.cols(), " encoding features, the model was fitted on ",
                           m_mean.size() - static_cast<Index>(h.size()));
    Mat<double> x(encoding.rows(), width);
    const Eigen::Map<const Eigen::RowVectorXd> hv(h.data(), static_cast<Index>(h.size()));
    for (Index i = 0; i < encoding.rows(); ++i) x.row(i) << encoding.row(i), hv;
    x = ((x.rowwise() - m_mean).array().rowwise() / m_scale.array()).matrix();
    const nn::Context<double> ctx{nullptr, false, nullptr, nullptr, true};
    const auto& p = m_net->forward(x, ctx);
    std::vector<double> out(static_cast<std::size_t>(p.rows()));
    for (Index i = 0; i < p.rows(); ++i)
        out[static_cast<std::size_t>(i)] = std::exp(p(i, 0) * m_y_scale + m_y_mean + m_shift);
    return out;
}
