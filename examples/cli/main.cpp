// The `dnncost` command-line tool: one subcommand per area, each in its own header.
#include <exception>
#include <iostream>

#include "cmd_adapt.hpp"
#include "cmd_export.hpp"
#include "cmd_inspect.hpp"
#include "cmd_map.hpp"
#include "cmd_measure.hpp"
#include "cmd_moo.hpp"
#include "cmd_train.hpp"
#include "common.hpp"

int main(int argc, char** argv) {
    CLI::App app{"dnncost: cost of deep networks on devices (latency, energy, memory) and search over it"};
    app.require_subcommand(1);
    app.set_version_flag("--version", "dnncost 0.1.0");
    dnncost::cli::Context ctx;
    dnncost::cli::add_inspect_commands(app, ctx);
    dnncost::cli::add_map_commands(app, ctx);
    dnncost::cli::add_moo_commands(app, ctx);
    dnncost::cli::add_train_commands(app, ctx);
    dnncost::cli::add_measure_commands(app, ctx);
    dnncost::cli::add_adapt_commands(app, ctx);
    dnncost::cli::add_export_commands(app, ctx);
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        return app.exit(e);
    } catch (const std::exception& e) {
        std::cerr << "dnncost: error: " << e.what() << '\n';
        return 1;
    }
    return ctx.exit_code;
}
