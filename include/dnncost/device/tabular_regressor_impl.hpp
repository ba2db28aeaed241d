#pragma once
/// @file tabular_regressor_impl.hpp
/// The definitions of tabular_regressor.hpp: compiled once into dnncost::compiled in compiled mode
/// (core/config.hpp), included by tabular_regressor.hpp in header-only mode.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include <Eigen/Core>

#include <dnncost/core/config.hpp>
#include <dnncost/core/error.hpp>
#include <dnncost/core/matrix.hpp>
#include <dnncost/device/tabular_regressor.hpp>
#include <dnncost/io/serialize.hpp>

namespace dnncost::device {

DNNCOST_FUNC void TabularRegressor::fit(const Mat<double>& x, std::span<const double> latency_ms,
                                        std::vector<std::string> feature_names) {
    const std::string who = "tabular regressor '" + kind() + "' fit";
    check_feature_names(who, feature_names, x.cols());
    if (x.rows() < min_rows()) raise<shape_error>(who, ": needs at least ", min_rows(), " rows, got ", x.rows());
    if (static_cast<Index>(latency_ms.size()) != x.rows())
        raise<shape_error>(who, ": ", x.rows(), " feature rows but ", latency_ms.size(), " latencies");
    check_finite_rows(who, x, feature_names);
    Eigen::VectorXd log_y(x.rows());
    for (Index i = 0; i < x.rows(); ++i) {
        const double y = latency_ms[static_cast<std::size_t>(i)];
        if (!(std::isfinite(y) && y > 0))
            raise<config_error>(who, ": latency of row ", i, " is ", y, " ms; it must be finite and positive");
        log_y[i] = std::log(y);
    }
    m_names = std::move(feature_names);
    m_fitted = false;
    fit_log(x, log_y);
    const double margin = std::log(tabular_extrapolation_factor);
    m_log_floor = log_y.minCoeff() - margin;
    m_log_ceiling = log_y.maxCoeff() + margin;
    take_probes(x);
    m_fitted = true;
}

DNNCOST_FUNC std::vector<double> TabularRegressor::predict(const Mat<double>& x) const {
    const std::string who = "tabular regressor '" + kind() + "' predict";
    if (!m_fitted) raise<config_error>(who, ": the model is not fitted");
    if (x.cols() != static_cast<Index>(m_names.size()))
        raise<shape_error>(who, ": rows have ", x.cols(), " features, the model was fitted on ", m_names.size());
    check_finite_rows(who, x, m_names);
    std::vector<double> out(static_cast<std::size_t>(x.rows()));
    if (x.rows() == 0) return out;
    const Eigen::VectorXd log_y = predict_log(x);
    for (Index i = 0; i < x.rows(); ++i) {
        if (!std::isfinite(log_y[i])) raise<config_error>(who, ": the model gives a non-finite output for row ", i);
        out[static_cast<std::size_t>(i)] = std::exp(std::clamp(log_y[i], m_log_floor, m_log_ceiling));
    }
    return out;
}

DNNCOST_FUNC std::string TabularRegressor::save() const {
    if (!m_fitted) raise<config_error>("tabular regressor '", kind(), "' save: the model is not fitted");
    io::BinaryWriter w;
    w.put_u32(tabular_payload_version);
    w.put_string_vector(m_names);
    w.put_f64(m_log_floor);
    w.put_f64(m_log_ceiling);
    w.put_u64(static_cast<std::uint64_t>(m_probe_x.rows()));
    w.put_f64_vector(std::span<const double>(m_probe_x.data(), static_cast<std::size_t>(m_probe_x.size())));
    w.put_f64_vector(std::span<const double>(m_probe_log.data(), static_cast<std::size_t>(m_probe_log.size())));
    save_model(w);
    return io::write_container(container_kind(), config_hash(), w.bytes());
}

DNNCOST_FUNC void TabularRegressor::restore(std::string_view bytes, const std::string& source) {
    const auto c = io::read_container(bytes, container_kind(), source);
    io::BinaryReader r(c.payload, source);
    const auto version = r.get_u32("tabular payload version");
    if (version != tabular_payload_version)
        r.fail("tabular regressor payload version ", version, " is not supported (this build reads ",
               tabular_payload_version, ")");
    auto names = r.get_string_vector("feature names");
    try {
        check_feature_names("tabular regressor", names, static_cast<Index>(names.size()));
    } catch (const error& e) {
        r.fail(e.what());
    }
    if (names.empty()) r.fail("tabular regressor has no features");
    if (c.config_hash != hash_of(kind(), names)) r.fail("tabular regressor: config hash does not match its features");
    const double lo = r.get_finite_f64("log floor"), hi = r.get_finite_f64("log ceiling");
    if (!(lo < hi)) r.fail("tabular regressor: log floor ", lo, " is not below log ceiling ", hi);
    const auto n_probe = r.get_u64("probe rows");
    const auto px = r.get_finite_f64_vector("probe features");
    const auto plog = r.get_finite_f64_vector("probe outputs");
    if (n_probe == 0 || plog.size() != n_probe || px.size() != n_probe * names.size())
        r.fail("tabular regressor: probe block has ", n_probe, " rows, ", px.size(), " features and ", plog.size(),
               " outputs for ", names.size(), " columns");
    load_model(r, names.size());
    r.expect_end("tabular regressor payload");
    m_names = std::move(names);
    m_log_floor = lo;
    m_log_ceiling = hi;
    m_probe_x =
        Eigen::Map<const Mat<double>>(px.data(), static_cast<Index>(n_probe), static_cast<Index>(m_names.size()));
    m_probe_log = Eigen::Map<const Eigen::VectorXd>(plog.data(), static_cast<Index>(n_probe));
    const Eigen::VectorXd now = predict_log(m_probe_x);
    for (Index i = 0; i < now.size(); ++i)
        if (!(std::abs(now[i] - m_probe_log[i]) <= probe_tolerance()))
            r.fail("tabular regressor '", kind(), "': probe row ", i, " now predicts log-latency ", now[i],
                   ", saved with ", m_probe_log[i], " (damaged model)");
    m_fitted = true;
}

DNNCOST_FUNC std::uint64_t TabularRegressor::hash_of(const std::string& kind, const std::vector<std::string>& names) {
    std::uint64_t h = io::fnv1a64("tabular-" + kind);
    for (const auto& n : names) h = io::fnv1a64(n, io::fnv1a64("\x1f", h));
    return h;
}

DNNCOST_FUNC void TabularRegressor::check_feature_names(const std::string& who, const std::vector<std::string>& names,
                                                        Index cols) {
    if (static_cast<Index>(names.size()) != cols)
        raise<shape_error>(who, ": ", names.size(), " feature names for ", cols, " feature columns");
    std::unordered_set<std::string> seen;
    for (const auto& n : names) {
        if (n.empty()) raise<config_error>(who, ": a feature name is empty");
        if (!seen.insert(n).second) raise<config_error>(who, ": feature '", n, "' is named twice");
    }
}

DNNCOST_FUNC void TabularRegressor::check_finite_rows(const std::string& who, const Mat<double>& x,
                                                      const std::vector<std::string>& names) {
    if (x.allFinite()) return;
    for (Index i = 0; i < x.rows(); ++i)
        for (Index j = 0; j < x.cols(); ++j)
            if (!std::isfinite(x(i, j)))
                raise<config_error>(who, ": feature '", names[static_cast<std::size_t>(j)], "' of row ", i, " is ",
                                    x(i, j));
}

DNNCOST_FUNC void TabularRegressor::take_probes(const Mat<double>& x) {
    const Index n = std::min<Index>(8, x.rows());
    m_probe_x.resize(n, x.cols());
    for (Index k = 0; k < n; ++k) m_probe_x.row(k) = x.row(k * x.rows() / n);
    m_probe_log = predict_log(m_probe_x);
    if (!m_probe_log.allFinite())
        raise<config_error>("tabular regressor '", kind(), "' fit: training ended with non-finite outputs");
}

}  // namespace dnncost::device
