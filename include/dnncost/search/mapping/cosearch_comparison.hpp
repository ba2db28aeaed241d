#pragma once
/// @file cosearch_comparison.hpp
/// The nested co-search on the ViG space as `dnncost cosearch` runs it, and the standalone vs
/// distributed comparison of one architecture in the form of MaGNAS Table 3: standalone
/// mappings, the two Pareto-optimal mappings with at most k transitions closest in latency to
/// the IOE's choice, and the IOE's choice at a latency budget over the fastest standalone one.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <dnncost/core/config.hpp>
#include <dnncost/core/error.hpp>
#include <dnncost/search/mapping/cosearch.hpp>
#include <dnncost/search/mapping/cost_source.hpp>
#include <dnncost/search/mapping/exact.hpp>
#include <dnncost/search/mapping/inner_search.hpp>
#include <dnncost/search/mapping/platforms/xavier.hpp>
#include <dnncost/search/mapping/roofline.hpp>
#include <dnncost/search/mapping/vig_space.hpp>

namespace dnncost::search::mapping {

struct CoSearchRequest {
    std::string platform = "xavier";   ///< xavier | roofline
    std::string dataset = "cifar100";  ///< anchor of the accuracy proxy
    CoSearchOptions search;
    double latency_increase = 0.3;  ///< comparison budget over the fastest standalone mapping
    std::string compare;            ///< architecture compared; empty: the most accurate on the front
    bool ioe_front = false;         ///< also return the compared network's unconstrained IOE front
};

/// One architecture's mappings compared (MaGNAS Table 3).
struct MappingComparison {
    VigArchitecture architecture;
    std::vector<VigBlock> blocks;
    double latency_budget = 0;                ///< ms
    std::vector<std::size_t> standalone_cus;  ///< the CU of each standalone mapping
    std::vector<MappingSolution> standalone;  ///< P at the budget's preference
    std::vector<MappingSolution> transitions_1, transitions_2;
    MappingSearchResult ioe;                 ///< the IOE at the latency budget
    std::vector<MappingSolution> ioe_front;  ///< without a budget, when asked for
};

struct CoSearchReport {
    std::string platform_name;
    Platform platform;
    CoSearchResult<VigArchitecture> result;
    MappingComparison comparison;
};

/// The comparison of `arch` on `src`'s platform at the reference DVFS setting.
DNNCOST_FUNC MappingComparison compare_mappings(const TableCostSource<VigSpace>& src, const VigArchitecture& arch,
                                                const CoSearchRequest& request);

/// The co-search and the comparison. @throws config_error for an unknown platform, or DVFS
/// brute force on the single-setting roofline platform
DNNCOST_FUNC CoSearchReport run_cosearch(const CoSearchRequest& request);

}  // namespace dnncost::search::mapping

#if !defined(DNNCOST_COMPILED)
#include <dnncost/search/mapping/cosearch_comparison_impl.hpp>
#endif
