// `dnncost device build|calibrate|residual|info`: kernel-level device models (docs/device_model.md).
// Building and calibrating measure through runners; both resume from their work directory.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <iterator>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "commands.hpp"
#include "common.hpp"
#include "measure_options.hpp"
#include "train_common.hpp"

#include <dnncost/core/robust_statistics.hpp>
#include <dnncost/device/calibration_json.hpp>
#include <dnncost/device/device_build.hpp>
#include <dnncost/device/device_model.hpp>
#include <dnncost/io/file.hpp>
#include <dnncost/io/onnx.hpp>
#include <dnncost/measure/host.hpp>
#include <dnncost/measure/json.hpp>
#include <dnncost/measure/model_file.hpp>
#include <dnncost/measure/store_mix.hpp>

namespace dnncost::cli {

namespace device_detail {
namespace fs = std::filesystem;

struct BuildArgs {
    std::vector<std::string> runners, prior;
    std::string out, work, device = "device", rules, in_context = "auto";
    double budget = 60, network_params = 30;
    std::size_t networks = 40;
    std::size_t per_kind = 60, prior_per_space = 30, adaptive_samples = 300, probe_measurements = 600;
    int adaptive_rounds = 3;
    std::uint64_t seed = 1;
    MeasureFlags flags = kernel_measure_flags();
    bool refit = false, family_regressors = true, roofline_base = true, retake = true;
    std::vector<std::string> regressors;  // candidate kernel regressors; empty: every one
    bool json_out = false;
};

inline json kind_table(const device::DeviceModel& m) {
    json kinds = json::array();
    for (const auto& [kind, km] : m.kinds()) {
        json k{{"kind", kind}, {"samples", km.samples}};
        if (km.regressor) {
            k["regressor"] = km.chosen;
            k["held_out"] = km.held_out;
            k["beyond"] = km.beyond;
            for (const auto& s : km.scores) {
                k["held_out_scores"][s.name] = {{"mape", s.mape}, {"within_10", s.within_10}};
                if (s.beyond_mape) k["held_out_scores"][s.name]["beyond_mape"] = *s.beyond_mape;
            }
        } else if (!km.pooled_into.empty()) {
            k["family_regressor"] = km.pooled_into;
        } else {
            k["priced_as"] = m.nearest_priced_kind(kind);
        }
        kinds.push_back(std::move(k));
    }
    return kinds;
}

inline json boundary_json(const device::SampleBoundaryCost& b) {
    // a bound of a model written before them is unbounded: null
    const auto bound = [](double mb) { return std::isfinite(mb) ? json(mb) : json(nullptr); };
    return {{"ms_per_kernel", b.ms_per_kernel},
            {"ms_per_output_mb", b.ms_per_output_mb},
            {"ms_per_reorder_mb", b.ms_per_reorder_mb},
            {"max_output_mb", bound(b.max_output_mb)},
            {"max_reorder_mb", bound(b.max_reorder_mb)}};
}

/// ", intensity slope -0.06 over 0.9-147 FLOPs/byte", or nothing without the factor.
inline std::string intensity_factor_text(const device::KernelIntensityFactor& z) {
    if (!z.active()) return "";
    std::ostringstream o;
    o << ", intensity slope " << z.slope << " over " << z.low << "-" << z.high << " FLOPs/byte";
    return o.str();
}

/// How the chunks of a measuring step were judged: counted, disturbed at the end, measured again;
/// and the items measured again within their chunks after a slow spell of the host.
inline json disturbance_json(const device::Disturbance& d) {
    return {{"chunks", d.chunks},
            {"disturbed", d.disturbed},
            {"measured_again", d.retaken},
            {"slow_span_retaken", d.slow_span_retaken}};
}

/// The profiled networks of a build: counts, and how each profile was scaled to its latency.
inline json profiling_json(const device::NetworkProfilingResult& p) {
    json nets = json::array();
    std::vector<double> scales;
    for (const auto& n : p.networks) {
        nets.push_back({{"id", n.id},
                        {"latency_ms", n.latency_ms},
                        {"profiled_ms", n.profiled_ms},
                        {"profiler_ms", n.profiler_ms},
                        {"sampled_share", n.sampled_ms / (n.profiled_ms - n.profiler_ms)},
                        {"scale", n.scale},
                        {"samples", n.samples},
                        {"unmapped", n.unmapped},
                        {"merged", n.merged},
                        {"latencies", n.latencies}});
        scales.push_back(n.scale);
    }
    std::sort(scales.begin(), scales.end());
    return {{"used", p.networks.size()},
            {"profiler_cost",
             {{"per_kernel_ms", p.profiler_cost.per_kernel_ms},
              {"factor", p.profiler_cost.factor},
              {"networks", p.profiler_cost.networks}}},
            {"measured", p.measured},
            {"profiled", p.profiled},
            {"reprofiled", p.reprofiled},
            {"latencies_confirmed", p.confirmed},
            {"latencies_disagreed", p.latency_disagreed},
            {"latencies_unconfirmed", p.unconfirmed},
            {"latency_disagreements", p.disagreements},
            {"chunks", disturbance_json(p.disturbance)},
            {"from_store", p.from_store},
            {"failed", p.failed},
            {"without_profile", p.without_profile},
            {"over_budget", p.over_budget},
            {"pass_kernels", p.pass_kernels},
            {"unmapped", p.unmapped},
            {"merged", p.merged},
            {"untimed", p.untimed},
            {"median_scale", scales.empty() ? json(nullptr) : json(scales[scales.size() / 2])},
            {"problems", p.problems},
            {"per_network", nets}};
}

inline void print_kinds(const device::DeviceModel& m) {
    // the widest regressor name ("roofline-gbt-linear") and a space before it
    std::cout << std::left << std::setw(22) << "kind" << std::right << std::setw(8) << "samples" << std::setw(21)
              << "model" << std::setw(11) << "held-out" << std::setw(10) << "±10 %" << std::setw(9) << "beyond" << '\n';
    for (const auto& [kind, km] : m.kinds()) {
        std::cout << std::left << std::setw(22) << kind << std::right << std::setw(8) << km.samples;
        if (!km.regressor) {
            std::cout << (km.pooled_into.empty() ? "  priced as " : "  in the family regressor of ")
                      << (km.pooled_into.empty() ? m.nearest_priced_kind(kind) : km.pooled_into) << '\n';
            continue;
        }
        for (const auto& s : km.scores)
            if (s.name == km.chosen)
                std::cout << std::setw(21) << km.chosen << std::setw(10) << percent(s.mape) << ' ' << std::setw(9)
                          << percent(s.within_10) << std::setw(9) << (s.beyond_mape ? percent(*s.beyond_mape) : "-")
                          << '\n';
    }
    std::cout << "run overhead " << m.run_overhead_ms() << " ms, calibration factor " << m.calibration_factor();
    for (const auto& [f, x] : m.family_factors()) std::cout << ", " << f << " x" << x;
    std::cout << intensity_factor_text(m.intensity_factor()) << " (" << m.calibration_shots() << " shots)\n";
    const auto& b = m.boundary();
    std::cout << "sample boundary: " << b.ms_per_kernel << " ms per kernel, " << b.ms_per_output_mb
              << " ms/MB of output, " << b.ms_per_reorder_mb << " ms/MB reordered";
    if (std::isfinite(b.max_output_mb) || std::isfinite(b.max_reorder_mb))
        std::cout << " (a kernel's bytes counted up to " << b.max_output_mb << " MB of output, " << b.max_reorder_mb
                  << " MB reordered)";
    std::cout << '\n';
    std::cout << "residual: " << (m.residual().trained() ? "trained" : "none") << '\n';
}

/// The networks of data/onnx (or those given): discovery's operators and part of the prior.
inline std::vector<graph::Graph> prior_networks(const std::vector<std::string>& files) {
    std::vector<std::string> paths = files;
    if (paths.empty()) {
        const fs::path dir = fs::path(DNNCOST_DATA_DIR) / "onnx";
        std::error_code ec;
        for (const auto& e : fs::directory_iterator(dir, ec))
            if (e.path().extension() == ".onnx") paths.push_back(e.path().string());
        std::sort(paths.begin(), paths.end());
    }
    std::vector<graph::Graph> out;
    for (const auto& p : paths) out.push_back(io::import_onnx(p));
    return out;
}

/// `device build --refit`: the model fitted again to the measurements a build saved in its work
/// directory, measuring nothing.
inline void run_refit(const BuildArgs& a) {
    const fs::path work = a.work.empty() ? fs::path(a.out + ".work") : fs::path(a.work);
    device::DeviceModelOptions o;
    o.seed = a.seed;
    o.family_regressors = a.family_regressors;
    o.roofline_base = a.roofline_base;
    o.regressors = a.regressors;
    auto m = device::refit_device_model(work, o);
    std::size_t samples = 0;
    for (const auto& [kind, km] : m.kinds()) samples += static_cast<std::size_t>(km.samples);
    json info{{"device", m.rules().device},
              {"refit", "kernel_samples.json"},
              {"samples", samples},
              {"family_regressors", a.family_regressors},
              {"roofline_base", a.roofline_base},
              {"regressors", a.regressors},
              {"host", parse_json(measure::json::dump(measure::to_json(measure::local_host())))}};
    m.set_build_info(json_text(info, -1));
    io::write_file_atomic(a.out, m.serialize());
    if (a.json_out) {
        json j = info;
        j["out"] = a.out;
        j["run_overhead_ms"] = m.run_overhead_ms();
        j["rules_text"] = m.rules().to_text();
        j["kinds"] = kind_table(m);
        return print_json(j);
    }
    std::cout << "device model " << a.out << ": fitted again to " << (work / "kernel_samples.json").string() << '\n';
    print_kinds(m);
}

inline void run_build(const BuildArgs& a) {
    io::check_writable(a.out);
    if (a.refit) return run_refit(a);
    if (a.runners.empty()) raise<config_error>("device build: --runner is required (or --refit, to fit again without measuring)");
    device::DeviceBuildSetup s;
    s.runners = a.runners;
    s.device = a.device;
    s.work_dir = a.work.empty() ? fs::path(a.out + ".work") : fs::path(a.work);
    if (!a.rules.empty()) s.rules = device::FusionRules::parse(io::read_file(a.rules), a.rules);
    s.harness = a.flags.checked_harness();
    s.probe_harness = s.harness;
    s.pool = a.flags.pool();
    s.discovery.max_measurements = a.probe_measurements;
    s.discovery.candidate_patterns =
        device::FusionRules::parse(
            "dnncost-fusion-rules 1\n"
            "pattern LayerNormalization ReduceMean Sub Pow ReduceMean Add Sqrt Div Mul Add\n"
            "pattern Gelu Div Erf Add Mul Mul\n"
            "pattern Swish Sigmoid Mul\n")
            .patterns;
    s.budget_minutes = a.budget;
    s.per_kind = a.per_kind;
    s.prior_per_space = a.prior_per_space;
    s.adaptive_samples = a.adaptive_samples;
    s.adaptive_rounds = a.adaptive_rounds;
    s.seed = a.seed;
    s.model.family_regressors = a.family_regressors;
    s.in_context = device::parse_in_context(a.in_context);
    s.retake_disturbed = a.retake;
    s.networks = a.networks;
    s.network_limits.max_params = static_cast<std::int64_t>(std::llround(a.network_params * 1e6));
    s.model.roofline_base = a.roofline_base;
    s.model.regressors = a.regressors;
    const ProgressLine line;
    double last_line = -1e9;
    s.on_progress = [&](const device::DeviceBuildProgress& p) {
        const auto& q = p.sampling;
        std::ostringstream os;
        os << p.step << ": " << q.done << '/' << q.total << ", elapsed " << duration(p.elapsed_seconds);
        if (std::isfinite(q.eta_seconds)) os << ", step ETA " << duration(q.eta_seconds);
        if (line.tty) {
            std::cerr << "\r\033[K" << os.str() << std::flush;
        } else if (p.elapsed_seconds - last_line >= 30 || q.done == q.total) {
            std::cerr << os.str() << '\n';
            last_line = p.elapsed_seconds;
        }
    };
    auto r = device::build_device_model(prior_networks(a.prior), s);
    line.done();
    for (const auto& e : r.probe_model_errors) std::cerr << "dnncost: warning: rule discovery: " << e << '\n';
    for (const auto& w : r.warnings) std::cerr << "dnncost: warning: " << w << '\n';
    if (!r.in_context_note.empty()) std::cerr << "dnncost: note: " << r.in_context_note << '\n';
    json info{{"device", a.device},
              {"runners", a.runners},
              {"host", parse_json(measure::json::dump(measure::to_json(measure::local_host())))},
              {"budget_minutes", a.budget},
              {"build_seconds", r.seconds},
              {"samples", r.samples},
              {"in_context", r.in_context},
              {"context_samples", r.context_samples},
              {"isolated_samples", r.isolated_samples},
              {"adaptive_rounds", r.adaptive_rounds},
              {"family_regressors", a.family_regressors},
              {"roofline_base", a.roofline_base},
              {"regressors", a.regressors},
              {"rules", r.discovery ? "discovered" : a.rules}};
    if (r.profiling) info["profiled_networks"] = r.profiling->networks.size();
    r.model.set_build_info(json_text(info, -1));
    io::write_file_atomic(a.out, r.model.serialize());
    if (a.json_out) {
        json j = info;
        j["out"] = a.out;
        j["measured"] = r.measured;
        j["over_budget"] = r.over_budget;
        j["failed"] = r.failed;
        j["run_overhead_ms"] = r.model.run_overhead_ms();
        j["rules_text"] = r.model.rules().to_text();
        j["kinds"] = kind_table(r.model);
        j["isolated_kinds"] = r.isolated_kinds;
        j["warnings"] = r.warnings;
        j["single_kernel_chunks"] = disturbance_json(r.kernel_disturbance);
        if (!r.in_context_note.empty()) j["in_context_note"] = r.in_context_note;
        if (r.profiling) j["networks"] = profiling_json(*r.profiling);
        return print_json(j);
    }
    std::cout << "device model " << a.out << ": " << r.samples << " kernel samples";
    if (const auto& p = r.profiling)
        std::cout << ", " << r.context_samples << " in context from " << p->networks.size() << " profiled networks ("
                  << p->measured << " measured now, " << p->reprofiled << " profiled again, " << p->confirmed
                  << " latencies confirmed (" << p->latency_disagreed << " by a third), " << p->over_budget
                  << " over the budget, " << p->failed + p->without_profile << " failed or without a profile; "
                  << p->unmapped << " of " << p->pass_kernels << " kernels unmapped, " << p->merged
                  << " fused with them)";
    std::cout << ", " << r.isolated_samples << " single kernels (" << r.measured << " measured now, " << r.over_budget
              << " over the budget, " << r.failed << " failed), " << r.adaptive_rounds << " adaptive rounds, "
              << duration(r.seconds) << "\n"
              << r.model.rules().to_text();
    print_kinds(r.model);
}

struct CalibrateArgs {
    std::string model, out, work, data;
    std::vector<std::string> runners;
    std::vector<std::string> shots{"10"};  ///< a count of built-in networks, or ONNX files
    MeasureFlags flags;
    bool json_out = false, global_only = false, no_profile = false, no_intensity_slope = false;
};

/// --shots: one count in [1, 100] (built-in calibration networks, or quantiles of --data), or
/// the ONNX files of the user's own networks.
inline std::optional<std::size_t> shot_count(const std::vector<std::string>& shots) {
    if (shots.size() != 1 || shots[0].empty()) return std::nullopt;
    const auto& s = shots[0];
    const bool digits = s.find_first_not_of("0123456789") == std::string::npos;
    // "-1" or "2.5" is a count gone wrong, not the name of a file (unless there is one)
    std::error_code ec;
    const bool number = s.find_first_of("0123456789") != std::string::npos &&
                        s.find_first_not_of("+-.0123456789eE") == std::string::npos && !fs::exists(s, ec);
    if (!digits && !number) return std::nullopt;
    if (!digits || s.size() > 3 || std::stoul(s) < 1 || std::stoul(s) > 100)
        raise<config_error>("device calibrate: --shots ", s, " is not a count in [1, 100]");
    return std::stoul(s);
}

inline void run_calibrate(const CalibrateArgs& a) {
    io::check_writable(a.out);
    auto m = device::DeviceModel::deserialize(io::read_file(a.model), a.model);
    m->set_source(a.model);
    device::DeviceCalibrationSetup s;
    s.runners = a.runners;
    s.work_dir = a.work.empty() ? fs::path(a.out + ".work") : fs::path(a.work);
    s.harness = a.flags.checked_harness();
    s.pool = a.flags.pool();
    s.profile = !a.no_profile && !a.global_only;  // profiles serve the family and intensity factors alone
    const ProgressLine line;
    s.events.on_progress = [&](const measure::Progress& p) {
        if (line.tty) std::cerr << "\r\033[K" << p.networks_done << '/' << p.networks_total << " networks" << std::flush;
    };
    if (a.runners.empty() == a.data.empty())
        raise<config_error>("device calibrate: give --runner (measure the shots here) or --data (networks measured here)");
    const auto count = shot_count(a.shots);
    if (!count && !a.data.empty())
        raise<config_error>("device calibrate: --shots FILE... measures the files with --runner; with --data give a count");
    device::CalibrationOptions options;
    options.per_family = !a.global_only;
    options.intensity_slope = !a.global_only && !a.no_intensity_slope;
    std::optional<train::TrainData> measured;  // keeps the store's graphs alive
    if (!a.data.empty()) {
        const auto ds = train_detail::load(a.data, "", "", {"latency_ms"}, false, true);
        measured = ds.subset(ds.all_items(), "latency_ms");
    }
    std::vector<graph::Graph> networks;
    if (count) {
        if (!measured) networks = device::calibration_networks(*count);
    } else {
        for (const auto& f : a.shots) {
            const auto bytes = [&] {
                try {
                    return io::read_file(f);
                } catch (const io_error& e) {
                    raise<io_error>("device calibrate: --shots: ", e.what());
                }
            }();
            networks.push_back(io::import_onnx_bytes(bytes, f));
            s.opsets.push_back(io::onnx_opset(bytes, f));  // written for the runner at its own opset
        }
    }
    const auto r = measured ? device::calibrate_device_model(*m, *measured, *count, options)
                            : device::calibrate_device_model(*m, networks, s, options);
    line.done();
    io::write_file_atomic(a.out, m->serialize());
    const auto& c = r.report;
    const auto disturbed = r.disturbance.summary();
    if (!disturbed.empty())
        std::cerr << "dnncost: warning: the shots: " << disturbed << "; calibrate again on a quiet machine\n";
    for (const auto& why : r.profile_problems) std::cerr << "dnncost: warning: profiling the shots: " << why << '\n';
    if (a.json_out) return print_json(parse_json(measure::json::dump(device::calibration_json(r, a.model, a.out))));
    for (std::size_t i = 0; i < r.shots.size(); ++i)
        std::cout << r.shots[i] << "\tmeasured " << r.measured_ms[i] << " ms\tpredicted " << r.predicted_ms[i]
                  << " ms\n";
    if (!c.candidates.empty())
        std::cout << "on the shots: the model as given " << c.given_mape << " % MAPE; calibrated, leave-one-out "
                  << c.cv_mape << " %\n";
    if (!c.applied) {
        std::cout << "no calibration beat the model as given: written unchanged to " << a.out << '\n';
        return;
    }
    std::cout << "calibration factor " << r.factor;
    for (const auto& [f, x] : c.family_factors) std::cout << ", " << f << " x" << x;
    std::cout << intensity_factor_text(c.intensity_factor) << " from " << r.shots.size() << " networks";
    if (!c.family_factors.empty())
        std::cout << " (family factors from the " << (c.from_profiles ? "profiled kernels" : "shot latencies") << ")";
    else if (c.profiled_kernels > 0)
        std::cout << " and " << c.profiled_kernels << " profiled kernels";
    std::cout << "; written to " << a.out << '\n';
}

struct ResidualArgs {
    std::string model, out;
    std::vector<std::string> data;
    double validation = 0.2;
    int epochs = 300, patience = 30;
    std::uint64_t seed = 1;
    bool no_boundary = false, no_residual = false;
    std::string boundary_scale = "one";
    bool json_out = false;
};

/// How far the model's median price of the networks `device residual` is given may stray from
/// their measured time, as a factor either way, before it says the two were measured apart: a
/// build on a quiet machine prices the spaces' networks within a few per cent of it.
constexpr double agreement_bound = 1.25;

/// Fits the model to networks measured on its device (results stores of `dnncost measure`): the
/// sample-boundary rates and scale, then the residual; a seeded share of the networks held out
/// to judge the rates and stop the residual's training.
inline void run_residual(const ResidualArgs& a) {
    io::check_writable(a.out);
    auto m = device::DeviceModel::deserialize(io::read_file(a.model), a.model);
    std::vector<train::TrainData> parts;  // keep the graphs the stores' rows were built into alive
    train::TrainData tr, va;
    Rng rng(a.seed);
    for (const auto& path : a.data) {
        const auto ds = train_detail::load(path, "", "", {"latency_ms"}, false, true);
        const auto items = ds.all_items();
        parts.push_back(ds.subset(items, "latency_ms"));
        const auto& t = parts.back();
        for (std::size_t i = 0; i < t.size(); ++i) {
            auto& d = rng.uniform() < a.validation ? va : tr;
            d.graphs.push_back(t.graphs[i]);
            d.targets.push_back(t.targets[i]);
        }
        std::cerr << "dnncost: " << t.size() << " networks from " << path << '\n';
    }
    if (tr.graphs.empty()) raise<config_error>("device residual: no measured networks to train on");
    // stores from other hosts, or measured while the reference network ran at another speed, are
    // not comparable as they stand: a run slow throughout shows only against another run
    json store_warnings = json::array();
    for (const auto& f : measure::check_mix(std::vector<fs::path>(a.data.begin(), a.data.end()))) {
        std::cerr << "dnncost: warning: " << f.message << '\n';
        store_warnings.push_back(f.message);
    }
    // with neither part, fit() fits nothing and removes what an earlier fit added: the kernel sum
    m->set_fit_parts(!a.no_boundary, !a.no_residual);
    m->set_boundary_scale(a.boundary_scale == "one"    ? device::BoundaryScale::one
                          : a.boundary_scale == "free" ? device::BoundaryScale::free
                                                       : device::BoundaryScale::alone);
    device::KernelResidualOptions o;
    o.max_epochs = a.epochs;
    o.patience = a.patience;
    o.seed = a.seed;
    m->set_residual_options(o);
    estimators::FitOptions fo;
    fo.seed = a.seed;
    const ProgressLine line;
    fo.on_epoch = [&](const std::string& l) {
        if (line.tty) std::cerr << "\r\033[K" << l << std::flush;
        return false;
    };
    const auto before_v = va.graphs.empty() ? std::vector<double>{} : m->predict_mean(va.graphs);
    // A model that prices every network given at about one factor of its time was built, or the
    // networks were measured, while the machine ran at another speed (or on another machine): the
    // boundary's rates are no place for such a factor, and a residual would learn it.
    // Store by store too: a slow stretch of the build that took in the kernels of one space's
    // networks leaves the median over all stores near 1 and that space's far from it.
    std::vector<double> ratios;
    json per_store = json::object();
    for (std::size_t k = 0; k < parts.size(); ++k) {
        const auto priced = m->predict_mean(parts[k].graphs);
        std::vector<double> own;
        for (std::size_t i = 0; i < priced.size(); ++i) own.push_back(priced[i] / parts[k].targets[i]);
        if (own.empty()) continue;
        ratios.insert(ratios.end(), own.begin(), own.end());
        const double r = median(own);
        per_store[a.data[k]] = r;
        if (parts.size() > 1 && !(r >= 1 / agreement_bound && r <= agreement_bound))
            std::cerr << "dnncost: warning: the model prices the networks of " << a.data[k] << " at a median " << r
                      << " times their measured time, unlike the other stores': the build may have measured "
                         "kernels like theirs while the machine ran at another speed. Build again on a quiet "
                         "machine, or measure them again\n";
    }
    const double median_ratio = median(ratios);
    if (!(median_ratio >= 1 / agreement_bound && median_ratio <= agreement_bound))
        std::cerr << "dnncost: warning: the model prices the networks of --data at a median " << median_ratio
                  << " times their measured time: they, or the build's own networks, were measured while the "
                     "machine ran at another speed (or on another machine). Measure them again, or build again, on a "
                     "quiet machine; `device calibrate` fits a factor, if one is what the model needs\n";
    const auto r = m->fit(tr, va, fo);
    line.done();
    io::write_file_atomic(a.out, m->serialize());
    const auto after_v = va.graphs.empty() ? std::vector<double>{} : m->predict_mean(va.graphs);
    json j{{"model", a.model},
           {"out", a.out},
           {"train", tr.graphs.size()},
           {"validation", va.graphs.size()},
           {"epochs", r.epochs},
           {"summary", r.summary},
           {"kept", m->residual().trained() ? "trained residual" : "zero residual (the kernel sum)"},
           {"calibration_factor", m->calibration_factor()},
           {"median_ratio_before", median_ratio},
           {"median_ratio_per_store", per_store},
           {"store_warnings", store_warnings},
           {"sample_boundary", boundary_json(m->boundary())}};
    if (const auto& bf = m->boundary_fit())
        j["sample_boundary_fit"] = {{"fitted", boundary_json(bf->fit.cost)},
                                    {"log_spread_without", bf->spread_without},
                                    {"log_spread_with", bf->spread_with},
                                    {"kept", bf->kept}};
    if (!va.graphs.empty()) {
        j["validation_mape_before"] = train::mape(before_v, va.targets);
        j["validation_mape_after"] = train::mape(after_v, va.targets);
        j["validation_within_10_before"] = train::error_bound_accuracy(before_v, va.targets, 0.10);
        j["validation_within_10_after"] = train::error_bound_accuracy(after_v, va.targets, 0.10);
    }
    if (a.json_out) return print_json(j);
    print_json(j);
}

/// `device networks`: the networks a build profiles or a calibration measures, as ONNX files, so
/// that they can be inspected, measured on their own, or judged against.
inline void add_device_networks(Command& device, Context& ctx) {
    struct Args {
        std::string kind = "calibration", out;
        std::size_t count = 10;
        std::uint64_t seed = 0;
        bool json_out = false;
    };
    auto a = std::make_shared<Args>();
    auto* cmd = device.add_subcommand(
        "networks", "Write the networks device calibrate measures (or device build profiles) as ONNX files");
    cmd->add_option("--kind", a->kind,
                    "calibration (the shots of device calibrate) or context (the whole networks device build profiles)")
        ->check(check::member({"calibration", "context"}))
        ->capture_default_str();
    cmd->add_option("--count", a->count, "How many")
        ->transform(check::integer(1, 1000, "a count in [1, 1000]"))
        ->capture_default_str();
    auto* seed =
        cmd->add_option("--seed", a->seed, "Seed of the draw (default: the one device calibrate or device build uses)")
            ->transform(check::seed());
    cmd->add_option("--out", a->out, "Directory to write NNN.onnx and networks.tsv (file, name) into")->required();
    add_json_flag(*cmd, a->json_out);
    cmd->callback([a, seed, &ctx] {
        // without --seed, the draws of the commands themselves (their default seeds)
        const bool seeded = seed->count() > 0;
        const auto nets =
            a->kind == "calibration"
                ? (seeded ? device::calibration_networks(a->count, a->seed) : device::calibration_networks(a->count))
                : (seeded ? device::context_networks(a->count, a->seed) : device::context_networks(a->count));
        std::error_code ec;
        fs::create_directories(a->out, ec);
        if (!fs::is_directory(a->out)) raise<io_error>("device networks: cannot create the directory '", a->out, "'");
        std::string table;
        json list = json::array();
        for (std::size_t i = 0; i < nets.size(); ++i) {
            std::ostringstream file;
            file << std::setw(3) << std::setfill('0') << i << ".onnx";
            const auto path = fs::path(a->out) / file.str();
            measure::write_model_for_runner(nets[i], path, 1, device::spaces_opset());
            table += file.str() + "\t" + nets[i].name() + "\n";
            list.push_back({{"file", path.string()}, {"name", nets[i].name()}});
        }
        io::write_file_atomic(fs::path(a->out) / "networks.tsv", table);
        if (a->json_out)
            print_json(json{{"networks", list}});
        else
            std::cout << "wrote " << nets.size() << " networks and networks.tsv to " << a->out << '\n';
        ctx.exit_code = 0;
    });
}

inline void add_device_build(Command& device, Context& ctx) {
    auto b = std::make_shared<BuildArgs>();
    auto* build = device.add_subcommand(
        "build", "Discover fusion rules, profile whole networks and measure kernels, fit a device model");
    add_runner_option(*build, b->runners, true);
    build->add_option("--out", b->out, "Device model file to write (.dnnc)")->required()->check(check::output_path());
    build->add_option("--budget", b->budget, "Minutes of measuring for the whole build (0: no limit)")
        ->check(check::finite(check::Sign::non_negative))
        ->capture_default_str();
    build->add_option("--device", b->device, "The device's name, kept in the model and its stores")->capture_default_str();
    build->add_option("--work", b->work, "Stores and model files of the build (resumable); default OUT.work");
    build->add_option("--rules", b->rules, "Fusion rules file to use instead of discovering them");
    build->add_option("--prior", b->prior, "ONNX networks for the rules and the sampling prior; default data/onnx");
    // counts range-checked: an unsigned option would take -1 as 2^64 - 1 and draw without end
    build->add_option("--per-kind", b->per_kind, "Samples per kernel kind in the first draw")
        ->transform(check::integer(0, 100000, "a sample count in [0, 10^5]"))
        ->capture_default_str();
    build->add_option("--prior-networks", b->prior_per_space, "Networks of each search space in the prior")
        ->transform(check::integer(0, 100000, "a network count in [0, 10^5]"))
        ->capture_default_str();
    build->add_option("--adaptive-samples", b->adaptive_samples, "Samples per adaptive round")
        ->transform(check::integer(0, 100000, "a sample count in [0, 10^5]"))
        ->capture_default_str();
    build->add_option("--adaptive-rounds", b->adaptive_rounds, "Most adaptive rounds")
        ->transform(check::integer(0, 1000, "a round count in [0, 1000]"))
        ->capture_default_str();
    build->add_option("--probe-measurements", b->probe_measurements, "Budget of the rule discovery, in measurements")
        ->transform(check::integer(0, 1000000, "a measurement count in [0, 10^6]"))
        ->capture_default_str();
    build->add_option("--in-context", b->in_context,
                      "Kernel samples from profiled whole networks, each kernel timed among its neighbours (single "
                      "kernels only for the kinds they miss): auto (when the runner profiles), on (a runner that "
                      "cannot profile is an error) or off (single kernels only)")
        ->check(check::member({"auto", "on", "off"}))
        ->capture_default_str();
    build->add_option("--networks", b->networks,
                      "Whole networks to profile: synthesised ones and search-space networks at real sizes")
        ->transform(check::integer(1, 100000, "a count in [1, 100000]"))
        ->capture_default_str();
    build->add_option("--network-params", b->network_params,
                      "Most weights of a profiled network, in millions (a larger draw is narrowed)")
        ->check(check::in_range(1e-3, 1e4, "millions of weights in [0.001, 10000]"))
        ->capture_default_str();
    build->add_option("--seed", b->seed, "Seed of the draws and the fits")
        ->transform(check::seed())
        ->capture_default_str();
    build->add_flag("!--no-retake", b->retake,
                    "Keep the chunks measured while the machine was disturbed as they are, rather than measuring "
                    "them again at the end (twice at most) while the budget lasts (a warning names them either way)");
    build->add_flag("!--per-kind-regressors", b->family_regressors,
                    "One regressor per kernel kind, rather than one per family (Conv with its fused kinds, ...) with "
                    "the fusions as features");
    build->add_flag("!--no-roofline-base", b->roofline_base,
                    "Kernel regressors alone, without the roofline base fitted per family that keeps a kernel "
                    "larger than every sample growing with its work (trees then price it as the largest sample)");
    build->add_option("--regressors", b->regressors,
                      "Candidate kernel regressors each kind chooses among by held-out MAPE: mlp, gbt, gbt-linear (the "
                      "trees need XGBoost); default every one. Fewer fit faster");
    build->add_flag("--refit", b->refit,
                    "Fit the model again to the measurements in the work directory (kernel_samples.json), measuring "
                    "nothing; no --runner needed");
    b->flags.add_to(*build, {});
    add_json_flag(*build, b->json_out);
    build->callback([b, &ctx] {
        run_build(*b);
        ctx.exit_code = 0;
    });
}

inline void add_device_calibrate(Command& device, Context& ctx) {
    auto c = std::make_shared<CalibrateArgs>();
    auto* cal = device.add_subcommand("calibrate", "Measure a few networks here and fit the model's calibration factor");
    cal->add_option("--model", c->model, "Device model (.dnnc)")->required();
    add_runner_option(*cal, c->runners, true);
    cal->add_option("--data", c->data,
                    "Instead of --runner: a results store of networks measured on this machine; the shots are taken "
                    "at evenly spaced quantiles of their latency");
    cal->add_option("--out", c->out, "Calibrated model to write")->required()->check(check::output_path());
    cal->add_option("--shots", c->shots,
                    "How many built-in networks to measure (a count in [1, 100]), or the ONNX files of your own "
                    "networks")
        ->expected(1, -1)
        ->capture_default_str();
    cal->add_flag("--global-only", c->global_only,
                  "One factor for every kernel (default: a factor per kernel family, or one that moves with the "
                  "kernel's arithmetic intensity, as well, when leave-one-out over the shots says it helps)");
    cal->add_flag("--no-intensity-slope", c->no_intensity_slope,
                  "No factor that moves with the kernel's FLOPs per byte among the candidates");
    cal->add_option("--work", c->work, "Store and model files of the shots (resumable); default OUT.work");
    cal->add_flag("--no-profile", c->no_profile,
                  "Measure the shots without profiling them: family and intensity factors from their latencies "
                  "alone (default: from their kernels as well, when the runner profiles)");
    c->flags.add_to(*cal, {});
    add_json_flag(*cal, c->json_out);
    cal->callback([c, &ctx] {
        run_calibrate(*c);
        ctx.exit_code = 0;
    });
}

inline void add_device_residual(Command& device, Context& ctx) {
    auto ra = std::make_shared<ResidualArgs>();
    auto* res = device.add_subcommand("residual",
                                      "Fit the model to networks measured on its device: sample-boundary rates, then "
                                      "the graph-level residual");
    res->add_option("--model", ra->model, "Device model (.dnnc)")->required();
    res->add_option("--data", ra->data, "Results stores of `dnncost measure` on the model's device (one or more)")
        ->required();
    res->add_option("--out", ra->out, "Model with the residual, to write")->required()->check(check::output_path());
    res->add_option("--validation", ra->validation, "Share of the networks held out for early stopping")
        ->check(check::in_range(0, 0.9, "a share in [0, 0.9]"))
        ->capture_default_str();
    res->add_option("--epochs", ra->epochs, "Most epochs")->capture_default_str();
    res->add_option("--patience", ra->patience, "Early-stopping patience in epochs")->capture_default_str();
    res->add_option("--seed", ra->seed, "Seed of the split and the initial weights")
        ->transform(check::seed())
        ->capture_default_str();
    res->add_flag("--no-boundary", ra->no_boundary,
                  "Fit no sample-boundary rates (nor their scale); with --no-residual, write the kernel sum: the model "
                  "as built, any earlier rates, scale, residual and calibration removed");
    res->add_flag("--no-residual", ra->no_residual, "Train no residual: the rates (and scale) alone");
    res->add_option("--boundary-scale", ra->boundary_scale,
                    "one: no scale, the rates alone bring the networks to their latency; free: a scale fitted "
                    "with the rates, which becomes the calibration factor; alone: that scale and no rates, the kernel "
                    "sum's shape kept (docs/device_model.md compares it with the rates)")
        ->check(check::member({"free", "one", "alone"}))
        ->capture_default_str();
    add_json_flag(*res, ra->json_out);
    res->callback([ra, &ctx] {
        run_residual(*ra);
        ctx.exit_code = 0;
    });
}

inline void run_info(const std::string& path, bool json_out) {
    const auto m = device::DeviceModel::deserialize(io::read_file(path), path);
    if (!json_out) {
        std::cout << m->rules().to_text();
        return print_kinds(*m);
    }
    print_json(
        {{"model", path},
         {"build", parse_json(m->build_info().empty() ? "{}" : m->build_info(), false)},
         {"rules_text", m->rules().to_text()},
         {"run_overhead_ms", m->run_overhead_ms()},
         {"calibration_factor", m->calibration_factor()},
         {"calibration_shots", m->calibration_shots()},
         {"family_factors", m->family_factors()},
         {"intensity_factor", parse_json(measure::json::dump(device::intensity_factor_json(m->intensity_factor())))},
         {"sample_boundary", boundary_json(m->boundary())},
         {"residual", m->residual().trained()},
         {"kinds", kind_table(*m)}});
}

/// `device rules`: the model priced under other fusion rules, its regressors kept.
struct RulesArgs {
    std::string model, rules, out;
    bool json_out = false;
};

inline void run_rules(const RulesArgs& a) {
    io::check_writable(a.out);
    auto m = device::DeviceModel::deserialize(io::read_file(a.model), a.model);
    auto rules = device::FusionRules::parse(io::read_file(a.rules), a.rules);
    if (rules.device.empty()) rules.device = m->rules().device;  // a file without a device line is the model's
    // the directives each side has that the other has not (comments are not kept in a model); an
    // execute line is a set of operators, so each counts apart and their order does not
    const auto lines = [](const device::FusionRules& r) {
        std::vector<std::string> out;
        std::istringstream in(r.to_text());
        for (std::string l; std::getline(in, l);) {
            if (!l.starts_with("execute ")) {
                out.push_back(l);
                continue;
            }
            std::istringstream ops(l.substr(8));
            for (std::string op; ops >> op;) out.push_back("execute " + op);
        }
        std::sort(out.begin(), out.end());
        out.erase(std::unique(out.begin(), out.end()), out.end());
        return out;
    };
    const auto before = lines(m->rules()), after = lines(rules);
    std::vector<std::string> added, removed;
    std::set_difference(after.begin(), after.end(), before.begin(), before.end(), std::back_inserter(added));
    std::set_difference(before.begin(), before.end(), after.begin(), after.end(), std::back_inserter(removed));
    m->replace_rules(rules);
    // the build's record (a JSON object) says the rules were replaced, and from which file
    auto info = json::parse(m->build_info(), nullptr, false);
    if (!info.is_object()) info = json::object();
    info["rules_replaced_from"] = fs::path(a.rules).filename().string();
    m->set_build_info(info.dump());
    io::write_file_atomic(a.out, m->serialize());
    if (a.json_out)
        return print_json(
            {{"model", a.model}, {"rules", a.rules}, {"out", a.out}, {"added", added}, {"removed", removed}});
    for (const auto& l : added) std::cout << "+ " << l << '\n';
    for (const auto& l : removed) std::cout << "- " << l << '\n';
    std::cout << (added.empty() && removed.empty() ? "the same rules" : "rules replaced") << "; written to " << a.out
              << '\n';
}

inline void add_device_rules(Command& device, Context& ctx) {
    auto r = std::make_shared<RulesArgs>();
    auto* c = device.add_subcommand("rules",
                                    "A device model priced under other fusion rules (a rule file `device check` "
                                    "pointed at), its regressors, overhead and calibration kept");
    c->add_option("--model", r->model, "Device model (.dnnc)")->required();
    c->add_option("--rules", r->rules, "Fusion rules file (docs/device_model.md, \"The rule format\")")->required();
    c->add_option("--out", r->out, "Where to write the model")->required();
    add_json_flag(*c, r->json_out);
    c->callback([r, &ctx] {
        run_rules(*r);
        ctx.exit_code = 0;
    });
}

}  // namespace device_detail

void add_device_commands(Command& app, Context& ctx) {
    namespace dd = device_detail;
    auto* device = app.add_subcommand("device", "Kernel-level device models: build one by measuring, calibrate, inspect");
    device->require_subcommand(1);
    dd::add_device_build(*device, ctx);
    dd::add_device_calibrate(*device, ctx);
    dd::add_device_residual(*device, ctx);
    add_device_check_command(*device, ctx);
    add_device_extrapolate_command(*device, ctx);
    dd::add_device_networks(*device, ctx);
    dd::add_device_rules(*device, ctx);
    auto model = std::make_shared<std::string>();
    auto info_json = std::make_shared<bool>(false);
    auto* info = device->add_subcommand("info", "The rules, kernel kinds and held-out accuracy of a device model");
    info->add_option("--model", *model, "Device model (.dnnc)")->required();
    add_json_flag(*info, *info_json);
    info->callback([model, info_json, &ctx] {
        dd::run_info(*model, *info_json);
        ctx.exit_code = 0;
    });
}

}  // namespace dnncost::cli
