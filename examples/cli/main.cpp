// The `dnncost` command-line tool: one subcommand per area, each in its own source file.
#include <exception>
#include <iostream>
#include <string>

#include "commands.hpp"
#include "common.hpp"

int main(int argc, char** argv) {
    CLI::App app{"dnncost: cost of deep networks on devices (latency, energy, memory) and search over it"};
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
    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForAllHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForVersion& e) {
        return app.exit(e);
    } catch (const CLI::ParseError& e) {
        // a first word that is no command: name it, rather than the parser's "a subcommand is required"
        if (argc > 1 && argv[1][0] != '-' && app.get_subcommands().empty()) {
            std::string known;
            for (const auto* c : app.get_subcommands({})) known += (known.empty() ? "" : ", ") + c->get_name();
            std::cerr << "dnncost: error: unknown command '" << dnncost::printable(argv[1]) << "' (commands: " << known
                      << ")\n";
            return e.get_exit_code() != 0 ? e.get_exit_code() : 2;
        }
        // the parser's own message, on the one line every other error uses
        std::cerr << "dnncost: error: " << dnncost::cli::one_line(e.what()) << " (run with --help for usage)\n";
        return e.get_exit_code() != 0 ? e.get_exit_code() : 2;
    } catch (const std::exception& e) {
        std::cerr << "dnncost: error: " << dnncost::cli::one_line(e.what()) << '\n';
        return 1;
    }
    return ctx.exit_code;
}
