#pragma once
/// @file gbt_regressor.hpp
/// Gradient-boosted trees through XGBoost's C API as a per-kernel latency regressor.
/// Needs the optional target dnncost::xgboost (Debian: libxgboost-dev), which defines
/// DNNCOST_HAS_XGBOOST; the umbrella header does not include this file.
///
/// The larger functions are defined in gbt_regressor_impl.hpp: compiled into dnncost::compiled in
/// compiled mode (core/config.hpp), included at the end of this header otherwise.
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
#include <dnncost/device/tabular_regressor.hpp>

namespace dnncost::device {

/// Hyper-parameters of GbtRegressor; checked when the regressor is built.
struct GbtRegressorOptions {
    int max_rounds = 800;
    int early_stopping_rounds = 50;  ///< on the validation split
    int max_depth = 6;
    double learning_rate = 0.05;  ///< XGBoost's eta
    double subsample = 0.8;
    double colsample_bytree = 1.0;
    double min_child_weight = 1.0;
    double lambda = 1.0;                ///< L2 penalty on leaf values
    double validation_fraction = 0.15;  ///< of the rows, held out for early stopping
    std::uint64_t seed = 1;
    /// Threads of XGBoost. One by default: the histogram sums then have one order, so the same
    /// rows and seed give the same trees.
    int nthread = 1;
    /// Fit a ridge-regularised linear model of the log-latency first and boost trees on what it
    /// leaves: a power law in the log features carries the trend between and beyond the samples,
    /// which trees alone can only follow in steps and hold flat past the last one. Meant for
    /// features on a log scale, as kernel features are.
    bool linear_base = false;
    double linear_ridge = 1.0;  ///< L2 penalty of the linear base, on standardised features
    /// The features the linear base reads, by name; those of them the data has (all features
    /// when it has none). Sizes such as work and traffic carry a trend that holds beyond the
    /// samples; a feature that only shifts the cost (a flag, a count of inputs) is left to the
    /// trees, so a value far outside its samples cannot scale a prediction.
    std::vector<std::string> linear_features = {};
};

namespace detail {
/// Throw config_error naming the call and carrying XGBoost's own message when `rc` is an error.
DNNCOST_FUNC void xgb_check(int rc, const char* call);
struct XgbBoosterFree {
    void operator()(void* h) const { XGBoosterFree(h); }
};
struct XgbMatrixFree {
    void operator()(void* h) const { XGDMatrixFree(h); }
};
using XgbBooster = std::unique_ptr<void, XgbBoosterFree>;
using XgbMatrix = std::unique_ptr<void, XgbMatrixFree>;

/// Feature j of row i as XGBoost reads it. @throws config_error beyond the float range
DNNCOST_FUNC float xgb_feature(const Mat<double>& x, Index i, Index j);

/// A DMatrix of the given rows (XGBoost reads float; a feature beyond float range is an error).
DNNCOST_FUNC XgbMatrix xgb_matrix(const Mat<double>& x, std::span<const Index> rows);
}  // namespace detail

/// Boosted regression trees on log-latency (squared error), early-stopped on a seeded
/// validation split and cut to the best round. Trees are invariant to monotone transforms of a
/// feature, so features are passed as they are; beyond the training range a tree predicts the
/// value at the range's edge, so extrapolation is flat (positive and finite). With a linear
/// base (kind "gbt-linear") the trees learn the residual of a linear model of the features,
/// which extrapolates as that model does.
class GbtRegressor final : public TabularRegressor {
public:
    /// @throws config_error on a bad hyper-parameter
    explicit GbtRegressor(GbtRegressorOptions o = {}) : m_o(o) {
        if (o.max_rounds < 1 || o.early_stopping_rounds < 1 || o.max_depth < 1 || o.nthread < 1)
            raise<config_error>("GbtRegressor: rounds, early stopping rounds, depth and threads must be positive, got ",
                                o.max_rounds, ", ", o.early_stopping_rounds, ", ", o.max_depth, ", ", o.nthread);
        if (!(o.learning_rate > 0 && o.learning_rate <= 1) || !(o.subsample > 0 && o.subsample <= 1) ||
            !(o.colsample_bytree > 0 && o.colsample_bytree <= 1) || !(o.min_child_weight >= 0) || !(o.lambda >= 0))
            raise<config_error>(
                "GbtRegressor: learning rate, subsample and colsample must be in (0, 1], "
                "min child weight and lambda non-negative");
        if (!(o.validation_fraction > 0 && o.validation_fraction < 0.5))
            raise<config_error>("GbtRegressor: validation fraction ", o.validation_fraction, " outside (0, 0.5)");
        if (!(o.linear_ridge > 0) || !std::isfinite(o.linear_ridge))
            raise<config_error>("GbtRegressor: the linear base's ridge penalty must be finite and positive, got ",
                                o.linear_ridge);
    }

    std::string kind() const override { return m_o.linear_base ? "gbt-linear" : "gbt"; }
    /// Trees kept (the best validation round + 1), after fit or load.
    int rounds() const { return m_rounds; }

    /// Read bytes written by save() of a GbtRegressor.
    /// @throws parse_error naming `source` (see TabularRegressor::restore); XGBoost's own
    ///         message when it cannot read the booster
    static GbtRegressor load(std::string_view bytes, const std::string& source = "<memory>");

protected:
    Index min_rows() const override { return 10; }
    /// XGBoost predicts in float
    double probe_tolerance() const override { return 1e-5; }

    void fit_log(const Mat<double>& x,
                 const Eigen::VectorXd& log_y) override;  // runs fit_log_impl through detail::tabular_fitting

    /// Through the booster's trees read into a GbtForest: XGBoost's own figures (checked when
    /// the trees are read), without its per-call matrix.
    Eigen::VectorXd predict_log(const Mat<double>& x) const override { return forest_log(x) + linear_base(x); }

    /// The trees' part of the prediction.
    Eigen::VectorXd forest_log(const Mat<double>& x) const;

    void save_model(io::BinaryWriter& w) const override;

    void load_model(io::BinaryReader& r, std::size_t n_features) override;

private:
    friend struct detail::TabularTraining;
    /// The training itself (device_model_training.hpp).
    void fit_log_impl(const Mat<double>& x, const Eigen::VectorXd& log_y);
    /// Reads the booster's trees into m_forest and checks that they give XGBoost's own figures,
    /// bit for bit, on rows at and just below every threshold (and on up to 256 of `x`'s rows).
    /// @throws config_error when they do not
    void read_trees(const Mat<double>* x);

    void set_params(BoosterHandle h, double base_score) const;
    /// The number after the last ':' of an evaluation line such as "[12]\tval-mae:0.0321".
    static double parse_eval(const char* line);

    /// Ridge regression of the log-latency on the standardised features of `rows`, returned as
    /// raw-feature coefficients followed by the intercept. A constant feature gets 0.
    Eigen::VectorXd fit_linear_base(const Mat<double>& x, const Eigen::VectorXd& log_y,
                                    std::span<const Index> rows) const;
    /// The linear base of every row (zero without one). One fused multiply-add per coefficient in
    /// a fixed order: the same figure in every build, whatever its vector width or contraction.
    Eigen::VectorXd linear_base(const Mat<double>& x) const;

    GbtRegressorOptions m_o;
    detail::XgbBooster m_booster;  ///< trained, saved and loaded by XGBoost
    GbtForest m_forest;            ///< its trees, which predict
    int m_rounds = 0;
    Eigen::VectorXd m_base;  ///< linear base: one coefficient per feature, then the intercept; empty: none
};

}  // namespace dnncost::device

#if !defined(DNNCOST_COMPILED)
#include <dnncost/device/gbt_regressor_impl.hpp>
#endif
