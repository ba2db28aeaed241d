#pragma once
// Shared pieces of the `dnncost` command-line tool.
#include <charconv>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <dnncost/io/file.hpp>
#include <dnncost/spaces/registry.hpp>

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
inline CLI::Validator integer(std::int64_t lo, std::int64_t hi, std::string what = {}) {
    if (what.empty()) what = "an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
    return CLI::Validator(
        [lo, hi, what](std::string& s) -> std::string {
            const auto v = whole<std::int64_t>(s);
            if (!v || *v < lo || *v > hi) return "'" + s + "' is not " + what;
            s = std::to_string(*v);
            return {};
        },
        what);
}
/// A seed: a decimal integer in [0, 2^64 - 1], rewritten as for integer().
inline CLI::Validator seed() {
    return CLI::Validator(
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
inline CLI::Validator finite(Sign sign = Sign::any) {
    return CLI::Validator(
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
}  // namespace check

/// `--space NAME` (a registered search space, or onnx for model files) and `--space-options k=v,...`.
inline void add_space_options(CLI::App& cmd, std::string& space, std::string& options,
                              std::string what =
                                  "What the key column holds: a search space's architecture strings, "
                                  "or onnx (model file paths)") {
    std::vector<std::string> names;
    for (const auto& s : spaces::all_spaces()) names.emplace_back(s.name);
    names.emplace_back("onnx");
    std::string list;
    for (const auto& n : names) list += (list.empty() ? "" : " | ") + n;
    cmd.add_option("--space", space, what + ": " + list)->check(CLI::IsMember(names));
    cmd.add_option(
        "--space-options", options,
        "Build options of the space's graphs, key=value,... (e.g. prune=1 for nb201, resolution=160 for ofa)");
}

/// Print JSON to stdout, one object, pretty enough to read.
inline void print_json(const json& j) { std::cout << j.dump(2) << '\n'; }

}  // namespace dnncost::cli
