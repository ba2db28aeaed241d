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

inline OpTablePlan plan_op_table(const std::vector<graph::Graph>& graphs, const GridSpec& grid, bool sink) {
    OpTablePlan p;
    p.models = table_models(graphs, grid, sink);
    for (const auto& g : graphs)
        for (std::size_t i = 0; i < g.num_nodes(); ++i) {
            std::string why;
            if (cost::op_config(g, static_cast<int>(i), &why)) continue;
            const auto& op = g.node(static_cast<int>(i)).op_type;
            if (cost::is_free_operator(op)) {
                ++p.free_operators;
            } else {
                ++p.untabled;
                ++p.untabled_by_reason[op + ": " + why];
            }
        }
    std::set<std::string> sinks;
    for (const auto& m : p.models) {
        ++p.points[m.key];
        if (!m.sink_key.empty()) sinks.insert(m.sink_key);
    }
    p.sinks = sinks.size();
    return p;
}

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
inline OpTableBuildReport build_op_table(const OpTablePlan& plan, OpTableBuildOptions o,
                                         const HarnessEvents& events = {}) {
    if (o.runners.empty()) raise<config_error>("table build needs --runner (or --dry-run)");
    if (o.out.empty()) raise<config_error>("table build needs --out (or --dry-run)");
    if (o.store.empty()) o.store = o.out.parent_path() / (o.out.stem().string() + ".results.csv");
    io::check_writable(o.out);
    io::check_writable(o.store);
    if (o.harness.max_rounds < o.harness.rounds) o.harness.max_rounds = o.harness.rounds;
    o.harness.check();
    OpTableBuildReport rep;
    rep.store = o.store;
    ResultsStore store(o.store);
    StoreInfo info{o.device.empty() ? "table" : o.device, o.runners, {}, o.harness.to_json()};
    write_store_info(sidecar_path(o.store), info);
    ScratchDir scratch("dnncost-table");
    const auto networks = table_networks(plan.models, store, scratch.path(), o.seed, o.harness.force);
    RunnerPool pool(o.runners, o.pool);
    Harness harness(pool, o.harness);
    rep.summary = harness.run(store, networks, events);
    rep.table = table_from_store(plan.models, store, &rep.missing);
    rep.table.device = o.device.empty() ? pool.device() : o.device;
    rep.table.save(o.out);
    return rep;
}

}  // namespace dnncost::measure
