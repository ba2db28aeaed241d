// Mapping search: the system model, cost tables and block-cost files, the analytic platforms, the
// ViG space, the inner search (IOE), exact fronts and the `dnncost map` / `dnncost cosearch` runs.
// The only library source that includes these definitions (core/config.hpp).
#include <dnncost/search/mapping/block_costs_impl.hpp>
#include <dnncost/search/mapping/cosearch_comparison_impl.hpp>
#include <dnncost/search/mapping/cost_table_impl.hpp>
#include <dnncost/search/mapping/exact_impl.hpp>
#include <dnncost/search/mapping/inner_search_impl.hpp>
#include <dnncost/search/mapping/mapping_cost_impl.hpp>
#include <dnncost/search/mapping/network_search_impl.hpp>
#include <dnncost/search/mapping/platform_impl.hpp>
#include <dnncost/search/mapping/platforms/xavier_impl.hpp>
#include <dnncost/search/mapping/random_instance_impl.hpp>
#include <dnncost/search/mapping/roofline_impl.hpp>
#include <dnncost/search/mapping/vig_space_impl.hpp>

// The co-search `dnncost cosearch` runs, instantiated once (extern in cosearch.hpp).
namespace dnncost::search::mapping {
template class CoSearchProblem<VigSpace, TableCostSource<VigSpace>, VigAccuracyProxy>;
template CoSearchResult<VigArchitecture> co_search(const VigSpace&, const TableCostSource<VigSpace>&,
                                                   const VigAccuracyProxy&, const CoSearchOptions&);
}  // namespace dnncost::search::mapping
