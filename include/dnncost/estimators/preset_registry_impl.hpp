#pragma once
/// @file preset_registry_impl.hpp
/// Definitions of preset_registry.hpp's functions that build or load ensembles: compiled into
/// dnncost::compiled in compiled mode (core/config.hpp), included at the end of that header
/// otherwise. They keep ensemble.hpp out of every program that only loads or makes one preset.
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

#include <dnncost/core/config.hpp>
#include <dnncost/core/error.hpp>
#include <dnncost/estimators/ensemble.hpp>
#include <dnncost/estimators/preset_registry.hpp>
#include <dnncost/io/file.hpp>
#include <dnncost/io/serialize.hpp>

DNNCOST_FUNC auto dnncost::estimators::make_ensemble(std::string_view name, int members, EnsembleResample resample,
                                                     const PresetSettings& settings)
    -> std::unique_ptr<EnsembleEstimator> {
    auto entry = detail::find_entry(name, "make_ensemble: ");
    detail::check_settings(name, entry, settings);
    return std::make_unique<EnsembleEstimator>(
        std::string(name), [make = entry.make, settings] { return make(settings); }, members, resample);
}

DNNCOST_FUNC auto dnncost::estimators::load_estimator(std::string_view bytes, std::string_view source)
    -> std::unique_ptr<Estimator> {
    const auto c = io::read_container(bytes, std::nullopt, source);
    std::unique_ptr<Estimator> est;
    if (c.kind == ensemble_kind) {
        est = EnsembleEstimator::deserialize(
            bytes, source, [](std::string_view b, std::string_view s) { return load_estimator(b, s); });
    } else {
        auto entry = detail::lookup_entry(c.kind);
        if (!entry) detail::raise_unknown_preset<parse_error>(c.kind, std::string(source) + ": ");
        est = entry->load(bytes, source);
    }
    if (source != "<memory>") est->set_source(std::string(source));
    return est;
}

DNNCOST_FUNC auto dnncost::estimators::load_estimator_file(const std::filesystem::path& path)
    -> std::unique_ptr<Estimator> {
    return load_estimator(io::read_file(path), path.string());
}
