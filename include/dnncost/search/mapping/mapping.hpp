#pragma once
/// @file mapping.hpp
/// Mapping search: network blocks onto heterogeneous compute units (MaGNAS system model), the
/// inner mapping search (IOE), the nested architecture x mapping co-search (OOE), DVFS, the
/// block-cost file, cost sources and the example platforms and ViG space.
#include <dnncost/search/mapping/block_costs.hpp>
#include <dnncost/search/mapping/cosearch.hpp>
#include <dnncost/search/mapping/cosearch_comparison.hpp>
#include <dnncost/search/mapping/cost_source.hpp>
#include <dnncost/search/mapping/cost_table.hpp>
#include <dnncost/search/mapping/exact.hpp>
#include <dnncost/search/mapping/inner_search.hpp>
#include <dnncost/search/mapping/mapping_cost.hpp>
#include <dnncost/search/mapping/network_search.hpp>
#include <dnncost/search/mapping/platform.hpp>
#include <dnncost/search/mapping/platforms/xavier.hpp>
#include <dnncost/search/mapping/random_instance.hpp>
#include <dnncost/search/mapping/roofline.hpp>
#include <dnncost/search/mapping/vig_space.hpp>
#include <dnncost/search/mapping/workload.hpp>
