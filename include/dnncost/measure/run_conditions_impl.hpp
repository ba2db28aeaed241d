#pragma once
/// @file run_conditions_impl.hpp
/// The definitions of run_conditions.hpp: compiled once into dnncost::compiled in compiled mode
/// (core/config.hpp), included by run_conditions.hpp in header-only mode.
#include <dnncost/measure/run_conditions.hpp>

DNNCOST_FUNC auto dnncost::measure::judge_conditions(RunConditions& c, std::size_t runners, int logical_cpus) -> void {
    c.disturbed = false;
    c.reasons.clear();
    if (c.reference && reference_drifted(*c.reference)) {
        std::string values;
        for (const double v : c.reference->values_ms) values += (values.empty() ? "" : ", ") + detail::fixed(v, 4);
        const std::string drift = "the reference network drifted by " + detail::percent(c.reference->drift()) +
                                  " during the run (" + values + " ms)";
        if (!c.slow_spans_covered())
            c.reasons.push_back(drift + ", beyond its noise: the machine changed under the run" +
                                (c.slow_span_networks > 0
                                     ? "; " + std::to_string(c.slow_span_networks - c.slow_span_retaken) +
                                           " networks measured only while it ran slow"
                                     : std::string()));
        else
            c.warnings.push_back(drift + (c.slow_span_networks > 0
                                              ? ": the " + std::to_string(c.slow_span_networks) +
                                                    " networks measured only while it ran slow were measured again"
                                              : ": every network was also measured while it did not run slow"));
    }
    if (c.cpu && std::isfinite(c.load.other_share_of_cpu) && c.load.other_share_of_cpu > disturbed_share_of_cpu)
        c.reasons.push_back("other processes used " + detail::percent(c.load.other_share_of_cpu) + " of CPU " +
                            std::to_string(*c.cpu) + ", the runners' CPU");
    if (!c.cpu && std::isfinite(c.load.other_cpus) && logical_cpus > 0) {
        const double free = std::max(1.0, static_cast<double>(logical_cpus) - static_cast<double>(runners));
        const double allowed = std::max(0.5, disturbed_share_of_free_cpus * free);
        if (c.load.other_cpus > allowed)
            c.reasons.push_back("other processes kept " + detail::fixed(c.load.other_cpus, 2) + " of the " +
                                std::to_string(logical_cpus) + " CPUs busy on average (more than " +
                                detail::fixed(allowed, 2) + "); measure on an idle machine, or pin with --cpu");
    }
    c.disturbed = !c.reasons.empty();
}

DNNCOST_FUNC auto dnncost::measure::to_json(const RunConditions& c) -> json::Value {
    auto v = json::Value::object();
    v.set("host", to_json(c.host));
    v.set("disturbed", json::Value::of(c.disturbed));
    auto reasons = json::Value::array();
    for (const auto& r : c.reasons) reasons.push(json::Value::of(r));
    v.set("reasons", std::move(reasons));
    auto warnings = json::Value::array();
    for (const auto& w : c.warnings) warnings.push(json::Value::of(w));
    v.set("warnings", std::move(warnings));
    v.set("reference", c.reference ? to_json(*c.reference) : json::Value{});
    v.set("other_cpus", json::Value::of(c.load.other_cpus));
    v.set("other_share_of_cpu", json::Value::of(c.load.other_share_of_cpu));
    v.set("load_average", json::Value::of(c.load.load_average));
    v.set("cpu", c.cpu ? json::Value::of(static_cast<double>(*c.cpu)) : json::Value{});
    v.set("realtime", json::Value::of(c.realtime));
    if (c.slow_spans_checked) {
        v.set("slow_span_networks", json::Value::of(static_cast<double>(c.slow_span_networks)));
        v.set("slow_span_retaken", json::Value::of(static_cast<double>(c.slow_span_retaken)));
    }
    return v;
}
