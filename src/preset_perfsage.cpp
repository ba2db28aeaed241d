// The PerfSAGE preset, compiled once.
#include <dnncost/estimators/perfsage_impl.hpp>

namespace dnncost::estimators::detail {
RegistryEntry builtin_perfsage_entry() { return perfsage_entry(); }
}  // namespace dnncost::estimators::detail
