#pragma once
/// @file op_table_campaign_impl.hpp
/// The definitions of op_table_campaign.hpp: compiled once into dnncost::compiled in compiled mode
/// (core/config.hpp), included by op_table_campaign.hpp in header-only mode.
#include <dnncost/measure/op_table_campaign.hpp>

DNNCOST_FUNC auto dnncost::measure::plan_op_table(const std::vector<graph::Graph>& graphs, const GridSpec& grid,
                                                  bool sink) -> OpTablePlan {
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

DNNCOST_FUNC auto dnncost::measure::build_op_table(const OpTablePlan& plan, OpTableBuildOptions o,
                                                   const HarnessEvents& events) -> OpTableBuildReport {
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
