#pragma once
/// @file roofline_base.hpp
/// A kernel's time as the work it does: a fixed cost plus its FLOPs at one rate and the bytes it
/// moves at others (one per kind of bytes), either added (t = c0 + a F + b.B) or as a roofline
/// (t = c0 + max(a F, b.B)), every coefficient non-negative. Fitted to one kernel family's
/// measured samples, it keeps growing with the work beyond the largest of them, which a learnt
/// regressor need not do: it is the base of RooflineRegressor (roofline_regressor.hpp).
///
/// The larger functions are defined in roofline_base_impl.hpp: compiled into dnncost::compiled in
/// compiled mode (core/config.hpp), included at the end of this header otherwise.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include <Eigen/Core>

#include <dnncost/core/config.hpp>
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
DNNCOST_FUNC Eigen::VectorXd nonneg_relative_fit(const Mat<double>& a, const Eigen::VectorXd& w);

/// The base of coefficients theta (c0, a, b...) in `form`.
DNNCOST_FUNC RooflineBase roofline_of(RooflineBase::Form form, const Eigen::VectorXd& theta, double floor_ms);

DNNCOST_FUNC double mean_abs_log_error(const RooflineBase& b, std::span<const double> flops, const Mat<double>& bytes,
                                       std::span<const double> ms);

/// Iteratively reweighted least squares of the relative error (log(t / y) to first order), Huber
/// weights on the log errors so that a few odd samples do not set the rates; for the max form
/// each sample is charged to the term that dominates it under the current coefficients. The
/// coefficients with the lowest mean absolute log error met are kept.
DNNCOST_FUNC RooflineBase fit_roofline_form(RooflineBase::Form form, Eigen::VectorXd theta,
                                            std::span<const double> flops, const Mat<double>& bytes,
                                            std::span<const double> ms, double floor_ms);

}  // namespace detail

/// Fits both forms of the base to kernels of `flops` FLOPs that moved `bytes` (one row per kernel,
/// one column per kind of bytes, each with a rate of its own) measured at `ms`, non-negatively and
/// robustly, and keeps the form with the lower mean absolute log error.
/// @throws shape_error when the sizes disagree, there are no samples, or more than
///         roofline_max_byte_kinds kinds of bytes; config_error for a negative or non-finite count
///         or a latency that is not finite and positive
DNNCOST_FUNC RooflineBaseFit fit_roofline_base(std::span<const double> flops, const Mat<double>& bytes,
                                               std::span<const double> ms);

}  // namespace dnncost::device

#if !defined(DNNCOST_COMPILED)
#include <dnncost/device/roofline_base_impl.hpp>
#endif
