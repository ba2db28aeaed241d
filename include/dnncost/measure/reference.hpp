#pragma once
/// @file reference.hpp
/// The latency of the reference network measured with a run (reference_model.hpp builds it):
/// a fixed yardstick that makes figures from different hosts or days comparable. Measured at
/// the start and the end of a run and between rounds of a long run, with the run's own settings,
/// each measurement one request (a round): its value is the statistic of the round statistics
/// and its spread their median absolute deviation relative to the value, as for any network.
///
/// Two references agree when their values differ by no more than the noise: 3 times the larger
/// of their spreads (within a measurement, or between the measurements of a run), and never
/// less than 5 %. Within one run, a reference whose extreme measurements differ by more than
/// max(5 %, 3 x its spread within a measurement) drifted: the machine changed under the run.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <string>
#include <vector>

#include <dnncost/core/config.hpp>
#include <dnncost/core/robust_statistics.hpp>
#include <dnncost/measure/json.hpp>

namespace dnncost::measure {

/// The smallest difference between two reference latencies that is not noise.
inline constexpr double reference_min_difference = 0.05;
/// How many times the reference's own spread a difference must exceed to be more than noise.
inline constexpr double reference_spread_factor = 3.0;

struct ReferenceLatency {
    std::string key;                   ///< network_key of the reference graph (which yardstick)
    double latency_ms = std::nan("");  ///< the statistic of the measurements' statistics
    double spread = 0;                 ///< within one measurement: median relative MAD of its timed runs
    std::vector<double> values_ms;     ///< each measurement's statistic, in the order taken
    std::string time;                  ///< when the run started, UTC ISO 8601
    /// The run measured again every network it had measured only while this reference ran slow
    /// (harness.hpp): its drift did not reach the run's results.
    bool slow_spans_covered = false;

    bool known() const { return std::isfinite(latency_ms) && latency_ms > 0; }
    /// (largest - smallest) / value over the measurements of one run.
    double drift() const {
        if (values_ms.size() < 2 || !known()) return 0;
        const auto [lo, hi] = std::minmax_element(values_ms.begin(), values_ms.end());
        return (*hi - *lo) / latency_ms;
    }
    /// Between measurements: median absolute deviation of their statistics relative to the value.
    double spread_between() const {
        if (values_ms.size() < 2 || !known()) return 0;
        return mad(values_ms, latency_ms) / latency_ms;
    }
    /// The reference's own noise: the larger of its spreads within and between measurements.
    double noise() const { return std::max(spread, spread_between()); }
};

/// The relative difference of two latencies, symmetric: larger / smaller - 1.
inline double relative_difference(double a, double b) { return std::max(a, b) / std::min(a, b) - 1; }

/// The bound below which two references agree: max(5 %, 3 x the larger noise).
inline double reference_noise_bound(const ReferenceLatency& a, const ReferenceLatency& b) {
    return std::max(reference_min_difference, reference_spread_factor * std::max(a.noise(), b.noise()));
}

/// Whether two known references of the same network differ by more than their noise.
inline bool references_differ(const ReferenceLatency& a, const ReferenceLatency& b) {
    if (!a.known() || !b.known()) return false;
    return relative_difference(a.latency_ms, b.latency_ms) > reference_noise_bound(a, b);
}

/// Whether one run's reference drifted: its measurements disagree by more than max(5 %, 3 x the
/// spread within one measurement).
inline bool reference_drifted(const ReferenceLatency& r) {
    return r.drift() > std::max(reference_min_difference, reference_spread_factor * r.spread);
}

/// Whether the j-th measurement of a run's reference ran slower than the run's fastest by more
/// than max(5 %, 3 x the spread within a measurement): the host was slow then.
inline bool reference_slow_at(const ReferenceLatency& r, std::size_t j) {
    if (j >= r.values_ms.size() || !r.known()) return false;
    const double fastest = *std::min_element(r.values_ms.begin(), r.values_ms.end());
    const double bound = std::max(reference_min_difference, reference_spread_factor * r.spread);
    return r.values_ms[j] > fastest * (1 + bound);
}

/// Whether span `span` of a run (1, 2, ...: the requests between its reference measurements
/// span - 1 and span) was slow: the reference ran slow at its start or its end.
inline bool slow_span(const ReferenceLatency& r, std::size_t span) {
    return span > 0 && (reference_slow_at(r, span - 1) || reference_slow_at(r, span));
}

/// The measurements of a run's reference that describe the speed its results were measured at:
/// all of them, or, when the networks of its slow spans were measured again (`slow_covered`),
/// those that were not slow.
inline std::vector<double> usual_reference_values(const ReferenceLatency& r, bool slow_covered) {
    if (!slow_covered) return r.values_ms;
    std::vector<double> out;
    for (std::size_t j = 0; j < r.values_ms.size(); ++j)
        if (!reference_slow_at(r, j)) out.push_back(r.values_ms[j]);
    return out;
}

DNNCOST_FUNC json::Value to_json(const ReferenceLatency& r);

/// A reference from its JSON object; an unreadable one is unknown (latency NaN).
DNNCOST_FUNC ReferenceLatency reference_from_json(const json::Value& v);

}  // namespace dnncost::measure

#if !defined(DNNCOST_COMPILED)
#include <dnncost/measure/reference_impl.hpp>
#endif
