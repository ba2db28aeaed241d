#pragma once
/// @file metrics.hpp
/// Accuracy of a cost estimator on a test set, in the terms the latency-prediction literature
/// uses (BRP-NAS, HELP, MAPLE-Edge, HiFi-SAGE): MAPE, RMSE, error-bound accuracy, Spearman's rho
/// and Kendall's tau-b, on all items and on the non-degenerate ones.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <numeric>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <dnncost/core/config.hpp>
#include <dnncost/core/error.hpp>
#include <dnncost/core/robust_statistics.hpp>

namespace dnncost::train {

/// Default threshold of the degenerate-item exclusion: a fraction of the median true value.
/// "Degenerate" items are those whose true value is below this fraction of the median true
/// value: in NAS-Bench-201 the cells whose output is disconnected from their input run almost
/// nothing and near-zero latencies are recorded for them, which dominate relative errors without
/// saying anything about the estimator. Each metric is also reported without them.
inline constexpr double degenerate_fraction_of_median = 0.05;

namespace detail {
inline void check_sizes(std::span<const double> a, std::span<const double> b, const char* fn) {
    if (a.size() != b.size()) raise<shape_error>(fn, ": ", a.size(), " predictions but ", b.size(), " true values");
}
inline double nan() { return std::numeric_limits<double>::quiet_NaN(); }
/// The whole-evaluation entry points refuse what would make a metric meaningless: a NaN or
/// infinite prediction or true value (sorting with NaN is undefined; it would be ranked
/// anywhere), or a zero true value (relative errors divide by it).
DNNCOST_FUNC void check_values(std::span<const double> predicted, std::span<const double> truth, const char* fn);
}  // namespace detail

/// Mean absolute percentage error as a fraction. True values must be non-zero.
DNNCOST_FUNC double mape(std::span<const double> predicted, std::span<const double> truth);

/// Root mean squared error in the target's unit.
DNNCOST_FUNC double rmse(std::span<const double> predicted, std::span<const double> truth);

/// Fraction of items whose relative error is at most `bound` (0.1 for ±10 %).
DNNCOST_FUNC double error_bound_accuracy(std::span<const double> predicted, std::span<const double> truth, double bound);

/// Ranks 1..n; tied values share the average of the ranks they span.
DNNCOST_FUNC std::vector<double> average_ranks(std::span<const double> x);

/// Pearson correlation; NaN if either side is constant or fewer than two items.
DNNCOST_FUNC double pearson(std::span<const double> a, std::span<const double> b);

/// Spearman's rank correlation with average ranks for ties.
inline double spearman(std::span<const double> predicted, std::span<const double> truth) {
    detail::check_sizes(predicted, truth, "spearman");
    return pearson(average_ranks(predicted), average_ranks(truth));
}

/// Kendall's tau-b (ties handled): (concordant - discordant) / sqrt((n0 - ties_x)(n0 - ties_y)),
/// computed in O(n log n) with Knight's merge-sort algorithm.
DNNCOST_FUNC double kendall(std::span<const double> x, std::span<const double> y);

/// All metrics of one evaluation. Fractions, not percentages.
struct Metrics {
    std::size_t n = 0;
    double mape = 0, rmse = 0, within_1 = 0, within_5 = 0, within_10 = 0, spearman = 0, kendall = 0;

    /// (name, value) pairs in a fixed order, for JSON or tables; n is reported as a double.
    std::vector<std::pair<std::string, double>> fields() const {
        return {{"n", static_cast<double>(n)},
                {"spearman", spearman},
                {"kendall", kendall},
                {"mape", mape},
                {"rmse", rmse},
                {"within_1", within_1},
                {"within_5", within_5},
                {"within_10", within_10}};
    }
};

/// Compute every metric on the given items.
/// @throws shape_error on a size mismatch, config_error on a non-finite value or a zero truth
DNNCOST_FUNC Metrics compute_metrics(std::span<const double> predicted, std::span<const double> truth);

/// The value below which a training target is degenerate (degenerate_fraction_of_median of the
/// targets' median_high): such items neither drive a relative loss nor count in a fit's
/// selection score. evaluate() reports its own threshold on the true values of a test set.
inline double degenerate_threshold(std::span<const double> targets) {
    return degenerate_fraction_of_median * median_high(targets);
}

/// Metrics on all items and on the non-degenerate ones.
struct AccuracyReport {
    Metrics all;
    Metrics non_degenerate;  ///< items with truth >= threshold
    std::size_t n_degenerate = 0;
    double degenerate_threshold = 0;  ///< fraction_of_median x median(truth)
};

/// Evaluate predictions, also excluding items whose true value is below
/// `fraction_of_median` times the median true value.
DNNCOST_FUNC AccuracyReport evaluate(std::span<const double> predicted, std::span<const double> truth,
                               double fraction_of_median = degenerate_fraction_of_median);

/// Fraction of items whose true value lies within mean ± k·sigma (k = 2 by default): the
/// calibration check of an ensemble's uncertainty (≈ 0.95 for well-calibrated Gaussian errors).
DNNCOST_FUNC double coverage(std::span<const double> mean, std::span<const double> sigma, std::span<const double> truth,
                       double k = 2.0);

}  // namespace dnncost::train

#if !defined(DNNCOST_COMPILED)
#include <dnncost/train/metrics_impl.hpp>
#endif
