#pragma once
/// @file ensemble_kind.hpp
/// What the registry must know of ensembles (ensemble.hpp) without compiling them: their
/// container kind and how their members are resampled.
#include <cstdint>
#include <string_view>

namespace dnncost::estimators {

/// The container kind of an ensemble, whose members are any registered presets.
inline constexpr std::string_view ensemble_kind = "ensemble";

/// What each member of an ensemble trains on: a bootstrap resample of the training set, or all of it.
enum class EnsembleResample : std::uint8_t { bootstrap = 0, none = 1 };

}  // namespace dnncost::estimators
