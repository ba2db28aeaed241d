// The `dnncost` command-line tool: one subcommand per area, each in its own source file.
#include "commands.hpp"
#include "common.hpp"

int main(int argc, char** argv) {
    dnncost::cli::App app{"dnncost: cost of deep networks on devices (latency, energy, memory) and search over it"};
    app.require_subcommand(1);
    app.set_version_flag("--version", "dnncost 0.1.0");
    app.footer(
        "The same word means the same thing in every command: --json prints one JSON document on stdout; "
        "--model is a saved estimator (.dnnc); --network FILE (or positional files) an ONNX network; --preset an "
        "estimator preset; --space and --space-options a search space and its build options; --gens counts "
        "generations after the initial one. Run `dnncost COMMAND --help` for a command's options.");
    dnncost::cli::Context ctx;
    dnncost::cli::add_inspect_commands(app, ctx);
    dnncost::cli::add_map_commands(app, ctx);
    dnncost::cli::add_moo_commands(app, ctx);
    dnncost::cli::add_train_commands(app, ctx);
    dnncost::cli::add_measure_commands(app, ctx);
    dnncost::cli::add_table_commands(app, ctx);
    dnncost::cli::add_compress_commands(app, ctx);
    dnncost::cli::add_prune_command(app, ctx);
    dnncost::cli::add_adapt_commands(app, ctx);
    dnncost::cli::add_export_commands(app, ctx);
    dnncost::cli::add_device_commands(app, ctx);
    const int parse_exit = app.run(argc, argv);
    return parse_exit != 0 ? parse_exit : ctx.exit_code;
}
