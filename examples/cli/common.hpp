#pragma once
// Shared pieces of the `dnncost` command-line tool.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <dnncost/io/file.hpp>

namespace dnncost::cli {
using json = nlohmann::json;

/// Every subcommand registers itself on the app and stores its exit code here.
struct Context {
    int exit_code = 0;
};

/// Print JSON to stdout, one object, pretty enough to read.
inline void print_json(const json& j) { std::cout << j.dump(2) << '\n'; }

}  // namespace dnncost::cli
