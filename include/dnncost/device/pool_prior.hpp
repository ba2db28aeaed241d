#pragma once
/// @file pool_prior.hpp
/// Few-shot adaptation by a pool-informed prior: every pool device gets a linear cost model
/// over the same features (an additive model: per-operator counts, MACs, bytes), and the new
/// device's model is a ridge regression on its few shots that is pulled towards the pool model
/// its shots look most like, rather than towards zero. With ten shots and a handful of
/// coefficients, a ridge towards zero has to spend its shots on learning that an operator costs
/// something at all; the pool already knows how operator costs relate on similar devices.
#include <cmath>
#include <cstddef>
#include <limits>
#include <span>
#include <vector>

#include <Eigen/Dense>

#include <dnncost/core/config.hpp>
#include <dnncost/core/error.hpp>
#include <dnncost/core/matrix.hpp>

namespace dnncost::device {

/// Ridge regression of r on the rows of `a` (no intercept handling: every column is penalised),
/// with the penalty chosen by exact leave-one-out squared error over a log grid. Solved in the
/// dual (a a' + lambda I), so that more columns than rows is fine.
struct DualRidge {
    Eigen::VectorXd beta;
    double lambda = 0.0;
    double loo_error = std::numeric_limits<double>::infinity();  ///< mean squared LOO residual

    /// Leave-one-out residuals for one lambda: e_i / (1 - H_ii), H = K (K + lambda I)^-1.
    static Eigen::VectorXd loo_residuals(const Eigen::MatrixXd& a, const Eigen::VectorXd& r, double lambda);
    /// @throws config_error without rows or for non-finite data
    static DualRidge fit(const Eigen::MatrixXd& a, const Eigen::VectorXd& r);
};

/// The pool-prior adaptation model. Features are linear cost features without an intercept
/// (one row per network); latencies are in ms.
class PoolPriorAdaptation {
public:
    /// @param features one row per network (every network the pool devices measured)
    /// @param pool latencies, one row per network and one column per pool device
    /// @param shots rows of `features` measured on the new device, with their latencies `shot_ms`
    /// @throws config_error on mismatched sizes, non-positive latencies or too few shots
    void fit(const Eigen::MatrixXd& features, const Eigen::MatrixXd& pool, std::span<const std::size_t> shots,
             std::span<const double> shot_ms);

    /// Latencies in ms on the new device of the networks with these features (one row each).
    std::vector<double> predict(const Eigen::MatrixXd& features) const;
    /// The pool device (column) whose model was the prior.
    Index prior_device() const { return m_prior_device; }
    /// The penalty leave-one-out chose: small when the shots move the model away from the prior.
    double lambda() const { return m_lambda; }

private:
    Eigen::MatrixXd design(const Eigen::MatrixXd& features) const;

    Eigen::RowVectorXd m_scale;
    Eigen::VectorXd m_prior, m_weights;
    double m_target_scale = 1.0, m_lambda = 0.0;
    Index m_prior_device = 0;
};

}  // namespace dnncost::device

#if !defined(DNNCOST_COMPILED)
#include <dnncost/device/pool_prior_impl.hpp>
#endif
