// `dnncost table build|query|price`: measured operator tables (docs/cost_tables.md).
//
// Exit status: 0 on success; 3 when `table build` completed but some single-operator models
// failed to measure (they are missing from the table and listed); 1 on an error.
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "commands.hpp"
#include "common.hpp"
#include "measure_options.hpp"

#include <dnncost/cost/graph_cost.hpp>
#include <dnncost/cost/op_table.hpp>
#include <dnncost/io/file.hpp>
#include <dnncost/io/onnx.hpp>
#include <dnncost/measure/harness.hpp>
#include <dnncost/measure/op_table_build.hpp>
#include <dnncost/measure/op_table_campaign.hpp>
#include <dnncost/measure/runner_pool.hpp>
#include <dnncost/measure/store.hpp>

namespace dnncost::cli {

namespace table_detail {
namespace fs = std::filesystem;

/// "3x3" -> {3,3}; "-" or "" -> {}. @throws config_error naming the option
inline std::vector<std::int64_t> dims(const std::string& s, const char* option) {
    std::vector<std::int64_t> out;
    if (s.empty() || s == "-") return out;
    std::size_t start = 0;
    for (;;) {
        const auto end = s.find('x', start);
        const auto v = check::whole<std::int64_t>(s.substr(start, end - start));
        if (!v || *v < 1) raise<config_error>(option, " '", s, "' is not a list of positive integers like 3x3");
        out.push_back(*v);
        if (end == std::string::npos) break;
        start = end + 1;
    }
    return out;
}

/// The query options shared by query and price.
struct QueryArgs {
    std::string mode = "multilinear";
    bool extrapolate = false;
    double chunk = 8;
    void add(Command& cmd) {
        cmd.add_option("--mode", mode, "Reading between grid points: plane | step | multilinear")
            ->check(check::member({"plane", "step", "multilinear"}))
            ->capture_default_str();
        cmd.add_flag("--extrapolate", extrapolate,
                     "Extrapolate outside the table's channel range (otherwise such a query is an error)");
        cmd.add_option("--chunk", chunk, "Step mode: channels are processed in chunks of this many")
            ->check(check::finite(check::Sign::positive))
            ->capture_default_str();
    }
    cost::QueryOptions options() const {
        cost::QueryOptions o;
        o.mode = cost::parse_interpolation(mode);
        o.extrapolate = extrapolate;
        o.chunk = chunk;
        return o;
    }
};
/// The plan of `table build`, on stderr; with --dry-run its configurations on stdout.
inline void report_plan(const measure::OpTablePlan& plan, const std::string& grid) {
    std::cerr << "table build: " << plan.points.size() << " configurations, " << plan.models.size()
              << " single-operator models and " << plan.sinks << " sinks (grid " << grid << "); "
              << plan.free_operators << " free operators priced at zero";
    if (plan.untabled) std::cerr << "; " << plan.untabled << " operators no table can describe";
    std::cerr << '\n';
    for (const auto& [what, n] : plan.untabled_by_reason) std::cerr << "  not tabled: " << n << " x " << what << '\n';
}

inline json plan_json(const measure::OpTablePlan& plan) {
    json configurations = json::array();
    for (const auto& [key, n] : plan.points) configurations.push_back({{"key", cost::to_string(key)}, {"points", n}});
    return {{"configurations", configurations},
            {"models", plan.models.size()},
            {"sinks", plan.sinks},
            {"free_operators", plan.free_operators},
            {"untabled", plan.untabled_by_reason}};
}

struct BuildArgs {
    NetworkFiles networks;
    std::vector<std::string> runners;
    std::string grid = "proportional:0.25", out, store, device;
    MeasureFlags flags;
    std::uint64_t seed = 0;
    bool dry_run = false, no_sink = false, json_out = false;
};

inline void run_build(const BuildArgs& a, Context& ctx) {
    const auto grid = measure::GridSpec::parse(a.grid);
    std::vector<graph::Graph> graphs;
    for (const auto& m : a.networks.files("table build")) graphs.push_back(io::import_onnx(m));
    const auto plan = measure::plan_op_table(graphs, grid, !a.no_sink);
    report_plan(plan, a.grid);
    if (a.dry_run) {
        if (a.json_out) return print_json(plan_json(plan));
        for (const auto& [key, n] : plan.points) std::cout << cost::to_string(key) << "  " << n << " points\n";
        return;
    }
    measure::OpTableBuildOptions o;
    o.runners = a.runners;
    o.out = a.out;
    o.store = a.store;
    o.device = a.device;
    o.harness = a.flags.checked_harness();
    o.pool = a.flags.pool();
    o.seed = a.seed;
    const ProgressLine line;
    measure::HarnessEvents ev;
    ev.on_progress = [&](const measure::Progress& p) {
        if (!line.tty || p.requests_total == 0) return;
        std::cerr << "\r\033[K" << p.networks_done << '/' << p.networks_total << " models, "
                  << static_cast<int>(p.elapsed_seconds) << " s" << std::flush;
    };
    ev.on_result = [&](const measure::Network& n, const measure::Record& r) {
        if (r.ok()) return;
        line.clear();
        std::cerr << "FAILED  " << n.id << "  " << to_string(r.status) << ": " << r.detail << '\n';
    };
    const auto rep = measure::build_op_table(plan, o, ev);
    line.done();
    const auto& s = rep.summary;
    if (a.json_out) {
        print_json({{"measured", s.measured},
                    {"skipped", s.skipped},
                    {"failed", s.failed},
                    {"seconds", s.seconds},
                    {"table", a.out},
                    {"configurations", rep.table.num_keys()},
                    {"points", rep.table.num_points()},
                    {"store", rep.store.string()},
                    {"missing", rep.missing}});
    } else {
        std::cout << "measured " << s.measured << ", already present " << s.skipped << ", failed " << s.failed
                  << " in " << std::fixed << std::setprecision(1) << s.seconds << " s\n";
        std::cout.unsetf(std::ios::floatfield);
        std::cout << "table: " << a.out << " (" << rep.table.num_keys() << " configurations, "
                  << rep.table.num_points() << " points); measurements: " << rep.store.string() << '\n';
    }
    for (const auto& m : rep.missing) std::cerr << "dnncost: missing from the table: " << m << '\n';
    ctx.exit_code = rep.missing.empty() ? 0 : 3;
}

struct QueryCmd {
    std::string table, op, kernel, stride, groups = "1", spatial;
    double c = 0, k = 0;
    QueryArgs q;
    bool json_out = false;
};

inline void run_query(const QueryCmd& a) {
    const auto t = cost::OpTable::load(a.table);
    cost::OpKey key;
    key.op = a.op;
    key.kernel = dims(a.kernel, "--kernel");
    key.stride = dims(a.stride, "--stride");
    key.spatial = dims(a.spatial, "--spatial");
    if (a.groups == "dw")
        key.groups = cost::depthwise_groups;
    else if (const auto g = check::whole<std::int64_t>(a.groups); g && *g >= 1)
        key.groups = *g;
    else
        raise<config_error>("--groups '", a.groups, "' is not a positive integer or dw");
    if (spans_two_channel_counts(key) && !(a.k > 0)) raise<config_error>("--k is required for ", cost::to_string(key));
    const auto v = t.query(key, a.c, a.k > 0 ? a.k : a.c, a.q.options());
    if (a.json_out) {
        json j;
        j["key"] = cost::to_string(key);
        j["c"] = a.c;
        j["k"] = a.k;
        j["mode"] = a.q.mode;
        j["latency_ms"] = v.value;
        j["d_latency_d_c"] = v.gradient[0];
        j["d_latency_d_k"] = v.gradient[1];
        print_json(j);
    } else {
        std::cout << std::setprecision(6) << v.value << " ms  (" << cost::to_string(key) << " c=" << a.c;
        if (spans_two_channel_counts(key)) std::cout << " k=" << a.k;
        std::cout << ", " << a.q.mode << ")\n";
    }
}

struct PriceCmd {
    std::string table, fallback = "error";
    NetworkFiles networks;
    QueryArgs q;
    double peak_gflops = 0, bandwidth_gbs = 0;
    bool per_node = false, json_out = false;
};

inline void run_price(const PriceCmd& a) {
    cost::TableCostOptions o;
    o.query = a.q.options();
    if (a.fallback == "roofline") {
        if (!(a.peak_gflops > 0) || !(a.bandwidth_gbs > 0))
            raise<config_error>("--fallback roofline needs --peak-gflops and --bandwidth-gbs");
        o.missing = cost::MissingEntry::roofline;
        o.fallback_device.name = "fallback";
        o.fallback_device.peak_flops = a.peak_gflops * 1e9;
        o.fallback_device.bandwidth = a.bandwidth_gbs * 1e9;
    }
    const auto files = a.networks.files("table price");
    const cost::TableCost tc(std::make_shared<cost::OpTable>(cost::OpTable::load(a.table)), o);
    json all = json::array();
    for (const auto& m : files) {
        const auto g = io::import_onnx(m);
        cost::GraphCost r;
        try {
            r = tc.cost(g);
        } catch (const config_error& e) {
            raise<config_error>(m, ": ", e.what());
        }
        std::size_t priced = 0;
        for (std::size_t i = 0; i < g.num_nodes(); ++i) priced += !cost::is_free_operator(g.node(static_cast<int>(i)).op_type);
        if (a.json_out) {
            json j;
            j["model"] = m;
            j["latency_ms"] = r.total_ms;
            j["operators"] = priced;
            j["fallbacks"] = r.fallbacks;
            if (a.per_node) {
                json nodes = json::array();
                for (std::size_t i = 0; i < g.num_nodes(); ++i)
                    nodes.push_back({{"node", g.node(static_cast<int>(i)).name},
                                     {"op", g.node(static_cast<int>(i)).op_type},
                                     {"latency_ms", r.per_node_ms[i]}});
                j["nodes"] = nodes;
            }
            all.push_back(j);
            continue;
        }
        std::cout << m << ": " << std::setprecision(5) << r.total_ms << " ms (sum over " << priced << " operators, "
                  << a.q.mode << ")";
        if (!r.fallbacks.empty()) std::cout << ", " << r.fallbacks.size() << " priced by the roofline fallback";
        std::cout << '\n';
        for (const auto& f : r.fallbacks) std::cerr << "  roofline fallback: " << f << '\n';
        if (a.per_node)
            for (std::size_t i = 0; i < g.num_nodes(); ++i)
                std::cout << "  " << g.node(static_cast<int>(i)).name << "  " << g.node(static_cast<int>(i)).op_type
                          << "  " << r.per_node_ms[i] << " ms\n";
    }
    if (a.json_out) print_json(all.size() == 1 ? all[0] : all);
}
}  // namespace table_detail

inline void add_table_build_command(Command& table, Context& ctx) {
    auto b = std::make_shared<table_detail::BuildArgs>();
    b->flags = MeasureFlags(1, 3, 3, 10, 0.05);
    auto* build = table.add_subcommand(
        "build", "Measure every distinct operator configuration of the networks over a grid of channel counts");
    b->networks.add_to(*build, "ONNX network whose operators the table covers", true);
    add_runner_option(*build, b->runners, true);
    build
        ->add_option("--grid", b->grid,
                     "Channel grid per axis: uniform:STEP (every STEP channels) or proportional:F (F, 2F, ... of "
                     "the network's count)")
        ->capture_default_str();
    build->add_option("--out", b->out, "Table file (CSV); not needed with --dry-run");
    build->add_option("--store", b->store,
                      "Results store of the single-operator measurements (default: OUT with .results.csv); a build "
                      "resumes from it");
    build->add_option("--device", b->device, "Device description written into the table")->capture_default_str();
    b->flags.add_to(*build, {.max_rounds = true, .remeasure_spread = false});
    build->add_option("--seed", b->seed, "Seed of the models' random weight values")->transform(check::seed());
    build->add_flag("--no-sink", b->no_sink,
                    "Measure each operator with its output as the graph output, instead of ending it in a ReduceMax "
                    "whose own latency is subtracted (runners that hand large outputs back to their host are slow)");
    build->add_flag("--dry-run", b->dry_run, "List the configurations and the number of models, measure nothing");
    add_json_flag(*build, b->json_out, "Print the summary (with --dry-run: the configurations) as one JSON document");
    build->callback([b, &ctx] { table_detail::run_build(*b, ctx); });
}

inline void add_table_query_command(Command& table) {
    auto q = std::make_shared<table_detail::QueryCmd>();
    auto* query = table.add_subcommand("query", "Read one configuration from a table");
    query->add_option("--table", q->table, "Table file (CSV)")->required();
    query->add_option("--op", q->op, "ONNX op type, e.g. Conv")->required();
    query->add_option("--kernel", q->kernel, "Kernel, e.g. 3x3 (- for none)");
    query->add_option("--stride", q->stride, "Stride, e.g. 1x1 (- for none)");
    query->add_option("--groups", q->groups, "Groups: an integer or dw (depthwise)")->capture_default_str();
    query->add_option("--spatial", q->spatial, "Input size after the channel axis, e.g. 56x56 (Gemm: the batch)")
        ->required();
    query->add_option("--c", q->c, "Input channels")->required()->check(check::finite(check::Sign::positive));
    query->add_option("--k", q->k, "Output channels (ignored for keys with one channel count)")
        ->check(check::finite(check::Sign::positive));
    q->q.add(*query);
    add_json_flag(*query, q->json_out, "Print the answer as one JSON document");
    query->callback([q] { table_detail::run_query(*q); });
}

inline void add_table_price_command(Command& table) {
    auto p = std::make_shared<table_detail::PriceCmd>();
    auto* price = table.add_subcommand(
        "price", "Latency of networks as the sum of their operators' table latencies (sequential execution assumed)");
    price->add_option("--table", p->table, "Table file (CSV)")->required();
    p->networks.add_to(*price, "ONNX network to price", true);
    p->q.add(*price);
    price
        ->add_option("--fallback", p->fallback,
                     "Operators without a table entry: error, or roofline (needs --peak-gflops and --bandwidth-gbs)")
        ->check(check::member({"error", "roofline"}))
        ->capture_default_str();
    price->add_option("--peak-gflops", p->peak_gflops, "Roofline fallback: peak compute, GFLOP/s")
        ->check(check::finite(check::Sign::positive));
    price->add_option("--bandwidth-gbs", p->bandwidth_gbs, "Roofline fallback: memory bandwidth, GB/s")
        ->check(check::finite(check::Sign::positive));
    price->add_flag("--per-node", p->per_node, "Print every operator's latency");
    add_json_flag(*price, p->json_out, "Print the result as one JSON document (an array for several networks)");
    price->callback([p] { table_detail::run_price(*p); });
}

void add_table_commands(Command& app, Context& ctx) {
    auto* table = app.add_subcommand("table", "Measured operator tables: build by measuring, query, price networks");
    table->require_subcommand(1);
    add_table_build_command(*table, ctx);
    add_table_query_command(*table);
    add_table_price_command(*table);
}

}  // namespace dnncost::cli
