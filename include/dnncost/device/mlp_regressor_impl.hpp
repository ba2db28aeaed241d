#pragma once
/// @file mlp_regressor_impl.hpp
/// The definitions of mlp_regressor.hpp: the forward pass and the payload (its training is in
/// device_model_training.hpp). Compiled once into dnncost::compiled in compiled mode
/// (core/config.hpp), included by mlp_regressor.hpp in header-only mode.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <dnncost/core/config.hpp>
#include <dnncost/core/error.hpp>
#include <dnncost/device/mlp_regressor.hpp>
#include <dnncost/nn/activation_functions.hpp>

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

DNNCOST_FUNC MlpRegressor MlpRegressor::load(std::string_view bytes, const std::string& source) {
    MlpRegressor r;
    r.restore(bytes, source);
    return r;
}

DNNCOST_FUNC void MlpRegressor::fit_log(const Mat<double>& x, const Eigen::VectorXd& log_y) {
    detail::run_tabular_fitting(*this, x, log_y);
}

DNNCOST_FUNC Eigen::VectorXd MlpRegressor::predict_log(const Mat<double>& x) const {
    // the trained nn::Sequential's layers and activations; a coefficient-wise product (the matrices
    // are a few dozen wide) rather than Eigen's blocked GEMM, which a program that prices would
    // otherwise compile for this alone: the same figures to rounding
    Mat<double> h = standardise(transform(x)), y;
    const std::size_t layers = m_params.size() / 2;
    for (std::size_t l = 0; l < layers; ++l) {
        y.noalias() = h.lazyProduct(m_params[2 * l]);
        y.rowwise() += m_params[2 * l + 1].row(0);
        if (l + 1 < layers)
            nn::with_activation(m_o.activation, [&]<class P>() { nn::apply_activation<P>(y, h); });
        else
            h.swap(y);
    }
    return (h.col(0).array() * m_y_scale + m_y_mean).matrix();
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
    for (const auto& p : m_params) w.put_f64_vector(std::span<const double>(p.data(), static_cast<std::size_t>(p.size())));
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
    set_dims(static_cast<Index>(n_features));
    m_params.clear();
    for (std::size_t l = 0; l + 1 < m_dims.size(); ++l)
        for (const bool bias : {false, true}) {
            const Index rows = bias ? 1 : m_dims[l], cols = m_dims[l + 1];
            const auto v = r.get_finite_f64_vector("mlp parameter");
            if (static_cast<Index>(v.size()) != rows * cols)
                r.fail("mlp layer ", l, bias ? " bias" : " weight", " has ", v.size(), " values, expected ",
                       rows * cols);
            m_params.emplace_back(Eigen::Map<const Mat<double>>(v.data(), rows, cols));
        }
}

DNNCOST_FUNC void MlpRegressor::set_dims(Index d) {
    m_dims.assign(1, d);
    m_dims.insert(m_dims.end(), m_o.hidden.begin(), m_o.hidden.end());
    m_dims.push_back(1);
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
