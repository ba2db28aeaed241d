#pragma once
/// @file tabular_regressor.hpp
/// A regressor for the latency of one kernel kind from a row of numeric features: the
/// per-kernel part of a kernel-level device model. Two implementations share this interface,
/// the project's own MLP (mlp_regressor.hpp) and gradient-boosted trees through XGBoost
/// (gbt_regressor.hpp, optional target dnncost::xgboost); tabular_choice.hpp fits both on one
/// kernel kind and keeps the one that validates better.
///
/// The input is a generic feature matrix (one row per kernel instance, one column per named
/// feature). The intended features of a kernel, computed from the kernel graph, are:
///   - shape: batch, input and output channels, spatial size (or tokens), kernel size, stride,
///     groups, as the kernel kind has them;
///   - work: FLOPs, bytes read and written, parameters (weights), and arithmetic intensity
///     (FLOPs per byte), the quantities a roofline reads;
///   - layout: whether the channel counts are multiples of the runtime's blocking (e.g. the
///     NCHWc block of 8 or 16), which decides the code path a runtime takes.
/// Heavy-tailed counts (FLOPs, bytes) may be passed raw: each regressor transforms what it needs.
///
/// Every regressor learns log-latency, so relative errors weigh the same for a 10 µs and a
/// 10 ms kernel, and its predictions are exp() of a clamped logarithm: always positive and finite,
/// even far outside the training range.
///
/// The larger functions are defined in tabular_regressor_impl.hpp: compiled into dnncost::compiled in
/// compiled mode (core/config.hpp), included at the end of this header otherwise.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include <Eigen/Core>

#include <dnncost/core/config.hpp>
#include <dnncost/core/error.hpp>
#include <dnncost/core/matrix.hpp>
#include <dnncost/io/serialize.hpp>

namespace dnncost::device {

namespace detail {
/// How a regressor type R fits (R::fit_log_impl): set where device_model_training.hpp is compiled
/// in (the compiled library includes it), null elsewhere, so that a program that only prices with
/// saved models does not compile the regressors' training.
template <class R>
inline void (*tabular_fitting)(R&, const Mat<double>&, const Eigen::VectorXd&) = nullptr;

/// What the hook points to; a friend of each regressor.
struct TabularTraining {
    template <class R>
    static void fit(R& r, const Mat<double>& x, const Eigen::VectorXd& log_y) {
        r.fit_log_impl(x, log_y);
    }
};

/// Runs R's registered fitting, or says which header provides it.
template <class R>
void run_tabular_fitting(R& r, const Mat<double>& x, const Eigen::VectorXd& log_y) {
    if (!tabular_fitting<R>)
        raise<config_error>("fitting a ", r.kind(),
                            " regressor needs its training: include <dnncost/device/device_model_training.hpp> "
                            "(header-only mode) or link dnncost::compiled");
    tabular_fitting<R>(r, x, log_y);
}
}  // namespace detail

/// Version of the payload that TabularRegressor::save writes inside the model container.
inline constexpr std::uint32_t tabular_payload_version = 1;

/// How far (as a factor) a prediction may leave the range of the latencies seen in training:
/// extrapolation that far is not backed by any measurement, and the bound keeps exp() finite.
inline constexpr double tabular_extrapolation_factor = 1e4;

/// Fit / predict / save for one kernel kind. The public functions validate their input and
/// the stored model; implementations see checked data only (non-virtual interface).
/// predict() keeps no state between calls: threads may predict with one object at once (a device
/// model's pricing threads share its regressors).
class TabularRegressor {
public:
    virtual ~TabularRegressor() = default;

    /// Short name of the implementation ("mlp", "gbt"); the container kind is "tabular-<kind>".
    virtual std::string kind() const = 0;

    /// Learn log(latency_ms) from the rows of `x`.
    /// @param x             one row per kernel instance, one column per feature
    /// @param latency_ms    measured latencies, finite and positive
    /// @param feature_names one unique, non-empty name per column (saved with the model)
    /// @throws shape_error when the sizes disagree or there are too few rows; config_error
    ///         on a non-finite feature or a non-positive / non-finite latency (naming the row)
    void fit(const Mat<double>& x, std::span<const double> latency_ms, std::vector<std::string> feature_names);

    /// Predicted latencies in ms, one per row: positive and finite.
    /// @throws config_error when not fitted; shape_error on a wrong column count; config_error
    ///         on a non-finite feature (naming row and feature) or a non-finite model output
    std::vector<double> predict(const Mat<double>& x) const;

    /// The model as bytes: a dnncost container (magic, version, CRC-32) of kind
    /// "tabular-<kind>" whose payload is versioned (tabular_payload_version).
    /// @throws config_error when not fitted
    std::string save() const;

    /// How far beyond the samples it learnt a kernel of features `row` lies in its work: the
    /// largest of its counts (FLOPs, bytes) over the most any sample had of that count, > 1 for a
    /// kernel beyond every sample; 0 for a regressor that does not read the work.
    virtual double work_beyond_samples(std::span<const double> row) const {
        (void)row;
        return 0;
    }

    bool fitted() const { return m_fitted; }
    const std::vector<std::string>& feature_names() const { return m_names; }
    std::string container_kind() const { return "tabular-" + kind(); }

protected:
    /// The fewest rows an implementation can fit (it may hold some out for validation).
    virtual Index min_rows() const { return 8; }
    /// Fit on checked rows and log-latencies.
    virtual void fit_log(const Mat<double>& x, const Eigen::VectorXd& log_y) = 0;
    /// Predicted log-latencies of checked rows (any finite value; the caller clamps).
    virtual Eigen::VectorXd predict_log(const Mat<double>& x) const = 0;
    /// The implementation's part of the payload, and reading it back (r.fail on bad content).
    virtual void save_model(io::BinaryWriter& w) const = 0;
    virtual void load_model(io::BinaryReader& r, std::size_t n_features) = 0;
    /// Largest difference in log-latency allowed between the saved and the recomputed outputs
    /// of the probe rows (see restore): covers float rounding of the implementation.
    virtual double probe_tolerance() const { return 1e-9; }

    /// Read `bytes` written by save() of this kind into this object.
    /// @throws parse_error naming `source` on a damaged container, a payload of another kind or
    ///         version, a truncated or inconsistent payload, or a model whose outputs on the saved
    ///         probe rows differ from those it gave when saved
    void restore(std::string_view bytes, const std::string& source);

private:
    static std::uint64_t hash_of(const std::string& kind, const std::vector<std::string>& names);
    std::uint64_t config_hash() const { return hash_of(kind(), m_names); }

    static void check_feature_names(const std::string& who, const std::vector<std::string>& names, Index cols);
    static void check_finite_rows(const std::string& who, const Mat<double>& x, const std::vector<std::string>& names);
    /// Rows spread over the training set whose outputs are saved with the model, so that
    /// loading can check that the model still computes what it computed when saved.
    void take_probes(const Mat<double>& x);

    std::vector<std::string> m_names;
    double m_log_floor = 0, m_log_ceiling = 0;
    Mat<double> m_probe_x;
    Eigen::VectorXd m_probe_log;
    bool m_fitted = false;
};

}  // namespace dnncost::device

#if !defined(DNNCOST_COMPILED)
#include <dnncost/device/tabular_regressor_impl.hpp>
#endif
