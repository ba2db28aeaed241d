#pragma once
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

#include "common.hpp"

#include <dnncost/cost/graph_cost.hpp>
#include <dnncost/cost/op_table.hpp>
#include <dnncost/io/file.hpp>
#include <dnncost/io/onnx.hpp>
#include <dnncost/measure/harness.hpp>
#include <dnncost/measure/op_table_build.hpp>
#include <dnncost/measure/runner_pool.hpp>
#include <dnncost/measure/store.hpp>

namespace dnncost::cli {

namespace table_detail {
namespace fs = std::filesystem;

/// A private directory for the single-operator model files, removed with this object.
class ScratchDir {
public:
    ScratchDir() {
        auto pattern = (fs::temp_directory_path() / "dnncost-table-XXXXXX").string();
        if (!::mkdtemp(pattern.data()))
            raise<io_error>("cannot create a temporary directory in ", fs::temp_directory_path().string());
        m_path = pattern;
    }
    ~ScratchDir() {
        std::error_code ec;
        fs::remove_all(m_path, ec);
    }
    ScratchDir(const ScratchDir&) = delete;
    ScratchDir& operator=(const ScratchDir&) = delete;
    const fs::path& path() const { return m_path; }

private:
    fs::path m_path;
};

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
    void add(CLI::App& cmd) {
        cmd.add_option("--mode", mode, "Reading between grid points: plane | step | multilinear")
            ->check(CLI::IsMember({"plane", "step", "multilinear"}))
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
}  // namespace table_detail

inline void add_table_commands(CLI::App& app, Context& ctx) {
    namespace td = table_detail;
    namespace fs = std::filesystem;
    auto* table = app.add_subcommand("table", "Measured operator tables: build by measuring, query, price networks");
    table->require_subcommand(1);

    // ------------------------------------------------------------------ build
    struct BuildArgs {
        std::vector<std::string> models, runners;
        std::string grid = "proportional:0.25", out, store, device;
        measure::HarnessOptions harness;
        double timeout = 120;
        int retries = 1;
        std::uint64_t seed = 0;
        bool dry_run = false, no_sink = false;
    };
    auto b = std::make_shared<BuildArgs>();
    b->harness.rounds = 1;
    b->harness.max_rounds = 3;
    b->harness.warmup = 3;
    b->harness.repeats = 10;
    b->harness.remeasure_spread = 0.05;
    auto* build = table->add_subcommand(
        "build", "Measure every distinct operator configuration of the models over a grid of channel counts");
    build->add_option("--model", b->models, "ONNX model whose operators the table covers (repeatable)")->required();
    build->add_option("--runner", b->runners, "Runner command (run with /bin/sh -c); repeat for a pool");
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
    build->add_option("--rounds", b->harness.rounds, "Interleaved rounds per model")
        ->transform(check::integer(1, 1000))
        ->capture_default_str();
    build->add_option("--max-rounds", b->harness.max_rounds, "Cap on rounds per model, re-measuring included")
        ->transform(check::integer(1, 1000))
        ->capture_default_str();
    build->add_option("--warmup", b->harness.warmup, "Untimed runs per round")
        ->transform(check::integer(0, 1000000))
        ->capture_default_str();
    build->add_option("--repeats", b->harness.repeats, "Timed runs per round")
        ->transform(check::integer(1, 1000000))
        ->capture_default_str();
    build->add_option("--timeout", b->timeout, "Seconds one request may take")
        ->check(check::finite(check::Sign::positive))
        ->capture_default_str();
    build->add_option("--retries", b->retries, "Further attempts of a failed request")
        ->transform(check::integer(0, 100))
        ->capture_default_str();
    build->add_option("--seed", b->seed, "Seed of the models' random weight values")->transform(check::seed());
    build->add_flag("--no-sink", b->no_sink,
                    "Measure each operator with its output as the graph output, instead of ending it in a ReduceMax "
                    "whose own latency is subtracted (runners that hand large outputs back to their host are slow)");
    build->add_flag("--dry-run", b->dry_run, "List the configurations and the number of models, measure nothing");
    build->callback([b, &ctx] {
        auto& a = *b;
        const auto grid = measure::GridSpec::parse(a.grid);
        std::vector<graph::Graph> graphs;
        for (const auto& m : a.models) graphs.push_back(io::import_onnx(m));
        const auto models = measure::table_models(graphs, grid, !a.no_sink);
        {
            std::size_t free_ops = 0, other = 0;
            std::map<std::string, std::size_t> unsupported;
            for (const auto& g : graphs)
                for (std::size_t i = 0; i < g.num_nodes(); ++i) {
                    std::string why;
                    if (cost::op_config(g, static_cast<int>(i), &why)) continue;
                    if (cost::is_free_operator(g.node(static_cast<int>(i)).op_type))
                        ++free_ops;
                    else {
                        ++other;
                        ++unsupported[g.node(static_cast<int>(i)).op_type + ": " + why];
                    }
                }
            std::set<cost::OpKey> keys;
            for (const auto& m : models) keys.insert(m.key);
            std::set<std::string> sinks;
            for (const auto& m : models)
                if (!m.sink_key.empty()) sinks.insert(m.sink_key);
            std::cerr << "table build: " << keys.size() << " configurations, " << models.size()
                      << " single-operator models and " << sinks.size() << " sinks (grid " << a.grid << "); "
                      << free_ops << " free operators priced at zero";
            if (other) std::cerr << "; " << other << " operators no table can describe";
            std::cerr << '\n';
            for (const auto& [what, n] : unsupported) std::cerr << "  not tabled: " << n << " x " << what << '\n';
            if (a.dry_run) {
                for (const auto& k : keys) {
                    std::size_t n = 0;
                    for (const auto& m : models) n += m.key == k;
                    std::cout << cost::to_string(k) << "  " << n << " points\n";
                }
                return;
            }
        }
        if (a.runners.empty()) raise<config_error>("table build needs --runner (or --dry-run)");
        if (a.out.empty()) raise<config_error>("table build needs --out (or --dry-run)");
        if (a.store.empty()) {
            fs::path p = a.out;
            a.store = (p.parent_path() / (p.stem().string() + ".results.csv")).string();
        }
        io::check_writable(a.out);
        io::check_writable(a.store);
        if (a.harness.max_rounds < a.harness.rounds) a.harness.max_rounds = a.harness.rounds;
        a.harness.check();
        measure::ResultsStore store(a.store);
        measure::StoreInfo info{a.device.empty() ? "table" : a.device, a.runners, {}, a.harness.to_json()};
        measure::write_store_info(measure::sidecar_path(a.store), info);
        td::ScratchDir tmp;
        const auto networks = measure::table_networks(models, store, tmp.path(), a.seed, a.harness.force);
        measure::PoolOptions po;
        po.timeout = measure::Millis(static_cast<std::int64_t>(a.timeout * 1000));
        po.retries = a.retries;
        measure::RunnerPool pool(a.runners, po);
        measure::Harness harness(pool, a.harness);
        const bool tty = ::isatty(STDERR_FILENO) == 1;
        measure::HarnessEvents ev;
        ev.on_progress = [&](const measure::Progress& p) {
            if (!tty || p.requests_total == 0) return;
            std::cerr << "\r\033[K" << p.networks_done << '/' << p.networks_total << " models, "
                      << static_cast<int>(p.elapsed_seconds) << " s" << std::flush;
        };
        ev.on_result = [&](const measure::Network& n, const measure::Record& r) {
            if (r.ok()) return;
            if (tty) std::cerr << "\r\033[K";
            std::cerr << "FAILED  " << n.id << "  " << r.status << ": " << r.detail << '\n';
        };
        const auto summary = harness.run(store, networks, ev);
        if (tty) std::cerr << "\r\033[K" << std::flush;
        std::vector<std::string> missing;
        auto t = measure::table_from_store(models, store, &missing);
        t.device = a.device.empty() ? pool.device() : a.device;
        t.save(a.out);
        std::cout << "measured " << summary.measured << ", already present " << summary.skipped << ", failed "
                  << summary.failed << " in " << std::fixed << std::setprecision(1) << summary.seconds << " s\n";
        std::cout.unsetf(std::ios::floatfield);
        std::cout << "table: " << a.out << " (" << t.num_keys() << " configurations, " << t.num_points()
                  << " points); measurements: " << a.store << '\n';
        for (const auto& m : missing) std::cerr << "dnncost: missing from the table: " << m << '\n';
        ctx.exit_code = missing.empty() ? 0 : 3;
    });

    // ------------------------------------------------------------------ query
    struct QueryCmd {
        std::string table, op, kernel, stride, groups = "1", spatial;
        double c = 0, k = 0;
        td::QueryArgs q;
        bool json_out = false;
    };
    auto q = std::make_shared<QueryCmd>();
    auto* query = table->add_subcommand("query", "Read one configuration from a table");
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
    query->add_flag("--json", q->json_out, "Print the answer as JSON");
    query->callback([q] {
        auto& a = *q;
        const auto t = cost::OpTable::load(a.table);
        cost::OpKey key;
        key.op = a.op;
        key.kernel = td::dims(a.kernel, "--kernel");
        key.stride = td::dims(a.stride, "--stride");
        key.spatial = td::dims(a.spatial, "--spatial");
        if (a.groups == "dw")
            key.groups = cost::depthwise_groups;
        else if (const auto g = check::whole<std::int64_t>(a.groups); g && *g >= 1)
            key.groups = *g;
        else
            raise<config_error>("--groups '", a.groups, "' is not a positive integer or dw");
        if (spans_two_channel_counts(key) && !(a.k > 0))
            raise<config_error>("--k is required for ", cost::to_string(key));
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
    });

    // ------------------------------------------------------------------ price
    struct PriceCmd {
        std::string table, fallback = "error";
        std::vector<std::string> models;
        td::QueryArgs q;
        double peak_gflops = 0, bandwidth_gbs = 0;
        bool per_node = false, json_out = false;
    };
    auto p = std::make_shared<PriceCmd>();
    auto* price = table->add_subcommand(
        "price", "Latency of networks as the sum of their operators' table latencies (sequential execution assumed)");
    price->add_option("--table", p->table, "Table file (CSV)")->required();
    price->add_option("--model", p->models, "ONNX model to price (repeatable)")->required();
    p->q.add(*price);
    price
        ->add_option("--fallback", p->fallback,
                     "Operators without a table entry: error, or roofline (needs --peak-gflops and --bandwidth-gbs)")
        ->check(CLI::IsMember({"error", "roofline"}))
        ->capture_default_str();
    price->add_option("--peak-gflops", p->peak_gflops, "Roofline fallback: peak compute, GFLOP/s")
        ->check(check::finite(check::Sign::positive));
    price->add_option("--bandwidth-gbs", p->bandwidth_gbs, "Roofline fallback: memory bandwidth, GB/s")
        ->check(check::finite(check::Sign::positive));
    price->add_flag("--per-node", p->per_node, "Print every operator's latency");
    price->add_flag("--json", p->json_out, "Print the result as JSON");
    price->callback([p] {
        auto& a = *p;
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
        const cost::TableCost tc(std::make_shared<cost::OpTable>(cost::OpTable::load(a.table)), o);
        json all = json::array();
        for (const auto& m : a.models) {
            const auto g = io::import_onnx(m);
            cost::GraphCost r;
            try {
                r = tc.cost(g);
            } catch (const config_error& e) {
                raise<config_error>(m, ": ", e.what());
            }
            std::size_t priced = 0;
            for (std::size_t i = 0; i < g.num_nodes(); ++i)
                priced += !cost::is_free_operator(g.node(static_cast<int>(i)).op_type);
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
    });
}

}  // namespace dnncost::cli
