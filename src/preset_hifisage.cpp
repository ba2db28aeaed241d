// The HiFi-SAGE preset, instantiated once.
#include <dnncost/estimators/presets.hpp>

namespace dnncost::estimators {
template class GnnEstimator<hifi_sage>;
namespace detail {
RegistryEntry builtin_hifisage_entry() { return hifisage_entry(); }
}  // namespace detail
}  // namespace dnncost::estimators
