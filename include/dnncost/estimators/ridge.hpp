#pragma once
/// @file ridge.hpp
/// Closed-form weighted ridge regression with the loss and the penalty chosen on validation
/// data (or by exact leave-one-out without any): the solver of additive cost models.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <string_view>
#include <vector>

#include <Eigen/Dense>

#include <dnncost/core/config.hpp>
#include <dnncost/core/error.hpp>

namespace dnncost::estimators {

/// The closed-form ridge regression of the additive baseline, shared with the warm start of the
/// GNN estimators' additive path. Minimises the weighted squared error
///     (1/n) sum_i w_i (y_i - x_i . beta)^2 + lambda |beta_{1..}|^2   (x_i0 = 1, not penalised)
/// with w_i = 1 / y_i^2 (relative error; items below `degenerate` get no weight) or w_i = 1
/// (absolute error), over a log grid of lambda (1e-8 ... 1e2, half decades). Loss and lambda
/// are chosen together by the mean absolute relative error over the non-degenerate validation
/// items or, without validation data, over exact leave-one-out predictions of the training set.
/// The coefficients may be held non-negative (every operator then costs time, and a network
/// with more of anything cannot be predicted cheaper), or that choice made on the same score.
struct RidgeFit {
    enum class Loss : std::uint8_t { relative = 0, absolute = 1 };
    /// Signs of the coefficients other than the intercept: free, non-negative, or whichever of
    /// the two scores better (ties go to non-negative).
    enum class Signs : std::uint8_t { free = 0, nonnegative = 1, either = 2 };
    /// "free", "nonnegative" or "either". @throws config_error naming the choices
    static Signs parse_signs(std::string_view s) {
        if (s == "free") return Signs::free;
        if (s == "nonnegative") return Signs::nonnegative;
        if (s == "either") return Signs::either;
        raise<config_error>("coefficient signs '", s, "': expected either, nonnegative or free");
    }
    Eigen::VectorXd beta;  ///< intercept first
    double lambda = 0.0;
    bool nonnegative = false;  ///< beta was held non-negative
    double score = std::numeric_limits<double>::infinity();  ///< the selection MAPE
    Loss loss = Loss::relative;
    bool loo = false;  ///< score is leave-one-out (no validation data)

    /// The weighted normal equations of one loss, (1/n) X'WX and (1/n) X'Wy, with the weights
    /// normalised to mean 1 so that one lambda grid fits both losses.
    struct NormalEquations {
        Eigen::VectorXd w;
        Eigen::MatrixXd xtwx;
        Eigen::VectorXd xtwy;
        /// nullopt when no item has weight (a relative loss over only degenerate items)
        static std::optional<NormalEquations> of(const Eigen::MatrixXd& x, const Eigen::VectorXd& y, Loss loss,
                                                 double degenerate);
        /// (1/n) X'WX + lambda I, the intercept unpenalised.
        Eigen::MatrixXd penalised(double lambda) const;
        Eigen::LDLT<Eigen::MatrixXd> factor(double lambda) const;
        /// The ridge coefficients for lambda (intercept first).
        Eigen::VectorXd beta(double lambda) const;
        /// The rows and columns `idx` of `a` (no Eigen 3.4 slicing: 3.3 must do).
        static Eigen::MatrixXd principal(const Eigen::MatrixXd& a, const std::vector<Eigen::Index>& idx);
        /// The same with every coefficient but the intercept held non-negative: an active-set
        /// method (Lawson and Hanson's, on the normal equations), exact in a finite number of
        /// steps on this strictly convex quadratic. `start` (e.g. the unconstrained solution),
        /// clipped at zero, is the first feasible point and its positive coefficients the first
        /// free set, which is most of the final one in practice.
        Eigen::VectorXd nonnegative_beta(double lambda, const Eigen::VectorXd& start) const;
    };

    /// Coefficients for a given loss and lambda (intercept first).
    /// @throws error when no item has weight under the loss
    static Eigen::VectorXd solve(const Eigen::MatrixXd& x, const Eigen::VectorXd& y, Loss loss, double lambda,
                                 double degenerate);

    /// Optional selection score of validation predictions (lower is better) replacing the MAPE.
    using Scorer = std::function<double(const Eigen::VectorXd& predicted, const Eigen::VectorXd& truth)>;

    /// @param x training design matrix with a leading column of ones
    /// @param x_val, y_val validation data (nullptr: leave-one-out)
    /// @param scorer selection score on the validation data (empty: the MAPE over non-degenerate items)
    /// @throws error when every candidate fails (non-finite data)
    /// @param signs free, non-negative or either coefficients (see Signs)
    static RidgeFit select(const Eigen::MatrixXd& x, const Eigen::VectorXd& y, const Eigen::MatrixXd* x_val,
                           const Eigen::VectorXd* y_val, double degenerate, const Scorer& scorer = {},
                           Signs signs = Signs::free);

private:
    /// Leave-one-out residuals r_i / (1 - h_ii) with h_ii = w_i x_i' A^-1 x_i / n: exact for the
    /// free ridge (A factored as `free_factor`); for a non-negative one, over the coefficients not
    /// held at zero (exact as long as leaving one item out keeps the same ones at zero).
    static Eigen::VectorXd loo_residuals(const Eigen::MatrixXd& x, const Eigen::VectorXd& y, const NormalEquations& ne,
                                         double lambda, const Eigen::LDLT<Eigen::MatrixXd>& free_factor,
                                         const Eigen::VectorXd& beta, bool held);
};

}  // namespace dnncost::estimators

#if !defined(DNNCOST_COMPILED)
#include <dnncost/estimators/ridge_impl.hpp>
#endif
