#pragma once
// `dnncost compress`: a channel-pruning search on a real ONNX network, measured through a runner
// for the first generations and then guided by a trained estimator (docs/compression.md).
//
// Exit status: 0 on success; 1 on an error (bad option or model, a runner that cannot be
// started, too few successful measurements to train on).
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "cmd_measure.hpp"
#include "common.hpp"
#include "compress_report.hpp"

#include <dnncost/io/file.hpp>
#include <dnncost/io/onnx.hpp>
#include <dnncost/measure/harness.hpp>
#include <dnncost/measure/model_file.hpp>
#include <dnncost/measure/runner_pool.hpp>
#include <dnncost/measure/store.hpp>
#include <dnncost/search/compression/handover.hpp>

namespace dnncost::cli {

namespace compress_detail {
namespace fs = std::filesystem;
namespace sc = dnncost::search::compression;

/// "0.25:1:0.125" -> keep_steps(0.25, 1, 0.125)
inline std::vector<double> parse_steps(const std::string& s) {
    std::vector<double> v;
    std::stringstream in(s);
    for (std::string part; std::getline(in, part, ':');) {
        double x = 0;
        const auto r = std::from_chars(part.data(), part.data() + part.size(), x);
        if (part.empty() || r.ec != std::errc() || r.ptr != part.data() + part.size())
            raise<config_error>("--steps '", s, "': '", part, "' is not a number (expected LOWEST:HIGHEST:STEP)");
        v.push_back(x);
    }
    if (v.size() != 3) raise<config_error>("--steps '", s, "': expected LOWEST:HIGHEST:STEP, e.g. 0.25:1:0.125");
    return sc::keep_steps(v[0], v[1], v[2]);
}

/// (latency_ms_measured, accuracy) of a front.csv written by an earlier search.
inline std::vector<std::pair<double, double>> read_front(const fs::path& file) {
    std::istringstream in(io::read_file(file));
    std::string line;
    if (!std::getline(in, line) || line.rfind("genome,latency_ms_estimated,latency_ms_measured,accuracy", 0) != 0)
        raise<parse_error>(file.string(), ":1: not a front.csv of dnncost compress");
    std::vector<std::pair<double, double>> out;
    for (std::size_t no = 2; std::getline(in, line); ++no) {
        std::vector<std::string> f;
        std::stringstream ls(line);
        for (std::string x; std::getline(ls, x, ',');) f.push_back(x);
        if (f.size() < 4) raise<parse_error>(file.string(), ":", no, ": expected at least 4 fields");
        if (f[2].empty()) continue;  // a member whose measurement failed
        try {
            out.emplace_back(std::stod(f[2]), std::stod(f[3]));
        } catch (const std::exception&) {
            raise<parse_error>(file.string(), ":", no, ": latency or accuracy is not a number");
        }
    }
    return out;
}

/// Accuracy answers by network key, kept in DIR/accuracy.csv so a resumed search asks again for none.
class AccuracyCache {
public:
    explicit AccuracyCache(fs::path path) : m_path(std::move(path)) {
        std::error_code ec;
        if (!fs::exists(m_path, ec)) return;
        std::istringstream in(io::read_file(m_path));
        for (std::string line; std::getline(in, line);) {
            const auto comma = line.find(',');
            if (comma == std::string::npos || line.rfind("key,", 0) == 0) continue;
            try {
                m_values[line.substr(0, comma)] = std::stod(line.substr(comma + 1));
            } catch (const std::exception&) {}  // a torn last line: asked again
        }
    }
    const double* find(const std::string& key) const {
        const auto it = m_values.find(key);
        return it == m_values.end() ? nullptr : &it->second;
    }
    void add(const std::string& key, double v) {
        m_values[key] = v;
        const bool fresh = !fs::exists(m_path);
        std::ofstream out(m_path, std::ios::app);
        if (fresh) out << "key,accuracy\n";
        out << key << ',' << std::setprecision(17) << v << '\n';
        out.flush();
        if (!out) raise<io_error>("cannot append to ", m_path.string());
    }

private:
    fs::path m_path;
    std::map<std::string, double> m_values;
};
}  // namespace compress_detail

inline void add_compress_commands(CLI::App& app, Context& ctx) {
    namespace cd = compress_detail;
    namespace md = measure_detail;
    namespace fs = std::filesystem;
    namespace sc = dnncost::search::compression;
    struct Args {
        std::string model, runner, accuracy, out, estimator = "hifisage", steps = "0.25:1:0.125", reference, store;
        std::string statistic = "median", keep = "auto";
        std::size_t generations = 10, pop = 50, handover = 3, budget = 0;
        int epochs = -1, retries = 1;
        std::uint64_t seed = 0;
        double timeout = 120, coverage = 0.9;
        measure::HarnessOptions harness{1, 3, 10, measure::Statistic::median, 0.02, 1, false};
        bool json_out = false;
    };
    auto a = std::make_shared<Args>();
    auto* cmd = app.add_subcommand(
        "compress", "Channel-pruning search on an ONNX network: measured first, then guided by a trained estimator");
    cmd->add_option("--model", a->model, "ONNX network to prune")->required()->check(CLI::ExistingFile);
    cmd->add_option("--runner", a->runner, "Runner command measuring latency (docs/measure.md)")->required();
    cmd->add_option("--accuracy", a->accuracy,
                    "Command answering {\"id\": N, \"accuracy\": X} per model request (runner protocol); default: "
                    "the built-in kept-parameter proxy");
    cmd->add_option("--out", a->out, "Output directory (results store, front.csv, fronts.svg, summary.json)")
        ->required();
    cmd->add_option("--generations", a->generations, "Generations in all, the initial population included")
        ->transform(check::integer(1, 10000, "a generation count in [1, 10^4]"))
        ->capture_default_str();
    cmd->add_option("--pop", a->pop, "Population size")
        ->transform(check::integer(2, 100000, "a population in [2, 10^5]"))
        ->capture_default_str();
    cmd->add_option("--handover", a->handover,
                    "Generations measured before the estimator takes over (>= --generations: measured all the way)")
        ->transform(check::integer(1, 10000, "a generation count in [1, 10^4]"))
        ->capture_default_str();
    cmd->add_option("--estimator", a->estimator,
                    "Estimator preset trained at the handover (hifisage, brpnas, additive)")
        ->capture_default_str();
    cmd->add_option("--epochs", a->epochs, "Training epochs of the estimator (-1: the preset's default)")
        ->transform(check::integer(-1, 100000, "an epoch count"));
    cmd->add_option(
           "--remeasure-budget", a->budget,
           "Measurements spent during the estimated generations on candidates whose interval reaches the front")
        ->transform(check::integer(0, 1000000, "a measurement count"))
        ->capture_default_str();
    cmd->add_option("--interval", a->coverage, "Coverage of the calibrated interval from validation residuals")
        ->check(CLI::Range(0.5, 0.999))
        ->capture_default_str();
    cmd->add_option("--steps", a->steps, "Keep-ratio steps LOWEST:HIGHEST:STEP")->capture_default_str();
    cmd->add_option("--seed", a->seed, "Seed of the search, the split and the model weights")->transform(check::seed());
    cmd->add_option("--rounds", a->harness.rounds, "Rounds per measurement")
        ->transform(check::integer(1, 1000, "a round count in [1, 1000]"))
        ->capture_default_str();
    cmd->add_option("--warmup", a->harness.warmup, "Untimed runs per round")
        ->transform(check::integer(0, 1000000, "a run count"))
        ->capture_default_str();
    cmd->add_option("--repeats", a->harness.repeats, "Timed runs per round")
        ->transform(check::integer(1, 1000000, "a run count"))
        ->capture_default_str();
    cmd->add_option(
           "--statistic", a->statistic,
           "Statistic of a measurement's timed runs: median | min (min resists other processes on a shared CPU)")
        ->check(CLI::IsMember({"median", "min"}))
        ->capture_default_str();
    cmd->add_option("--keep", a->keep,
                    "Which weights the estimator's fit ends with: auto | trained | untrained (see dnncost train)")
        ->check(CLI::IsMember({"auto", "trained", "untrained"}))
        ->capture_default_str();
    cmd->add_option("--timeout", a->timeout, "Seconds one request may take")
        ->check(check::finite(check::Sign::positive))
        ->capture_default_str();
    cmd->add_option("--retries", a->retries, "Further attempts of a failed request")
        ->transform(check::integer(0, 100, "a retry count in [0, 100]"))
        ->capture_default_str();
    cmd->add_option(
        "--reference", a->reference,
        "Output directory of a reference search (e.g. measured all the way): hypervolume ratio in the summary");
    cmd->add_option("--store", a->store,
                    "Results store to use instead of DIR/results.csv (searches of one network on one device can share "
                    "one, so a reference search measures again nothing the other already did)");
    cmd->add_flag("--json", a->json_out, "Print the summary as JSON instead of the front table");
    cmd->callback([a, &ctx] {
        auto& args = *a;
        const auto steps = cd::parse_steps(args.steps);
        if (args.timeout > 1e6) raise<config_error>("--timeout ", args.timeout, " is more than 10^6 seconds");
        auto& ho = args.harness;
        ho.statistic = measure::parse_statistic(args.statistic);
        ho.max_rounds = std::max(ho.max_rounds, ho.rounds);
        ho.check();
        (void)estimators::make_estimator(args.estimator);  // an unknown preset fails before any measurement
        std::vector<std::pair<double, double>> reference;
        if (!args.reference.empty()) reference = cd::read_front(fs::path(args.reference) / "front.csv");

        const fs::path dir = args.out;
        std::error_code ec;
        fs::create_directories(dir, ec);
        if (!fs::is_directory(dir)) raise<io_error>("--out ", args.out, ": cannot create the directory");
        const auto bytes = io::read_file(args.model);
        const int opset = io::onnx_opset(bytes, args.model);
        auto network = io::import_onnx(args.model);
        const std::string model_name = fs::path(args.model).stem().string();
        if (network.name().empty()) network.set_name(model_name);
        const sc::Pruner pruner(std::move(network));
        std::cerr << model_name << ": " << pruner.num_groups() << " channel groups to prune, "
                  << pruner.analysis().fixed.size() << " layers left whole\n";
        for (std::size_t i = 0; i < pruner.analysis().fixed.size() && i < 5; ++i) {
            const auto& f = pruner.analysis().fixed[i];
            std::cerr << "  whole: " << f.node << " (" << f.op_type << "): " << f.reason << '\n';
        }
        if (pruner.analysis().fixed.size() > 5)
            std::cerr << "  ... and " << pruner.analysis().fixed.size() - 5 << " more (summary.json lists them all)\n";

        // the measuring side: results store, runner pool, harness
        const fs::path store_path = args.store.empty() ? dir / "results.csv" : fs::path(args.store);
        measure::ResultsStore store(store_path);
        measure::StoreInfo info{"compress:" + model_name, {args.runner}, {}, ho.to_json()};
        if (const auto old = measure::read_store_info(measure::sidecar_path(store_path)); old)
            info.runner_device = old->runner_device;
        measure::write_store_info(measure::sidecar_path(store_path), info);
        measure::PoolOptions po;
        po.timeout = measure::Millis(static_cast<std::int64_t>(args.timeout * 1000));
        po.retries = args.retries;
        measure::RunnerPool pool({args.runner}, po);
        measure::Harness harness(pool, ho);
        md::TempDir tmp;
        const bool tty = ::isatty(STDERR_FILENO) == 1;
        std::size_t failures_shown = 0;
        const auto model_file = [&](const graph::Graph& g, const std::string& key) {
            const auto path = tmp.path() / (key + ".onnx");
            if (!fs::exists(path)) measure::write_model_for_runner(g, path, args.seed, opset);
            return path;
        };
        sc::LatencyOracle latency = [&](std::span<const graph::Graph* const> graphs) {
            std::vector<measure::Network> nets;
            std::vector<std::string> keys;
            for (const auto* g : graphs) {
                const auto key = measure::network_key(*g);
                keys.push_back(key);
                const auto* present = store.result(key);
                measure::Network n{key, model_name + "#" + key.substr(0, 12), {}};
                if (!(present && present->ok())) n.model = model_file(*g, key);
                nets.push_back(std::move(n));
            }
            measure::HarnessEvents ev;
            ev.on_progress = [&](const measure::Progress& p) {
                if (!tty || p.requests_total == 0) return;
                std::cerr << "\r\033[K  measuring " << p.requests_done << '/' << p.requests_total << " requests, "
                          << md::duration(p.elapsed_seconds) << std::flush;
            };
            ev.on_result = [&](const measure::Network& n, const measure::Record& r) {
                if (r.ok() || failures_shown >= 10) return;
                if (tty) std::cerr << "\r\033[K";
                std::cerr << "  FAILED " << n.id << ": " << r.status << ": " << r.detail << '\n';
                if (++failures_shown == 10) std::cerr << "  (further failures are in " << store_path.string() << ")\n";
            };
            harness.run(store, nets, ev);
            for (const auto& n : nets)  // a pruned ResNet-50 with weights is tens of MB: keep no file
                if (!n.model.empty()) fs::remove(n.model, ec);
            if (tty) std::cerr << "\r\033[K" << std::flush;
            if (info.runner_device.empty() && !pool.device().empty()) {
                info.runner_device = pool.device();
                measure::write_store_info(measure::sidecar_path(store_path), info);
            }
            std::vector<std::optional<double>> out;
            for (const auto& k : keys) {
                const auto* r = store.result(k);
                // as the store keeps it (6 significant digits), so that a resumed search sees the same values
                out.push_back(r && r->ok() ? std::optional<double>(std::stod(compress_report::num(r->latency_ms, 6)))
                                           : std::nullopt);
            }
            return out;
        };
        sc::AccuracyOracle accuracy;
        std::unique_ptr<measure::RunnerPool> acc_pool;
        cd::AccuracyCache acc_cache(dir / "accuracy.csv");
        if (!args.accuracy.empty()) {
            measure::PoolOptions apo = po;
            apo.runner.answers = measure::AnswerKind::accuracy;
            acc_pool = std::make_unique<measure::RunnerPool>(std::vector<std::string>{args.accuracy}, apo);
            accuracy = [&](std::span<const sc::PruneGenome>, std::span<const graph::Graph* const> graphs) {
                std::vector<std::optional<double>> out(graphs.size());
                std::vector<measure::Request> requests;
                std::vector<std::size_t> which;
                std::vector<std::string> keys(graphs.size());
                for (std::size_t i = 0; i < graphs.size(); ++i) {
                    keys[i] = measure::network_key(*graphs[i]);
                    if (const auto* v = acc_cache.find(keys[i])) {
                        out[i] = *v;
                        continue;
                    }
                    requests.push_back({0, model_file(*graphs[i], keys[i]).string(), 0, 1});
                    which.push_back(i);
                }
                if (requests.empty()) return out;
                acc_pool->run(requests, [&](std::size_t k, const measure::Outcome& o) {
                    fs::remove(requests[k].model, ec);
                    const auto i = which[k];
                    if (o.ok() && o.answer.accuracy) {
                        out[i] = *o.answer.accuracy;
                        acc_cache.add(keys[i], *o.answer.accuracy);
                    } else if (failures_shown < 10) {
                        ++failures_shown;
                        std::cerr << "  accuracy FAILED for " << keys[i].substr(0, 12) << ": "
                                  << measure::to_string(o.failure) << ": " << o.detail << '\n';
                    }
                });
                return out;
            };
        }

        sc::HandoverOptions options;
        options.population = args.pop;
        options.generations = args.generations;
        options.handover = args.handover;
        options.steps = steps;
        options.estimator = args.estimator;
        options.remeasure_budget = args.budget;
        options.interval_coverage = args.coverage;
        options.seed = args.seed;
        options.fit.max_epochs = args.epochs;
        if (args.keep != "auto") options.estimator_settings["keep"] = args.keep;
        sc::HandoverSearch search(pruner, options, latency, accuracy);
        search.set_estimator_cache({[&](const std::string& sig) {
                                        const auto f = dir / ("estimator-" + sig + ".dnncost");
                                        std::error_code e;
                                        return fs::exists(f, e) ? io::read_file(f) : std::string();
                                    },
                                    [&](const std::string& sig, const std::string& bytes) {
                                        io::write_file_atomic(dir / ("estimator-" + sig + ".dnncost"), bytes);
                                    }});
        sc::HandoverSearch::Events events;
        events.on_message = [&](const std::string& m) { std::cerr << "  " << m << '\n'; };
        events.on_generation = [&](const sc::GenerationReport& r) {
            std::cerr << "generation " << r.generation << '/' << r.generations
                      << (r.estimated ? " [estimated]" : " [measured]") << ": " << r.evaluated << " new, " << r.measured
                      << " measured";
            if (r.remeasured) std::cerr << " (" << r.remeasured << " near the front)";
            if (r.failed) std::cerr << ", " << r.failed << " failed";
            std::cerr << ", front " << r.front_size << ", " << md::duration(r.seconds) << '\n';
        };
        const auto result = search.run(events);

        // reports
        io::write_file_atomic(dir / "front.csv", compress_report::front_csv(result.front, steps));
        io::write_file_atomic(dir / "candidates.csv", compress_report::candidates_csv(result.all, steps));
        const bool guided = args.handover < args.generations;
        io::write_file_atomic(dir / "fronts.svg", compress_report::fronts_svg(
                                                      result,
                                                      model_name + ": " +
                                                          (guided ? "estimator-guided search (" + args.estimator + ")"
                                                                  : "search measured all the way"),
                                                      reference));
        const std::size_t evaluations = result.all.size();
        json j;
        j["model"] = args.model;
        j["channel_groups"] = pruner.num_groups();
        json fixed = json::array();
        for (const auto& f : pruner.analysis().fixed)
            fixed.push_back({{"node", f.node}, {"op_type", f.op_type}, {"reason", f.reason}});
        j["layers_left_whole"] = fixed;
        j["generations"] = args.generations;
        j["population"] = args.pop;
        j["handover"] = args.handover;
        j["estimator"] = guided ? json(args.estimator) : json(nullptr);
        j["evaluations"] = evaluations;
        j["measured"] = result.measured;
        j["estimated"] = result.estimated;
        j["measurements_saved"] = evaluations - result.measured;
        j["remeasured_in_search"] = result.remeasured;
        j["remeasure_budget"] = args.budget;
        j["failed"] = result.failed;
        const auto fin = [](double v) { return std::isfinite(v) ? json(v) : json(nullptr); };
        j["validation_mape"] = fin(result.validation_mape);
        j["interval"] = fin(result.interval);
        j["front_mape"] = fin(result.front_mape);
        j["front_mape_unseen"] = fin(result.front_mape_unseen);
        j["baseline"] = "additive";
        j["baseline_front_mape"] = fin(result.baseline_front_mape);
        j["front_size"] = result.front.size();
        j["seconds"] = result.seconds;
        j["fit"] = result.fit_summary;
        j["accuracy"] = args.accuracy.empty() ? "proxy: parameter-weighted mean of sqrt(keep ratio)" : args.accuracy;
        j["runner_device"] = info.runner_device.empty() ? json(nullptr) : json::parse(info.runner_device);
        j["settings"] = json::parse(ho.to_json());
        std::vector<std::pair<double, double>> mine;
        for (const auto& r : result.front)
            if (r.measured) mine.emplace_back(*r.measured, r.accuracy);
        if (!reference.empty()) {
            double ref_lat = 0;
            for (const auto& p : mine) ref_lat = std::max(ref_lat, p.first);
            for (const auto& p : reference) ref_lat = std::max(ref_lat, p.first);
            ref_lat *= 1.05;
            const double hv = compress_report::hypervolume(mine, ref_lat, 0.0);
            const double hv_ref = compress_report::hypervolume(reference, ref_lat, 0.0);
            j["hypervolume"] = hv;
            j["reference_hypervolume"] = hv_ref;
            j["hypervolume_ratio"] = hv_ref > 0 ? json(hv / hv_ref) : json(nullptr);
            j["hypervolume_reference_point"] = {ref_lat, 0.0};
        }
        io::write_file_atomic(dir / "summary.json", j.dump(2) + "\n");

        if (args.json_out) {
            print_json(j);
        } else {
            std::cout << "final front of " << model_name << " (" << result.front.size() << " networks):\n";
            std::cout << "  latency_ms_estimated  latency_ms_measured  accuracy  keep ratios\n";
            for (const auto& r : result.front) {
                std::cout << "  " << std::setw(20) << compress_report::opt(r.estimated) << "  " << std::setw(19)
                          << compress_report::opt(r.measured) << "  " << std::setw(8)
                          << compress_report::num(r.accuracy, 4) << "  "
                          << compress_report::genome_text(r.genome, steps) << '\n';
            }
            std::cout << evaluations << " networks evaluated, " << result.measured << " measured, "
                      << evaluations - result.measured << " measurements saved";
            if (std::isfinite(result.front_mape))
                std::cout << "; estimator MAPE on the re-measured front " << std::fixed << std::setprecision(2)
                          << 100 * result.front_mape << " %";
            if (std::isfinite(result.baseline_front_mape))
                std::cout << " (additive baseline " << 100 * result.baseline_front_mape << " %)";
            std::cout.unsetf(std::ios::floatfield);
            std::cout << "\nwritten: " << (dir / "front.csv").string() << ", " << (dir / "fronts.svg").string() << ", "
                      << (dir / "summary.json").string() << ", " << store_path.string() << '\n';
        }
        ctx.exit_code = 0;
    });
}

}  // namespace dnncost::cli
