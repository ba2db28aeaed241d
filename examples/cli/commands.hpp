#pragma once
// The `dnncost` command-line tool's commands, one source file each (cmd_*.cpp): each adds its
// subcommands to the app and stores its exit code in the context.
#include "common.hpp"

namespace dnncost::cli {

void add_adapt_commands(Command& app, Context& ctx);     // adapt
void add_compress_commands(Command& app, Context& ctx);  // compress
void add_device_commands(Command& app, Context& ctx);    // device build | calibrate | residual | info | check | extrapolate
void add_device_check_command(Command& device, Context& ctx);  // device check (cmd_device_check.cpp)
void add_device_extrapolate_command(Command& device, Context& ctx);  // device extrapolate (cmd_device_extrapolate.cpp)
void add_export_commands(Command& app, Context& ctx);    // export-header, probe
void add_inspect_commands(Command& app, Context& ctx);   // inspect, nb201, space
void add_map_commands(Command& app, Context& ctx);       // map, cosearch
void add_measure_commands(Command& app, Context& ctx);   // measure
void add_moo_commands(Command& app, Context& ctx);       // moo
void add_prune_command(Command& app, Context& ctx);      // prune
void add_table_commands(Command& app, Context& ctx);     // table build | query | price
void add_train_commands(Command& app, Context& ctx);     // train, eval, predict

}  // namespace dnncost::cli
