#pragma once
// Shared pieces of the `dnncost` command-line tool: declared here, defined once in common.cpp so
// that each command's source compiles only its own command.
#include <algorithm>
#include <charconv>
#include <cstdint>
#include <iostream>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include <dnncost/core/error.hpp>
#include <dnncost/io/file.hpp>

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
Validator integer(std::int64_t lo, std::int64_t hi, std::string what = {});
/// A seed: a decimal integer in [0, 2^64 - 1], rewritten as for integer().
Validator seed();
/// A finite number, optionally > 0 or >= 0.
enum class Sign { any, positive, non_negative };
Validator finite(Sign sign = Sign::any);
/// An output file path: not empty (an empty --out would otherwise read as "not given").
Validator output_path();
/// A finite number in [lo, hi] (`what` names the quantity and its unit in the message).
Validator in_range(double lo, double hi, std::string what);
}  // namespace check

/// "a | b | c"
std::string joined(const std::vector<std::string>& names, std::string_view separator = " | ");

/// The registered search spaces' names, optionally with onnx (model files) last.
std::vector<std::string> space_names(bool with_onnx = false);

/// `--space-options k=v,...`, worded the same in every command.
Option* add_space_options_option(Command& cmd, std::string& options);

/// `--space NAME` (a registered search space, or onnx for model files) and `--space-options k=v,...`.
void add_space_options(Command& cmd, std::string& space, std::string& options,
                       std::string what = "What the key column holds: a search space's architecture strings, "
                                          "or onnx (model file paths)");

/// `--space NAME` of a search space only (no onnx) and `--space-options`; returns the --space option.
Option* add_search_space_options(Command& cmd, std::string& space, std::string& options, const std::string& what);

/// `--sample N` (distinct architectures of a space) and `--seed`, worded the same in `space` and
/// `measure`; returns the --sample option.
Option* add_sample_options(Command& cmd, std::size_t& sample, std::uint64_t& seed,
                           const std::string& seed_what = "Seed of --sample");

/// The one spelling of machine-readable output: `--json` prints one JSON document on stdout.
Option* add_json_flag(Command& cmd, bool& flag, const std::string& what = "Print the result as one JSON document");

/// One warning line for a spelling kept for one release.
void warn_deprecated(std::string_view old_spelling, std::string_view replacement);

/// `--network FILE` (an ONNX network) with the older `--model FILE` kept as a hidden, deprecated
/// alias: `--model` elsewhere names a saved estimator.
struct NetworkFiles {
    std::vector<std::string> network, model;
    bool repeatable = true;

    /// `several`: any number of networks, or exactly one.
    void add_to(Command& cmd, const std::string& what, bool several);
    /// The files given, warning once for the deprecated spelling. @throws config_error if none
    std::vector<std::string> files(std::string_view command) const;
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
std::string one_line(std::string_view message);

/// JSON as text: `indent` < 0 is one line; invalid UTF-8 in strings is replaced, never thrown on.
/// The one place the tool serialises JSON.
std::string json_text(const json& j, int indent = 2);

/// Parse JSON text. @throws json::parse_error (or, with `allow_exceptions` false, returns a
/// discarded value) — the one place the tool parses JSON.
json parse_json(std::string_view text, bool allow_exceptions = true);

/// Print JSON to stdout, one document, pretty enough to read.
void print_json(const json& j);

}  // namespace dnncost::cli
