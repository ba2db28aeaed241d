#pragma once
// Shared pieces of the `dnncost` command-line tool.
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include <dnncost/core/error.hpp>
#include <dnncost/io/file.hpp>
#include <dnncost/spaces/registry.hpp>

#include "args.hpp"

namespace dnncost::cli {
using json = nlohmann::json;

/// Every subcommand registers itself on the app and stores its exit code here.
struct Context {
    int exit_code = 0;
};

/// Option checks with short messages (CLI11's own number checks print a 300-digit bound and
/// let an out-of-range integer saturate silently).
namespace check {
/// The whole of `s` as a decimal T, or nullopt (no sign wrap, saturation or trailing text).
template <class T>
std::optional<T> whole(const std::string& s) {
    T v{};
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
    return v;
}
/// A decimal integer in [lo, hi]; the value is rewritten in canonical decimal, since CLI11
/// converts with base 0 afterwards ("010" would be octal 8).
inline Validator integer(std::int64_t lo, std::int64_t hi, std::string what = {}) {
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
/// A seed: a decimal integer in [0, 2^64 - 1], rewritten as for integer().
inline Validator seed() {
    return Validator(
        [](std::string& s) -> std::string {
            const auto v = whole<std::uint64_t>(s);
            if (!v) return "'" + s + "' is not a seed (an integer in [0, 2^64 - 1])";
            s = std::to_string(*v);
            return {};
        },
        "SEED");
}
/// A finite number, optionally > 0 or >= 0.
enum class Sign { any, positive, non_negative };
inline Validator finite(Sign sign = Sign::any) {
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
/// An output file path: not empty (an empty --out would otherwise read as "not given").
inline Validator output_path() {
    return Validator([](std::string& s) -> std::string { return s.empty() ? "empty output path" : ""; }, "PATH");
}
/// A finite number in [lo, hi] (`what` names the quantity and its unit in the message).
inline Validator in_range(double lo, double hi, std::string what) {
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

/// "a | b | c"
inline std::string joined(const std::vector<std::string>& names, std::string_view separator = " | ") {
    std::string list;
    for (const auto& n : names) list += (list.empty() ? "" : std::string(separator)) + n;
    return list;
}

/// The registered search spaces' names, optionally with onnx (model files) last.
inline std::vector<std::string> space_names(bool with_onnx = false) {
    std::vector<std::string> names;
    for (const auto& s : spaces::all_spaces()) names.emplace_back(s.name);
    if (with_onnx) names.emplace_back("onnx");
    return names;
}

/// `--space-options k=v,...`, worded the same in every command.
inline Option* add_space_options_option(Command& cmd, std::string& options) {
    return cmd.add_option(
        "--space-options", options,
        "Build options of the space's graphs, key=value,... (e.g. prune=1 for nb201, resolution=160 for ofa)");
}

/// `--space NAME` (a registered search space, or onnx for model files) and `--space-options k=v,...`.
inline void add_space_options(Command& cmd, std::string& space, std::string& options,
                              std::string what =
                                  "What the key column holds: a search space's architecture strings, "
                                  "or onnx (model file paths)") {
    const auto names = space_names(true);
    cmd.add_option("--space", space, what + ": " + joined(names))->check(check::member(names));
    add_space_options_option(cmd, options);
}

/// `--space NAME` of a search space only (no onnx) and `--space-options`; returns the --space option.
inline Option* add_search_space_options(Command& cmd, std::string& space, std::string& options,
                                             const std::string& what) {
    const auto names = space_names();
    auto* opt = cmd.add_option("--space", space, what + ": " + joined(names))->check(check::member(names));
    add_space_options_option(cmd, options);
    return opt;
}

/// `--sample N` (distinct architectures of a space) and `--seed`, worded the same in `space` and
/// `measure`; returns the --sample option.
inline Option* add_sample_options(Command& cmd, std::size_t& sample, std::uint64_t& seed,
                                       const std::string& seed_what = "Seed of --sample") {
    auto* opt = cmd.add_option("--sample", sample, "Number of distinct architectures to sample from the space")
                    ->transform(check::integer(1, 1000000, "an architecture count in [1, 10^6]"));
    cmd.add_option("--seed", seed, seed_what)->transform(check::seed());
    return opt;
}

/// The one spelling of machine-readable output: `--json` prints one JSON document on stdout.
inline Option* add_json_flag(Command& cmd, bool& flag,
                                  const std::string& what = "Print the result as one JSON document") {
    return cmd.add_flag("--json", flag, what);
}

/// One warning line for a spelling kept for one release.
inline void warn_deprecated(std::string_view old_spelling, std::string_view replacement) {
    std::cerr << "dnncost: warning: " << old_spelling << " is deprecated; use " << replacement << '\n';
}

/// `--network FILE` (an ONNX network) with the older `--model FILE` kept as a hidden, deprecated
/// alias: `--model` elsewhere names a saved estimator.
struct NetworkFiles {
    std::vector<std::string> network, model;
    bool repeatable = true;

    /// `several`: any number of networks, or exactly one.
    void add_to(Command& cmd, const std::string& what, bool several) {
        repeatable = several;
        auto* n = cmd.add_option("--network", network, what + (repeatable ? " (one or more)" : ""));
        auto* m = cmd.add_option("--model", model, "Deprecated spelling of --network")->group("");
        if (!repeatable) {
            n->expected(1);
            m->expected(1);
        }
    }
    /// The files given, warning once for the deprecated spelling. @throws config_error if none
    std::vector<std::string> files(std::string_view command) const {
        if (!model.empty() && !network.empty()) raise<config_error>(command, ": give --network, not --model as well");
        if (!model.empty()) {
            const bool onnx = std::all_of(model.begin(), model.end(), [](const std::string& f) {
                return f.size() >= 5 && std::equal(f.end() - 5, f.end(), ".onnx", [](char a, char b) {
                           return std::tolower(static_cast<unsigned char>(a)) == b;
                       });
            });
            if (!repeatable && model.size() > 1) raise<config_error>(command, ": give one --network");
            warn_deprecated(std::string(command) + " --model",
                            std::string("--network FILE") +
                                (onnx ? "" : " (--model names a saved estimator in the other commands)"));
            return model;
        }
        if (network.empty()) raise<config_error>(command, ": give the ONNX network with --network FILE");
        if (!repeatable && network.size() > 1) raise<config_error>(command, ": give one --network");
        return network;
    }
};

/// A worker count from the user, capped at the machine's hardware threads with a warning: more
/// workers than cores only add switching (1024 threads turn a one-second training into minutes).
/// 0 (all cores) is kept.
template <class T>
void cap_threads(T& threads, std::string_view option = "--threads") {
    const unsigned hardware = std::max(1u, std::thread::hardware_concurrency());
    if (threads <= static_cast<T>(hardware)) return;
    std::cerr << "dnncost: warning: " << option << ' ' << threads << " capped at " << hardware
              << ", the number of hardware threads of this machine\n";
    threads = static_cast<T>(hardware);
}

/// An error message as one printable line: line breaks joined with "; ", other control
/// characters and invalid UTF-8 escaped (see printable()).
inline std::string one_line(std::string_view message) {
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

/// Print JSON to stdout, one document, pretty enough to read.
inline void print_json(const json& j) { std::cout << j.dump(2, ' ', false, json::error_handler_t::replace) << '\n'; }

}  // namespace dnncost::cli
