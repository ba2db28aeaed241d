#pragma once
/// @file roofline_base.hpp
/// A kernel's time as the work it does: a fixed cost plus its FLOPs at one rate and the bytes it
/// moves at others (one per kind of bytes), either added (t = c0 + a F + b.B) or as a roofline
/// (t = c0 + max(a F, b.B)), every coefficient non-negative. Fitted to one kernel family's
/// measured samples, it keeps growing with the work beyond the largest of them, which a learnt
/// regressor need not do: it is the base of RooflineRegressor (roofline_regressor.hpp).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include <Eigen/Cholesky>
#include <Eigen/Core>

#include <dnncost/core/error.hpp>
#include <dnncost/core/matrix.hpp>

namespace dnncost::device {

/// The time of a kernel of `flops` FLOPs that moves bytes of a few kinds (say the activations it
/// reads and writes, and its weights), in ms.
struct RooflineBase {
    enum class Form : std::uint8_t { sum = 0, max = 1 };
    Form form = Form::sum;
    double fixed_ms = 0;              ///< c0
    double ms_per_flop = 0;           ///< a
    std::vector<double> ms_per_byte;  ///< b, one rate per kind of bytes
    /// The least time the base gives: a kernel the fit sees neither work nor fixed cost in still
    /// costs something, so that the base is always positive.
    double floor_ms = 1e-6;

    /// @param bytes one count per rate of ms_per_byte (a missing one counts as none)
    double ms(double flops, std::span<const double> bytes) const {
        const double f = ms_per_flop * std::max(flops, 0.0);
        double b = 0;
        for (std::size_t j = 0; j < ms_per_byte.size() && j < bytes.size(); ++j)
            b += ms_per_byte[j] * std::max(bytes[j], 0.0);
        return std::max(fixed_ms + (form == Form::max ? std::max(f, b) : f + b), floor_ms);
    }

    /// Whether the coefficients are a base: finite, non-negative, and a positive floor.
    bool valid() const {
        const auto ok = [](double v) { return std::isfinite(v) && v >= 0; };
        return (form == Form::sum || form == Form::max) && ok(fixed_ms) && ok(ms_per_flop) &&
               std::all_of(ms_per_byte.begin(), ms_per_byte.end(), ok) && ok(floor_ms) && floor_ms > 0;
    }
};

/// What fit_roofline_base() found: the base, and the mean absolute log error of each form on the
/// samples (the lower one was kept; a tie keeps the sum).
struct RooflineBaseFit {
    RooflineBase base;
    double sum_error = 0, max_error = 0;
};

/// The most kinds of bytes fit_roofline_base() takes: every support of the coefficients is tried.
inline constexpr Index roofline_max_byte_kinds = 6;

namespace detail {

/// min over theta >= 0 of sum_i w_i (a_i . theta - 1)^2, exactly: the optimum is the unconstrained
/// least-squares optimum on its support, so every support is tried (a few columns only). Columns
/// that are zero (a family without FLOPs) stay out; theta = 0 when nothing helps.
inline Eigen::VectorXd nonneg_relative_fit(const Mat<double>& a, const Eigen::VectorXd& w) {
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

/// The base of coefficients theta (c0, a, b...) in `form`.
inline RooflineBase roofline_of(RooflineBase::Form form, const Eigen::VectorXd& theta, double floor_ms) {
    RooflineBase b{form, theta[0], theta[1], {}, floor_ms};
    for (Index j = 2; j < theta.size(); ++j) b.ms_per_byte.push_back(theta[j]);
    return b;
}

inline double mean_abs_log_error(const RooflineBase& b, std::span<const double> flops, const Mat<double>& bytes,
                                 std::span<const double> ms) {
    double s = 0;
    for (std::size_t i = 0; i < ms.size(); ++i) {
        const auto row = bytes.row(static_cast<Index>(i));
        s += std::abs(std::log(
            b.ms(flops[i], std::span<const double>(row.data(), static_cast<std::size_t>(row.size()))) / ms[i]));
    }
    return s / static_cast<double>(ms.size());
}

/// Iteratively reweighted least squares of the relative error (log(t / y) to first order), Huber
/// weights on the log errors so that a few odd samples do not set the rates; for the max form
/// each sample is charged to the term that dominates it under the current coefficients. The
/// coefficients with the lowest mean absolute log error met are kept.
inline RooflineBase fit_roofline_form(RooflineBase::Form form, Eigen::VectorXd theta, std::span<const double> flops,
                                      const Mat<double>& bytes, std::span<const double> ms, double floor_ms) {
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
        std::nth_element(dev.begin(), dev.begin() + static_cast<std::ptrdiff_t>(dev.size() / 2), dev.end());
        // 1.345 sigma, sigma from the median absolute error; never below 1 %
        const double k = 1.345 * std::max(1.4826 * dev[dev.size() / 2], 0.01);
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

/// Fits both forms of the base to kernels of `flops` FLOPs that moved `bytes` (one row per kernel,
/// one column per kind of bytes, each with a rate of its own) measured at `ms`, non-negatively and
/// robustly, and keeps the form with the lower mean absolute log error.
/// @throws shape_error when the sizes disagree, there are no samples, or more than
///         roofline_max_byte_kinds kinds of bytes; config_error for a negative or non-finite count
///         or a latency that is not finite and positive
inline RooflineBaseFit fit_roofline_base(std::span<const double> flops, const Mat<double>& bytes,
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
