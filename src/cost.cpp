// Analytic per-operator cost, peak memory, graph analysis and hashing.
// The only library source that includes these definitions (core/config.hpp).
#include <dnncost/cost/analytic_impl.hpp>
#include <dnncost/cost/memory_impl.hpp>
#include <dnncost/graph/analysis_impl.hpp>
#include <dnncost/graph/hash_impl.hpp>
