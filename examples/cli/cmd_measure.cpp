// `dnncost measure`: measure networks on a device through runners (docs/measure.md), into a
// resumable results store; the campaign itself is measure/campaign.hpp.
//
// Exit status: 0 when every network was measured or already present; 3 when the run completed
// but some networks failed (each is in the store with its reason); 1 on an error (bad option
// or input, a runner command that cannot be started, an unwritable store); CLI11's own codes
// for malformed command lines.
#include <cmath>
#include <iomanip>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "commands.hpp"
#include "common.hpp"
#include "measure_options.hpp"

#include <dnncost/measure/campaign.hpp>
#include <dnncost/spaces/registry.hpp>

namespace dnncost::cli {

namespace measure_detail {

struct MeasureArgs {
    std::vector<std::string> runners, models;
    std::string device, space, space_options, archs, out;
    std::size_t sample = 0, noise_check = 0;
    std::uint64_t seed = 0;
    MeasureFlags flags;
    double startup_timeout = 10;
    int cpu = -1;
    bool json_out = false, realtime = false, allow_other_host = false, profile = false;
};

/// The progress bar and the line per network, on stderr.
inline measure::CampaignEvents campaign_events(const ProgressLine& line) {
    measure::CampaignEvents ev;
    ev.harness.on_progress = [line](const measure::Progress& p) {
        if (!line.tty || p.requests_total == 0) return;
        const double f = static_cast<double>(p.requests_done) / static_cast<double>(p.requests_total);
        const int width = 30, filled = static_cast<int>(f * width);
        const double eta = p.requests_done ? p.elapsed_seconds * static_cast<double>(p.requests_total - p.requests_done) /
                                                 static_cast<double>(p.requests_done)
                                           : std::nan("");
        std::cerr << "\r\033[K[" << std::string(static_cast<std::size_t>(filled), '#')
                  << std::string(static_cast<std::size_t>(width - filled), '.') << "] " << p.requests_done << '/'
                  << p.requests_total << " requests, " << p.networks_done << '/' << p.networks_total << " networks, "
                  << duration(p.elapsed_seconds) << " elapsed, ETA " << duration(eta) << std::flush;
    };
    ev.harness.on_result = [line](const measure::Network& n, const measure::Record& r) {
        line.clear();
        if (r.ok())
            std::cerr << "ok      " << printable(n.id) << "  " << std::setprecision(4) << r.latency_ms << " ms  spread "
                      << percent(r.spread) << "  (" << r.rounds << " rounds)\n";
        else
            std::cerr << "FAILED  " << printable(n.id) << "  " << to_string(r.status) << ": " << printable(r.detail) << '\n';
    };
    ev.on_warning = [line](const std::string& m) {
        line.clear();
        std::cerr << "dnncost: " << m << '\n';
    };
    return ev;
}

inline void print_report(const MeasureArgs& a, const measure::CampaignReport& rep) {
    const auto& s = rep.summary;
    std::cout << "measured " << s.measured << ", already present " << s.skipped << ", failed " << s.failed;
    if (!s.failed_by_reason.empty()) {
        std::string reasons;
        for (const auto& [reason, n] : s.failed_by_reason)
            reasons += (reasons.empty() ? "" : ", ") + reason + " " + std::to_string(n);
        std::cout << " (" << reasons << ")";
    }
    if (s.duplicates) std::cout << ", " << s.duplicates << " duplicate(s) of another input";
    std::cout << " in " << std::fixed << std::setprecision(1) << s.seconds << " s";
    if (std::isfinite(rep.seconds_per_network))
        std::cout << " (" << std::setprecision(2) << rep.seconds_per_network << " s per network)";
    std::cout << '\n';
    std::cout.unsetf(std::ios::floatfield);
    if (s.remeasured) std::cout << s.remeasured << " unstable network(s) got extra rounds\n";
    if (a.profile)
        std::cout << "kernels of " << rep.profiled << " network(s) written to "
                  << measure::kernel_profiles_path(a.out).string()
                  << (rep.profile_failed ? ", " + std::to_string(rep.profile_failed) + " without a profile" : "") << '\n';
    if (const auto& noise = rep.noise) {
        if (noise->pairs.empty())
            std::cout << "noise check: no network could be re-measured\n";
        else
            std::cout << "noise check: " << noise->pairs.size()
                      << " networks re-measured from scratch, agreement within ±5% " << percent(noise->within_5.agreement)
                      << ", within ±10% " << percent(noise->within_10.agreement) << ", sigma "
                      << percent(noise->within_5.sigma) << '\n';
    }
    if (const auto& ref = s.conditions.reference)
        std::cout << "reference network: " << std::setprecision(4) << ref->latency_ms << " ms ("
                  << ref->values_ms.size() << " measurements, drift " << percent(ref->drift()) << ")"
                  << (s.conditions.disturbed ? "; this run was DISTURBED (see the warnings)" : "") << '\n';
    std::cout << "results: " << a.out << " (device '" << a.device << "', description in " << rep.sidecar.string()
              << ")\n";
}
}  // namespace measure_detail

void add_measure_commands(Command& app, Context& ctx) {
    namespace md = measure_detail;
    auto a = std::make_shared<md::MeasureArgs>();
    auto* cmd =
        app.add_subcommand("measure", "Measure networks on a device through runners, into a resumable results store");
    add_runner_option(*cmd, a->runners, true)->required();
    cmd->add_option("--device", a->device,
                    "Device name stored with the results (one results file per device and runner)")
        ->required();
    auto* space_opt =
        add_search_space_options(*cmd, a->space, a->space_options, "Search space of --sample and of the strings in --archs");
    auto* sample_opt = add_sample_options(*cmd, a->sample, a->seed, "Seed of --sample, of the model weights and of the noise check's choice");
    auto* archs_opt = cmd->add_option("--archs", a->archs,
                                      "File of architecture strings, one per line (of --space, or network names: "
                                      "SPACE:ARCH[@KEY=VALUE...], cnn:..., transformer:...)");
    cmd->add_option("networks", a->models, "ONNX networks to measure");
    cmd->add_option("--out", a->out,
                    "Results store (CSV; the device description goes beside it: results.csv -> results.device.json)")
        ->required()
        ->check(check::output_path());
    a->flags.add_to(*cmd, {});
    cmd->add_option("--startup-timeout", a->startup_timeout, "Seconds to wait for a runner's device line at start")
        ->check(check::finite(check::Sign::non_negative))
        ->capture_default_str();
    cmd->add_option("--noise-check", a->noise_check,
                    "Re-measure K of the networks from scratch at the end and report the agreement")
        ->transform(check::integer(0, 15625, "a network count in [0, 15625]"));
    cmd->add_flag("--force", a->flags.harness.force, "Measure again networks the store already has");
    cmd->add_option("--cpu", a->cpu, "Pin the runners to this CPU (sched_setaffinity; no privilege needed)")
        ->transform(check::integer(0, 1023, "a CPU number in [0, 1023]"));
    cmd->add_flag("--realtime", a->realtime,
                  "Run the runners under SCHED_FIFO (needs root or CAP_SYS_NICE; a warning otherwise)");
    cmd->add_flag("--allow-other-host", a->allow_other_host,
                  "Append to a store measured on another host, or whose reference network differs beyond the noise");
    cmd->add_flag("--profile", a->profile,
                  "After the rounds, profile each network measured once more and write the runtime's kernels beside "
                  "the store (results.csv -> results.kernels.jsonl)");
    add_json_flag(*cmd, a->json_out, "Print the summary as one JSON document");
    cmd->callback([a, space_opt, sample_opt, archs_opt, &ctx] {
        auto& args = *a;
        const int sources = (sample_opt->count() > 0) + (archs_opt->count() > 0) + !args.models.empty();
        if (sources != 1 || (space_opt->count() > 0 && !args.models.empty()))
            raise<config_error>("name the networks one way: --space NAME --sample N, --archs FILE, or ONNX files");
        if (sample_opt->count() > 0 && space_opt->count() == 0) raise<config_error>("--sample needs --space NAME");
        measure::NetworkSource source{args.space, args.sample, args.archs, args.models,
                                      spaces::space_options(args.space_options), {}};
        if (space_opt->count() > 0) spaces::check_space_options(spaces::find_space(args.space), source.space_options);
        if (args.startup_timeout > 3600)
            raise<config_error>("--startup-timeout ", args.startup_timeout, " is more than an hour");
        measure::CampaignOptions o;
        o.runners = args.runners;
        o.device = args.device;
        o.out = args.out;
        o.harness = args.flags.checked_harness();
        o.timeout_seconds = args.flags.timeout;
        o.startup_timeout_seconds = args.startup_timeout;
        o.retries = args.flags.retries;
        o.noise_check = args.noise_check;
        o.seed = args.seed;
        if (args.cpu >= 0) o.cpu = args.cpu;
        o.realtime = args.realtime;
        o.allow_other_host = args.allow_other_host;
        o.profile = args.profile;
        const ProgressLine line;
        const auto rep = measure::run_campaign(source, o, md::campaign_events(line));
        line.done();
        if (args.json_out)
            print_json(parse_json(measure::json::dump(measure::report_json(rep, o))));
        else
            md::print_report(args, rep);
        ctx.exit_code = rep.summary.failed > 0 ? 3 : 0;
    });
}

}  // namespace dnncost::cli
