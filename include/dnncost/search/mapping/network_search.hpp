#pragma once
/// @file network_search.hpp
/// The mapping search on one network as `dnncost map` runs it: the network's per-DVFS instances
/// (a block-cost file, or a ViG subnet on an example platform), the IOE at one DVFS setting or
/// all of them, and optionally the exact front with the search's share of its hypervolume.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <dnncost/core/config.hpp>
#include <dnncost/core/error.hpp>
#include <dnncost/search/mapping/block_costs.hpp>
#include <dnncost/search/mapping/cost_source.hpp>
#include <dnncost/search/mapping/exact.hpp>
#include <dnncost/search/mapping/inner_search.hpp>
#include <dnncost/search/mapping/platforms/xavier.hpp>
#include <dnncost/search/mapping/roofline.hpp>
#include <dnncost/search/mapping/vig_space.hpp>
#include <dnncost/search/mapping/workload.hpp>

namespace dnncost::search::mapping {

/// Which network, on which platform, searched how.
struct NetworkSearchRequest {
    std::string blocks;               ///< block-cost CSV file, or empty for `vig`
    std::vector<std::string> cus;     ///< the file's compute units, if given (a row naming another is an error)
    std::string vig;                  ///< a ViG subnet, instead of `blocks`
    std::string platform = "xavier";  ///< platform of `vig`: xavier | roofline
    std::string dvfs;                 ///< DVFS setting name, "all" (brute force), or empty (the reference)
    MappingSearchOptions search;
    bool exact = false;  ///< also enumerate every mapping (up to 2^20)
};

/// A network's mapping instances, one per DVFS setting of its platform.
struct LoadedNetwork {
    std::string what;
    Platform platform;
    std::vector<MappingInstance> instances;
};

/// What `search_network` found.
struct NetworkSearchReport {
    bool all_dvfs = false;
    std::size_t setting = 0;  ///< the DVFS setting searched (the reference one with all_dvfs)
    MappingSearchResult result;
    double seconds = 0;
    std::optional<std::vector<MappingSolution>> exact;  ///< the exact front, when asked for
    std::uint64_t exact_evaluations = 0;
    double hypervolume_ratio = 0;  ///< of the search's front to the exact one's
};

/// The network of a request. @throws config_error for neither or both of blocks and vig
DNNCOST_FUNC LoadedNetwork load_network(const NetworkSearchRequest& r);

/// Hypervolume of `found` relative to `exact` (reference: 1% beyond the exact front's nadir).
DNNCOST_FUNC double hypervolume_ratio(const std::vector<MappingSolution>& found,
                                      const std::vector<MappingSolution>& exact);

/// The IOE on a loaded network, at the request's DVFS setting (or all), and the exact front.
/// @throws config_error for an unknown DVFS setting or --exact on more than 2^20 mappings
DNNCOST_FUNC NetworkSearchReport search_network(const LoadedNetwork& l, const NetworkSearchRequest& request);

}  // namespace dnncost::search::mapping

#if !defined(DNNCOST_COMPILED)
#include <dnncost/search/mapping/network_search_impl.hpp>
#endif
