#pragma once
// Options shared by the estimator commands (train, eval, predict, export-header, adapt): the
// options each preset of the registry declares, offered once whatever preset declares them;
// --json; and the deprecated spellings, which keep working with a warning.
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common.hpp"

#include <dnncost/estimators/registry.hpp>

namespace dnncost::cli {

/// Values the user gave to the presets' own options (--keep, --precision, --coefficients, ...).
struct PresetOptionValues {
    std::map<std::string, std::string> values;
    std::map<std::string, Option*> options;
    /// The options given on the command line, as the registry takes them.
    estimators::PresetSettings settings() const {
        estimators::PresetSettings s;
        for (const auto& [name, opt] : options)
            if (opt->count() > 0) s[name] = values.at(name);
        return s;
    }
};

/// One --NAME option per option any registered preset declares, its help naming the presets
/// that have it. A preset given an option it does not declare is an error (registry.hpp).
inline std::shared_ptr<PresetOptionValues> add_preset_options(Command& cmd) {
    auto v = std::make_shared<PresetOptionValues>();
    std::map<std::string, std::pair<estimators::PresetOption, std::string>> by_name;  // option, its presets
    for (const auto& [preset, options] : estimators::preset_options())
        for (const auto& o : options) {
            auto& [option, presets] = by_name.try_emplace(o.name, o, "").first->second;
            presets += (presets.empty() ? "" : ", ") + preset;
        }
    for (const auto& [name, entry] : by_name) {
        const auto& [option, presets] = entry;
        auto* opt = cmd.add_option("--" + name, v->values[name], option.help + " (presets: " + presets + ")");
        if (!option.choices.empty()) opt->check(check::member(option.choices));
        v->options[name] = opt;
    }
    return v;
}

/// "a | b | c" of the registered presets.
inline std::string preset_list() {
    std::string s;
    for (const auto& n : estimators::estimator_names()) s += (s.empty() ? "" : " | ") + n;
    return s;
}

/// `--report FILE`, the deprecated way to get a command's JSON report (now --json on stdout).
/// Checked writable up front; warns when used.
struct ReportFile {
    std::string path;
    Option* option = nullptr;
    void add(Command& cmd) {
        option = cmd.add_option("--report", path, "Deprecated: write the --json report to FILE")
                     ->check(check::output_path());
    }
    /// Warn and check the file can be written; call before the work starts.
    void prepare() const {
        if (path.empty()) return;
        warn_deprecated("--report FILE", "--json (the same report, on stdout)");
        io::check_writable(path);
    }
    void write(const json& j) const {
        if (!path.empty()) io::write_file_atomic(path, json_text(j) + "\n");
    }
};

}  // namespace dnncost::cli
