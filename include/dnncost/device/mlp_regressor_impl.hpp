#pragma once
/// @file mlp_regressor_impl.hpp
/// The definitions of mlp_regressor.hpp: the network, its training and its payload. Compiled once
/// into dnncost::compiled in compiled mode (core/config.hpp), included by mlp_regressor.hpp in
/// header-only mode.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include <dnncost/core/config.hpp>
#include <dnncost/core/error.hpp>
#include <dnncost/core/rng.hpp>
#include <dnncost/device/mlp_regressor.hpp>
#include <dnncost/nn/activations.hpp>
#include <dnncost/nn/mlp.hpp>
#include <dnncost/nn/module.hpp>
#include <dnncost/optim/optimizer.hpp>
#include <dnncost/optim/schedule.hpp>

namespace dnncost::device {

DNNCOST_FUNC MlpRegressor::MlpRegressor(MlpRegressorOptions o) : m_o(std::move(o)) {
    for (auto h : m_o.hidden)
        if (h < 1) raise<config_error>("MlpRegressor: hidden width ", h, " is not positive");
    if (!(m_o.learning_rate > 0) || !(m_o.weight_decay >= 0))
        raise<config_error>("MlpRegressor: bad learning rate ", m_o.learning_rate, " or weight decay ",
                            m_o.weight_decay);
    if (m_o.batch_size < 1 || m_o.max_epochs < 1 || m_o.patience < 1 || m_o.lr_patience < 0)
        raise<config_error>("MlpRegressor: batch size, epochs and patience must be positive, got ", m_o.batch_size,
                            ", ", m_o.max_epochs, ", ", m_o.patience);
    if (!(m_o.validation_fraction > 0 && m_o.validation_fraction < 0.5))
        raise<config_error>("MlpRegressor: validation fraction ", m_o.validation_fraction, " outside (0, 0.5)");
}

DNNCOST_FUNC MlpRegressor::~MlpRegressor() = default;
DNNCOST_FUNC MlpRegressor::MlpRegressor(MlpRegressor&&) = default;
DNNCOST_FUNC MlpRegressor& MlpRegressor::operator=(MlpRegressor&&) = default;

DNNCOST_FUNC MlpRegressor MlpRegressor::load(std::string_view bytes, const std::string& source) {
    MlpRegressor r;
    r.restore(bytes, source);
    return r;
}

DNNCOST_FUNC void MlpRegressor::fit_log(const Mat<double>& x, const Eigen::VectorXd& log_y) {
    const Index n = x.rows(), d = x.cols();
    Rng rng(m_o.seed);
    std::vector<Index> order(static_cast<std::size_t>(n));
    std::iota(order.begin(), order.end(), Index{0});
    rng.shuffle(order.begin(), order.end());
    const Index n_val = std::max<Index>(2, static_cast<Index>(std::lround(m_o.validation_fraction * n)));
    const std::vector<Index> val(order.begin(), order.begin() + n_val);
    std::vector<Index> train(order.begin() + n_val, order.end());

    // the input transform and the scales come from the training part only
    m_log_column.assign(static_cast<std::size_t>(d), 1);
    for (Index j = 0; j < d; ++j)
        for (auto i : train)
            if (x(i, j) < 0) m_log_column[static_cast<std::size_t>(j)] = 0;
    m_mean = Eigen::RowVectorXd::Zero(d);
    m_scale = Eigen::RowVectorXd::Ones(d);
    const Mat<double> xt = transform(x);
    Eigen::RowVectorXd sum = Eigen::RowVectorXd::Zero(d), sq = Eigen::RowVectorXd::Zero(d);
    double ys = 0, yq = 0;
    for (auto i : train) {
        sum += xt.row(i);
        sq += xt.row(i).array().square().matrix();
        ys += log_y[i];
        yq += log_y[i] * log_y[i];
    }
    const double nt = static_cast<double>(train.size());
    m_mean = sum / nt;
    for (Index j = 0; j < d; ++j) {
        const double var = std::max(0.0, sq[j] / nt - m_mean[j] * m_mean[j]);
        m_scale[j] = var > 1e-24 ? std::sqrt(var) : 1.0;
    }
    m_y_mean = ys / nt;
    const double yvar = std::max(0.0, yq / nt - m_y_mean * m_y_mean);
    m_y_scale = yvar > 1e-24 ? std::sqrt(yvar) : 1.0;

    Mat<double> z = standardise(xt);
    Eigen::VectorXd target = (log_y.array() - m_y_mean) / m_y_scale;

    build(d, rng);
    auto params = m_net->parameters();
    optim::Adam<double> adam(
        params, {.lr = m_o.learning_rate, .weight_decay = m_o.weight_decay, .decoupled = m_o.weight_decay > 0});
    optim::EarlyStopping stop(m_o.patience);
    optim::ReduceLROnPlateau plateau(0.5, m_o.lr_patience, m_o.learning_rate * 1e-3);
    std::vector<Mat<double>> best;
    for (auto* p : params) best.push_back(p->value);

    Mat<double> xv(n_val, d), xb;
    Eigen::VectorXd yv(n_val);
    for (Index k = 0; k < n_val; ++k) {
        xv.row(k) = z.row(val[static_cast<std::size_t>(k)]);
        yv[k] = target[val[static_cast<std::size_t>(k)]];
    }
    Mat<double> dy;
    nn::Context<double> train_ctx{.training = true, .rng = &rng};
    for (int epoch = 0; epoch < m_o.max_epochs; ++epoch) {
        rng.shuffle(train.begin(), train.end());
        for (std::size_t s = 0; s < train.size(); s += static_cast<std::size_t>(m_o.batch_size)) {
            const auto b = static_cast<Index>(std::min(train.size() - s, static_cast<std::size_t>(m_o.batch_size)));
            xb.resize(b, d);
            dy.resize(b, 1);
            for (Index k = 0; k < b; ++k) xb.row(k) = z.row(train[s + static_cast<std::size_t>(k)]);
            adam.zero_grad();
            const Mat<double>& out = m_net->forward(xb, train_ctx);
            // gradient of the mean squared error in standardised log space
            for (Index k = 0; k < b; ++k)
                dy(k, 0) = 2.0 * (out(k, 0) - target[train[s + static_cast<std::size_t>(k)]]) / static_cast<double>(b);
            m_net->backward(dy, train_ctx);
            adam.step();
        }
        // validation error: mean |log error|, close to the relative error for small errors
        const Mat<double>& pv = m_net->forward(xv, infer_ctx());
        const double val_error = ((pv.col(0) - yv).array().abs() * m_y_scale).mean();
        if (!std::isfinite(val_error))
            raise<config_error>("MlpRegressor fit: training diverged at epoch ", epoch,
                                " (non-finite validation error); lower the learning rate");
        if (stop.update(val_error, epoch))
            for (std::size_t k = 0; k < params.size(); ++k) best[k] = params[k]->value;
        if (stop.should_stop()) break;
        adam.set_learning_rate(plateau.step(val_error, adam.learning_rate()));
    }
    for (std::size_t k = 0; k < params.size(); ++k) params[k]->value = best[k];
    m_best_epoch = stop.best_epoch();
}

DNNCOST_FUNC Eigen::VectorXd MlpRegressor::predict_log(const Mat<double>& x) const {
    const Mat<double> z = standardise(transform(x));
    const Mat<double>& out = m_net->forward(z, infer_ctx());
    return (out.col(0).array() * m_y_scale + m_y_mean).matrix();
}

DNNCOST_FUNC void MlpRegressor::save_model(io::BinaryWriter& w) const {
    w.put_i64_vector(std::vector<std::int64_t>(m_dims.begin(), m_dims.end()));
    w.put_i32(static_cast<std::int32_t>(m_o.activation));
    w.put_vector(std::span<const std::uint8_t>(m_log_column));
    w.put_f64_vector(std::span<const double>(m_mean.data(), static_cast<std::size_t>(m_mean.size())));
    w.put_f64_vector(std::span<const double>(m_scale.data(), static_cast<std::size_t>(m_scale.size())));
    w.put_f64(m_y_mean);
    w.put_f64(m_y_scale);
    w.put_i32(m_best_epoch);
    for (auto* p : m_net->parameters())
        w.put_f64_vector(std::span<const double>(p->value.data(), static_cast<std::size_t>(p->value.size())));
}

DNNCOST_FUNC void MlpRegressor::load_model(io::BinaryReader& r, std::size_t n_features) {
    const auto dims = r.get_i64_vector("mlp widths");
    if (dims.size() < 2 || dims.front() != static_cast<std::int64_t>(n_features) || dims.back() != 1)
        r.fail("mlp widths do not run from ", n_features, " features to one output");
    for (auto w : dims)
        if (w < 1 || w > (1 << 16)) r.fail("mlp width ", w, " is out of range");
    const auto act = r.get_i32("mlp activation");
    if (act < static_cast<int>(nn::Act::identity) || act > static_cast<int>(nn::Act::tanh))
        r.fail("mlp activation code ", act, " is unknown");
    m_o.activation = static_cast<nn::Act>(act);
    m_o.hidden.assign(dims.begin() + 1, dims.end() - 1);
    const auto logc = r.get_vector<std::uint8_t>("mlp log columns");
    const auto mean = r.get_finite_f64_vector("mlp feature means");
    const auto scale = r.get_finite_f64_vector("mlp feature scales");
    if (logc.size() != n_features || mean.size() != n_features || scale.size() != n_features)
        r.fail("mlp feature transform has ", logc.size(), "/", mean.size(), "/", scale.size(), " entries for ",
               n_features, " features");
    for (std::size_t j = 0; j < n_features; ++j)
        if (logc[j] > 1 || !(scale[j] > 0)) r.fail("mlp feature transform of column ", j, " is invalid");
    m_log_column = logc;
    m_mean = Eigen::Map<const Eigen::RowVectorXd>(mean.data(), static_cast<Index>(n_features));
    m_scale = Eigen::Map<const Eigen::RowVectorXd>(scale.data(), static_cast<Index>(n_features));
    m_y_mean = r.get_finite_f64("mlp target mean");
    m_y_scale = r.get_finite_f64("mlp target scale");
    if (!(m_y_scale > 0)) r.fail("mlp target scale ", m_y_scale, " is not positive");
    m_best_epoch = r.get_i32("mlp best epoch");
    Rng unused(0);
    build(static_cast<Index>(n_features), unused);
    for (auto* p : m_net->parameters()) {
        const auto v = r.get_finite_f64_vector("mlp parameter");
        if (static_cast<Index>(v.size()) != p->value.size())
            r.fail("mlp parameter '", p->name, "' has ", v.size(), " values, expected ", p->value.size());
        p->value = Eigen::Map<const Mat<double>>(v.data(), p->value.rows(), p->value.cols());
    }
}

DNNCOST_FUNC void MlpRegressor::build(Index d, Rng& rng) {
    m_dims.assign(1, d);
    m_dims.insert(m_dims.end(), m_o.hidden.begin(), m_o.hidden.end());
    m_dims.push_back(1);
    m_net = nn::make_mlp<double>(m_dims, m_o.activation, 0.0, rng);
}

DNNCOST_FUNC Mat<double> MlpRegressor::transform(const Mat<double>& x) const {
    Mat<double> t = x;
    for (Index j = 0; j < x.cols(); ++j) {
        if (!m_log_column[static_cast<std::size_t>(j)]) continue;
        for (Index i = 0; i < x.rows(); ++i)
            if (x(i, j) < 0)
                raise<config_error>("MlpRegressor predict: feature '", feature_name(j), "' of row ", i, " is ", x(i, j),
                                    "; it was never negative in training");
        t.col(j) = x.col(j).array().log1p().matrix();
    }
    return t;
}

DNNCOST_FUNC std::string MlpRegressor::feature_name(Index j) const {
    const auto& names = feature_names();
    return static_cast<std::size_t>(j) < names.size() ? names[static_cast<std::size_t>(j)] : std::to_string(j);
}

DNNCOST_FUNC Mat<double> MlpRegressor::standardise(const Mat<double>& t) const {
    return ((t.rowwise() - m_mean).array().rowwise() / m_scale.array()).matrix();
}

}  // namespace dnncost::device
