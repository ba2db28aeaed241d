#pragma once
/// @file roofline_regressor_impl.hpp
/// The definitions of roofline_regressor.hpp: compiled once into dnncost::compiled in compiled
/// mode (core/config.hpp), included by roofline_regressor.hpp in header-only mode.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <Eigen/Core>

#include <dnncost/core/config.hpp>
#include <dnncost/core/error.hpp>
#include <dnncost/core/matrix.hpp>
#include <dnncost/device/roofline_base.hpp>
#include <dnncost/device/roofline_regressor.hpp>
#include <dnncost/device/tabular_regressor.hpp>
#include <dnncost/io/serialize.hpp>

namespace dnncost::device {

DNNCOST_FUNC std::vector<double> RooflineRegressor::base_ms(const Mat<double>& x) const {
    if (!fitted()) raise<config_error>("roofline regressor base_ms: the model is not fitted");
    if (x.cols() != static_cast<Index>(feature_names().size()))
        raise<shape_error>("roofline regressor base_ms: rows have ", x.cols(), " features, the model was fitted on ",
                           feature_names().size());
    std::vector<double> out;
    for (Index i = 0; i < x.rows(); ++i) out.push_back(std::exp(log_base(x, i)));
    return out;
}

DNNCOST_FUNC RooflineRegressor RooflineRegressor::load(std::string_view bytes, const std::string& source,
                                                       const Loader& load_inner) {
    const auto kind = io::read_container(bytes, std::nullopt, source).kind;
    constexpr std::string_view prefix = "tabular-roofline-";
    if (!kind.starts_with(prefix) || kind.size() == prefix.size() ||
        std::string_view(kind).substr(prefix.size()).starts_with("roofline"))
        raise<parse_error>(source, ": model kind '", kind, "' is not a roofline regressor");
    RooflineRegressor r;
    r.m_inner_kind = kind.substr(prefix.size());
    r.m_loader = &load_inner;
    r.restore(bytes, source);
    r.m_loader = nullptr;
    return r;
}

DNNCOST_FUNC void RooflineRegressor::fit_log(const Mat<double>& x, const Eigen::VectorXd& log_y) {
    detail::run_tabular_fitting(*this, x, log_y);
}

DNNCOST_FUNC Eigen::VectorXd RooflineRegressor::predict_log(const Mat<double>& x) const {
    Mat<double> inside(x.rows(), x.cols());
    for (Index i = 0; i < x.rows(); ++i) inside.row(i) = x.row(i).cwiseMax(m_box_lo).cwiseMin(m_box_hi);
    const auto corr = m_correction->predict(inside);
    Eigen::VectorXd out(x.rows());
    for (Index i = 0; i < x.rows(); ++i)
        out[i] = log_base(x, i) + std::clamp(std::log(corr[static_cast<std::size_t>(i)]), m_corr_lo, m_corr_hi);
    return out;
}

DNNCOST_FUNC void RooflineRegressor::save_model(io::BinaryWriter& w) const {
    w.put_u8(static_cast<std::uint8_t>(m_base.form));
    w.put_f64(m_base.fixed_ms);
    w.put_f64(m_base.ms_per_flop);
    w.put_f64_vector(m_base.ms_per_byte);
    w.put_f64(m_base.floor_ms);
    w.put_i64(m_flops_column);
    w.put_u64(m_bytes_columns.size());
    for (const auto& cols : m_bytes_columns) w.put_i64_vector(cols);
    w.put_f64_vector(std::span<const double>(m_box_lo.data(), static_cast<std::size_t>(m_box_lo.size())));
    w.put_f64_vector(std::span<const double>(m_box_hi.data(), static_cast<std::size_t>(m_box_hi.size())));
    w.put_f64(m_corr_lo);
    w.put_f64(m_corr_hi);
    w.put_string(m_correction->save());
}

DNNCOST_FUNC void RooflineRegressor::load_model(io::BinaryReader& r, std::size_t n_features) {
    const auto form = r.get_u8("roofline form");
    if (form > 1) r.fail("roofline regressor: form ", int(form), " is neither sum (0) nor max (1)");
    m_base.form = static_cast<RooflineBase::Form>(form);
    m_base.fixed_ms = r.get_finite_f64("roofline fixed time");
    m_base.ms_per_flop = r.get_finite_f64("roofline time per FLOP");
    m_base.ms_per_byte = r.get_finite_f64_vector("roofline times per byte");
    m_base.floor_ms = r.get_finite_f64("roofline floor");
    if (!m_base.valid())
        r.fail("roofline regressor: base of ", m_base.fixed_ms, " ms, ", m_base.ms_per_flop, " ms/FLOP, floor ",
               m_base.floor_ms, " ms, or a time per byte, is not a non-negative base");
    m_flops_column = r.get_i64("roofline FLOPs column");
    const auto groups = r.get_u64("roofline kinds of bytes");
    if (groups > static_cast<std::uint64_t>(roofline_max_byte_kinds) || groups != m_base.ms_per_byte.size())
        r.fail("roofline regressor: ", groups, " kinds of bytes for ", m_base.ms_per_byte.size(), " rates");
    const auto n = static_cast<std::int64_t>(n_features);
    const auto bad = [n](std::int64_t c) { return c < 0 || c >= n; };
    m_bytes_columns.clear();
    for (std::uint64_t g = 0; g < groups; ++g) {
        m_bytes_columns.push_back(r.get_i64_vector("roofline bytes columns"));
        const auto& cols = m_bytes_columns.back();
        if (cols.empty() || std::any_of(cols.begin(), cols.end(), bad))
            r.fail("roofline regressor: bytes columns outside the ", n_features, " features, or none");
    }
    if ((m_flops_column != -1 && bad(m_flops_column)) || (m_flops_column == -1 && m_bytes_columns.empty()))
        r.fail("roofline regressor: FLOPs column ", m_flops_column, " outside the ", n_features, " features");
    const auto lo = r.get_finite_f64_vector("roofline box low"), hi = r.get_finite_f64_vector("roofline box high");
    if (lo.size() != n_features || hi.size() != n_features)
        r.fail("roofline regressor: box of ", lo.size(), " and ", hi.size(), " values for ", n_features, " features");
    m_box_lo = Eigen::Map<const Eigen::RowVectorXd>(lo.data(), static_cast<Index>(lo.size()));
    m_box_hi = Eigen::Map<const Eigen::RowVectorXd>(hi.data(), static_cast<Index>(hi.size()));
    if ((m_box_lo.array() > m_box_hi.array()).any()) r.fail("roofline regressor: a box low above its high");
    m_corr_lo = r.get_finite_f64("roofline correction low");
    m_corr_hi = r.get_finite_f64("roofline correction high");
    if (!(m_corr_lo <= m_corr_hi)) r.fail("roofline regressor: correction bounds ", m_corr_lo, " > ", m_corr_hi);
    const auto inner = r.get_string("roofline correction");
    if (!m_loader) r.fail("roofline regressor: no loader for the correction");
    m_correction = (*m_loader)(inner, r.source() + " (roofline correction)");
    if (!m_correction || m_correction->kind() != m_inner_kind)
        r.fail("roofline regressor: the correction is not of kind '", m_inner_kind, "'");
    if (m_correction->feature_names().size() != n_features)
        r.fail("roofline regressor: the correction reads ", m_correction->feature_names().size(), " features, not ",
               n_features);
}

}  // namespace dnncost::device
