// `dnncost compress`: a channel-pruning search on a real ONNX network, measured through a runner
// for the first generations and then guided by a trained estimator (docs/compression.md); the
// search is search/compression/measured_compression.hpp, the files it leaves compress_report.hpp.
//
// Generations are counted as everywhere in the CLI: the initial population is generation 0 and
// --gens G runs G generations after it.
//
// Exit status: 0 on success; 1 on an error (bad option or network, a runner that cannot be
// started, too few successful measurements to train on).
#include <charconv>
#include <cmath>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "commands.hpp"
#include "common.hpp"
#include "compress_report.hpp"
#include "measure_options.hpp"

#include <dnncost/estimators/registry.hpp>
#include <dnncost/io/file.hpp>
#include <dnncost/search/compression/measured_compression.hpp>

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

struct Args {
    NetworkFiles network;
    std::string runner, accuracy, out, preset = "hifisage", estimator, steps = "0.25:1:0.125", reference, store;
    std::string keep = "auto";
    std::size_t gens = 9, generations = 0, pop = 50, handover = 3, budget = 0;
    int epochs = -1;
    std::uint64_t seed = 0;
    double coverage = 0.9;
    MeasureFlags flags;
    bool json_out = false;
};

/// The deprecated spellings, converted: --generations N (the initial population included) is
/// --gens N-1; --estimator is --preset.
inline void resolve_deprecated(Args& a, const Option* gens, const Option* generations,
                               const Option* preset, const Option* estimator) {
    if (generations->count() > 0) {
        if (gens->count() > 0) raise<config_error>("compress: give --gens, not --generations as well");
        warn_deprecated("compress --generations N (the initial population included)",
                        "--gens " + std::to_string(a.generations - 1) + " (generations after the initial one)");
        a.gens = a.generations - 1;
    }
    if (estimator->count() > 0) {
        if (preset->count() > 0) raise<config_error>("compress: give --preset, not --estimator as well");
        warn_deprecated("compress --estimator", "--preset");
        a.preset = a.estimator;
    }
}

/// Progress on stderr: the network's channel groups, each generation, the first ten failures.
inline sc::MeasuredCompressionEvents events(const ProgressLine& line, const fs::path& store_hint) {
    auto failures_shown = std::make_shared<std::size_t>(0);
    sc::MeasuredCompressionEvents ev;
    ev.on_network = [](const std::string& name, const sc::Pruner& pruner) {
        const auto& fixed = pruner.analysis().fixed;
        std::cerr << name << ": " << pruner.num_groups() << " channel groups to prune, " << fixed.size()
                  << " layers left whole\n";
        for (std::size_t i = 0; i < fixed.size() && i < 5; ++i)
            std::cerr << "  whole: " << fixed[i].node << " (" << fixed[i].op_type << "): " << fixed[i].reason << '\n';
        if (fixed.size() > 5) std::cerr << "  ... and " << fixed.size() - 5 << " more (summary.json lists them all)\n";
    };
    ev.measuring.on_progress = [line](const measure::Progress& p) {
        if (!line.tty || p.requests_total == 0) return;
        std::cerr << "\r\033[K  measuring " << p.requests_done << '/' << p.requests_total << " requests, "
                  << duration(p.elapsed_seconds) << std::flush;
    };
    ev.measuring.on_result = [line, failures_shown, store_hint](const measure::Network& n, const measure::Record& r) {
        if (r.ok() || *failures_shown >= 10) return;
        line.clear();
        std::cerr << "  FAILED " << n.id << ": " << to_string(r.status) << ": " << r.detail << '\n';
        if (++*failures_shown == 10) std::cerr << "  (further failures are in " << store_hint.string() << ")\n";
    };
    ev.on_batch_done = [line] { line.done(); };
    ev.on_accuracy_failure = [failures_shown](const std::string& key, const std::string& failure,
                                              const std::string& detail) {
        if (*failures_shown >= 10) return;
        ++*failures_shown;
        std::cerr << "  accuracy FAILED for " << key.substr(0, 12) << ": " << failure << ": " << detail << '\n';
    };
    ev.search.on_message = [](const std::string& m) { std::cerr << "  " << m << '\n'; };
    ev.search.on_generation = [](const sc::GenerationReport& r) {
        // the library counts the initial population as generation 1; the CLI as generation 0
        std::cerr << "generation " << r.generation - 1 << '/' << r.generations - 1
                  << (r.estimated ? " [estimated]" : " [measured]") << ": " << r.evaluated << " new, " << r.measured
                  << " measured";
        if (r.remeasured) std::cerr << " (" << r.remeasured << " near the front)";
        if (r.failed) std::cerr << ", " << r.failed << " failed";
        std::cerr << ", front " << r.front_size << ", " << duration(r.seconds) << '\n';
    };
    return ev;
}

inline void print_front(const sc::MeasuredCompression& run, const std::vector<double>& steps, const fs::path& dir) {
    const auto& result = run.result;
    std::cout << "final front of " << run.name << " (" << result.front.size() << " networks):\n";
    std::cout << "  latency_ms_estimated  latency_ms_measured  accuracy  keep ratios\n";
    for (const auto& r : result.front)
        std::cout << "  " << std::setw(20) << compress_report::opt(r.estimated) << "  " << std::setw(19)
                  << compress_report::opt(r.measured) << "  " << std::setw(8) << compress_report::num(r.accuracy, 4)
                  << "  " << compress_report::genome_text(r.genome, steps) << '\n';
    const std::size_t evaluations = result.all.size();
    std::cout << evaluations << " networks evaluated, " << result.measured << " measured, "
              << evaluations - result.measured << " measurements saved";
    if (std::isfinite(result.front_mape))
        std::cout << "; estimator MAPE on the re-measured front " << std::fixed << std::setprecision(2)
                  << 100 * result.front_mape << " %";
    if (std::isfinite(result.baseline_front_mape))
        std::cout << " (additive baseline " << 100 * result.baseline_front_mape << " %)";
    std::cout.unsetf(std::ios::floatfield);
    std::cout << "\nwritten: " << (dir / "front.csv").string() << ", " << (dir / "fronts.svg").string() << ", "
              << (dir / "summary.json").string() << ", " << run.store.string() << '\n';
}

inline void run(Args& a) {
    sc::MeasuredCompressionOptions o;
    o.network = a.network.files("compress").front();
    o.out = a.out;
    o.store = a.store;
    o.runner = a.runner;
    o.accuracy = a.accuracy;
    o.search.population = a.pop;
    o.search.generations = a.gens + 1;  // the library counts the initial population too
    o.search.handover = a.handover;
    o.search.steps = parse_steps(a.steps);
    o.search.estimator = a.preset;
    o.search.remeasure_budget = a.budget;
    o.search.interval_coverage = a.coverage;
    o.search.seed = a.seed;
    o.search.fit.max_epochs = a.epochs;
    if (a.keep != "auto") o.search.estimator_settings["keep"] = a.keep;
    o.harness = a.flags.checked_harness();
    o.pool = a.flags.pool();
    std::vector<std::pair<double, double>> reference;
    if (!a.reference.empty()) reference = compress_report::read_front(fs::path(a.reference) / "front.csv");
    const ProgressLine line;
    const auto run = sc::run_measured_compression(o, events(line, o.store.empty() ? o.out / "results.csv" : o.store));
    const compress_report::Settings settings{o.network.string(), a.gens, a.pop, a.handover, a.preset, a.budget,
                                             a.accuracy, o.harness.to_json()};
    const auto summary = compress_report::write_reports(o.out, run, o.search.steps, settings, reference);
    if (a.json_out)
        print_json(summary);
    else
        print_front(run, o.search.steps, o.out);
}
}  // namespace compress_detail

void add_compress_commands(Command& app, Context& ctx) {
    (void)ctx;  // 0 on success; an error is an exception
    auto a = std::make_shared<compress_detail::Args>();
    a->flags = MeasureFlags(1, 1, 3, 10, 0.02);
    auto* cmd = app.add_subcommand(
        "compress", "Channel-pruning search on an ONNX network: measured first, then guided by a trained estimator");
    a->network.add_to(*cmd, "ONNX network to prune", false);
    add_runner_option(*cmd, a->runner, false)->required();
    cmd->add_option("--accuracy", a->accuracy,
                    "Command answering {\"id\": N, \"accuracy\": X} per model request (runner protocol); default: "
                    "the built-in kept-parameter proxy");
    cmd->add_option("--out", a->out, "Output directory (results store, front.csv, fronts.svg, summary.json)")
        ->required();
    auto* gens = cmd->add_option("--gens", a->gens, "Generations after the initial one")
                     ->transform(check::integer(0, 9999, "a generation count in [0, 9999]"))
                     ->capture_default_str();
    auto* generations = cmd->add_option("--generations", a->generations, "Deprecated: --gens N-1")
                            ->transform(check::integer(1, 10000, "a generation count in [1, 10^4]"))
                            ->group("");
    cmd->add_option("--pop", a->pop, "Population size")
        ->transform(check::integer(2, 100000, "a population in [2, 10^5]"))
        ->capture_default_str();
    cmd->add_option("--handover", a->handover,
                    "Generations measured before the estimator takes over, the initial one included (more than "
                    "--gens: measured all the way)")
        ->transform(check::integer(1, 10000, "a generation count in [1, 10^4]"))
        ->capture_default_str();
    auto* preset = cmd->add_option("--preset", a->preset,
                                   "Estimator preset trained at the handover: " + joined(estimators::estimator_names()))
                       ->capture_default_str();
    auto* estimator = cmd->add_option("--estimator", a->estimator, "Deprecated: --preset")->group("");
    cmd->add_option("--epochs", a->epochs, "Maximum epochs of the estimator (-1: the preset's default)")
        ->transform(check::integer(-1, 100000, "an epoch count"));
    cmd->add_option(
           "--remeasure-budget", a->budget,
           "Measurements spent during the estimated generations on candidates whose interval reaches the front")
        ->transform(check::integer(0, 1000000, "a measurement count"))
        ->capture_default_str();
    cmd->add_option("--interval", a->coverage, "Coverage of the calibrated interval from validation residuals")
        ->check(check::range(0.5, 0.999))
        ->capture_default_str();
    cmd->add_option("--steps", a->steps, "Keep-ratio steps LOWEST:HIGHEST:STEP")->capture_default_str();
    cmd->add_option("--seed", a->seed, "Seed of the search, the split and the model weights")->transform(check::seed());
    a->flags.add_to(*cmd, {.max_rounds = false, .remeasure_spread = false});
    cmd->add_option("--keep", a->keep,
                    "Which weights the estimator's fit ends with: auto | trained | untrained (see dnncost train)")
        ->check(check::member({"auto", "trained", "untrained"}))
        ->capture_default_str();
    cmd->add_option(
        "--reference", a->reference,
        "Output directory of a reference search (e.g. measured all the way): hypervolume ratio in the summary");
    cmd->add_option("--store", a->store,
                    "Results store to use instead of DIR/results.csv (searches of one network on one device can share "
                    "one, so a reference search measures again nothing the other already did)");
    add_json_flag(*cmd, a->json_out, "Print the summary as one JSON document instead of the front table");
    cmd->callback([a, gens, generations, preset, estimator] {
        compress_detail::resolve_deprecated(*a, gens, generations, preset, estimator);
        compress_detail::run(*a);
    });
}

}  // namespace dnncost::cli
