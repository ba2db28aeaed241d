// The facade of args.hpp over CLI11: the one source of the tool that compiles CLI11.
#include "args.hpp"

#include <deque>
#include <exception>
#include <iostream>
#include <utility>

#include <CLI/CLI.hpp>

#include "common.hpp"

namespace dnncost::cli {

/// CLI11's app and the facade objects handed out for its commands and options (a deque keeps
/// their addresses).
struct Parser {
    CLI::App root;
    std::deque<Command> commands;
    std::deque<Option> options;

    explicit Parser(const std::string& description) : root(description) {}
    Command* command(CLI::App* app) { return &commands.emplace_back(Command(app, this)); }
    Option* option(CLI::Option* opt) { return &options.emplace_back(Option(opt)); }
};

Validator::Validator(std::function<std::string(std::string&)> check, std::string description)
    : impl_(std::make_shared<const CLI::Validator>(std::move(check), std::move(description))) {}

namespace check {
Validator member(std::vector<std::string> choices) {
    return Validator(std::make_shared<const CLI::Validator>(CLI::IsMember(std::move(choices))));
}
Validator range(double lo, double hi) { return Validator(std::make_shared<const CLI::Validator>(CLI::Range(lo, hi))); }
Validator existing_file() { return Validator(std::make_shared<const CLI::Validator>(CLI::ExistingFile)); }
}  // namespace check

Option* Option::required() {
    opt_->required();
    return this;
}
Option* Option::capture_default_str() {
    opt_->capture_default_str();
    return this;
}
Option* Option::check(const Validator& v) {
    opt_->check(*v.impl_);
    return this;
}
Option* Option::transform(const Validator& v) {
    opt_->transform(*v.impl_);
    return this;
}
Option* Option::needs(Option* other) {
    opt_->needs(other->opt_);
    return this;
}
Option* Option::excludes(Option* other) {
    opt_->excludes(other->opt_);
    return this;
}
Option* Option::group(const std::string& name) {
    opt_->group(name);
    return this;
}
Option* Option::expected(int n) {
    opt_->expected(n);
    return this;
}
Option* Option::expected(int min, int max) {
    opt_->expected(min, max);
    return this;
}
std::size_t Option::count() const { return opt_->count(); }

Command* Command::add_subcommand(const std::string& name, const std::string& description) {
    return parser_->command(app_->add_subcommand(name, description));
}
Command* Command::require_subcommand(int n) {
    app_->require_subcommand(n);
    return this;
}
Command* Command::callback(std::function<void()> run) {
    app_->callback(std::move(run));
    return this;
}
Command* Command::footer(const std::string& text) {
    app_->footer(text);
    return this;
}

// Each value type through CLI11's own add_option<T>, which names the type in --help and converts.
Option* Command::add_option(const std::string& name, std::string& value, const std::string& description) {
    return parser_->option(app_->add_option(name, value, description));
}
Option* Command::add_option(const std::string& name, int& value, const std::string& description) {
    return parser_->option(app_->add_option(name, value, description));
}
Option* Command::add_option(const std::string& name, unsigned& value, const std::string& description) {
    return parser_->option(app_->add_option(name, value, description));
}
Option* Command::add_option(const std::string& name, std::int64_t& value, const std::string& description) {
    return parser_->option(app_->add_option(name, value, description));
}
Option* Command::add_option(const std::string& name, std::uint64_t& value, const std::string& description) {
    return parser_->option(app_->add_option(name, value, description));
}
Option* Command::add_option(const std::string& name, double& value, const std::string& description) {
    return parser_->option(app_->add_option(name, value, description));
}
Option* Command::add_option(const std::string& name, std::vector<std::string>& value, const std::string& description) {
    return parser_->option(app_->add_option(name, value, description));
}
Option* Command::add_option(const std::string& name, std::vector<double>& value, const std::string& description) {
    return parser_->option(app_->add_option(name, value, description));
}
Option* Command::add_flag(const std::string& name, bool& value, const std::string& description) {
    return parser_->option(app_->add_flag(name, value, description));
}

App::App(const std::string& description) : App(std::make_unique<Parser>(description)) {}
App::App(std::unique_ptr<Parser> parser) : Command(&parser->root, parser.get()), owned_(std::move(parser)) {}
App::~App() = default;

App* App::set_version_flag(const std::string& flag, const std::string& version) {
    app_->set_version_flag(flag, version);
    return this;
}

int App::run(int argc, char** argv) {
    auto& app = *app_;
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
            std::cerr << "dnncost: error: unknown command '" << printable(argv[1]) << "' (commands: " << known << ")\n";
            return e.get_exit_code() != 0 ? e.get_exit_code() : 2;
        }
        // the parser's own message, on the one line every other error uses
        std::cerr << "dnncost: error: " << one_line(e.what()) << " (run with --help for usage)\n";
        return e.get_exit_code() != 0 ? e.get_exit_code() : 2;
    } catch (const std::exception& e) {
        std::cerr << "dnncost: error: " << one_line(e.what()) << '\n';
        return 1;
    }
    return 0;
}

}  // namespace dnncost::cli
