#pragma once
/// @file roofline_base_fit.hpp
/// Fitting a roofline base (roofline_base.hpp) to one kernel family's measured samples: part of a
/// device model's build, not of its pricing.
///
/// The functions are defined in roofline_base_fit_impl.hpp: compiled into dnncost::compiled in
/// compiled mode (core/config.hpp), included at the end of this header otherwise.
#include <span>

#include <Eigen/Core>

#include <dnncost/core/config.hpp>
#include <dnncost/core/matrix.hpp>
#include <dnncost/device/roofline_base.hpp>

namespace dnncost::device {

/// What fit_roofline_base() found: the base, and the mean absolute log error of each form on the
/// samples (the lower one was kept; a tie keeps the sum).
struct RooflineBaseFit {
    RooflineBase base;
    double sum_error = 0, max_error = 0;
};

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
#include <dnncost/device/roofline_base_fit_impl.hpp>
#endif
