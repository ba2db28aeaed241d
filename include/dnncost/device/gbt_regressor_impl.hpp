#pragma once
/// @file gbt_regressor_impl.hpp
/// The definitions of gbt_regressor.hpp: reading the trees, the linear base and the payload (the
/// training through XGBoost is in device_model_training.hpp). Compiled once into dnncost::compiled in compiled mode (core/config.hpp), included by
/// gbt_regressor.hpp in header-only mode.
#include <xgboost/c_api.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include <dnncost/core/config.hpp>
#include <dnncost/core/rng.hpp>
#include <dnncost/device/gbt_forest.hpp>
#include <dnncost/device/gbt_regressor.hpp>
#include <dnncost/device/tabular_regressor.hpp>

namespace dnncost::device {
namespace detail {

DNNCOST_FUNC void xgb_check(int rc, const char* call) {
    if (rc != 0) raise<config_error>("XGBoost ", call, " failed: ", XGBGetLastError());
}

DNNCOST_FUNC float xgb_feature(const Mat<double>& x, Index i, Index j) {
    const auto v = static_cast<float>(x(i, j));
    if (!std::isfinite(v))
        raise<config_error>("GbtRegressor: feature ", j, " of row ", i, " (", x(i, j),
                            ") is beyond the float range XGBoost reads");
    return v;
}

DNNCOST_FUNC XgbMatrix xgb_matrix(const Mat<double>& x, std::span<const Index> rows) {
    std::vector<float> data(rows.size() * static_cast<std::size_t>(x.cols()));
    std::size_t k = 0;
    for (auto i : rows)
        for (Index j = 0; j < x.cols(); ++j) {
            data[k++] = xgb_feature(x, i, j);
        }
    DMatrixHandle h = nullptr;
    // one thread: a team of OpenMP threads left spinning after a small matrix costs more than it saves
    xgb_check(
        XGDMatrixCreateFromMat_omp(data.data(), static_cast<bst_ulong>(rows.size()), static_cast<bst_ulong>(x.cols()),
                                   std::numeric_limits<float>::quiet_NaN(), &h, 1),
        "XGDMatrixCreateFromMat_omp");
    return XgbMatrix(h);
}

}  // namespace detail
}  // namespace dnncost::device

namespace dnncost::device {

DNNCOST_FUNC GbtRegressor GbtRegressor::load(std::string_view bytes, const std::string& source) {
    GbtRegressorOptions o;
    o.linear_base = io::read_container(bytes, std::nullopt, source).kind == "tabular-gbt-linear";
    GbtRegressor r(o);
    r.restore(bytes, source);
    return r;
}

DNNCOST_FUNC void GbtRegressor::fit_log(const Mat<double>& x, const Eigen::VectorXd& log_y) {
    detail::run_tabular_fitting(*this, x, log_y);
}

DNNCOST_FUNC Eigen::VectorXd GbtRegressor::forest_log(const Mat<double>& x) const {
    std::vector<float> data(static_cast<std::size_t>(x.size()));
    std::size_t k = 0;
    for (Index i = 0; i < x.rows(); ++i)
        for (Index j = 0; j < x.cols(); ++j) data[k++] = detail::xgb_feature(x, i, j);
    std::vector<float> out(static_cast<std::size_t>(x.rows()));
    m_forest.predict(data, out);
    Eigen::VectorXd y(x.rows());
    for (Index i = 0; i < x.rows(); ++i) y[i] = out[static_cast<std::size_t>(i)];
    return y;
}

DNNCOST_FUNC void GbtRegressor::save_model(io::BinaryWriter& w) const {
    bst_ulong len = 0;
    const char* data = nullptr;
    detail::xgb_check(XGBoosterSaveModelToBuffer(m_booster.get(), R"({"format": "ubj"})", &len, &data),
                      "XGBoosterSaveModelToBuffer");
    const std::string_view model(data, static_cast<std::size_t>(len));
    w.put_i32(m_rounds);
    // XGBoost does not check its own bytes: a hash catches a booster changed in a file
    // whose container checksum was recomputed
    w.put_u64(io::fnv1a64(model));
    w.put_string(model);
    if (m_o.linear_base)
        w.put_f64_vector(std::span<const double>(m_base.data(), static_cast<std::size_t>(m_base.size())));
}

DNNCOST_FUNC void GbtRegressor::load_model(io::BinaryReader& r, std::size_t n_features) {
    m_rounds = r.get_i32("gbt rounds");
    if (m_rounds < 1) r.fail("gbt model has ", m_rounds, " rounds");
    const auto hash = r.get_u64("gbt booster hash");
    const auto model = r.get_string_view("gbt booster");
    if (io::fnv1a64(model) != hash) r.fail("gbt booster bytes do not match their hash (damaged model)");
    BoosterHandle h = nullptr;
    detail::xgb_check(XGBoosterCreate(nullptr, 0, &h), "XGBoosterCreate");
    detail::XgbBooster booster(h);
    if (XGBoosterLoadModelFromBuffer(h, model.data(), static_cast<bst_ulong>(model.size())) != 0)
        r.fail("XGBoost cannot read the gbt booster: ", XGBGetLastError());
    detail::xgb_check(XGBoosterSetParam(h, "nthread", std::to_string(m_o.nthread).c_str()), "XGBoosterSetParam");
    bst_ulong features = 0;
    int rounds = 0;
    detail::xgb_check(XGBoosterGetNumFeature(h, &features), "XGBoosterGetNumFeature");
    detail::xgb_check(XGBoosterBoostedRounds(h, &rounds), "XGBoosterBoostedRounds");
    if (features != n_features || rounds != m_rounds)
        r.fail("gbt booster has ", features, " features and ", rounds, " rounds, expected ", n_features, " and ",
               m_rounds);
    if (m_o.linear_base) {
        const auto w = r.get_finite_f64_vector("gbt linear base");
        if (w.size() != n_features + 1)
            r.fail("gbt linear base has ", w.size(), " coefficients for ", n_features, " features (expected ",
                   n_features + 1, ")");
        m_base = Eigen::Map<const Eigen::VectorXd>(w.data(), static_cast<Index>(w.size()));
    }
    m_booster = std::move(booster);
    try {
        read_trees(nullptr);
    } catch (const config_error& e) {
        r.fail("gbt booster: ", e.what());
    }
}

DNNCOST_FUNC void GbtRegressor::read_trees(const Mat<double>* x) {
    bst_ulong len = 0;
    const char* json = nullptr;
    detail::xgb_check(XGBoosterSaveModelToBuffer(m_booster.get(), R"({"format": "json"})", &len, &json),
                      "XGBoosterSaveModelToBuffer");
    m_forest = GbtForest::from_xgboost_json(std::string_view(json, static_cast<std::size_t>(len)));
    const auto width = static_cast<Index>(m_forest.num_features());
    const auto thresholds = m_forest.thresholds();
    std::size_t most = 0;
    for (const auto& t : thresholds) most = std::max(most, t.size());
    const Index from_x = x ? std::min<Index>(256, x->rows()) : 0;
    const auto at = static_cast<Index>(std::min<std::size_t>(most, 128));
    Mat<double> rows(from_x + 2 * at, width);
    for (Index i = 0; i < from_x; ++i) rows.row(i) = x->row(i * x->rows() / from_x);
    for (Index i = 0; i < at; ++i)
        for (Index j = 0; j < width; ++j) {
            const auto& t = thresholds[static_cast<std::size_t>(j)];
            const float v = t.empty() ? 0.0f : t[static_cast<std::size_t>(i) % t.size()];
            rows(from_x + 2 * i, j) = v;
            rows(from_x + 2 * i + 1, j) = std::nextafter(v, -std::numeric_limits<float>::infinity());
        }
    if (rows.rows() == 0) return;
    std::vector<Index> all(static_cast<std::size_t>(rows.rows()));
    std::iota(all.begin(), all.end(), Index{0});
    auto dm = detail::xgb_matrix(rows, all);
    const float* out = nullptr;
    detail::xgb_check(XGBoosterPredict(m_booster.get(), dm.get(), 0, 0, 0, &len, &out), "XGBoosterPredict");
    if (len != static_cast<bst_ulong>(rows.rows()))
        raise<config_error>("GbtRegressor: XGBoost returned ", len, " predictions for ", rows.rows(), " rows");
    const Eigen::VectorXd mine = forest_log(rows);
    for (Index i = 0; i < rows.rows(); ++i)
        if (static_cast<double>(out[i]) != mine[i])
            raise<config_error>("GbtRegressor: the trees read from XGBoost's model give ", mine[i], " on row ", i,
                                " where XGBoost gives ", out[i]);
}

DNNCOST_FUNC void GbtRegressor::set_params(BoosterHandle h, double base_score) const {
    const auto set = [&](const char* name, const std::string& value) {
        detail::xgb_check(XGBoosterSetParam(h, name, value.c_str()), "XGBoosterSetParam");
    };
    const auto num = [](double v) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%.17g", v);
        return std::string(buf);
    };
    set("verbosity", "0");
    set("objective", "reg:squarederror");
    set("eval_metric", "mae");
    set("tree_method", "hist");
    set("nthread", std::to_string(m_o.nthread));
    // XGBoost takes a 32-bit seed
    set("seed", std::to_string(m_o.seed % 2147483647u));
    set("max_depth", std::to_string(m_o.max_depth));
    set("eta", num(m_o.learning_rate));
    set("subsample", num(m_o.subsample));
    set("colsample_bytree", num(m_o.colsample_bytree));
    set("min_child_weight", num(m_o.min_child_weight));
    set("lambda", num(m_o.lambda));
    set("base_score", num(base_score));
}

DNNCOST_FUNC double GbtRegressor::parse_eval(const char* line) {
    const std::string s = line ? line : "";
    const auto colon = s.rfind(':');
    char* end = nullptr;
    const double v = colon == std::string::npos ? std::nan("") : std::strtod(s.c_str() + colon + 1, &end);
    if (!std::isfinite(v)) raise<config_error>("GbtRegressor: cannot read XGBoost's evaluation '", s, "'");
    return v;
}

DNNCOST_FUNC Eigen::VectorXd GbtRegressor::linear_base(const Mat<double>& x) const {
    if (m_base.size() == 0) return Eigen::VectorXd::Zero(x.rows());
    const Index p = x.cols();
    Eigen::VectorXd out(x.rows());
    for (Index i = 0; i < x.rows(); ++i) {
        double s = m_base[p];
        for (Index j = 0; j < p; ++j)
            if (m_base[j] != 0) s = std::fma(m_base[j], x(i, j), s);
        out[i] = s;
    }
    return out;
}

}  // namespace dnncost::device
