#pragma once
// Options and progress lines shared by the commands that measure through runners (`measure`,
// `table build`, `compress`): the same flags, with the same words, in each.
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "common.hpp"

#include <dnncost/measure/harness.hpp>
#include <dnncost/measure/runner_pool.hpp>

namespace dnncost::cli {

/// Rounds, runs, statistic, time limit and retries of each measurement.
struct MeasureFlags {
    measure::HarnessOptions harness;
    std::string statistic = "min";
    bool fresh_sessions = false;
    double timeout = 120;
    int retries = 1;

    MeasureFlags() = default;
    /// Other defaults than a full measuring campaign's (a table's or a search's single networks).
    MeasureFlags(int rounds, int max_rounds, int warmup, int repeats, double remeasure_spread) {
        harness.rounds = rounds;
        harness.max_rounds = max_rounds;
        harness.warmup = warmup;
        harness.repeats = repeats;
        harness.remeasure_spread = remeasure_spread;
    }

    struct Extras {
        bool max_rounds = true;        ///< --max-rounds
        bool remeasure_spread = true;  ///< --remeasure-spread
    };
    void add_to(Command& cmd, Extras extras) {
        cmd.add_option("--rounds", harness.rounds, "Interleaved rounds per network (R)")
            ->transform(check::integer(1, 1000, "a round count in [1, 1000]"))
            ->capture_default_str();
        cmd.add_option("--warmup", harness.warmup, "Untimed runs per round (W)")
            ->transform(check::integer(0, 1000000, "a run count in [0, 10^6]"))
            ->capture_default_str();
        cmd.add_option("--repeats", harness.repeats, "Timed runs of a network's first round (N), the least of every round")
            ->transform(check::integer(1, 1000000, "a run count in [1, 10^6]"))
            ->capture_default_str();
        cmd.add_option("--round-ms", harness.round_ms,
                       "Later rounds get enough timed runs to last this many ms (up to --max-repeats); 0: N runs")
            ->check(check::finite(check::Sign::non_negative))
            ->capture_default_str();
        cmd.add_option("--max-repeats", harness.max_repeats, "Cap on the timed runs of one round")
            ->transform(check::integer(1, 1000000, "a run count in [1, 10^6]"))
            ->capture_default_str();
        cmd.add_option("--statistic", statistic,
                       "Statistic of a round's runs and of the rounds: min | median (min repeats on a shared machine; "
                       "see docs/measure.md)")
            ->check(check::member({"median", "min"}))
            ->capture_default_str();
        if (extras.remeasure_spread)
            cmd.add_option("--remeasure-spread", harness.remeasure_spread,
                           "Networks whose spread (relative MAD of round statistics) exceeds this get more rounds")
                ->check(check::finite(check::Sign::non_negative))
                ->capture_default_str();
        if (extras.max_rounds)
            cmd.add_option("--max-rounds", harness.max_rounds, "Cap on rounds per network, re-measuring included")
                ->transform(check::integer(1, 1000, "a round count in [1, 1000]"))
                ->capture_default_str();
        cmd.add_option("--interleave", harness.interleave,
                       "Networks whose rounds go round-robin together (0: all pending networks)")
            ->transform(check::integer(0, 1000000, "a network count in [0, 10^6]"))
            ->capture_default_str();
        cmd.add_flag("--fresh-sessions", fresh_sessions,
                     "Load every round's model afresh instead of asking the runner to keep it between a network's rounds");
        cmd.add_option("--timeout", timeout, "Seconds one request (load, warm-up, timed runs) may take")
            ->check(check::finite(check::Sign::positive))
            ->capture_default_str();
        cmd.add_option("--retries", retries, "Further attempts of a failed request")
            ->transform(check::integer(0, 100, "a retry count in [0, 100]"))
            ->capture_default_str();
    }
    /// The harness settings, checked; the cap on rounds raised to the rounds asked for.
    measure::HarnessOptions checked_harness() const {
        if (timeout > 1e6) raise<config_error>("--timeout ", timeout, " is more than 10^6 seconds");
        auto h = harness;
        h.statistic = measure::parse_statistic(statistic);
        h.keep_sessions = !fresh_sessions;
        h.max_rounds = std::max(h.max_rounds, h.rounds);
        h.max_repeats = std::max(h.max_repeats, h.repeats);
        h.check();
        return h;
    }
    measure::PoolOptions pool() const {
        measure::PoolOptions po;
        po.timeout = measure::Millis(static_cast<std::int64_t>(timeout * 1000));
        po.retries = retries;
        return po;
    }
};

/// The flags of a kernel measurement: fewer, shorter rounds than a network campaign's (a kernel
/// is one operator; thousands are measured).
inline MeasureFlags kernel_measure_flags() {
    MeasureFlags f(3, 5, 3, 10, 0.05);
    f.harness.round_ms = 60;
    return f;
}

/// `--runner CMD`, worded alike wherever a command measures; a pool when `several`.
template <class T>
Option* add_runner_option(Command& cmd, T& runners, bool several) {
    std::string what = "Runner command measuring latency (run with /bin/sh -c; docs/measure.md)";
    if (several) what += "; repeat for a pool of identical boards, one request in flight each";
    return cmd.add_option("--runner", runners, what);
}

/// "1:05" / "12s"
inline std::string duration(double s) {
    if (!std::isfinite(s) || s < 0) return "?";
    const auto t = static_cast<long>(s + 0.5);
    char buf[32];
    if (t >= 3600)
        std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
    else if (t >= 60)
        std::snprintf(buf, sizeof buf, "%ld:%02ld", t / 60, t % 60);
    else
        std::snprintf(buf, sizeof buf, "%lds", t);
    return buf;
}

inline std::string percent(double x) {
    std::ostringstream os;
    os << std::fixed << std::setprecision(1) << 100 * x << '%';
    return os.str();
}

/// Progress lines on stderr: redrawn in place on a terminal, left out otherwise.
struct ProgressLine {
    bool tty = ::isatty(STDERR_FILENO) == 1;
    /// Clear the line being redrawn, before a line of its own.
    void clear() const {
        if (tty) std::cerr << "\r\033[K";
    }
    void done() const {
        if (tty) std::cerr << "\r\033[K" << std::flush;
    }
};

}  // namespace dnncost::cli
