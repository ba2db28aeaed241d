// The estimator registry of compiled mode, with every built-in preset registered on first use.
// Each preset's entry is built in its own source file (preset_*.cpp), so that the library's
// heaviest parts compile in parallel. It also holds load_estimator, which reads ensembles through
// ensemble.hpp's registration.
#include <mutex>
#include <string>

#include <dnncost/estimators/ensemble.hpp>
#include <dnncost/estimators/preset_registry.hpp>
#include <dnncost/estimators/preset_registry_impl.hpp>

namespace dnncost::estimators::detail {

RegistryEntry builtin_additive_entry();
RegistryEntry builtin_hifisage_entry();
RegistryEntry builtin_brpnas_entry();
RegistryEntry builtin_perfsage_entry();
RegistryEntry builtin_device_model_entry();

Registry& registry() {
    static Registry r;
    static std::once_flag builtins;
    // The entries go straight into the table: register_estimator would call registry() again.
    std::call_once(builtins, [] {
        r.entries.insert_or_assign("additive", builtin_additive_entry());
        r.entries.insert_or_assign("hifisage", builtin_hifisage_entry());
        r.entries.insert_or_assign("brpnas", builtin_brpnas_entry());
        r.entries.insert_or_assign("perfsage", builtin_perfsage_entry());
        r.entries.insert_or_assign("device", builtin_device_model_entry());
    });
    return r;
}

}  // namespace dnncost::estimators::detail
