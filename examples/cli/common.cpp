// Shared pieces of the `dnncost` command-line tool (common.hpp).
#include "common.hpp"
#include "measure_options.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <iomanip>
#include <sstream>

#include <dnncost/spaces/registry.hpp>

namespace dnncost::cli {

namespace check {
Validator integer(std::int64_t lo, std::int64_t hi, std::string what) {
    if (what.empty()) what = "an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
    return Validator(
        [lo, hi, what](std::string& s) -> std::string {
            const auto v = whole<std::int64_t>(s);
            if (!v || *v < lo || *v > hi) return "'" + s + "' is not " + what;
            s = std::to_string(*v);
            return {};
        },
        what);
}

Validator seed() {
    return Validator(
        [](std::string& s) -> std::string {
            const auto v = whole<std::uint64_t>(s);
            if (!v) return "'" + s + "' is not a seed (an integer in [0, 2^64 - 1])";
            s = std::to_string(*v);
            return {};
        },
        "SEED");
}

Validator finite(Sign sign) {
    return Validator(
        [sign](std::string& s) -> std::string {
            const auto v = whole<double>(s);
            if (!v || !std::isfinite(*v)) return "'" + s + "' is not a finite number";
            if (sign == Sign::positive && !(*v > 0)) return "'" + s + "' is not positive";
            if (sign == Sign::non_negative && !(*v >= 0)) return "'" + s + "' is negative";
            return {};
        },
        sign == Sign::positive       ? "POSITIVE"
        : sign == Sign::non_negative ? "NON-NEGATIVE"
                                     : "NUMBER");
}

Validator output_path() {
    return Validator([](std::string& s) -> std::string { return s.empty() ? "empty output path" : ""; }, "PATH");
}

Validator in_range(double lo, double hi, std::string what) {
    return Validator(
        [lo, hi, what](std::string& s) -> std::string {
            const auto v = whole<double>(s);
            if (!v || !std::isfinite(*v)) return "'" + s + "' is not a finite number";
            if (*v < lo || *v > hi) {
                std::ostringstream os;
                os << "'" << s << "' is outside [" << lo << ", " << hi << "] " << what;
                return os.str();
            }
            return {};
        },
        "NUMBER");
}
}  // namespace check

std::string joined(const std::vector<std::string>& names, std::string_view separator) {
    std::string list;
    for (const auto& n : names) list += (list.empty() ? "" : std::string(separator)) + n;
    return list;
}

std::vector<std::string> space_names(bool with_onnx) {
    std::vector<std::string> names;
    for (const auto& s : spaces::all_spaces()) names.emplace_back(s.name);
    if (with_onnx) names.emplace_back("onnx");
    return names;
}

Option* add_space_options_option(Command& cmd, std::string& options) {
    return cmd.add_option(
        "--space-options", options,
        "Build options of the space's graphs, key=value,... (e.g. prune=1 for nb201, resolution=160 for ofa)");
}

void add_space_options(Command& cmd, std::string& space, std::string& options, std::string what) {
    const auto names = space_names(true);
    cmd.add_option("--space", space, what + ": " + joined(names))->check(check::member(names));
    add_space_options_option(cmd, options);
}

Option* add_search_space_options(Command& cmd, std::string& space, std::string& options, const std::string& what) {
    const auto names = space_names();
    auto* opt = cmd.add_option("--space", space, what + ": " + joined(names))->check(check::member(names));
    add_space_options_option(cmd, options);
    return opt;
}

Option* add_sample_options(Command& cmd, std::size_t& sample, std::uint64_t& seed, const std::string& seed_what) {
    auto* opt = cmd.add_option("--sample", sample, "Number of distinct architectures to sample from the space")
                    ->transform(check::integer(1, 1000000, "an architecture count in [1, 10^6]"));
    cmd.add_option("--seed", seed, seed_what)->transform(check::seed());
    return opt;
}

Option* add_json_flag(Command& cmd, bool& flag, const std::string& what) { return cmd.add_flag("--json", flag, what); }

void warn_deprecated(std::string_view old_spelling, std::string_view replacement) {
    std::cerr << "dnncost: warning: " << old_spelling << " is deprecated; use " << replacement << '\n';
}

void NetworkFiles::add_to(Command& cmd, const std::string& what, bool several) {
    repeatable = several;
    auto* n = cmd.add_option("--network", network, what + (repeatable ? " (one or more)" : ""));
    auto* m = cmd.add_option("--model", model, "Deprecated spelling of --network")->group("");
    if (!repeatable) {
        n->expected(1);
        m->expected(1);
    }
}

std::vector<std::string> NetworkFiles::files(std::string_view command) const {
    if (!model.empty() && !network.empty()) raise<config_error>(command, ": give --network, not --model as well");
    if (!model.empty()) {
        const bool onnx = std::all_of(model.begin(), model.end(), [](const std::string& f) {
            return f.size() >= 5 && std::equal(f.end() - 5, f.end(), ".onnx", [](char a, char b) {
                       return std::tolower(static_cast<unsigned char>(a)) == b;
                   });
        });
        if (!repeatable && model.size() > 1) raise<config_error>(command, ": give one --network");
        warn_deprecated(
            std::string(command) + " --model",
            std::string("--network FILE") + (onnx ? "" : " (--model names a saved estimator in the other commands)"));
        return model;
    }
    if (network.empty()) raise<config_error>(command, ": give the ONNX network with --network FILE");
    if (!repeatable && network.size() > 1) raise<config_error>(command, ": give one --network");
    return network;
}

std::string one_line(std::string_view message) {
    std::string joined;
    for (std::size_t i = 0; i < message.size(); ++i) {
        if (message[i] == '\n' || message[i] == '\r') {
            while (i + 1 < message.size() && (message[i + 1] == '\n' || message[i + 1] == '\r')) ++i;
            if (i + 1 < message.size()) joined += "; ";
            continue;
        }
        joined += message[i];
    }
    auto line = printable(joined);
    // a 1 MB node name or field must not become a 1 MB line
    constexpr std::size_t head = 1000, tail = 500;
    if (line.size() > head + tail + 100)
        line = line.substr(0, head) + " ... (" + std::to_string(line.size() - head - tail) + " bytes left out) ... " +
               line.substr(line.size() - tail);
    return line;
}

std::string json_text(const json& j, int indent) { return j.dump(indent, ' ', false, json::error_handler_t::replace); }

json parse_json(std::string_view text, bool allow_exceptions) {
    return json::parse(text.begin(), text.end(), nullptr, allow_exceptions);
}

void print_json(const json& j) { std::cout << json_text(j) << '\n'; }

void MeasureFlags::add_to(Command& cmd, Extras extras) {
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

measure::HarnessOptions MeasureFlags::checked_harness() const {
    if (timeout > 1e6) raise<config_error>("--timeout ", timeout, " is more than 10^6 seconds");
    auto h = harness;
    h.statistic = measure::parse_statistic(statistic);
    h.keep_sessions = !fresh_sessions;
    h.max_rounds = std::max(h.max_rounds, h.rounds);
    h.max_repeats = std::max(h.max_repeats, h.repeats);
    h.check();
    return h;
}

measure::PoolOptions MeasureFlags::pool() const {
    measure::PoolOptions po;
    po.timeout = measure::Millis(static_cast<std::int64_t>(timeout * 1000));
    po.retries = retries;
    return po;
}

std::string duration(double s) {
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

std::string percent(double x) {
    std::ostringstream os;
    os << std::fixed << std::setprecision(1) << 100 * x << '%';
    return os.str();
}

}  // namespace dnncost::cli
