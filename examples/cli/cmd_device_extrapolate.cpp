// `dnncost device extrapolate`: kernels several times larger (in FLOPs) than every sample of a
// device model's build, measured with the runner as the build measured its samples and priced by
// one or more models (docs/device_model.md, "Beyond the samples").
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "commands.hpp"
#include "common.hpp"
#include "measure_options.hpp"

#include <dnncost/device/device_build.hpp>
#include <dnncost/device/device_model.hpp>
#include <dnncost/device/kernel_features.hpp>
#include <dnncost/device/kernel_graph.hpp>
#include <dnncost/device/kernel_sample_file.hpp>
#include <dnncost/device/kernel_sampler.hpp>
#include <dnncost/device/kernel_sampling.hpp>
#include <dnncost/graph/hash.hpp>
#include <dnncost/io/file.hpp>
#include <dnncost/train/metrics.hpp>

namespace dnncost::cli {

namespace device_extrapolate_detail {
namespace fs = std::filesystem;

struct Args {
    std::vector<std::string> models, runners;
    std::string samples, work, kernels;
    double factor = 4;
    std::size_t per_kind = 2;
    double max_elements = 256e6;
    std::uint64_t seed = 1;
    bool plan = false, json_out = false, isolated = false;
    MeasureFlags flags = kernel_measure_flags();
};

/// Families whose kernels a configuration can be scaled up along (rows, tokens or pixels) with the
/// work growing in proportion.
inline bool scalable(std::string_view family) {
    return family == "Conv" || family == "DepthwiseConv" || family == "Gemm" || family == "MatMul";
}
inline std::string family_of(const std::string& kind) { return kind.substr(0, kind.find('+')); }

inline double feature(const std::vector<double>& f, std::string_view name) {
    const auto& names = device::kernel_feature_names();
    const auto it = std::find(names.begin(), names.end(), name);
    if (it == names.end()) raise<config_error>("device extrapolate: no kernel feature '", name, "'");
    return f[static_cast<std::size_t>(it - names.begin())];
}
/// A count back from its log2(1 + x) feature.
inline std::int64_t count_of(double v) { return std::llround(std::exp2(v) - 1); }

/// The kernel of `c`'s graph under `rules` (reorders aside) with its features, or nullopt unless
/// there is exactly one of kind c.kind.
inline std::optional<device::KernelFeatures> one_kernel(const device::KernelConfig& c, const device::FusionRules& rules,
                                                        double* flops = nullptr, double* elements = nullptr) {
    try {
        const auto g = device::kernel_sample_graph(c);
        const auto kg = device::kernel_graph(g, rules);
        std::optional<device::KernelFeatures> out;
        for (std::size_t k = 0; k < kg.kernels.size(); ++k) {
            if (kg.kernels[k].is_reorder()) continue;
            if (out) return std::nullopt;
            out = device::kernel_features(g, kg, k, rules.layout.block);
            if (flops) *flops = static_cast<double>(kg.kernels[k].cost.flops);
            if (elements)
                *elements = static_cast<double>(std::max(kg.kernels[k].cost.input_bytes, kg.kernels[k].cost.output_bytes)) / 4;
        }
        if (!out || out->kind.key != c.kind) return std::nullopt;
        return out;
    } catch (const error&) {
        return std::nullopt;
    }
}

/// Whether a rebuilt kernel's features are the sample's. A configuration does not say whether a
/// convolution has a bias (a folded BatchNorm leaves one, an exporter may not), so the features
/// its parameters move (weights, FLOPs, intensity) may differ by that much; every other one is exact.
inline bool same_kernel(const std::vector<double>& rebuilt, const std::vector<double>& sample) {
    const auto& names = device::kernel_feature_names();
    if (rebuilt.size() != sample.size()) return false;
    for (std::size_t i = 0; i < sample.size(); ++i) {
        const bool bias_moves = names[i] == "log_weight_bytes" || names[i] == "log_params" || names[i] == "log_flops" ||
                                names[i] == "log_intensity";
        // log2 values: a bias is at most one value per weight row, a depthwise filter's 1 in 10
        if (bias_moves ? std::abs(rebuilt[i] - sample[i]) > 0.2 : rebuilt[i] != sample[i]) return false;
    }
    return true;
}

/// The configuration of a sample of `kind`, rebuilt from its features (dimensions, window,
/// groups, fusions); nullopt unless the rebuilt kernel has the sample's features (same_kernel).
inline std::optional<device::KernelConfig> config_of(const std::string& kind, const std::vector<double>& f,
                                                     const device::FusionRules& rules) {
    device::KernelConfig c;
    c.kind = kind;
    c.n = count_of(feature(f, "log_batch"));
    c.c = count_of(feature(f, "log_in_channels"));
    c.h = count_of(feature(f, "log_in_height"));
    c.w = count_of(feature(f, "log_in_width"));
    c.k = count_of(feature(f, "log_out_channels"));
    c.kh = std::llround(feature(f, "kernel_h"));
    c.kw = std::llround(feature(f, "kernel_w"));
    c.sh = std::llround(feature(f, "stride_h"));
    c.sw = std::llround(feature(f, "stride_w"));
    c.groups = std::max<std::int64_t>(1, count_of(feature(f, "log_groups")));
    c.batch_norm = feature(f, "folded_ops") > 0;
    c.weight_operand = feature(f, "weighted_operand") > 0;
    c.act = feature(f, "fused_clip") > 0      ? "Clip"
            : feature(f, "fused_sigmoid") > 0 ? "Sigmoid"
            : feature(f, "fused_hard") > 0    ? "HardSwish"
            : feature(f, "fused_other_act") > 0 ? "Tanh"
                                                : "Relu";
    const auto rebuilt = one_kernel(c, rules);
    if (!rebuilt || !same_kernel(rebuilt->values, f)) return std::nullopt;
    return c;
}

/// `c` grown along its rows (GEMM, MatMul) or pixels (convolutions) until its kernel does at least
/// `target` FLOPs; nullopt when that takes a tensor of more than `max_elements` values.
inline std::optional<device::KernelConfig> scaled(device::KernelConfig c, double target,
                                                  const device::FusionRules& rules, double max_elements) {
    const bool image = family_of(c.kind) == "Conv" || family_of(c.kind) == "DepthwiseConv";
    double flops = 0, elements = 0;
    if (!one_kernel(c, rules, &flops) || !(flops > 0)) return std::nullopt;
    const double need = target / flops;
    if (image) {
        const double s = std::sqrt(need);
        c.h = static_cast<std::int64_t>(std::ceil(static_cast<double>(c.h) * s));
        c.w = static_cast<std::int64_t>(std::ceil(static_cast<double>(c.w) * s));
    } else {
        c.h = static_cast<std::int64_t>(std::ceil(static_cast<double>(c.h) * need));
    }
    for (int step = 0;; ++step) {
        if (!one_kernel(c, rules, &flops, &elements) || elements > max_elements || step > 200) return std::nullopt;
        if (flops >= target) return c;
        // strides and padding make the work a little less than proportional: grow by small steps
        auto& d = image && step % 2 ? c.w : c.h;
        d += std::max<std::int64_t>(1, d / 64);
    }
}

struct Kernel {
    device::KernelSample sample;
    std::string from_key;  ///< the build's sample it was grown from
    double flops = 0, family_max = 0;
};

/// The kernels an earlier run listed (its --json output): each one's configuration, the fields the
/// listing leaves out (activation, weight operand, folded BatchNorm, token layout) found by
/// rebuilding its single-kernel graph until the graph's canonical hash is the kernel's key.
/// @throws parse_error naming `path` and the kernel for a listing that is not one, or a kernel
///         that no such configuration rebuilds
inline std::vector<Kernel> listed_kernels(const std::string& path, const device::FusionRules& rules, bool in_network) {
    const auto doc = parse_json(io::read_file(path), false);
    if (doc.is_discarded() || !doc.is_object() || !doc.contains("kernels") || !doc["kernels"].is_array())
        raise<parse_error>(path, ": not the --json output of dnncost device extrapolate (no \"kernels\" list)");
    std::vector<Kernel> out;
    for (std::size_t i = 0; i < doc["kernels"].size(); ++i) {
        const auto& row = doc["kernels"][i];
        device::KernelConfig c;
        std::string key;
        Kernel k;
        try {
            c.kind = row.at("kind").get<std::string>();
            key = row.at("key").get<std::string>();
            const auto& f = row.at("config");
            for (auto [name, field] : {std::pair{"n", &c.n}, {"c", &c.c}, {"h", &c.h}, {"w", &c.w}, {"k", &c.k},
                                       {"kh", &c.kh}, {"kw", &c.kw}, {"sh", &c.sh}, {"sw", &c.sw}, {"groups", &c.groups}})
                *field = f.at(name).get<std::int64_t>();
            k.from_key = row.value("grown_from", std::string());
            k.family_max = row.value("family_max_flops", 0.0);
        } catch (const json::exception& e) {
            raise<parse_error>(path, ": kernel ", i, ": ", e.what());
        }
        const auto rebuilds = [&] {
            try {
                return graph::canonical_hash(device::kernel_sample_graph(c)).hex() == key;
            } catch (const error&) {
                return false;  // sizes this variant cannot build
            }
        };
        const bool found = [&] {
            for (const char* act : {"Relu", "Clip", "Sigmoid", "HardSwish", "Tanh"})
                for (const bool weight : {true, false})
                    for (const bool bn : {false, true})
                        for (const bool tokens : {false, true}) {
                            c.act = act, c.weight_operand = weight, c.batch_norm = bn, c.tokens = tokens;
                            if (rebuilds()) return true;
                        }
            return false;
        }();
        if (!found)
            raise<parse_error>(path, ": kernel ", i, " (", c.kind, "): no configuration with its listed sizes rebuilds "
                               "the graph of key ", key);
        k.sample = {c, device::kernel_sample_graph(c, in_network), {}, in_network};
        k.sample.key = graph::canonical_hash(k.sample.graph).hex();
        if (!one_kernel(c, rules, &k.flops))
            raise<parse_error>(path, ": kernel ", i, " (", c.kind, ") is not one kernel of that kind under the model's rules");
        out.push_back(std::move(k));
    }
    if (out.empty()) raise<parse_error>(path, ": lists no kernel");
    return out;
}

/// Every scalable kind's largest samples of the build's samples file, grown to --factor times
/// their family's largest sample.
inline std::vector<Kernel> grown_kernels(const Args& a, const device::FusionRules& rules, const fs::path& samples_path,
                                         std::size_t& not_rebuilt, std::size_t& too_large) {
    const auto file = device::read_kernel_sample_file(samples_path);
    if (!(file.rules == rules))
        raise<config_error>("device extrapolate: ", samples_path.string(), " was measured under other fusion rules than ",
                            a.models[0]);

    // the largest sample of each family, and each kind's samples largest first
    std::map<std::string, double> family_max;
    std::map<std::string, std::vector<std::pair<double, std::size_t>>> by_kind;
    for (std::size_t i = 0; i < file.samples.size(); ++i) {
        const auto& s = file.samples[i];
        const double flops = std::exp2(feature(s.features, "log_flops")) - 1;
        auto& m = family_max[family_of(s.kind)];
        m = std::max(m, flops);
        if (scalable(family_of(s.kind))) by_kind[s.kind].push_back({flops, i});
    }
    std::vector<Kernel> kernels;
    std::set<std::string> seen;
    for (auto& [kind, rows] : by_kind) {
        std::sort(rows.begin(), rows.end(), [](const auto& x, const auto& y) { return x.first > y.first; });
        std::size_t taken = 0;
        for (std::size_t r = 0; r < rows.size() && r < 20 * a.per_kind && taken < a.per_kind; ++r) {
            const auto& s = file.samples[rows[r].second];
            const auto c = config_of(kind, s.features, rules);
            if (!c) {
                ++not_rebuilt;
                continue;
            }
            const double target = a.factor * family_max[family_of(kind)];
            const auto big = scaled(*c, target, rules, a.max_elements);
            if (!big) {
                ++too_large;
                continue;
            }
            Kernel k;
            k.sample = {*big, device::kernel_sample_graph(*big, !a.isolated), {}, !a.isolated};
            k.sample.key = graph::canonical_hash(k.sample.graph).hex();
            if (!seen.insert(k.sample.key).second) continue;
            one_kernel(*big, rules, &k.flops);
            k.from_key = file.keys[rows[r].second];
            k.family_max = family_max[family_of(kind)];
            kernels.push_back(std::move(k));
            ++taken;
        }
    }
    if (kernels.empty())
        raise<config_error>("device extrapolate: no sample of a Conv, DepthwiseConv, Gemm or MatMul kind could be grown");
    return kernels;
}

/// @return whether every kernel was measured (or --plan)
inline bool run(const Args& a) {
    if (!(a.factor >= 1)) raise<config_error>("device extrapolate: --factor ", a.factor, " is below 1");
    if (!a.plan && a.runners.empty()) raise<config_error>("device extrapolate: --runner is required (or --plan)");
    std::vector<std::unique_ptr<device::DeviceModel>> models;
    for (const auto& m : a.models) models.push_back(device::DeviceModel::deserialize(io::read_file(m), m));
    const auto& rules = models.front()->rules();
    for (std::size_t i = 1; i < models.size(); ++i)
        if (!(models[i]->rules() == rules))
            raise<config_error>("device extrapolate: ", a.models[i], " has other fusion rules than ", a.models[0]);
    const fs::path samples_path = a.samples.empty() ? fs::path(a.models[0] + ".work") / "kernel_samples.json"
                                                    : fs::path(a.samples);
    std::vector<Kernel> kernels;
    std::size_t not_rebuilt = 0, too_large = 0;
    if (!a.kernels.empty())
        kernels = listed_kernels(a.kernels, rules, !a.isolated);
    else
        kernels = grown_kernels(a, rules, samples_path, not_rebuilt, too_large);
    std::vector<const graph::Graph*> graphs;
    for (const auto& k : kernels) graphs.push_back(&k.sample.graph);
    std::vector<std::vector<double>> predicted;
    for (const auto& m : models) predicted.push_back(m->price_totals(graphs));

    std::map<std::string, double> measured;  // by key
    std::size_t failed = 0;
    if (!a.plan) {
        std::vector<device::KernelSample> todo;
        for (const auto& k : kernels) todo.push_back(k.sample);
        device::KernelSamplingSetup s;
        s.runners = a.runners;
        s.device = rules.device;
        const fs::path work = a.work.empty() ? fs::path(a.models[0] + ".extrapolation") : fs::path(a.work);
        fs::create_directories(work);
        s.store = work / "kernels.csv";
        s.harness = a.flags.checked_harness();
        s.pool = a.flags.pool();
        s.seed = a.seed;
        s.opset = device::spaces_opset();
        const auto r = device::measure_kernel_samples(todo, rules, s);
        for (const auto& row : r.rows) measured[row.key] = row.latency_ms;
        failed = r.failed + r.model_errors.size();
        for (const auto& e : r.model_errors) std::cerr << "dnncost: warning: " << e << '\n';
    }

    json rows = json::array();
    std::vector<std::vector<double>> pred_ok(models.size());
    std::vector<double> meas_ok;
    for (std::size_t i = 0; i < kernels.size(); ++i) {
        const auto& k = kernels[i];
        const auto& c = k.sample.config;
        json row{{"kind", c.kind},
                 {"key", k.sample.key},
                 {"grown_from", k.from_key},
                 {"config", {{"n", c.n}, {"c", c.c}, {"h", c.h}, {"w", c.w}, {"k", c.k}, {"kh", c.kh}, {"kw", c.kw},
                             {"sh", c.sh}, {"sw", c.sw}, {"groups", c.groups}}},
                 {"flops", k.flops},
                 {"family_max_flops", k.family_max},
                 {"flops_ratio", k.flops / k.family_max}};
        const auto it = measured.find(k.sample.key);
        row["measured_ms"] = it == measured.end() ? json(nullptr) : json(it->second);
        json p = json::object();
        for (std::size_t m = 0; m < models.size(); ++m) {
            p[a.models[m]] = predicted[m][i];
            if (it != measured.end()) pred_ok[m].push_back(predicted[m][i]);
        }
        if (it != measured.end()) meas_ok.push_back(it->second);
        row["predicted_ms"] = std::move(p);
        rows.push_back(std::move(row));
    }
    json summary = json::object();
    for (std::size_t m = 0; m < models.size() && !meas_ok.empty(); ++m)
        summary[a.models[m]] = {{"mape", train::mape(pred_ok[m], meas_ok)},
                                {"within_20", train::error_bound_accuracy(pred_ok[m], meas_ok, 0.20)}};
    const bool complete = a.plan || (failed == 0 && meas_ok.size() == kernels.size());
    if (a.json_out) {
        print_json({{"models", a.models},
                    {"samples", a.kernels.empty() ? samples_path.string() : std::string()},
                    {"kernels_from", a.kernels},
                    {"device", rules.device},
                    {"runners", a.runners},
                    {"factor", a.factor},
                    {"plan", a.plan},
                    {"in_network", !a.isolated},
                    {"kernels", rows},
                    {"not_rebuilt", not_rebuilt},
                    {"too_large", too_large},
                    {"measured", meas_ok.size()},
                    {"failed", failed},
                    {"summary", summary}});
        return complete;
    }
    std::cout << std::left << std::setw(18) << "kind" << std::setw(26) << "n c h w -> k" << std::right << std::setw(8)
              << "FLOPs x" << std::setw(12) << "measured";
    for (std::size_t m = 0; m < models.size(); ++m) std::cout << std::setw(12) << ("model " + std::to_string(m + 1));
    std::cout << '\n';
    for (std::size_t i = 0; i < kernels.size(); ++i) {
        const auto& k = kernels[i];
        const auto& c = k.sample.config;
        const auto it = measured.find(k.sample.key);
        std::cout << std::left << std::setw(18) << c.kind << std::setw(26)
                  << (std::to_string(c.n) + " " + std::to_string(c.c) + " " + std::to_string(c.h) + " " +
                      std::to_string(c.w) + " -> " + std::to_string(c.k))
                  << std::right << std::setw(8) << std::setprecision(3) << k.flops / k.family_max << std::setw(12)
                  << (it == measured.end() ? std::string("-") : std::to_string(it->second));
        for (std::size_t m = 0; m < models.size(); ++m) std::cout << std::setw(12) << predicted[m][i];
        std::cout << '\n';
    }
    for (std::size_t m = 0; m < models.size(); ++m) {
        std::cout << "model " << m + 1 << ": " << a.models[m];
        if (!meas_ok.empty())
            std::cout << ": MAPE " << percent(train::mape(pred_ok[m], meas_ok)) << ", within 20 % "
                      << percent(train::error_bound_accuracy(pred_ok[m], meas_ok, 0.20));
        std::cout << '\n';
    }
    if (not_rebuilt + too_large > 0)
        std::cout << not_rebuilt << " samples could not be rebuilt from their features, " << too_large
                  << " grown beyond --max-elements\n";
    return complete;
}

}  // namespace device_extrapolate_detail

void add_device_extrapolate_command(Command& device, Context& ctx) {
    namespace dx = device_extrapolate_detail;
    auto a = std::make_shared<dx::Args>();
    auto* cmd = device.add_subcommand(
        "extrapolate",
        "Measure kernels larger than every sample of a model's build and compare them with the model's prices");
    cmd->add_option("--model", a->models, "Device model (.dnnc); repeat to compare models built on the same samples")
        ->required()
        ->expected(1, -1);
    cmd->add_option("--samples", a->samples,
                    "The build's kernel_samples.json (default MODEL.work/kernel_samples.json, of the first --model)");
    add_runner_option(*cmd, a->runners, true);
    cmd->add_option("--factor", a->factor, "FLOPs of each kernel, as a multiple of its family's largest sample")
        ->check(check::finite(check::Sign::positive))
        ->capture_default_str();
    cmd->add_option("--per-kind", a->per_kind, "Kernels per kind, grown from its largest samples")
        ->transform(check::integer(1, 1000, "a count in [1, 1000]"))
        ->capture_default_str();
    cmd->add_option("--max-elements", a->max_elements, "Largest tensor a grown kernel may have, in values")
        ->check(check::finite(check::Sign::positive))
        ->capture_default_str();
    cmd->add_option("--work", a->work, "Store and model files of the measurements (resumable); default MODEL.extrapolation");
    cmd->add_option("--seed", a->seed, "Seed of the weight values")->transform(check::seed());
    cmd->add_option("--kernels", a->kernels,
                    "Measure the kernels an earlier run listed (its --json output) again, rather than growing the "
                    "samples': the same kernels later, on another host, or inside a network and alone")
        ->check(check::existing_file());
    cmd->add_flag("--plan", a->plan, "List the kernels and the models' prices, measuring nothing");
    cmd->add_flag("--isolated", a->isolated,
                  "Measure each kernel as the whole model, its output the model's output, which every run allocates "
                  "and copies out (what a sample pays at its boundary); by default a ReduceMean after it keeps its "
                  "output inside the network, as a kernel of a real network writes it");
    a->flags.add_to(*cmd, {});
    add_json_flag(*cmd, a->json_out);
    cmd->callback([a, &ctx] { ctx.exit_code = dx::run(*a) ? 0 : 3; });
}

}  // namespace dnncost::cli
