#pragma once
/// @file calibration_json.hpp
/// A device model's calibration as one JSON document: `dnncost device calibrate --json` prints it
/// and the Python module's dnncost.calibrate returns it, so both give the same fields and figures.
#include <cmath>
#include <cstddef>
#include <string>
#include <string_view>

#include <dnncost/device/device_build.hpp>
#include <dnncost/device/kernel_intensity_factor.hpp>
#include <dnncost/measure/json.hpp>

namespace dnncost::device {

/// An intensity calibration factor: null when there is none.
inline measure::json::Value intensity_factor_json(const KernelIntensityFactor& z) {
    using measure::json::Value;
    if (!z.active()) return Value{};
    auto o = Value::object();
    o.set("slope", Value::of(z.slope));
    o.set("low_flops_per_byte", Value::of(z.low));
    o.set("high_flops_per_byte", Value::of(z.high));
    return o;
}

/// The report of calibration `r` of the model read from `model`, written to `out`: the factors
/// chosen and where they came from, every candidate's leave-one-out error, the shots measured and
/// whether the machine was disturbed while they were.
inline measure::json::Value calibration_json(const DeviceCalibrationResult& r, std::string_view model,
                                             std::string_view out) {
    using measure::json::Value;
    const auto& c = r.report;
    const auto count = [](std::size_t n) { return Value::of(static_cast<double>(n)); };
    // a shrinkage of infinity is the global factor alone
    const auto shrinkage = [](double x) { return std::isfinite(x) ? Value::of(x) : Value::of("global only"); };
    // where the family factors applied come from, in the words of the candidates' list
    const char* family_source = !c.applied                    ? "kept as given"
                                : !std::isfinite(c.shrinkage) ? "none"
                                : c.from_profiles             ? "profiled kernels"
                                                              : "shot latencies";
    auto families = Value::object();
    for (const auto& [f, x] : c.family_factors) families.set(f, Value::of(x));
    auto candidates = Value::array();
    const auto candidate = [&](std::string fit, Value shrink, double loo) {
        auto o = Value::object();
        o.set("fit", Value::of(std::move(fit)));
        if (!shrink.is_null()) o.set("shrinkage", std::move(shrink));
        o.set("loo_mape", Value::of(loo));
        candidates.push(std::move(o));
    };
    for (const auto& [penalty, e] : c.candidates)
        candidate(std::isfinite(penalty) ? "shot latencies" : "global only", shrinkage(penalty), e);
    for (const auto& [prior, e] : c.profiled_candidates) candidate("profiled kernels", Value::of(prior), e);
    for (const auto& [from, e] : c.intensity_candidates) candidate("intensity slope from " + from, Value{}, e);
    auto shots = Value::array();
    for (std::size_t i = 0; i < r.shots.size(); ++i) {
        auto s = Value::object();
        s.set("network", Value::of(r.shots[i]));
        s.set("measured_ms", Value::of(r.measured_ms[i]));
        s.set("predicted_ms", Value::of(r.predicted_ms[i]));
        shots.push(std::move(s));
    }
    const auto disturbed = r.disturbance.summary();
    auto o = Value::object();
    o.set("model", Value::of(std::string(model)));
    o.set("out", Value::of(std::string(out)));
    o.set("factor", Value::of(r.factor));
    o.set("family_factors", std::move(families));
    o.set("family_factors_from", Value::of(family_source));
    o.set("intensity_factor", intensity_factor_json(c.intensity_factor));
    o.set("profiled_kernels", count(c.profiled_kernels));
    o.set("applied", Value::of(c.applied));
    o.set("shrinkage", shrinkage(c.shrinkage));
    o.set("given_mape", Value::of(c.given_mape));
    o.set("loo_mape", c.candidates.empty() ? Value{} : Value::of(c.cv_mape));
    o.set("candidates", std::move(candidates));
    o.set("disturbed", disturbed.empty() ? Value{} : Value::of(disturbed));
    o.set("measured_again", Value::of(r.disturbance.retaken > 0));
    o.set("shots", std::move(shots));
    return o;
}

}  // namespace dnncost::device
