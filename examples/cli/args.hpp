#pragma once
// The command line as the commands declare it: a small facade over CLI11, which only args.cpp
// includes (CLI11 is header-only, and costs each source that includes it ~10 s of CPU at -O2).
// The names and behaviour are CLI11's: each call forwards to the same CLI11 call, so help text,
// defaults shown and error messages do not change.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace CLI {
class App;
class Option;
class Validator;
}  // namespace CLI

namespace dnncost::cli {

/// A check of an option's value: an error message, or "" when the value is fine. Given with
/// Option::transform, it may rewrite the value before conversion.
class Validator {
public:
    Validator(std::function<std::string(std::string&)> check, std::string description);
    explicit Validator(std::shared_ptr<const CLI::Validator> v) : impl_(std::move(v)) {}

private:
    friend class Option;
    std::shared_ptr<const CLI::Validator> impl_;
};

/// CLI11's own checks, with CLI11's wording.
namespace check {
Validator member(std::vector<std::string> choices);  ///< one of `choices` (CLI::IsMember)
Validator range(double lo, double hi);               ///< a number in [lo, hi] (CLI::Range)
Validator existing_file();                           ///< a file that exists (CLI::ExistingFile)
}  // namespace check

struct Parser;

/// One option or flag of a command; owned by the App, so the pointers stay valid while it parses.
class Option {
public:
    Option* required();
    Option* capture_default_str();  ///< show the bound value, as it is now, as the default in --help
    Option* check(const Validator& v);
    Option* transform(const Validator& v);
    Option* needs(Option* other);
    Option* excludes(Option* other);
    Option* group(const std::string& name);  ///< "" hides the option from --help
    Option* expected(int n);
    Option* expected(int min, int max);
    /// Times the option was given.
    std::size_t count() const;

private:
    friend struct Parser;
    explicit Option(CLI::Option* opt) : opt_(opt) {}
    CLI::Option* opt_;
};

/// A command or the program itself; owned by the App, as its options are.
class Command {
public:
    Command* add_subcommand(const std::string& name, const std::string& description);
    Command* require_subcommand(int n);
    Command* callback(std::function<void()> run);
    Command* footer(const std::string& text);

    /// An option bound to `value`; a name without dashes is positional.
    Option* add_option(const std::string& name, std::string& value, const std::string& description);
    Option* add_option(const std::string& name, int& value, const std::string& description);
    Option* add_option(const std::string& name, unsigned& value, const std::string& description);
    Option* add_option(const std::string& name, std::int64_t& value, const std::string& description);
    Option* add_option(const std::string& name, std::uint64_t& value, const std::string& description);
    Option* add_option(const std::string& name, double& value, const std::string& description);
    Option* add_option(const std::string& name, std::vector<std::string>& value, const std::string& description);
    Option* add_option(const std::string& name, std::vector<double>& value, const std::string& description);
    /// A flag; a name "!--x" sets `value` to false.
    Option* add_flag(const std::string& name, bool& value, const std::string& description);

protected:
    friend struct Parser;
    Command(CLI::App* app, Parser* parser) : app_(app), parser_(parser) {}
    CLI::App* app_;
    Parser* parser_;
};

/// The program: its commands, and the parse that runs the one chosen.
class App : public Command {
public:
    explicit App(const std::string& description);
    ~App();
    App(const App&) = delete;
    App& operator=(const App&) = delete;

    App* set_version_flag(const std::string& flag, const std::string& version);
    /// Parse the command line and run the chosen command's callback. The exit code of an error
    /// (printed as "dnncost: error: ..." on stderr); 0 after --help, --version or a command that
    /// ran, whose own exit code is the caller's to keep.
    int run(int argc, char** argv);

private:
    explicit App(std::unique_ptr<Parser> parser);
    std::unique_ptr<Parser> owned_;
};

}  // namespace dnncost::cli
