#pragma once
/// @file machine_load.hpp
/// How busy other processes kept this machine while it measured (Linux /proc): the CPU time of
/// every CPU (/proc/stat) less the time of dnncost itself and of its runners' process groups
/// (/proc/PID/stat), and the load average. A runner shares its CPU with whatever else runs, so
/// time taken by others during a run is time its timed runs may have waited for.
///
/// Elsewhere than Linux the samples are empty and nothing is concluded.
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <dnncost/core/config.hpp>
#include <dnncost/measure/host.hpp>

namespace dnncost::measure {

/// CPU time at one moment, in clock ticks.
struct LoadSample {
    double seconds = 0;                  ///< steady-clock time of the sample
    std::vector<std::uint64_t> busy;     ///< per CPU (index = CPU number): all but idle and iowait
    std::uint64_t own = 0;               ///< dnncost and its runners' process groups
    double load_average = std::nan("");  ///< 1-minute load average
    bool valid() const { return !busy.empty(); }
};

/// What other processes did between two samples.
struct MachineLoad {
    double seconds = 0;                  ///< length of the interval
    double other_cpus = std::nan("");    ///< CPUs' worth of time other processes used, on average
    double load_average = std::nan("");  ///< the larger of the two samples' load averages
    /// With the runners pinned to one CPU: the share of that CPU other processes used.
    double other_share_of_cpu = std::nan("");
};

/// Busy ticks per CPU from the text of /proc/stat (the "cpuN" lines).
DNNCOST_FUNC std::vector<std::uint64_t> parse_proc_stat(std::string_view text);

/// The fields of /proc/PID/stat after the command name: (process group, utime + stime, and with
/// `children` the reaped children's cutime + cstime too). nullopt for unreadable text.
DNNCOST_FUNC std::optional<std::pair<long, std::uint64_t>> parse_pid_stat(std::string_view text, bool children);

/// Sample the machine now; `groups` are the process groups of the running runners.
DNNCOST_FUNC LoadSample sample_machine(const std::set<pid_t>& groups);

/// What other processes did between `a` and `b` (`ticks_per_second`: sysconf(_SC_CLK_TCK));
/// `cpu`: the CPU the runners were pinned to, if they were (their time is taken to be all there).
DNNCOST_FUNC MachineLoad load_between(const LoadSample& a, const LoadSample& b, double ticks_per_second,
                                std::optional<int> cpu = std::nullopt);

inline double clock_ticks_per_second() {
    const long t = ::sysconf(_SC_CLK_TCK);
    return t > 0 ? static_cast<double>(t) : 100.0;
}

}  // namespace dnncost::measure

#if !defined(DNNCOST_COMPILED)
#include <dnncost/measure/machine_load_impl.hpp>
#endif
