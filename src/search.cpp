// Compression: channel coupling, pruning, the measured compression search.
// The only library source that includes these definitions (core/config.hpp).
#include <dnncost/search/compression/channels_impl.hpp>
#include <dnncost/search/compression/measured_compression_impl.hpp>
#include <dnncost/search/compression/prune_impl.hpp>
#include <dnncost/search/function_problem.hpp>

// NSGA-II over a run-time objective function (the Python module's searches), instantiated once.
namespace dnncost::search {
template class Nsga2<FunctionProblem>;
}  // namespace dnncost::search
