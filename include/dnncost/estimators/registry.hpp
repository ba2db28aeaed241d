#pragma once
/// @file registry.hpp
/// Preset name -> estimator, and saved bytes -> estimator. One table maps each preset name
/// (also the container kind its models are saved under) to a factory and a loader; adding a
/// preset is one register_estimator call, never another branch.
///
/// Built in: "additive" (the additive baseline), "hifisage", "brpnas" and "perfsage" (GNN presets), and the
/// "ensemble" container kind, whose members are decoded through the same table.
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include <dnncost/core/error.hpp>
#include <dnncost/estimators/additive.hpp>
#include <dnncost/estimators/ensemble.hpp>
#include <dnncost/estimators/estimator.hpp>
#include <dnncost/estimators/perfsage.hpp>
#include <dnncost/estimators/presets.hpp>
#include <dnncost/io/file.hpp>
#include <dnncost/io/serialize.hpp>

namespace dnncost::estimators {

struct RegistryEntry {
    EstimatorFactory make;
    EstimatorLoader load;
    std::string description;
};

namespace detail {
inline std::unique_ptr<Estimator> load_ensemble(std::string_view bytes, std::string_view source);

struct Registry {
    std::mutex mutex;
    std::map<std::string, RegistryEntry, std::less<>> entries;
};

inline Registry& registry() {
    static Registry r;
    static const bool filled = [] {
        auto& reg = r;
        reg.entries.emplace(
            std::string(AdditiveEstimator::kind),
            RegistryEntry{[] { return std::unique_ptr<Estimator>(std::make_unique<AdditiveEstimator>()); },
                          [](std::string_view b, std::string_view s) {
                              return std::unique_ptr<Estimator>(AdditiveEstimator::deserialize(b, s));
                          },
                          "ridge regression over per-operator-type counts, MACs and bytes (milliseconds to train)"});
        reg.entries.emplace(std::string(preset_name<hifi_sage>),
                            RegistryEntry{[] { return std::unique_ptr<Estimator>(std::make_unique<HiFiSage>()); },
                                          [](std::string_view b, std::string_view s) {
                                              return std::unique_ptr<Estimator>(std::make_unique<HiFiSage>(
                                                  HiFiSage::load(b, preset_name<hifi_sage>, s)));
                                          },
                                          "HiFi-SAGE: 7-layer GraphSAGE with LCM readout and a ranking head"});
        reg.entries.emplace(std::string(preset_name<brp_nas>),
                            RegistryEntry{[] { return std::unique_ptr<Estimator>(std::make_unique<BrpNas>()); },
                                          [](std::string_view b, std::string_view s) {
                                              return std::unique_ptr<Estimator>(
                                                  std::make_unique<BrpNas>(BrpNas::load(b, preset_name<brp_nas>, s)));
                                          },
                                          "BRP-NAS: 4-layer GCN, mean pooling, linear head"});
        reg.entries.emplace(
            std::string(PerfSageEstimator::kind),
            RegistryEntry{[] { return std::unique_ptr<Estimator>(std::make_unique<PerfSageEstimator>()); },
                          [](std::string_view b, std::string_view s) {
                              return std::unique_ptr<Estimator>(PerfSageEstimator::deserialize(b, s));
                          },
                          "PerfSAGE: per-operator-type input transform, 8 GraphSAGE (sum) layers, max readout, 4 FC "
                          "layers of 1024; several targets at once (MAPE + 10 RMSE)"});
        return true;
    }();
    (void)filled;
    return r;
}
}  // namespace detail

/// Add (or replace) a preset. Thread-safe.
inline void register_estimator(std::string name, RegistryEntry entry) {
    if (name.empty() || name == EnsembleEstimator::kind)
        raise<config_error>("register_estimator: invalid preset name '", name, "'");
    if (!entry.make || !entry.load)
        raise<config_error>("register_estimator: preset '", name, "' needs a factory and a loader");
    auto& r = detail::registry();
    std::lock_guard lock(r.mutex);
    r.entries.insert_or_assign(std::move(name), std::move(entry));
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
inline RegistryEntry find_entry(std::string_view name, std::string_view context) {
    auto& r = registry();
    std::lock_guard lock(r.mutex);
    if (auto it = r.entries.find(name); it != r.entries.end()) return it->second;
    std::string known;
    for (const auto& [n, e] : r.entries) known += (known.empty() ? "" : ", ") + n;
    raise<config_error>(context, "unknown preset '", name, "' (known: ", known, ")");
}
}  // namespace detail

/// A fresh, untrained estimator of the named preset. @throws config_error listing known presets
inline std::unique_ptr<Estimator> make_estimator(std::string_view name) {
    return detail::find_entry(name, "make_estimator: ").make();
}

/// An untrained ensemble of `members` estimators of the named preset.
inline std::unique_ptr<EnsembleEstimator> make_ensemble(
    std::string_view name, int members, EnsembleEstimator::Resample resample = EnsembleEstimator::Resample::bootstrap) {
    auto entry = detail::find_entry(name, "make_ensemble: ");
    return std::make_unique<EnsembleEstimator>(std::string(name), entry.make, members, resample);
}

/// Rebuild a saved estimator (any registered preset, or an ensemble of one) from its bytes.
/// @throws parse_error naming `source` for a corrupt/foreign file or an unknown preset
inline std::unique_ptr<Estimator> load_estimator(std::string_view bytes, std::string_view source = "<memory>") {
    const auto c = io::read_container(bytes, std::nullopt, source);
    if (c.kind == EnsembleEstimator::kind) return detail::load_ensemble(bytes, source);
    RegistryEntry entry;
    try {
        entry = detail::find_entry(c.kind, "");
    } catch (const config_error& e) {
        raise<parse_error>(source, ": ", e.what());
    }
    return entry.load(bytes, source);
}

/// Read and rebuild a saved estimator file.
inline std::unique_ptr<Estimator> load_estimator_file(const std::filesystem::path& path) {
    return load_estimator(io::read_file(path), path.string());
}

namespace detail {
inline std::unique_ptr<Estimator> load_ensemble(std::string_view bytes, std::string_view source) {
    auto e = EnsembleEstimator::deserialize(
        bytes, source, [](std::string_view b, std::string_view s) { return load_estimator(b, s); });
    return e;
}
}  // namespace detail

}  // namespace dnncost::estimators
