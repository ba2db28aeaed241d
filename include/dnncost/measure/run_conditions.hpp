#pragma once
/// @file run_conditions.hpp
/// The conditions a run measured under, and whether they were too disturbed to trust its
/// figures. A run is disturbed when
///   - its reference network drifted beyond its noise between the run's start and end
///     (reference_drifted: max(5 %, 3 x its spread)): the machine itself changed, whatever the cause;
///   - other processes used more than 10 % of the CPU the runners were pinned to (--cpu); or,
///     unpinned, more than half of the CPUs the runners leave free (at least half a CPU): their
///     time is time the runners may have waited for.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include <dnncost/measure/host.hpp>
#include <dnncost/measure/json.hpp>
#include <dnncost/measure/machine_load.hpp>
#include <dnncost/measure/reference.hpp>

namespace dnncost::measure {

/// Share of the runners' own CPU that other processes may use before a run is disturbed.
inline constexpr double disturbed_share_of_cpu = 0.10;
/// Share of the CPUs the runners leave free that other processes may use before a run is disturbed.
inline constexpr double disturbed_share_of_free_cpus = 0.5;

struct RunConditions {
    HostFingerprint host;                       ///< where the run measured (runtime from the runner)
    std::optional<ReferenceLatency> reference;  ///< the reference network in this run
    MachineLoad load;                           ///< other processes over the whole run
    std::optional<int> cpu;                     ///< the CPU the runners were pinned to
    bool realtime = false;                      ///< the runners ran under SCHED_FIFO
    bool disturbed = false;
    std::vector<std::string> reasons;   ///< why the run is disturbed
    std::vector<std::string> warnings;  ///< other things the user should know (a failed reference, ...)
};

namespace detail {
inline std::string percent(double x) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f %%", 100 * x);
    return buf;
}
inline std::string fixed(double x, int digits) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.*f", digits, x);
    return buf;
}
}  // namespace detail

/// Decide whether a run is disturbed and say why (`runners`: runner processes; `logical_cpus`:
/// of this machine).
inline void judge_conditions(RunConditions& c, std::size_t runners, int logical_cpus) {
    c.disturbed = false;
    c.reasons.clear();
    if (c.reference && reference_drifted(*c.reference)) {
        std::string values;
        for (const double v : c.reference->values_ms) values += (values.empty() ? "" : ", ") + detail::fixed(v, 4);
        c.reasons.push_back("the reference network drifted by " + detail::percent(c.reference->drift()) +
                            " during the run (" + values + " ms), beyond its noise: the machine changed under the run");
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

inline json::Value to_json(const RunConditions& c) {
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
    return v;
}

}  // namespace dnncost::measure
