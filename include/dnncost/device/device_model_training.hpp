#pragma once
/// @file device_model_training.hpp
/// The fitting of a device model: its per-kernel regressors (the MLP's epochs, the trees' boosting
/// through XGBoost, the roofline forms) and its fit to whole networks (DeviceModel::fit: the sample
/// boundary, the scale, and the graph-level residual, whose training, a GNN's, is compiled only
/// where kernel_residual_training.hpp is included: a header-only program that fits a residual
/// includes it too).
///
/// Kept out of the regressors' and the model's headers so that a program that only prices with
/// saved device models does not compile any of it. Where this header is included, it registers the
/// fitting; fitting a regressor or a device model in a program that never includes it raises
/// config_error naming this header. device_build.hpp includes it; so does the compiled library, and
/// in compiled mode (core/config.hpp) this header declares nothing.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <Eigen/Cholesky>
#include <Eigen/Core>

#include <dnncost/core/config.hpp>
#include <dnncost/core/error.hpp>
#include <dnncost/core/matrix.hpp>
#include <dnncost/core/rng.hpp>
#include <dnncost/device/device_model.hpp>
#include <dnncost/device/mlp_regressor.hpp>
#include <dnncost/device/roofline_base_fit.hpp>
#include <dnncost/device/roofline_regressor.hpp>
#include <dnncost/device/sample_boundary.hpp>
#include <dnncost/device/tabular_regressor.hpp>
#include <dnncost/nn/mlp.hpp>
#include <dnncost/nn/module.hpp>
#include <dnncost/optim/optimizer.hpp>
#include <dnncost/optim/schedule.hpp>
#if defined(DNNCOST_HAS_XGBOOST)
#include <xgboost/c_api.h>

#include <dnncost/device/gbt_regressor.hpp>
#endif

#if DNNCOST_HEADER_ONLY
namespace dnncost::device {

DNNCOST_FUNC void MlpRegressor::fit_log_impl(const Mat<double>& x, const Eigen::VectorXd& log_y) {
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

    set_dims(d);
    const auto net = nn::make_mlp<double>(m_dims, m_o.activation, 0.0, rng);
    const nn::Context<double> infer_ctx{.training = false, .no_grad = true};
    auto params = net->parameters();
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
            const Mat<double>& out = net->forward(xb, train_ctx);
            // gradient of the mean squared error in standardised log space
            for (Index k = 0; k < b; ++k)
                dy(k, 0) = 2.0 * (out(k, 0) - target[train[s + static_cast<std::size_t>(k)]]) / static_cast<double>(b);
            net->backward(dy, train_ctx);
            adam.step();
        }
        // validation error: mean |log error|, close to the relative error for small errors
        const Mat<double>& pv = net->forward(xv, infer_ctx);
        const double val_error = ((pv.col(0) - yv).array().abs() * m_y_scale).mean();
        if (!std::isfinite(val_error))
            raise<config_error>("MlpRegressor fit: training diverged at epoch ", epoch,
                                " (non-finite validation error); lower the learning rate");
        if (stop.update(val_error, epoch))
            for (std::size_t k = 0; k < params.size(); ++k) best[k] = params[k]->value;
        if (stop.should_stop()) break;
        adam.set_learning_rate(plateau.step(val_error, adam.learning_rate()));
    }
    m_params = std::move(best);
    m_best_epoch = stop.best_epoch();
}

DNNCOST_FUNC void RooflineRegressor::fit_log_impl(const Mat<double>& x, const Eigen::VectorXd& log_y) {
    const auto& names = feature_names();
    const auto column = [&](const std::string& name) -> std::int64_t {
        const auto it = std::find(names.begin(), names.end(), name);
        return it == names.end() ? -1 : static_cast<std::int64_t>(it - names.begin());
    };
    m_flops_column = m_o.flops_feature.empty() ? -1 : column(m_o.flops_feature);
    m_bytes_columns.clear();
    for (const auto& group : m_o.bytes_features) {
        std::vector<std::int64_t> cols;
        for (const auto& b : group)
            if (const auto c = column(b); c >= 0) cols.push_back(c);
        if (!cols.empty()) m_bytes_columns.push_back(std::move(cols));
    }
    if (m_flops_column < 0 && m_bytes_columns.empty())
        raise<config_error>("roofline regressor fit: the features have neither '", m_o.flops_feature,
                            "' nor any of the bytes features");
    std::vector<double> flops, ms;
    Mat<double> bytes(x.rows(), static_cast<Index>(m_bytes_columns.size()));
    Bytes b{};
    for (Index i = 0; i < x.rows(); ++i) {
        flops.push_back(work(x, i, b));
        for (Index j = 0; j < bytes.cols(); ++j) bytes(i, j) = b[static_cast<std::size_t>(j)];
        ms.push_back(std::exp(log_y[i]));
    }
    m_base = fit_roofline_base(flops, bytes, ms).base;
    std::vector<double> ratio;
    m_corr_lo = std::numeric_limits<double>::infinity();
    m_corr_hi = -m_corr_lo;
    for (Index i = 0; i < x.rows(); ++i) {
        const double c = log_y[i] - log_base(x, i);
        m_corr_lo = std::min(m_corr_lo, c);
        m_corr_hi = std::max(m_corr_hi, c);
        ratio.push_back(std::exp(c));
    }
    m_box_lo = x.colwise().minCoeff();
    m_box_hi = x.colwise().maxCoeff();
    m_correction->fit(x, ratio, names);
}

#if defined(DNNCOST_HAS_XGBOOST)
DNNCOST_FUNC void GbtRegressor::fit_log_impl(const Mat<double>& x, const Eigen::VectorXd& log_y) {
    const Index n = x.rows();
    Rng rng(m_o.seed);
    std::vector<Index> order(static_cast<std::size_t>(n));
    std::iota(order.begin(), order.end(), Index{0});
    rng.shuffle(order.begin(), order.end());
    const auto n_val = static_cast<std::size_t>(
        std::max<Index>(2, static_cast<Index>(std::lround(m_o.validation_fraction * static_cast<double>(n)))));
    const std::span<const Index> val(order.data(), n_val), train(order.data() + n_val, order.size() - n_val);
    m_base.resize(0);
    if (m_o.linear_base) m_base = fit_linear_base(x, log_y, train);
    const Eigen::VectorXd trend = linear_base(x);
    auto labels = [&](std::span<const Index> rows) {
        std::vector<float> y;
        for (auto i : rows) y.push_back(static_cast<float>(log_y[i] - trend[i]));
        return y;
    };
    auto dtrain = detail::xgb_matrix(x, train), dval = detail::xgb_matrix(x, val);
    const auto ytrain = labels(train), yval = labels(val);
    detail::xgb_check(XGDMatrixSetFloatInfo(dtrain.get(), "label", ytrain.data(), ytrain.size()),
                      "XGDMatrixSetFloatInfo");
    detail::xgb_check(XGDMatrixSetFloatInfo(dval.get(), "label", yval.data(), yval.size()), "XGDMatrixSetFloatInfo");
    const double base = std::accumulate(ytrain.begin(), ytrain.end(), 0.0) / static_cast<double>(ytrain.size());

    DMatrixHandle both[2] = {dtrain.get(), dval.get()};
    BoosterHandle h = nullptr;
    detail::xgb_check(XGBoosterCreate(both, 2, &h), "XGBoosterCreate");
    detail::XgbBooster booster(h);
    set_params(h, base);

    DMatrixHandle eval_set[1] = {dval.get()};
    const char* eval_names[1] = {"val"};
    double best = std::numeric_limits<double>::infinity();
    int best_round = 0;
    for (int round = 0; round < m_o.max_rounds; ++round) {
        detail::xgb_check(XGBoosterUpdateOneIter(h, round, dtrain.get()), "XGBoosterUpdateOneIter");
        const char* result = nullptr;
        detail::xgb_check(XGBoosterEvalOneIter(h, round, eval_set, eval_names, 1, &result), "XGBoosterEvalOneIter");
        const double err = parse_eval(result);
        if (err < best) {
            best = err;
            best_round = round;
        } else if (round - best_round >= m_o.early_stopping_rounds) {
            break;
        }
    }
    int done = 0;
    detail::xgb_check(XGBoosterBoostedRounds(h, &done), "XGBoosterBoostedRounds");
    if (best_round + 1 < done) {
        BoosterHandle cut = nullptr;
        detail::xgb_check(XGBoosterSlice(h, 0, best_round + 1, 1, &cut), "XGBoosterSlice");
        booster.reset(cut);
    }
    m_booster = std::move(booster);
    m_rounds = best_round + 1;
    read_trees(&x);
}

DNNCOST_FUNC Eigen::VectorXd GbtRegressor::fit_linear_base(const Mat<double>& x, const Eigen::VectorXd& log_y,
                                                           std::span<const Index> rows) const {
    const Index p = x.cols();
    const auto n = static_cast<Index>(rows.size());
    std::vector<char> used(static_cast<std::size_t>(p), 0);
    const auto& names = feature_names();
    for (Index j = 0; j < p; ++j)
        used[static_cast<std::size_t>(j)] = std::find(m_o.linear_features.begin(), m_o.linear_features.end(),
                                                      names[static_cast<std::size_t>(j)]) != m_o.linear_features.end();
    if (std::none_of(used.begin(), used.end(), [](char u) { return u != 0; })) std::fill(used.begin(), used.end(), 1);
    Mat<double> z(n, p);
    Eigen::VectorXd y(n);
    for (Index r = 0; r < n; ++r) {
        z.row(r) = x.row(rows[static_cast<std::size_t>(r)]);
        y[r] = log_y[rows[static_cast<std::size_t>(r)]];
    }
    const Eigen::RowVectorXd mean = z.colwise().mean();
    z.rowwise() -= mean;
    Eigen::RowVectorXd scale = (z.colwise().squaredNorm() / static_cast<double>(n)).cwiseSqrt();
    for (Index j = 0; j < p; ++j) scale[j] = scale[j] > 1e-12 && used[static_cast<std::size_t>(j)] ? scale[j] : 0.0;
    for (Index j = 0; j < p; ++j)
        z.col(j) = scale[j] > 0 ? Eigen::VectorXd(z.col(j) / scale[j]) : Eigen::VectorXd::Zero(n);
    const double y_mean = y.mean();
    Mat<double> a = z.transpose() * z;
    a.diagonal().array() += m_o.linear_ridge;
    const Eigen::VectorXd w_std = a.ldlt().solve(z.transpose() * (y.array() - y_mean).matrix());
    Eigen::VectorXd w(p + 1);
    double intercept = y_mean;
    for (Index j = 0; j < p; ++j) {
        w[j] = scale[j] > 0 ? w_std[j] / scale[j] : 0.0;
        intercept -= w[j] * mean[j];
    }
    w[p] = intercept;
    if (!w.allFinite()) raise<config_error>("GbtRegressor: the linear base has non-finite coefficients");
    return w;
}
#endif

DNNCOST_FUNC estimators::FitResult DeviceModel::fit_impl(const train::TrainData& train,
                                                         const train::TrainData& validation,
                                                         const estimators::FitOptions& options) {
    if (m_kinds.empty())
        raise<config_error>(
            "device model: build it from kernel measurements first (dnncost device build); "
            "fit() fits it to whole networks");
    m_boundary = {};
    m_residual.reset();
    m_scale = 1.0;
    m_calibration_shots = 0;
    m_family_scale.clear();
    m_intensity_factor = {};
    m_boundary_fit.reset();
    if (m_fit_boundary && train.size() >= 3) {
        const auto nets = boundary_networks(train);
        const auto f = fit_sample_boundary(nets, m_boundary_scale);
        // what the rates are judged against: a scale alone where they come with one; the plain
        // kernel sum where they come without, or where the scale is all that is fitted
        const double zero_scale =
            m_boundary_scale == BoundaryScale::free ? std::exp(detail::boundary_log_spread(nets, {}).second) : 1.0;
        const auto judge = validation.size() > 0 ? boundary_networks(validation) : nets;
        const double without = detail::boundary_log_rms(judge, {}, zero_scale);
        const double with = detail::boundary_log_rms(judge, f.cost, f.scale);
        // a narrowing at the level of rounding (networks that are their kernels' sum) is none
        const bool keep = with < without - 1e-9;
        m_boundary_fit = BoundaryFitReport{f, without, with, keep};
        m_boundary = keep ? f.cost : SampleBoundaryCost{};
        m_scale = keep ? f.scale : zero_scale;
    }
    estimators::FitResult r;
    if (m_fit_residual) {
        std::vector<KernelGraphSample> xt, xv;
        (void)kernel_figures(train.graphs, nullptr, &xt);
        (void)kernel_figures(validation.graphs, nullptr, &xv);
        // the residual learns what is left after the scale
        std::vector<double> yt(train.targets), yv(validation.targets);
        for (auto& y : yt) y /= m_scale;
        for (auto& y : yv) y /= m_scale;
        if (!detail::kernel_residual_fitter)
            raise<config_error>(
                "device model: fitting its graph-level residual is not compiled into this program; include "
                "<dnncost/device/kernel_residual_training.hpp> (header-only mode) or link dnncost::compiled");
        std::shared_ptr<KernelResidual> residual;
        r = detail::kernel_residual_fitter(m_residual_options, xt, yt, xv, yv, options, residual);
        m_residual = ResidualSlot(std::move(residual));
    }
    if (m_boundary_fit)
        r.summary = dnncost::concat("sample boundary ", m_boundary_fit->kept ? "kept" : "not kept", " (",
                                    m_boundary_fit->fit.cost.ms_per_kernel, " ms per kernel, ",
                                    m_boundary_fit->fit.cost.ms_per_output_mb, " ms/MB output, ",
                                    m_boundary_fit->fit.cost.ms_per_reorder_mb, " ms/MB reordered; log spread ",
                                    m_boundary_fit->spread_without, " -> ", m_boundary_fit->spread_with, "); scale ",
                                    m_scale, r.summary.empty() ? "" : "; ", r.summary);
    return r;
}

namespace detail {

struct DeviceModelTraining {
    static estimators::FitResult fit(DeviceModel& self, const train::TrainData& train,
                                     const train::TrainData& validation, const estimators::FitOptions& options) {
        return self.fit_impl(train, validation, options);
    }
};

inline const bool device_model_training_registered = [] {
    tabular_fitting<MlpRegressor> = &TabularTraining::fit<MlpRegressor>;
    tabular_fitting<RooflineRegressor> = &TabularTraining::fit<RooflineRegressor>;
#if defined(DNNCOST_HAS_XGBOOST)
    tabular_fitting<GbtRegressor> = &TabularTraining::fit<GbtRegressor>;
#endif
    device_model_fitting = &DeviceModelTraining::fit;
    return true;
}();

}  // namespace detail
}  // namespace dnncost::device
#endif
