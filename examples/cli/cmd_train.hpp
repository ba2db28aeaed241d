#pragma once
// Placeholder: filled in by the train work.
#include "common.hpp"
namespace dnncost::cli {
inline void add_train_commands(CLI::App&, Context&) {}
}  // namespace dnncost::cli
