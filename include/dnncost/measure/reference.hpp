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
#include <string>
#include <vector>

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
        std::vector<double> dev;
        for (const double v : values_ms) dev.push_back(std::abs(v - latency_ms));
        std::sort(dev.begin(), dev.end());
        const auto n = dev.size();
        return (n % 2 ? dev[n / 2] : 0.5 * (dev[n / 2 - 1] + dev[n / 2])) / latency_ms;
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

inline json::Value to_json(const ReferenceLatency& r) {
    auto v = json::Value::object();
    v.set("key", json::Value::of(r.key));
    v.set("latency_ms", json::Value::of(r.latency_ms));
    v.set("spread", json::Value::of(r.spread));
    auto values = json::Value::array();
    for (const double x : r.values_ms) values.push(json::Value::of(x));
    v.set("values_ms", std::move(values));
    v.set("drift", json::Value::of(r.drift()));
    if (!r.time.empty()) v.set("time", json::Value::of(r.time));
    return v;
}

/// A reference from its JSON object; an unreadable one is unknown (latency NaN).
inline ReferenceLatency reference_from_json(const json::Value& v) {
    ReferenceLatency r;
    if (const auto* k = v.find("key"); k && k->is_string()) r.key = k->string;
    if (const auto* l = v.find("latency_ms"); l && l->is_number() && std::isfinite(l->number) && l->number > 0)
        r.latency_ms = l->number;
    if (const auto* s = v.find("spread"); s && s->is_number() && std::isfinite(s->number) && s->number >= 0)
        r.spread = s->number;
    if (const auto* a = v.find("values_ms"); a && a->is_array())
        for (const auto& x : a->items)
            if (x.is_number() && std::isfinite(x.number) && x.number > 0) r.values_ms.push_back(x.number);
    if (const auto* t = v.find("time"); t && t->is_string()) r.time = t->string;
    return r;
}

}  // namespace dnncost::measure
