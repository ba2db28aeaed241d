#pragma once
/// @file preset_registry_impl.hpp
/// Definitions of preset_registry.hpp's functions that load estimators: compiled into
/// dnncost::compiled in compiled mode (core/config.hpp), included at the end of that header
/// otherwise. An ensemble is read through detail::ensemble_loading, which ensemble.hpp sets.
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

#include <dnncost/core/config.hpp>
#include <dnncost/core/error.hpp>
#include <dnncost/estimators/preset_registry.hpp>
#include <dnncost/io/file.hpp>
#include <dnncost/io/serialize.hpp>

DNNCOST_FUNC auto dnncost::estimators::load_estimator(std::string_view bytes, std::string_view source)
    -> std::unique_ptr<Estimator> {
    const auto c = io::read_container(bytes, std::nullopt, source);
    std::unique_ptr<Estimator> est;
    if (c.kind == ensemble_kind) {
        if (!detail::ensemble_loading)
            raise<parse_error>(source,
                               ": an ensemble of estimators; reading one needs "
                               "<dnncost/estimators/ensemble.hpp> (header-only mode) or dnncost::compiled");
        est = detail::ensemble_loading(bytes, source);
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
