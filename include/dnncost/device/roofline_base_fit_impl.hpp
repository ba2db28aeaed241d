#pragma once
/// @file roofline_base_fit_impl.hpp
/// The definitions of roofline_base_fit.hpp. Compiled once into dnncost::compiled in compiled
/// mode (core/config.hpp), included by roofline_base_fit.hpp in header-only mode.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include <Eigen/Cholesky>
#include <Eigen/Core>

#include <dnncost/core/config.hpp>
#include <dnncost/core/error.hpp>
#include <dnncost/core/matrix.hpp>
#include <dnncost/core/robust_statistics.hpp>
#include <dnncost/device/roofline_base.hpp>
#include <dnncost/device/roofline_base_fit.hpp>

namespace dnncost::device {
namespace detail {

DNNCOST_FUNC Eigen::VectorXd nonneg_relative_fit(const Mat<double>& a, const Eigen::VectorXd& w) {
    const Index p = a.cols();
    // normal equations on unit-scale columns: FLOPs and bytes are 1e9 where the fixed cost is 1
    Eigen::MatrixXd g = a.transpose() * w.asDiagonal() * a;
    Eigen::VectorXd h = a.transpose() * w;
    Eigen::VectorXd scale = Eigen::VectorXd::Zero(p);
    for (Index j = 0; j < p; ++j) scale[j] = g(j, j) > 0 && std::isfinite(g(j, j)) ? 1 / std::sqrt(g(j, j)) : 0;
    g = scale.asDiagonal() * g * scale.asDiagonal();
    h = scale.asDiagonal() * h;
    Eigen::VectorXd best = Eigen::VectorXd::Zero(p);
    double best_loss = 0;  // of theta = 0, less the constant sum_i w_i
    std::vector<Index> cols;
    for (std::uint32_t mask = 1; mask < (1u << p); ++mask) {
        cols.clear();
        bool usable = true;
        for (Index j = 0; j < p; ++j)
            if (mask & (1u << j)) {
                usable = usable && scale[j] > 0;
                cols.push_back(j);
            }
        if (!usable) continue;
        const auto m = static_cast<Index>(cols.size());
        Eigen::MatrixXd gs(m, m);
        Eigen::VectorXd hs(m);
        for (Index r = 0; r < m; ++r) {
            hs[r] = h[cols[static_cast<std::size_t>(r)]];
            for (Index c = 0; c < m; ++c)
                gs(r, c) = g(cols[static_cast<std::size_t>(r)], cols[static_cast<std::size_t>(c)]);
        }
        const auto ldlt = gs.ldlt();
        if (ldlt.info() != Eigen::Success || !ldlt.isPositive()) continue;
        const Eigen::VectorXd t = ldlt.solve(hs);
        if (!t.allFinite() || (t.array() < 0).any()) continue;
        Eigen::VectorXd theta = Eigen::VectorXd::Zero(p);
        for (Index r = 0; r < m; ++r) theta[cols[static_cast<std::size_t>(r)]] = t[r];
        const double loss = theta.dot(g * theta) - 2 * h.dot(theta);
        if (loss < best_loss) {
            best_loss = loss;
            best = theta;
        }
    }
    return scale.asDiagonal() * best;
}

DNNCOST_FUNC RooflineBase roofline_of(RooflineBase::Form form, const Eigen::VectorXd& theta, double floor_ms) {
    RooflineBase b{form, theta[0], theta[1], {}, floor_ms};
    for (Index j = 2; j < theta.size(); ++j) b.ms_per_byte.push_back(theta[j]);
    return b;
}

DNNCOST_FUNC double mean_abs_log_error(const RooflineBase& b, std::span<const double> flops, const Mat<double>& bytes,
                                       std::span<const double> ms) {
    double s = 0;
    for (std::size_t i = 0; i < ms.size(); ++i) {
        const auto row = bytes.row(static_cast<Index>(i));
        s += std::abs(std::log(
            b.ms(flops[i], std::span<const double>(row.data(), static_cast<std::size_t>(row.size()))) / ms[i]));
    }
    return s / static_cast<double>(ms.size());
}

DNNCOST_FUNC RooflineBase fit_roofline_form(RooflineBase::Form form, Eigen::VectorXd theta,
                                            std::span<const double> flops, const Mat<double>& bytes,
                                            std::span<const double> ms, double floor_ms) {
    const auto n = static_cast<Index>(ms.size());
    const Index kinds = bytes.cols();
    Mat<double> a(n, 2 + kinds);
    Eigen::VectorXd w(n);
    RooflineBase best = roofline_of(form, theta, floor_ms);
    double best_error = mean_abs_log_error(best, flops, bytes, ms);
    std::vector<double> r(ms.size()), dev(ms.size());
    for (int iter = 0; iter < 40; ++iter) {
        const auto now = roofline_of(form, theta, floor_ms);
        for (std::size_t i = 0; i < ms.size(); ++i) {
            const auto row = bytes.row(static_cast<Index>(i));
            r[i] = std::log(now.ms(flops[i], std::span<const double>(row.data(), static_cast<std::size_t>(kinds))) /
                            ms[i]);
            dev[i] = std::abs(r[i]);
        }
        // 1.345 sigma, sigma from the median absolute error; never below 1 %
        const double k = 1.345 * std::max(mad_to_sigma * median_high(dev), 0.01);
        for (Index i = 0; i < n; ++i) {
            const auto s = static_cast<std::size_t>(i);
            const double y = ms[s];
            const double moved = bytes.row(i).dot(theta.tail(kinds));
            const bool compute = theta[1] * flops[s] >= moved;
            const bool max = form == RooflineBase::Form::max;
            a(i, 0) = 1 / y;
            a(i, 1) = max && !compute ? 0.0 : flops[s] / y;
            for (Index j = 0; j < kinds; ++j) a(i, 2 + j) = max && compute ? 0.0 : bytes(i, j) / y;
            w[i] = std::abs(r[s]) <= k ? 1.0 : k / std::abs(r[s]);
        }
        const Eigen::VectorXd next = nonneg_relative_fit(a, w);
        const auto fitted = roofline_of(form, next, floor_ms);
        const double e = mean_abs_log_error(fitted, flops, bytes, ms);
        if (e < best_error) {
            best_error = e;
            best = fitted;
        }
        const bool settled = (next - theta).norm() <= 1e-12 * std::max(next.norm(), 1e-300);
        theta = next;
        if (settled) break;
    }
    return best;
}

}  // namespace detail
}  // namespace dnncost::device

namespace dnncost::device {

DNNCOST_FUNC RooflineBaseFit fit_roofline_base(std::span<const double> flops, const Mat<double>& bytes,
                                               std::span<const double> ms) {
    if (ms.empty() || flops.size() != ms.size() || static_cast<std::size_t>(bytes.rows()) != ms.size() ||
        bytes.cols() > roofline_max_byte_kinds)
        raise<shape_error>("fit_roofline_base: ", flops.size(), " FLOP counts, ", bytes.rows(), " rows of ",
                           bytes.cols(), " byte counts and ", ms.size(),
                           " latencies; they must agree and not be empty, with at most ", roofline_max_byte_kinds,
                           " kinds of bytes");
    for (std::size_t i = 0; i < ms.size(); ++i) {
        const auto row = bytes.row(static_cast<Index>(i));
        if (!(std::isfinite(flops[i]) && flops[i] >= 0 && row.allFinite() && (row.array() >= 0).all() &&
              std::isfinite(ms[i]) && ms[i] > 0))
            raise<config_error>("fit_roofline_base: sample ", i, " has ", flops[i], " FLOPs, bytes ", row, ", ", ms[i],
                                " ms; counts must be finite and >= 0, latencies finite and positive");
    }
    const double floor_ms = 1e-2 * *std::min_element(ms.begin(), ms.end());
    const auto n = static_cast<Index>(ms.size());
    Mat<double> a(n, 2 + bytes.cols());
    for (Index i = 0; i < n; ++i) {
        const double y = ms[static_cast<std::size_t>(i)];
        a(i, 0) = 1 / y;
        a(i, 1) = flops[static_cast<std::size_t>(i)] / y;
        a.row(i).tail(bytes.cols()) = bytes.row(i) / y;
    }
    const Eigen::VectorXd start = detail::nonneg_relative_fit(a, Eigen::VectorXd::Ones(n));
    RooflineBaseFit out;
    const auto sum = detail::fit_roofline_form(RooflineBase::Form::sum, start, flops, bytes, ms, floor_ms);
    const auto max = detail::fit_roofline_form(RooflineBase::Form::max, start, flops, bytes, ms, floor_ms);
    out.sum_error = detail::mean_abs_log_error(sum, flops, bytes, ms);
    out.max_error = detail::mean_abs_log_error(max, flops, bytes, ms);
    out.base = out.max_error < out.sum_error ? max : sum;
    return out;
}

}  // namespace dnncost::device
