#pragma once
// `dnncost measure`: measure networks on a device through runners (docs/measure.md), into a
// resumable results store.
//
// Exit status: 0 when every network was measured or already present; 3 when the run completed
// but some networks failed (each is in the store with its reason); 1 on an error (bad option
// or input, a runner command that cannot be started, an unwritable store); CLI11's own codes
// for malformed command lines.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common.hpp"

#include <dnncost/core/rng.hpp>
#include <dnncost/io/file.hpp>
#include <dnncost/io/onnx.hpp>
#include <dnncost/measure/harness.hpp>
#include <dnncost/measure/model_file.hpp>
#include <dnncost/measure/process.hpp>
#include <dnncost/measure/reference_model.hpp>
#include <dnncost/measure/runner_pool.hpp>
#include <dnncost/measure/store.hpp>
#include <dnncost/spaces/nb201.hpp>
#include <dnncost/spaces/registry.hpp>

namespace dnncost::cli {

namespace measure_detail {
namespace fs = std::filesystem;

/// A private directory for the exported model files, removed with this object.
class TempDir {
public:
    TempDir() {
        auto pattern = (fs::temp_directory_path() / "dnncost-measure-XXXXXX").string();
        if (!::mkdtemp(pattern.data()))
            raise<io_error>("cannot create a temporary directory in ", fs::temp_directory_path().string());
        m_path = pattern;
    }
    ~TempDir() {
        std::error_code ec;
        fs::remove_all(m_path, ec);
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    const fs::path& path() const { return m_path; }

private:
    fs::path m_path;
};

/// A network before export: its id, its graph, and the opset to write it with.
struct Candidate {
    std::string id;
    graph::Graph graph;
    int opset = 13;
};

/// A network of a search space, named `SPACE:ARCH` (NB201 strings stay bare) so that one
/// results store can hold several spaces and loads back as a data set.
inline Candidate space_candidate(const spaces::SpaceInfo& space, std::string_view arch,
                                 const spaces::SpaceOptions& options) {
    const auto canonical = space.canonical(arch);
    return {spaces::qualified_arch(space.name, canonical), space.build_graph(canonical, options), space.onnx_opset};
}

/// `n` distinct architectures of `space` drawn with `seed` (NB201: without replacement by index;
/// the larger spaces: their own sampler, repeats drawn again).
inline std::vector<Candidate> sample_space(const spaces::SpaceInfo& space, std::size_t n, std::uint64_t seed,
                                           const spaces::SpaceOptions& options) {
    std::vector<Candidate> out;
    Rng rng(seed);
    if (space.name == "nb201") {
        if (n > static_cast<std::size_t>(nb201::num_architectures))
            raise<config_error>("--sample ", n, " is more than the ", nb201::num_architectures, " NB201 architectures");
        std::vector<std::int64_t> idx(static_cast<std::size_t>(nb201::num_architectures));
        for (std::size_t i = 0; i < idx.size(); ++i) idx[i] = static_cast<std::int64_t>(i);
        for (std::size_t i = 0; i < n; ++i) {  // partial Fisher-Yates
            const auto j = i + static_cast<std::size_t>(rng.below(idx.size() - i));
            std::swap(idx[i], idx[j]);
            out.push_back(space_candidate(space, nb201::to_string(nb201::from_index(idx[i])), options));
        }
        return out;
    }
    std::set<std::string> seen;
    for (std::size_t draws = 0; out.size() < n; ++draws) {
        if (draws > 100 * n + 1000)
            raise<config_error>("--sample ", n, ": the ", space.name, " sampler keeps repeating itself");
        const auto arch = space.sample(rng);
        if (seen.insert(arch).second) out.push_back(space_candidate(space, arch, options));
    }
    return out;
}

/// One architecture string per line, of `space` (may be empty) or written `SPACE:ARCH`; empty
/// lines and lines starting with '#' are skipped.
inline std::vector<Candidate> read_archs(const std::string& file, const std::string& space,
                                         const spaces::SpaceOptions& options) {
    std::istringstream in(io::read_file(file));
    std::vector<Candidate> out;
    std::size_t line_no = 0;
    for (std::string line; std::getline(in, line);) {
        ++line_no;
        if (!line.empty() && line.back() == '\r') line.pop_back();
        const auto first = line.find_first_not_of(" \t");
        if (first == std::string::npos || line[first] == '#') continue;
        line = line.substr(first, line.find_last_not_of(" \t") - first + 1);
        try {
            if (const auto q = spaces::split_qualified(line))
                out.push_back(space_candidate(*q->space, q->arch, options));
            else if (!space.empty())
                out.push_back(space_candidate(spaces::find_space(space), line, options));
            else
                raise<parse_error>("'", line, "' names no search space (write SPACE:ARCH, or give --space)");
        } catch (const error& e) {
            raise<parse_error>(file, ":", line_no, ": ", e.what());
        }
    }
    if (out.empty()) raise<parse_error>(file, ": no architecture strings");
    return out;
}

/// "1:05" / "12s"
inline std::string duration(double s) {
    if (!std::isfinite(s) || s < 0) return "?";
    const auto t = static_cast<long>(s + 0.5);
    char buf[32];
    if (t >= 3600)
        std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
    else if (t >= 60)
        std::snprintf(buf, sizeof buf, "%ld:%02ld", t / 60, t % 60);
    else
        std::snprintf(buf, sizeof buf, "%lds", t);
    return buf;
}

inline std::string percent(double x) {
    std::ostringstream os;
    os << std::fixed << std::setprecision(1) << 100 * x << '%';
    return os.str();
}
}  // namespace measure_detail

inline void add_measure_commands(CLI::App& app, Context& ctx) {
    namespace md = measure_detail;
    namespace fs = std::filesystem;
    struct MeasureArgs {
        std::vector<std::string> runners, models;
        std::string device, space, space_options, archs, out, statistic = "median";
        std::size_t sample = 0, noise_check = 0;
        std::uint64_t seed = 0;
        measure::HarnessOptions harness;
        double timeout = 120, startup_timeout = 10;
        int retries = 1;
        int cpu = -1;
        bool json_out = false, realtime = false, allow_other_host = false;
    };
    auto a = std::make_shared<MeasureArgs>();
    auto* cmd =
        app.add_subcommand("measure", "Measure networks on a device through runners, into a resumable results store");
    cmd->add_option(
           "--runner", a->runners,
           "Runner command (run with /bin/sh -c); repeat for a pool of identical boards, one request in flight each")
        ->required();
    cmd->add_option("--device", a->device,
                    "Device name stored with the results (one results file per device and runner)")
        ->required();
    std::vector<std::string> space_names;
    for (const auto& s : spaces::all_spaces()) space_names.emplace_back(s.name);
    auto* space_opt = cmd->add_option(
                             "--space", a->space,
                             "Search space of --sample and of the strings in --archs: " +
                                 [&] {
                                     std::string s;
                                     for (const auto& n : space_names) s += (s.empty() ? "" : " | ") + n;
                                     return s;
                                 }())
                          ->check(CLI::IsMember(space_names));
    cmd->add_option("--space-options", a->space_options,
                    "Build options of the space's graphs, key=value,... (e.g. resolution=160 for ofa)");
    auto* sample_opt = cmd->add_option("--sample", a->sample, "Number of distinct architectures to sample from --space")
                           ->transform(check::integer(1, 1000000, "an architecture count in [1, 10^6]"));
    cmd->add_option("--seed", a->seed, "Seed of --sample and of the noise check's choice")->transform(check::seed());
    auto* archs_opt =
        cmd->add_option("--archs", a->archs, "File of architecture strings, one per line (of --space, or SPACE:ARCH)");
    cmd->add_option("models", a->models, "ONNX files to measure");
    cmd->add_option("--out", a->out,
                    "Results store (CSV; the device description goes beside it: results.csv -> results.device.json)")
        ->required()
        ->check(check::output_path());
    cmd->add_option("--rounds", a->harness.rounds, "Interleaved rounds per network (R)")
        ->transform(check::integer(1, 1000, "a round count in [1, 1000]"))
        ->capture_default_str();
    cmd->add_option("--warmup", a->harness.warmup, "Untimed runs per round (W)")
        ->transform(check::integer(0, 1000000, "a run count in [0, 10^6]"))
        ->capture_default_str();
    cmd->add_option("--repeats", a->harness.repeats, "Timed runs per round (N)")
        ->transform(check::integer(1, 1000000, "a run count in [1, 10^6]"))
        ->capture_default_str();
    cmd->add_option("--statistic", a->statistic, "Statistic of a round's runs and of the rounds: median | min")
        ->check(CLI::IsMember({"median", "min"}))
        ->capture_default_str();
    cmd->add_option("--remeasure-spread", a->harness.remeasure_spread,
                    "Networks whose spread (relative MAD of round statistics) exceeds this get more rounds")
        ->check(check::finite(check::Sign::non_negative))
        ->capture_default_str();
    cmd->add_option("--max-rounds", a->harness.max_rounds, "Cap on rounds per network, re-measuring included")
        ->transform(check::integer(1, 1000, "a round count in [1, 1000]"))
        ->capture_default_str();
    cmd->add_option("--timeout", a->timeout, "Seconds one request (load, warm-up, timed runs) may take")
        ->check(check::finite(check::Sign::positive))
        ->capture_default_str();
    cmd->add_option("--startup-timeout", a->startup_timeout, "Seconds to wait for a runner's device line at start")
        ->check(check::finite(check::Sign::non_negative))
        ->capture_default_str();
    cmd->add_option("--retries", a->retries, "Further attempts of a failed request")
        ->transform(check::integer(0, 100, "a retry count in [0, 100]"))
        ->capture_default_str();
    cmd->add_option("--noise-check", a->noise_check,
                    "Re-measure K of the networks from scratch at the end and report the agreement")
        ->transform(check::integer(0, 15625, "a network count in [0, 15625]"));
    cmd->add_flag("--force", a->harness.force, "Measure again networks the store already has");
    cmd->add_option("--cpu", a->cpu, "Pin the runners to this CPU (sched_setaffinity; no privilege needed)")
        ->transform(check::integer(0, 1023, "a CPU number in [0, 1023]"));
    cmd->add_flag("--realtime", a->realtime,
                  "Run the runners under SCHED_FIFO (needs root or CAP_SYS_NICE; a warning otherwise)");
    cmd->add_flag("--allow-other-host", a->allow_other_host,
                  "Append to a store measured on another host, or whose reference network differs beyond the noise");
    cmd->add_flag("--json", a->json_out, "Print the summary as one JSON object");
    cmd->callback([a, space_opt, sample_opt, archs_opt, &ctx] {
        auto& args = *a;
        const int sources = (sample_opt->count() > 0) + (archs_opt->count() > 0) + !args.models.empty();
        if (sources != 1 || (space_opt->count() > 0 && !args.models.empty()))
            raise<config_error>("name the networks one way: --space NAME --sample N, --archs FILE, or ONNX files");
        if (sample_opt->count() > 0 && space_opt->count() == 0) raise<config_error>("--sample needs --space NAME");
        const auto space_options = spaces::space_options(args.space_options);
        if (space_opt->count() > 0) spaces::check_space_options(spaces::find_space(args.space), space_options);
        if (args.timeout > 1e6) raise<config_error>("--timeout ", args.timeout, " is more than 10^6 seconds");
        if (args.startup_timeout > 3600)
            raise<config_error>("--startup-timeout ", args.startup_timeout, " is more than an hour");
        auto& ho = args.harness;
        ho.statistic = measure::parse_statistic(args.statistic);
        if (ho.max_rounds < ho.rounds) ho.max_rounds = ho.rounds;
        ho.check();
        io::check_writable(args.out);

        // the store, and the sidecar that says what it measured
        const fs::path out = args.out;
        const auto sidecar = measure::sidecar_path(out);
        auto info = measure::read_store_info(sidecar);
        std::error_code ec;
        const bool has_rows = fs::exists(out, ec) && fs::file_size(out, ec) > 0;
        if (info && has_rows && (info->device != args.device || info->runners != args.runners)) {
            std::string was;
            for (const auto& r : info->runners) was += (was.empty() ? "'" : ", '") + r + "'";
            raise<config_error>(
                args.out, " holds measurements of device '", info->device, "' by runner ", was,
                "; this run is device '", args.device,
                "' with other runners: measure into another --out (one results file per device and runner)");
        }
        measure::ResultsStore store(out);
        if (store.torn_bytes_repaired() > 0)
            std::cerr << "dnncost: " << args.out << ": cut off " << store.torn_bytes_repaired()
                      << " bytes of an interrupted write at its end\n";
        if (!store.issues().empty())
            std::cerr << "dnncost: " << args.out << ":" << store.issues().front().line << ": unreadable row ignored ("
                      << store.issues().front().message << ")" << (store.issues().size() > 1 ? " and more" : "")
                      << '\n';
        measure::StoreInfo new_info{args.device, args.runners, info ? info->runner_device : std::string(),
                                    ho.to_json()};
        if (info) {
            new_info.host = info->host;
            new_info.references = info->references;
        }
        measure::write_store_info(sidecar, new_info);

        // the networks: graphs, keys, model files for the runner
        std::vector<md::Candidate> candidates;
        if (sample_opt->count() > 0)
            candidates = md::sample_space(spaces::find_space(args.space), args.sample, args.seed, space_options);
        else if (archs_opt->count() > 0)
            candidates = md::read_archs(args.archs, args.space, space_options);
        else {
            const auto dir = fs::absolute(out).parent_path();
            for (const auto& m : args.models) {
                const auto bytes = io::read_file(m);
                // the id is relative to the store's directory, as `dnncost train --data` resolves it
                candidates.push_back(
                    {fs::proximate(fs::absolute(m), dir).string(), io::import_onnx(m), io::onnx_opset(bytes, m)});
            }
        }
        md::TempDir tmp;
        measure::ProvenanceOptions prov;
        prov.reference_model = tmp.path() / "reference.onnx";
        measure::write_reference_model(prov.reference_model);
        prov.reference_key = measure::network_key(measure::reference_graph());
        if (info && has_rows) prov.stored = info;
        prov.store_name = args.out;
        prov.allow_other_host = args.allow_other_host;
        prov.how_to_allow = "pass --allow-other-host to append anyway";
        std::vector<measure::Network> networks;
        for (const auto& c : candidates) {
            measure::Network n{measure::network_key(c.graph), c.id, {}};
            const auto* present = store.result(n.key);
            if (!(present && present->ok() && !ho.force)) {
                n.model = tmp.path() / (n.key + ".onnx");
                if (!fs::exists(n.model)) measure::write_model_for_runner(c.graph, n.model, args.seed, c.opset);
            }
            networks.push_back(std::move(n));
        }
        candidates.clear();

        measure::PoolOptions po;
        po.timeout = measure::Millis(static_cast<std::int64_t>(args.timeout * 1000));
        po.retries = args.retries;
        po.runner.startup_timeout = measure::Millis(static_cast<std::int64_t>(args.startup_timeout * 1000));
        if (args.cpu >= 0) {
            const auto allowed = measure::allowed_cpus();
            if (std::find(allowed.begin(), allowed.end(), args.cpu) == allowed.end())
                raise<config_error>("--cpu ", args.cpu, ": not a CPU this process may run on");
            po.runner.process.cpu = args.cpu;
        }
        if (args.realtime) {
            std::string why;
            if (measure::realtime_permitted(&why))
                po.runner.process.realtime = true;
            else
                std::cerr << "dnncost: warning: --realtime ignored: " << why << '\n';
        }
        measure::RunnerPool pool(args.runners, po);
        measure::Harness harness(pool, ho, prov);

        // other processes are noise in every measurement of a local device: say so up front
        if (std::ifstream loadavg("/proc/loadavg"); loadavg) {
            double load = 0;
            const auto cpus = std::max(1u, std::thread::hardware_concurrency());
            if (loadavg >> load && load > 0.5 * cpus)
                std::cerr << "dnncost: warning: load average " << load << " on " << cpus
                          << " CPUs: other processes will disturb measurements made on this machine\n";
        }
        const bool tty = ::isatty(STDERR_FILENO) == 1;
        bool device_saved = !new_info.runner_device.empty();
        measure::HarnessEvents ev;
        ev.on_progress = [&](const measure::Progress& p) {
            if (!device_saved && !pool.device().empty()) {  // as soon as the runner has described itself
                new_info.runner_device = pool.device();
                measure::write_store_info(sidecar, new_info);
                device_saved = true;
            }
            if (!tty || p.requests_total == 0) return;
            const double f = static_cast<double>(p.requests_done) / static_cast<double>(p.requests_total);
            const int width = 30, filled = static_cast<int>(f * width);
            const double eta = p.requests_done
                                   ? p.elapsed_seconds * static_cast<double>(p.requests_total - p.requests_done) /
                                         static_cast<double>(p.requests_done)
                                   : std::nan("");
            std::cerr << "\r\033[K[" << std::string(static_cast<std::size_t>(filled), '#')
                      << std::string(static_cast<std::size_t>(width - filled), '.') << "] " << p.requests_done << '/'
                      << p.requests_total << " requests, " << p.networks_done << '/' << p.networks_total
                      << " networks, " << md::duration(p.elapsed_seconds) << " elapsed, ETA " << md::duration(eta)
                      << std::flush;
        };
        ev.on_result = [&](const measure::Network& n, const measure::Record& r) {
            if (tty) std::cerr << "\r\033[K";
            if (r.ok())
                std::cerr << "ok      " << printable(n.id) << "  " << std::setprecision(4) << r.latency_ms
                          << " ms  spread " << md::percent(r.spread) << "  (" << r.rounds << " rounds)\n";
            else
                std::cerr << "FAILED  " << printable(n.id) << "  " << r.status << ": " << printable(r.detail) << '\n';
        };
        const auto summary = harness.run(store, networks, ev);
        if (tty) std::cerr << "\r\033[K" << std::flush;
        for (const auto& w : summary.conditions.warnings) std::cerr << "dnncost: warning: " << w << '\n';
        for (const auto& r : summary.conditions.reasons)
            std::cerr << "dnncost: warning: this run was disturbed: " << r << '\n';
        if (!new_info.host) new_info.host = summary.conditions.host;
        if (summary.conditions.reference) new_info.references.push_back(*summary.conditions.reference);
        {
            std::vector<double> spreads;
            for (const auto& r : summary.results)
                if (r.ok()) spreads.push_back(r.spread);
            const double typical = measure::statistic_of(spreads, measure::Statistic::median);
            if (std::isfinite(typical) && typical > ho.remeasure_spread)
                std::cerr << "dnncost: warning: the median spread of this run's networks is " << md::percent(typical)
                          << ", above the re-measure threshold " << md::percent(ho.remeasure_spread)
                          << ": the device was noisy (see docs/measure.md)\n";
        }
        if (!pool.device().empty()) new_info.runner_device = pool.device();
        measure::write_store_info(sidecar, new_info);

        // the noise check: K networks of this invocation that have a result, chosen with the seed
        std::optional<measure::NoiseReport> noise;
        if (args.noise_check > 0) {
            std::vector<measure::Network> chosen;
            std::vector<double> first;
            std::vector<std::size_t> order(networks.size());
            for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
            Rng rng(args.seed ^ 0x6e6f697365ULL);
            rng.shuffle(order.begin(), order.end());
            for (const auto i : order) {
                if (chosen.size() == args.noise_check) break;
                auto n = networks[i];
                const auto* r = store.result(n.key);
                if (!r || !r->ok() || n.model.empty()) {
                    if (!r || !r->ok()) continue;
                    n.model = tmp.path() / (n.key + ".onnx");  // skipped networks were not exported
                    if (const auto q = spaces::split_qualified(n.id)) {
                        measure::write_model_for_runner(q->space->build_graph(q->arch, space_options), n.model,
                                                        args.seed, q->space->onnx_opset);
                    } else {
                        const auto file = fs::absolute(out).parent_path() / n.id;
                        measure::write_model_for_runner(io::import_onnx(file), n.model, args.seed,
                                                        io::onnx_opset(io::read_file(file)));
                    }
                }
                first.push_back(r->latency_ms);
                chosen.push_back(std::move(n));
            }
            if (chosen.size() < args.noise_check)
                std::cerr << "dnncost: --noise-check " << args.noise_check << ": only " << chosen.size()
                          << " networks have a result to compare with\n";
            if (!chosen.empty()) {
                measure::HarnessEvents nev;
                nev.on_progress = ev.on_progress;
                noise = harness.noise_check(chosen, first, nev);
                if (tty) std::cerr << "\r\033[K" << std::flush;
            }
        }

        const double per_network =
            summary.measured ? summary.seconds / static_cast<double>(summary.measured) : std::nan("");
        if (args.json_out) {
            json j;
            j["measured"] = summary.measured;
            j["skipped"] = summary.skipped;
            j["failed"] = summary.failed;
            j["failed_by_reason"] = summary.failed_by_reason;
            j["duplicates"] = summary.duplicates;
            j["remeasured"] = summary.remeasured;
            j["requests"] = summary.requests;
            j["seconds"] = summary.seconds;
            j["seconds_per_network"] = std::isfinite(per_network) ? json(per_network) : json(nullptr);
            j["out"] = args.out;
            j["device"] = args.device;
            j["runner_device"] = pool.device().empty() ? json(nullptr) : json::parse(pool.device());
            j["settings"] = json::parse(ho.to_json());
            j["host"] = json::parse(measure::json::dump(measure::to_json(summary.conditions.host)));
            j["disturbed"] = summary.conditions.disturbed;
            j["conditions"] = json::parse(measure::json::dump(measure::to_json(summary.conditions)));
            if (noise) {
                json n;
                n["networks"] = noise->networks;
                n["pairs"] = noise->pairs.size();
                n["failed"] = noise->failed;
                n["within_5"] = noise->pairs.empty() ? json(nullptr) : json(noise->within_5.agreement);
                n["within_10"] = noise->pairs.empty() ? json(nullptr) : json(noise->within_10.agreement);
                n["sigma"] = noise->pairs.empty() ? json(nullptr) : json(noise->within_5.sigma);
                n["seconds"] = noise->seconds;
                j["noise_check"] = n;
            }
            print_json(j);
        } else {
            std::cout << "measured " << summary.measured << ", already present " << summary.skipped << ", failed "
                      << summary.failed;
            if (!summary.failed_by_reason.empty()) {
                std::string reasons;
                for (const auto& [reason, n] : summary.failed_by_reason)
                    reasons += (reasons.empty() ? "" : ", ") + reason + " " + std::to_string(n);
                std::cout << " (" << reasons << ")";
            }
            if (summary.duplicates) std::cout << ", " << summary.duplicates << " duplicate(s) of another input";
            std::cout << " in " << std::fixed << std::setprecision(1) << summary.seconds << " s";
            if (std::isfinite(per_network))
                std::cout << " (" << std::setprecision(2) << per_network << " s per network)";
            std::cout << '\n';
            std::cout.unsetf(std::ios::floatfield);
            if (summary.remeasured) std::cout << summary.remeasured << " unstable network(s) got extra rounds\n";
            if (noise) {
                if (noise->pairs.empty())
                    std::cout << "noise check: no network could be re-measured\n";
                else
                    std::cout << "noise check: " << noise->pairs.size()
                              << " networks re-measured from scratch, agreement within ±5% "
                              << md::percent(noise->within_5.agreement) << ", within ±10% "
                              << md::percent(noise->within_10.agreement) << ", sigma "
                              << md::percent(noise->within_5.sigma) << '\n';
            }
            if (const auto& ref = summary.conditions.reference)
                std::cout << "reference network: " << std::setprecision(4) << ref->latency_ms << " ms ("
                          << ref->values_ms.size() << " measurements, drift " << md::percent(ref->drift()) << ")"
                          << (summary.conditions.disturbed ? "; this run was DISTURBED (see the warnings)" : "")
                          << '\n';
            std::cout << "results: " << args.out << " (device '" << args.device << "', description in "
                      << sidecar.string() << ")\n";
        }
        ctx.exit_code = summary.failed > 0 ? 3 : 0;
    });
}

}  // namespace dnncost::cli
