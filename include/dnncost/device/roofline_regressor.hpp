#pragma once
/// @file roofline_regressor.hpp
/// A kernel regressor that extrapolates with the work: a roofline base fitted on the samples
/// (roofline_base.hpp) times a learnt correction, another regressor fitted on
/// log(measured / base). The correction reads the features clamped to the box the samples span
/// and is bounded by the corrections the samples showed, so past the samples it stays at its
/// value at their edge and the price scales as the base does. Inside the box the correction is
/// the inner regressor's own figure. Kind "roofline-<inner kind>".
///
/// The larger functions are defined in roofline_regressor_impl.hpp: compiled into dnncost::compiled in
/// compiled mode (core/config.hpp), included at the end of this header otherwise.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <functional>
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
#include <dnncost/device/tabular_regressor.hpp>
#include <dnncost/io/serialize.hpp>

namespace dnncost::device {

/// Where RooflineRegressor reads a kernel's work. Each feature is log2(1 + count), as kernel
/// features are (device/kernel_features.hpp). Each group of bytes features is one kind of bytes
/// with a rate of its own, its counts summed: by default the activations read and written, and the
/// weights (a matrix-vector product moves mostly weights, a convolution mostly activations).
/// Features the data lacks are left out, and a group without any.
struct RooflineRegressorOptions {
    std::string flops_feature = "log_flops";
    std::vector<std::vector<std::string>> bytes_features = {{"log_input_bytes", "log_output_bytes"},
                                                            {"log_weight_bytes"}};
};

class RooflineRegressor final : public TabularRegressor {
public:
    /// Loads a saved inner regressor of any kind (load_tabular_regressor).
    using Loader = std::function<std::unique_ptr<TabularRegressor>(std::string_view, const std::string&)>;

    /// @param correction the unfitted regressor of the correction
    /// @throws config_error for no correction, one that is itself on a roofline base, or no work
    ///         features named
    explicit RooflineRegressor(std::unique_ptr<TabularRegressor> correction, RooflineRegressorOptions o = {})
        : m_o(std::move(o)), m_correction(std::move(correction)) {
        if (!m_correction) raise<config_error>("RooflineRegressor: no correction regressor");
        m_inner_kind = m_correction->kind();
        if (m_inner_kind.starts_with("roofline"))
            raise<config_error>("RooflineRegressor: the correction is itself on a roofline base");
        if (m_o.flops_feature.empty() && m_o.bytes_features.empty())
            raise<config_error>("RooflineRegressor: no FLOPs or bytes feature named");
        if (static_cast<Index>(m_o.bytes_features.size()) > roofline_max_byte_kinds)
            raise<config_error>("RooflineRegressor: ", m_o.bytes_features.size(), " kinds of bytes, at most ",
                                roofline_max_byte_kinds);
    }

    std::string kind() const override { return "roofline-" + m_inner_kind; }

    /// The base, after fit or load.
    const RooflineBase& base() const { return m_base; }
    /// The correction's regressor, after fit or load.
    const TabularRegressor& correction() const { return *m_correction; }
    /// The range of log(measured / base) over the samples: the correction's bounds.
    std::pair<double, double> correction_bounds() const { return {m_corr_lo, m_corr_hi}; }

    /// The largest of the row's FLOPs and byte counts over the most the samples had of it.
    double work_beyond_samples(std::span<const double> row) const override {
        const auto ratio = [&](std::int64_t c) {
            const auto j = static_cast<Index>(c);
            if (j < 0 || j >= m_box_hi.size() || static_cast<std::size_t>(j) >= row.size()) return 0.0;
            const double most = std::exp2(m_box_hi[j]) - 1;
            const double count = std::exp2(std::clamp(row[static_cast<std::size_t>(j)], 0.0, 1000.0)) - 1;
            return most > 0 ? count / most : 0.0;
        };
        double r = m_flops_column >= 0 ? ratio(m_flops_column) : 0.0;
        for (const auto& cols : m_bytes_columns)
            for (const auto c : cols) r = std::max(r, ratio(c));
        return r;
    }

    /// The base's time of each row, in ms (positive).
    /// @throws config_error when not fitted; shape_error on a wrong column count
    std::vector<double> base_ms(const Mat<double>& x) const;

    /// Read bytes written by save() of a RooflineRegressor, its correction read by `load_inner`.
    /// @throws parse_error naming `source` (see TabularRegressor::restore), also for a correction
    ///         of another kind than the container says or one on a roofline base itself
    static RooflineRegressor load(std::string_view bytes, const std::string& source, const Loader& load_inner);

protected:
    Index min_rows() const override { return 10; }
    /// the correction may be trees, which predict in float
    double probe_tolerance() const override { return 1e-5; }

    void fit_log(const Mat<double>& x,
                 const Eigen::VectorXd& log_y) override;  // runs fit_log_impl through detail::tabular_fitting

    Eigen::VectorXd predict_log(const Mat<double>& x) const override;

    void save_model(io::BinaryWriter& w) const override;

    void load_model(io::BinaryReader& r, std::size_t n_features) override;

private:
    friend struct detail::TabularTraining;
    /// The training itself (device_model_training.hpp).
    void fit_log_impl(const Mat<double>& x, const Eigen::VectorXd& log_y);
    RooflineRegressor() = default;

    using Bytes = std::array<double, static_cast<std::size_t>(roofline_max_byte_kinds)>;

    /// Row i's FLOPs, and its bytes of each kind in `bytes`, read back from their log2(1 + x)
    /// features (capped far beyond any real kernel, so that the counts stay finite).
    double work(const Mat<double>& x, Index i, Bytes& bytes) const {
        const auto count = [&](std::int64_t c) {
            return std::exp2(std::clamp(x(i, static_cast<Index>(c)), 0.0, 1000.0)) - 1;
        };
        for (std::size_t g = 0; g < m_bytes_columns.size(); ++g) {
            bytes[g] = 0;
            for (const auto c : m_bytes_columns[g]) bytes[g] += count(c);
        }
        return m_flops_column >= 0 ? count(m_flops_column) : 0.0;
    }
    double log_base(const Mat<double>& x, Index i) const {
        Bytes b{};
        const double f = work(x, i, b);
        const double t = m_base.ms(f, std::span<const double>(b.data(), m_bytes_columns.size()));
        return std::isfinite(t) ? std::log(t) : std::log(std::numeric_limits<double>::max());
    }

    RooflineRegressorOptions m_o;
    std::string m_inner_kind;
    std::unique_ptr<TabularRegressor> m_correction;
    RooflineBase m_base;
    std::int64_t m_flops_column = -1;
    std::vector<std::vector<std::int64_t>> m_bytes_columns;  ///< per kind of bytes
    Eigen::RowVectorXd m_box_lo, m_box_hi;
    double m_corr_lo = 0, m_corr_hi = 0;
    const Loader* m_loader = nullptr;  ///< while loading only
};

}  // namespace dnncost::device

#if !defined(DNNCOST_COMPILED)
#include <dnncost/device/roofline_regressor_impl.hpp>
#endif
