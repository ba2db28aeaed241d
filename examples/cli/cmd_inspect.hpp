#pragma once
// Placeholder: filled in by the inspect work.
#include "common.hpp"
namespace dnncost::cli {
inline void add_inspect_commands(CLI::App&, Context&) {}
}  // namespace dnncost::cli
