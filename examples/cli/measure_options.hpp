#pragma once
// Options and progress lines shared by the commands that measure through runners (`measure`,
// `table build`, `compress`): the same flags, with the same words, in each. The functions are
// defined once, in common.cpp.
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
    void add_to(Command& cmd, Extras extras);
    /// The harness settings, checked; the cap on rounds raised to the rounds asked for.
    measure::HarnessOptions checked_harness() const;
    measure::PoolOptions pool() const;
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
std::string duration(double s);

/// "12.5%"
std::string percent(double x);

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
