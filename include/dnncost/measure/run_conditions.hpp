#pragma once
/// @file run_conditions.hpp
/// The conditions a run measured under, and whether they were too disturbed to trust its
/// figures. A run is disturbed when
///   - its reference network drifted beyond its noise between the run's start and end
///     (reference_drifted: max(5 %, 3 x its spread)): the machine itself changed, whatever the
///     cause; unless the harness measured again every network it had measured only while the
///     reference ran slow (slow spans, harness.hpp): the drift is then a warning;
///   - other processes used more than 10 % of the CPU the runners were pinned to (--cpu); or,
///     unpinned, more than half of the CPUs the runners leave free (at least half a CPU): their
///     time is time the runners may have waited for.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include <dnncost/core/config.hpp>
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
    /// Whether the harness judged the run's spans (harness.hpp): then the two counts below say
    /// whether every network measured only while the reference ran slow was measured again.
    bool slow_spans_checked = false;
    std::size_t slow_span_networks = 0;  ///< networks measured only while the reference ran slow, at first
    std::size_t slow_span_retaken = 0;   ///< of those, measured again while it did not
    bool disturbed = false;
    /// Whether the networks of the run's slow spans were all measured again outside them.
    bool slow_spans_covered() const { return slow_spans_checked && slow_span_retaken == slow_span_networks; }
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
DNNCOST_FUNC void judge_conditions(RunConditions& c, std::size_t runners, int logical_cpus);

DNNCOST_FUNC json::Value to_json(const RunConditions& c);

}  // namespace dnncost::measure

#if !defined(DNNCOST_COMPILED)
#include <dnncost/measure/run_conditions_impl.hpp>
#endif
