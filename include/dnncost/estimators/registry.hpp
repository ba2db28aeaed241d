#pragma once
/// @file registry.hpp
/// Every built-in estimator preset, registered: "additive" (the additive baseline), "hifisage",
/// "brpnas" and "perfsage" (GNN presets), with the "ensemble" container kind. The table and its
/// functions (make_estimator, load_estimator, ...) are in preset_registry.hpp; each preset
/// registers from its own header, so a program that needs only some of them includes those
/// headers instead. Device models register from device_model.hpp.
///
/// In compiled mode (core/config.hpp) the library registers every built-in preset, device models
/// included, and this header is the registry's functions alone.
#include <dnncost/core/config.hpp>
#include <dnncost/estimators/preset_registry.hpp>
#if !defined(DNNCOST_COMPILED)
#include <dnncost/estimators/additive.hpp>
#include <dnncost/estimators/ensemble.hpp>
#include <dnncost/estimators/perfsage.hpp>
#include <dnncost/estimators/presets.hpp>
#endif
