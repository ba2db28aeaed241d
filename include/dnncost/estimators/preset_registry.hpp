#pragma once
/// @file preset_registry.hpp
/// Preset name -> estimator, and saved bytes -> estimator. One table maps each preset name
/// (also the container kind its models are saved under) to a factory and a loader; adding a
/// preset is one register_estimator call, never another branch.
///
/// The table starts empty: each estimator's header registers its presets when it is included,
/// so a program compiles only the estimators it uses, and ensemble.hpp registers the reading of
/// ensembles (containers of "ensemble" kind, whose members are decoded through the same table).
/// registry.hpp includes every built-in one.
/// Each entry also declares its own options (PresetOption), which a front end offers and passes
/// back as PresetSettings: no caller needs to know a preset's type to configure it.
#include <algorithm>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <dnncost/core/config.hpp>
#include <dnncost/core/error.hpp>
#include <dnncost/estimators/ensemble_kind.hpp>
#include <dnncost/estimators/estimator.hpp>
#include <dnncost/io/file.hpp>
#include <dnncost/io/serialize.hpp>
#include <dnncost/nn/precision.hpp>

namespace dnncost::estimators {

/// A preset's own options by name, as text ("keep" -> "trained"): what a user sets on the
/// command line. Only the options a preset declares are accepted.
using PresetSettings = std::map<std::string, std::string, std::less<>>;

/// One option a preset declares: its name (the CLI spells it --NAME), a help line and the values
/// it accepts (empty: any text).
struct PresetOption {
    std::string name;
    std::string help;
    std::vector<std::string> choices;
};

/// Creates an untrained estimator of a preset, configured by settings already checked against
/// the preset's declared options.
using PresetFactory = std::function<std::unique_ptr<Estimator>(const PresetSettings& settings)>;
/// Rebuilds an estimator from its serialized bytes (a container of the preset's kind).
using EstimatorLoader = std::function<std::unique_ptr<Estimator>(std::string_view bytes, std::string_view source)>;

struct RegistryEntry {
    PresetFactory make;
    EstimatorLoader load;
    std::string description;
    std::vector<PresetOption> options{};
};

namespace detail {
/// The GEMM precision option, shared by the presets whose networks run GEMMs.
inline const PresetOption precision_option{
    "precision",
    "GEMM arithmetic, saved with the model: auto (bf16 where the CPU has AMX or AVX512-BF16, else fp32) | bf16 "
    "(inputs rounded to bfloat16, fp32 accumulation; emulated without either) | fp32",
    {"auto", "bf16", "fp32"}};

inline std::optional<nn::Precision> precision_setting(const PresetSettings& s) {
    const auto it = s.find("precision");
    return it == s.end() ? std::nullopt : nn::precision_from_string(it->second);
}

/// The entry of a preset whose estimator T is default-constructed, then configured from the
/// settings by `configure(T&, settings)`, and whose saved bytes T::deserialize(bytes, source) reads.
template <class T, class Configure>
RegistryEntry entry_of(Configure configure, std::string description, std::vector<PresetOption> options = {}) {
    return {[configure](const PresetSettings& s) {
                auto e = std::make_unique<T>();
                configure(*e, s);
                return std::unique_ptr<Estimator>(std::move(e));
            },
            [](std::string_view b, std::string_view src) { return std::unique_ptr<Estimator>(T::deserialize(b, src)); },
            std::move(description), std::move(options)};
}

struct Registry {
    std::mutex mutex;
    std::map<std::string, RegistryEntry, std::less<>> entries;
};

/// The one registry of the program. In compiled mode (core/config.hpp) it lives in the library,
/// which registers the built-in presets with it.
DNNCOST_FUNC Registry& registry();
#if !defined(DNNCOST_COMPILED)
inline Registry& registry() {
    static Registry r;
    return r;
}
#endif
}  // namespace detail

/// Add (or replace) a preset. Thread-safe.
inline void register_estimator(std::string name, RegistryEntry entry) {
    if (name.empty() || name == ensemble_kind)
        raise<config_error>("register_estimator: invalid preset name '", name, "'");
    if (!entry.make || !entry.load)
        raise<config_error>("register_estimator: preset '", name, "' needs a factory and a loader");
    auto& r = detail::registry();
    std::lock_guard lock(r.mutex);
    r.entries.insert_or_assign(std::move(name), std::move(entry));
}

/// The options every registered preset declares, by preset name.
inline std::map<std::string, std::vector<PresetOption>, std::less<>> preset_options() {
    auto& r = detail::registry();
    std::lock_guard lock(r.mutex);
    std::map<std::string, std::vector<PresetOption>, std::less<>> out;
    for (const auto& [name, e] : r.entries) out.emplace(name, e.options);
    return out;
}

/// Registered preset names, sorted.
inline std::vector<std::string> estimator_names() {
    auto& r = detail::registry();
    std::lock_guard lock(r.mutex);
    std::vector<std::string> names;
    for (const auto& [name, e] : r.entries) names.push_back(name);
    return names;
}

namespace detail {
/// Raise E: "unknown preset" naming the presets this program knows and, for a built-in one it
/// left out, the header that registers it. Presets register from their own headers, so that a
/// program compiles only the estimators it includes.
template <class E>
[[noreturn]] inline void raise_unknown_preset(std::string_view name, std::string_view context) {
    std::string known;
    {
        auto& r = registry();
        std::lock_guard lock(r.mutex);
        for (const auto& [n, e] : r.entries) known += (known.empty() ? "" : ", ") + n;
    }
    const std::string_view header = name == "device"                         ? "device_model.hpp"
                                    : name == "additive"                     ? "additive.hpp"
                                    : name == "hifisage" || name == "brpnas" ? "presets.hpp"
                                    : name == "perfsage"                     ? "perfsage.hpp"
                                                                             : "";
    const std::string hint = header.empty() ? std::string()
                                            : "; it registers when <dnncost/estimators/" + std::string(header) +
                                                  "> (or <dnncost/estimators/registry.hpp>) is included";
    raise<E>(context, "unknown preset '", name, "' (known: ", known, hint, ")");
}

/// The entry of a registered preset, or nothing.
inline std::optional<RegistryEntry> lookup_entry(std::string_view name) {
    auto& r = registry();
    std::lock_guard lock(r.mutex);
    if (auto it = r.entries.find(name); it != r.entries.end()) return it->second;
    return std::nullopt;
}

inline RegistryEntry find_entry(std::string_view name, std::string_view context) {
    if (auto entry = lookup_entry(name)) return *std::move(entry);
    raise_unknown_preset<config_error>(name, context);
}
}  // namespace detail

namespace detail {
/// Every setting names an option of the preset and holds one of its values.
inline void check_settings(std::string_view preset, const RegistryEntry& entry, const PresetSettings& settings) {
    for (const auto& [key, value] : settings) {
        const auto it = std::find_if(entry.options.begin(), entry.options.end(),
                                     [&key = key](const PresetOption& o) { return o.name == key; });
        if (it == entry.options.end()) {
            std::string known;
            for (const auto& o : entry.options) known += (known.empty() ? "" : ", ") + o.name;
            raise<config_error>("preset '", preset, "' has no option '", key, "' (",
                                known.empty() ? std::string("it has none") : "its options: " + known, ")");
        }
        if (!it->choices.empty() && std::find(it->choices.begin(), it->choices.end(), value) == it->choices.end()) {
            std::string known;
            for (const auto& c : it->choices) known += (known.empty() ? "" : ", ") + c;
            raise<config_error>("preset '", preset, "': option '", key, "' is '", value, "', expected one of ", known);
        }
    }
}
/// How load_estimator reads an ensemble's container: set where estimators/ensemble.hpp is included
/// (the compiled library includes it), null elsewhere, so that a program that loads one preset
/// does not compile ensembles and their training.
using EnsembleLoad = std::unique_ptr<Estimator> (*)(std::string_view bytes, std::string_view source);
inline EnsembleLoad ensemble_loading = nullptr;
}  // namespace detail

/// A fresh, untrained estimator of the named preset, with its own options set from `settings`.
/// @throws config_error listing known presets, or naming an option the preset does not have
inline std::unique_ptr<Estimator> make_estimator(std::string_view name, const PresetSettings& settings = {}) {
    const auto entry = detail::find_entry(name, "make_estimator: ");
    detail::check_settings(name, entry, settings);
    return entry.make(settings);
}

/// Rebuild a saved estimator (any registered preset, or an ensemble of one) from its bytes.
/// @throws parse_error naming `source` for a corrupt/foreign file or an unknown preset
/// The model's source() is `source` (unless "<memory>"), so that its errors name it.
DNNCOST_FUNC std::unique_ptr<Estimator> load_estimator(std::string_view bytes, std::string_view source = "<memory>");

/// Read and rebuild a saved estimator file.
DNNCOST_FUNC std::unique_ptr<Estimator> load_estimator_file(const std::filesystem::path& path);

}  // namespace dnncost::estimators

#if !defined(DNNCOST_COMPILED)
#include <dnncost/estimators/preset_registry_impl.hpp>
#endif
