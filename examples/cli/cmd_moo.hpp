#pragma once
// Placeholder: filled in by the moo work.
#include "common.hpp"
namespace dnncost::cli {
inline void add_moo_commands(CLI::App&, Context&) {}
}  // namespace dnncost::cli
