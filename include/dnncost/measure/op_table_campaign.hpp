#pragma once
/// @file op_table_campaign.hpp
/// `dnncost table build` as one call: the plan of single-operator models for some networks
/// (configurations, sinks, operators no table can describe), and the build that measures them
/// through a runner pool into a results store and turns the results into an operator table.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <dnncost/core/config.hpp>
#include <dnncost/core/error.hpp>
#include <dnncost/cost/op_config.hpp>
#include <dnncost/cost/op_table.hpp>
#include <dnncost/graph/graph.hpp>
#include <dnncost/io/file.hpp>
#include <dnncost/measure/harness.hpp>
#include <dnncost/measure/op_table_build.hpp>
#include <dnncost/measure/runner_pool.hpp>
#include <dnncost/measure/scratch_dir.hpp>
#include <dnncost/measure/store.hpp>

namespace dnncost::measure {

/// What a table of some networks needs measured.
struct OpTablePlan {
    std::vector<TableModel> models;
    std::map<cost::OpKey, std::size_t> points;  ///< grid points per configuration
    std::size_t sinks = 0;                      ///< distinct sink models
    std::size_t free_operators = 0;             ///< priced at zero, never measured
    std::size_t untabled = 0;                   ///< operators no table can describe
    std::map<std::string, std::size_t> untabled_by_reason;  ///< "Op: why" -> count
};

DNNCOST_FUNC OpTablePlan plan_op_table(const std::vector<graph::Graph>& graphs, const GridSpec& grid, bool sink);

struct OpTableBuildOptions {
    std::vector<std::string> runners;
    std::filesystem::path out;    ///< the table file
    std::filesystem::path store;  ///< results store of the single-operator measurements; empty: OUT.results.csv
    std::string device;           ///< written into the table; empty: the runner's device line
    HarnessOptions harness;
    PoolOptions pool;
    std::uint64_t seed = 0;  ///< of the models' random weight values
};

struct OpTableBuildReport {
    Summary summary;
    cost::OpTable table;
    std::filesystem::path store;
    std::vector<std::string> missing;  ///< configurations without a result ("key c=.. k=..: status")
};

/// Measure the plan's models (resuming from the store) and save the table.
DNNCOST_FUNC OpTableBuildReport build_op_table(const OpTablePlan& plan, OpTableBuildOptions o,
                                         const HarnessEvents& events = {});

}  // namespace dnncost::measure

#if !defined(DNNCOST_COMPILED)
#include <dnncost/measure/op_table_campaign_impl.hpp>
#endif
