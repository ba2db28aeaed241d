#pragma once
/// @file additive_impl.hpp
/// The definitions of additive.hpp's AdditiveEstimator: compiled once into dnncost::compiled in compiled
/// mode (core/config.hpp), included by additive.hpp in header-only mode.
#include <dnncost/estimators/additive.hpp>

namespace dnncost::estimators {

DNNCOST_FUNC auto AdditiveEstimator::fit(const train::TrainData& train, const train::TrainData& validation,
                                         const FitOptions& options) -> FitResult {
    const auto start = std::chrono::steady_clock::now();
    train::check_train_data(train, "additive", "training", true);
    train::check_train_data(validation, "additive", "validation", true);
    if (train.size() < 2) raise<config_error>("additive: needs at least 2 training samples, got ", train.size());

    features::OpAggregates feats;
    feats.family_scaling = m_family_scaling;
    const Eigen::MatrixXd x = feats.standardise(feats.fit(train.graphs), true);
    const double y_scale =
        std::accumulate(train.targets.begin(), train.targets.end(), 0.0) / static_cast<double>(train.size());
    const Eigen::VectorXd y =
        Eigen::Map<const Eigen::VectorXd>(train.targets.data(), static_cast<Eigen::Index>(train.size())) / y_scale;
    // Items below this (scaled) value are "degenerate" (see train/metrics.hpp): they neither
    // drive the relative loss nor count in the selection score.
    const double degenerate = train::degenerate_threshold(train.targets) / y_scale;
    Eigen::MatrixXd x_val;
    Eigen::VectorXd y_val;
    if (validation.size() > 0) {
        x_val = feats.transform(validation.graphs, true);
        y_val =
            Eigen::Map<const Eigen::VectorXd>(validation.targets.data(), static_cast<Eigen::Index>(validation.size())) /
            y_scale;
    }
    const RidgeFit best = RidgeFit::select(x, y, validation.size() > 0 ? &x_val : nullptr,
                                           validation.size() > 0 ? &y_val : nullptr, degenerate, {}, m_signs);
    m_features = std::move(feats);
    m_intercept = best.beta(0);
    m_weights.assign(best.beta.data() + 1, best.beta.data() + best.beta.size());
    m_target_scale = y_scale;
    m_lambda = best.lambda;
    m_loss = best.loss;

    FitResult result;
    result.epochs = 1;
    result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    result.best_validation = best.score;
    result.validation_metric = validation.size() > 0 ? "validation MAPE" : "leave-one-out MAPE";
    if (options.on_epoch)
        options.on_epoch("additive: " + std::to_string(m_weights.size()) + " features, " + loss_name(m_loss) +
                         " loss, " + (best.nonnegative ? "non-negative" : "free") + " coefficients, lambda " +
                         fmt(m_lambda) + ", " + result.validation_metric + " " + fmt(result.best_validation));
    return result;
}

DNNCOST_FUNC auto AdditiveEstimator::compute(std::span<const graph::Graph* const> graphs) const
    -> std::vector<Prediction> {
    if (m_target_scale <= 0) raise<config_error>("additive: predict called before fit or load");
    std::vector<Prediction> out;
    out.reserve(graphs.size());
    for (const auto* g : graphs) {
        if (!g) raise<config_error>("additive: null graph passed to predict");
        const auto f = m_features.transform(*g);
        double value = m_intercept;
        for (std::size_t k = 0; k < f.size(); ++k) value += m_weights[k] * f[k];
        out.push_back({value * m_target_scale, 0.0});
    }
    return out;
}

DNNCOST_FUNC auto AdditiveEstimator::serialize() const -> std::string {
    io::BinaryWriter w;
    m_features.save(w);
    w.put_f64_vector(m_weights);
    w.put_f64(m_intercept);
    w.put_f64(m_target_scale);
    w.put_f64(m_lambda);
    w.put_u8(static_cast<std::uint8_t>(m_loss));
    w.put_bool(m_features.split_convs);  // last, so that files written before it still load
    return io::write_container(kind, io::fnv1a64(config), w.bytes());
}

DNNCOST_FUNC auto AdditiveEstimator::deserialize(std::string_view bytes, std::string_view source)
    -> std::unique_ptr<AdditiveEstimator> {
    const auto c = io::read_container(bytes, kind, source);
    if (c.config_hash != io::fnv1a64(config))
        raise<parse_error>(source, ": additive model written by an incompatible configuration (hash mismatch)");
    io::BinaryReader r(c.payload, std::string(source));
    auto m = std::make_unique<AdditiveEstimator>();
    m->m_features = features::OpAggregates::load(r);
    m->m_weights = r.get_finite_f64_vector("weights");
    m->m_intercept = r.get_finite_f64("intercept");
    m->m_target_scale = r.get_finite_f64("target scale");
    m->m_lambda = r.get_finite_f64("lambda");
    const auto loss = r.get_u8("loss");
    if (loss > 1) r.fail("unknown loss code ", int(loss));
    m->m_loss = static_cast<Loss>(loss);
    // models saved before op_kind() end here and count convolutions as one type
    m->m_features.split_convs = !r.at_end() && r.get_bool("split convolutions");
    r.expect_end("additive model");
    if (m->m_weights.size() != m->m_features.size())
        r.fail("inconsistent additive model: ", m->m_features.size(), " features but ", m->m_weights.size(),
               " weights");
    if (!(m->m_target_scale > 0)) r.fail("non-positive target scale");
    return m;
}

}  // namespace dnncost::estimators
