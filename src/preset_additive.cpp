// The additive baseline, compiled once.
#include <dnncost/estimators/additive_impl.hpp>

namespace dnncost::estimators::detail {
RegistryEntry builtin_additive_entry() { return additive_entry(); }
}  // namespace dnncost::estimators::detail
