// The BRP-NAS preset, instantiated once.
#include <dnncost/estimators/presets.hpp>

namespace dnncost::estimators {
template class GnnEstimator<brp_nas>;
namespace detail {
RegistryEntry builtin_brpnas_entry() { return brpnas_entry(); }
}  // namespace detail
}  // namespace dnncost::estimators
