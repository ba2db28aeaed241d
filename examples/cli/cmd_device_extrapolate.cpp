// `dnncost device extrapolate`: kernels several times larger (in FLOPs) than every sample of a
// device model's build, measured with the runner as the build measured its samples and priced by
// one or more models (docs/device_model.md, "Beyond the samples"). Inside a network, each kernel
// is judged by its own time in the runtime's profile, as the build's in-context samples are.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "commands.hpp"
#include "common.hpp"
#include "measure_options.hpp"

#include <dnncost/core/robust_statistics.hpp>
#include <dnncost/device/device_build.hpp>
#include <dnncost/device/device_model.hpp>
#include <dnncost/device/kernel_features.hpp>
#include <dnncost/device/kernel_graph.hpp>
#include <dnncost/device/kernel_sample_file.hpp>
#include <dnncost/device/kernel_sampler.hpp>
#include <dnncost/device/kernel_sampling.hpp>
#include <dnncost/device/network_profiling.hpp>
#include <dnncost/graph/hash.hpp>
#include <dnncost/io/file.hpp>
#include <dnncost/measure/model_file.hpp>
#include <dnncost/spaces/synthetic.hpp>
#include <dnncost/train/metrics.hpp>

namespace dnncost::cli {

namespace device_extrapolate_detail {
namespace fs = std::filesystem;

struct Args {
    std::vector<std::string> models, runners;
    std::string samples, work, kernels;
    double factor = 4;
    std::size_t per_kind = 2;
    std::size_t networks = 0;  ///< > 0: whole networks beyond the build's (beyond_networks), not grown kernels
    double max_elements = 256e6;
    std::uint64_t seed = 1;
    bool plan = false, json_out = false, isolated = false, no_profile = false;
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
/// A kernel's FLOPs back from its features.
inline double flops_of(const std::vector<double>& f) { return std::exp2(feature(f, "log_flops")) - 1; }

/// The build's samples file, which must have been measured under `rules` (those of `model`).
inline device::KernelSampleFile samples_file(const fs::path& path, const device::FusionRules& rules,
                                             const std::string& model) {
    auto file = device::read_kernel_sample_file(path);
    if (!(file.rules == rules))
        raise<config_error>("device extrapolate: ", path.string(), " was measured under other fusion rules than ",
                            model);
    return file;
}
/// The FLOPs of each family's largest sample.
inline std::map<std::string, double> family_max_flops(const device::KernelSampleFile& file) {
    std::map<std::string, double> out;
    for (const auto& s : file.samples) {
        auto& m = out[family_of(s.kind)];
        m = std::max(m, flops_of(s.features));
    }
    return out;
}

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
    /// The kernel it was grown from, at the samples' edge, measured beside it the same way: what
    /// a harness adds or spares a kernel (a network's boundary, a cache left warm between runs)
    /// cancels out of the growth from one to the other. nullopt: not known (an older listing).
    std::optional<device::KernelSample> edge;
    std::string from_key;  ///< the build's sample it was grown from
    double from_ms = std::numeric_limits<double>::quiet_NaN();  ///< that sample's time in the build
    double flops = 0, family_max = 0;
};

/// A kernel sample of configuration `c`, inside a network or alone, keyed by its graph's hash.
inline device::KernelSample sample_of(const device::KernelConfig& c, bool in_network) {
    device::KernelSample out{c, device::kernel_sample_graph(c, in_network), {}, in_network};
    out.key = graph::canonical_hash(out.graph).hex();
    return out;
}

/// A listing's configuration fields, or a parse_error naming the listing's kernel.
inline void read_config(const json& f, device::KernelConfig& c) {
    for (auto [name, field] : {std::pair{"n", &c.n},
                               {"c", &c.c},
                               {"h", &c.h},
                               {"w", &c.w},
                               {"k", &c.k},
                               {"kh", &c.kh},
                               {"kw", &c.kw},
                               {"sh", &c.sh},
                               {"sw", &c.sw},
                               {"groups", &c.groups}})
        *field = f.at(name).get<std::int64_t>();
}
inline json config_json(const device::KernelConfig& c) {
    return {{"n", c.n},   {"c", c.c},   {"h", c.h},   {"w", c.w},   {"k", c.k},
            {"kh", c.kh}, {"kw", c.kw}, {"sh", c.sh}, {"sw", c.sw}, {"groups", c.groups}};
}

/// A JSON error without nlohmann's "[json.exception.parse_error.101] " tag: its line, column
/// and what was expected there.
inline std::string json_error_text(const json::exception& e) {
    std::string_view w = e.what();
    if (const auto tag = w.find("] "); w.starts_with("[json.exception.") && tag != std::string_view::npos)
        w.remove_prefix(tag + 2);
    return std::string(w);
}

/// The kernels an earlier run listed (its --json output): each one's configuration, the fields the
/// listing leaves out (activation, weight operand, folded BatchNorm, token layout) found by
/// rebuilding its single-kernel graph, alone or inside a network as the listing measured it, until
/// the graph's canonical hash is the kernel's key.
/// @throws parse_error naming `path` and the kernel for a listing that is not one, or a kernel
///         that no such configuration rebuilds
inline std::vector<Kernel> listed_kernels(const std::string& path, const device::FusionRules& rules, bool in_network) {
    const auto text = io::read_file(path);
    if (text.empty()) raise<parse_error>(path, ": empty file");
    // a listing cut short is malformed JSON, and says where, not merely that it is no listing
    const auto doc = [&] {
        try {
            return parse_json(text);
        } catch (const json::exception& e) {  // a parse error, or a number out of range
            raise<parse_error>(path, ": not JSON: ", json_error_text(e));
        }
    }();
    if (!doc.is_object() || !doc.contains("kernels") || !doc["kernels"].is_array())
        raise<parse_error>(path, ": not the --json output of dnncost device extrapolate (no \"kernels\" list)");
    if (doc.contains("in_network") && !doc["in_network"].is_boolean())
        raise<parse_error>(path, ": \"in_network\" is not true or false");
    const bool listed_in_network = doc.value("in_network", false);
    std::vector<Kernel> out;
    for (std::size_t i = 0; i < doc["kernels"].size(); ++i) {
        const auto& row = doc["kernels"][i];
        device::KernelConfig c;
        bool edge = false;  // the listing names the kernel's edge (its sizes are read below)
        std::string key, edge_key;
        Kernel k;
        try {
            c.kind = row.at("kind").get<std::string>();
            key = row.at("key").get<std::string>();
            read_config(row.at("config"), c);
            if (row.contains("edge") && !row["edge"].is_null()) {
                device::KernelConfig sizes;
                read_config(row["edge"].at("config"), sizes);  // checked here, used once the variant is known
                edge = true;
                edge_key = row["edge"].value("key", std::string());
            }
            k.from_key = row.value("grown_from", std::string());
            if (edge && row["edge"].contains("sample_ms") && row["edge"]["sample_ms"].is_number())
                k.from_ms = row["edge"]["sample_ms"].get<double>();
            k.family_max = row.value("family_max_flops", 0.0);
        } catch (const json::exception& e) {
            raise<parse_error>(path, ": kernel ", i, ": ", e.what());
        }
        const auto rebuilds = [&] {
            try {
                return graph::canonical_hash(device::kernel_sample_graph(c, listed_in_network)).hex() == key;
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
        k.sample = sample_of(c, in_network);
        if (edge) {
            // the kernel's activation, operand and layout, at its source's sizes
            auto at_edge = c;
            read_config(row["edge"].at("config"), at_edge);
            k.edge = sample_of(at_edge, in_network);
            if (!edge_key.empty() && sample_of(at_edge, listed_in_network).key != edge_key)
                raise<parse_error>(path, ": kernel ", i, " (", c.kind,
                                   "): its edge's sizes with the kernel's configuration do not rebuild the edge's key ",
                                   edge_key);
        }
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
    const auto file = samples_file(samples_path, rules, a.models[0]);
    // the largest sample of each family, and each kind's samples largest first
    auto family_max = family_max_flops(file);
    std::map<std::string, std::vector<std::pair<double, std::size_t>>> by_kind;
    for (std::size_t i = 0; i < file.samples.size(); ++i) {
        const auto& s = file.samples[i];
        if (scalable(family_of(s.kind))) by_kind[s.kind].push_back({flops_of(s.features), i});
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
            k.sample = sample_of(*big, !a.isolated);
            k.edge = sample_of(*c, !a.isolated);
            if (!seen.insert(k.sample.key).second) continue;
            one_kernel(*big, rules, &k.flops);
            k.from_key = file.keys[rows[r].second];
            k.from_ms = s.latency_ms;
            k.family_max = family_max[family_of(kind)];
            kernels.push_back(std::move(k));
            ++taken;
        }
    }
    if (by_kind.empty())
        raise<config_error>("device extrapolate: ", samples_path.string(),
                            " has no sample of a Conv, DepthwiseConv, Gemm or MatMul kind to grow");
    if (kernels.empty())
        raise<config_error>("device extrapolate: no sample of ", samples_path.string(),
                            " could be grown: ", not_rebuilt, " could not be rebuilt from their features, ", too_large,
                            " would take a tensor larger than --max-elements");
    return kernels;
}

/// The grown kernel's index among its network's kernels (kernel_graph): the one kernel that is
/// neither a reorder nor, inside a network, the reduction after it.
inline std::size_t kernel_index(const device::KernelSample& s, const device::FusionRules& rules) {
    const auto kg = device::kernel_graph(s.graph, rules);
    std::size_t last = kg.kernels.size();
    if (s.in_network)
        while (last > 0 && kg.kernels[last - 1].is_reorder()) --last;
    for (std::size_t i = 0; i < kg.kernels.size(); ++i)
        if (!kg.kernels[i].is_reorder() && !(s.in_network && i + 1 == last)) return i;
    raise<config_error>("device extrapolate: the graph of kernel ", s.key, " (", s.config.kind,
                        ") has no kernel of its own under the model's rules");
}

/// What was measured of a kernel's graph: the network's latency, and the kernel's own time in its
/// profile (NaN without one).
struct Measured {
    double network_ms = std::numeric_limits<double>::quiet_NaN();
    double kernel_ms = std::numeric_limits<double>::quiet_NaN();
};

/// The work directory of the measurements' stores, created.
inline fs::path work_dir(const Args& a) {
    const fs::path work = a.work.empty() ? fs::path(a.models[0] + ".extrapolation") : fs::path(a.work);
    std::error_code ec;
    fs::create_directories(work, ec);
    if (!fs::is_directory(work))
        raise<io_error>("device extrapolate: cannot create the work directory '", work.string(), "'");
    return work;
}
/// `s` measures with the runners and harness flags of `a` into `store`, as the build did.
template <class Setup>
void measure_with(Setup& s, const Args& a, const device::FusionRules& rules, const fs::path& store) {
    s.runners = a.runners;
    s.device = rules.device;
    s.store = store;
    s.harness = a.flags.checked_harness();
    s.pool = a.flags.pool();
    s.seed = a.seed;
    s.opset = device::spaces_opset();
}
inline void warn_if_disturbed(const device::Disturbance& d) {
    if (const auto why = d.summary(); !why.empty())
        std::cerr << "dnncost: warning: " << why << "; measure again on a quiet machine\n";
}

/// Measures `todo` (inside networks: profiled, unless `no_profile` or the runner cannot) into
/// stores in `work`; `failed` counts what failed, `disturbance` what the harness saw of the machine.
inline std::map<std::string, Measured> measure(const Args& a, const std::vector<const device::KernelSample*>& todo,
                                               const device::FusionRules& rules, double run_overhead_ms,
                                               const fs::path& work, std::size_t& failed,
                                               device::Disturbance& disturbance) {
    std::map<std::string, Measured> out;  // by the graph's key
    if (!a.isolated && !a.no_profile) {
        std::vector<graph::Graph> nets;
        for (const auto* k : todo) nets.push_back(k->graph);
        device::NetworkProfilingSetup s;
        measure_with(s, a, rules, work / "networks.csv");
        const auto r = device::profile_networks(nets, rules, run_overhead_ms, s);
        if (r.profiles) {
            for (const auto& n : r.networks) out[n.key].network_ms = n.latency_ms;
            for (const auto* k : todo) {
                const auto want = k->key + "#" + std::to_string(kernel_index(*k, rules));
                for (const auto& row : r.rows)
                    if (row.key == want) out[k->key].kernel_ms = row.latency_ms;
            }
            failed = r.failed + r.without_profile;
            disturbance = r.disturbance;
            for (const auto& e : r.problems) std::cerr << "dnncost: warning: " << e << '\n';
            return out;
        }
        std::cerr << "dnncost: warning: the runner does not profile: each kernel is judged by its network's latency\n";
    }
    std::vector<device::KernelSample> samples;
    for (const auto* k : todo) samples.push_back(*k);
    device::KernelSamplingSetup s;
    measure_with(s, a, rules, work / "kernels.csv");
    const auto r = device::measure_kernel_samples(samples, rules, s);
    for (const auto& row : r.rows) out[row.key].network_ms = row.latency_ms;
    failed = r.failed + r.model_errors.size();
    disturbance = r.disturbance;
    for (const auto& e : r.model_errors) std::cerr << "dnncost: warning: " << e << '\n';
    return out;
}

/// Per model: MAPE and the share within 20 % of its prices against the measured times, over the
/// rows where both are finite.
inline json accuracy(const std::vector<std::string>& names, const std::vector<std::vector<double>>& predicted,
                     const std::vector<double>& measured) {
    json out = json::object();
    for (std::size_t m = 0; m < names.size(); ++m) {
        std::vector<double> p, y;
        for (std::size_t i = 0; i < measured.size(); ++i)
            if (std::isfinite(measured[i]) && std::isfinite(predicted[m][i])) {
                p.push_back(predicted[m][i]);
                y.push_back(measured[i]);
            }
        if (!y.empty())
            out[names[m]] = {{"mape", train::mape(p, y)},
                             {"within_20", train::error_bound_accuracy(p, y, 0.20)},
                             {"kernels", y.size()}};
    }
    return out;
}

/// `n` whole networks larger than those a build profiles: convolutional networks drawn as the
/// build draws them at twice the resolution (four times each convolution's work) and transformers
/// at four times the tokens (four times each projection's, sixteen times the attention's), within
/// twice the build's MAC limit. Their kernels are priced in the context of real networks, where a
/// grown kernel alone has only a reduction beside it.
inline std::vector<graph::Graph> beyond_networks(std::size_t n, std::uint64_t seed) {
    synthetic::Limits limits;
    limits.max_macs *= 2;
    Rng rng(seed ^ 0x6265796f6e64ULL);  // draws of their own, not the build's networks
    std::vector<graph::Graph> out;
    std::set<std::string> keys;
    for (std::size_t i = 0; out.size() < n && i < 20 * n; ++i) {
        graph::Graph g;
        if (i % 3 == 2) {
            auto t = synthetic::sample_transformer(rng);
            if (t.patch > 0) {
                const auto side = static_cast<std::int64_t>(std::llround(std::sqrt(static_cast<double>(t.tokens))));
                t.tokens = 4 * side * side;
            } else {
                t.tokens *= 4;
            }
            g = synthetic::build_transformer(t, limits);
        } else {
            auto c = synthetic::sample_cnn(rng);
            c.resolution *= 2;
            g = synthetic::build_cnn(c, limits);
        }
        if (keys.insert(measure::network_key(g)).second) out.push_back(std::move(g));
    }
    return out;
}

/// One kernel of a network beyond the build's, larger than every sample of its family.
struct BeyondKernel {
    std::size_t network = 0;  ///< index among the networks
    std::string kind, key;
    double flops = 0, family_max = 0, measured_ms = 0;
    std::vector<double> predicted;  ///< per model
};

/// --networks: profiles `a.networks` networks beyond the build's (beyond_networks) and judges
/// every kernel of theirs that does more FLOPs than its family's largest sample by its own time
/// in the profile, per model and per band of FLOPs beyond.
/// @return whether every network was measured and profiled (or --plan)
inline bool run_networks(const Args& a, const std::vector<std::unique_ptr<device::DeviceModel>>& models,
                         const fs::path& samples_path) {
    const auto& rules = models.front()->rules();
    const auto family_max = family_max_flops(samples_file(samples_path, rules, a.models[0]));
    const auto nets = beyond_networks(a.networks, a.seed);
    std::vector<const graph::Graph*> graphs;
    std::vector<std::string> keys;
    std::map<std::string, std::size_t> index_of;  // network key -> index
    for (std::size_t i = 0; i < nets.size(); ++i) {
        graphs.push_back(&nets[i]);
        keys.push_back(measure::network_key(nets[i]));
        index_of[keys.back()] = i;
    }
    std::vector<std::vector<device::DevicePrice>> prices;
    for (const auto& m : models) prices.push_back(m->price_networks(graphs));

    device::NetworkProfilingResult r;
    device::Disturbance disturbance;
    if (!a.plan) {
        device::NetworkProfilingSetup ps;
        measure_with(ps, a, rules, work_dir(a) / "beyond_networks.csv");
        ps.opset = std::max(device::spaces_opset(), synthetic::onnx_opset);
        r = device::profile_networks(nets, rules, models.front()->run_overhead_ms(), ps);
        if (!r.profiles)
            raise<config_error>(
                "device extrapolate --networks: the runner answered a profiled request without "
                "kernels; the networks' kernels need the runtime's profile");
        for (const auto& e : r.problems) std::cerr << "dnncost: warning: " << e << '\n';
        disturbance = r.disturbance;
        warn_if_disturbed(disturbance);
    }
    std::vector<BeyondKernel> beyond;
    std::size_t judged_kernels = 0;
    for (const auto& row : r.rows) {
        const auto hash = row.key.rfind('#');
        const auto net = index_of.find(row.key.substr(0, hash));
        if (hash == std::string::npos || net == index_of.end()) continue;
        const auto k = static_cast<std::size_t>(std::stoull(row.key.substr(hash + 1)));
        ++judged_kernels;
        const double flops = flops_of(row.features);
        const auto fm = family_max.find(family_of(row.kind));
        if (fm == family_max.end() || !(flops > fm->second)) continue;
        BeyondKernel b{net->second, row.kind, row.key, flops, fm->second, row.latency_ms, {}};
        for (const auto& p : prices) b.predicted.push_back(p[net->second].kernels.at(k).ms);
        beyond.push_back(std::move(b));
    }
    // bands of FLOPs over the family's largest sample
    const std::vector<std::pair<std::string, std::pair<double, double>>> bands{
        {"beyond", {1, std::numeric_limits<double>::infinity()}},
        {"1-2x", {1, 2}},
        {"2-4x", {2, 4}},
        {"4x+", {4, std::numeric_limits<double>::infinity()}}};
    json summary = json::object();
    for (const auto& name : a.models) summary[name] = json::object();
    for (const auto& [band, range] : bands) {
        std::vector<std::vector<double>> p(models.size());
        std::vector<double> y;
        for (const auto& b : beyond) {
            const double ratio = b.flops / b.family_max;
            if (!(ratio > range.first && ratio <= range.second)) continue;
            for (std::size_t m = 0; m < models.size(); ++m) p[m].push_back(b.predicted[m]);
            y.push_back(b.measured_ms);
        }
        if (y.empty()) continue;
        auto per_model = accuracy(a.models, p, y);
        for (std::size_t m = 0; m < models.size(); ++m) {
            // the error weighted by time: many small kernels can weigh on the MAPE and little on
            // a network's price
            double off = 0, total = 0;
            for (std::size_t i = 0; i < y.size(); ++i) off += std::abs(p[m][i] - y[i]), total += y[i];
            per_model[a.models[m]]["weighted_error"] = off / total;
            summary[a.models[m]][band] = std::move(per_model[a.models[m]]);
        }
    }
    // the networks' totals, as a user prices a network
    json network_summary = json::object();
    for (std::size_t m = 0; m < models.size(); ++m) {
        std::vector<double> p, y;
        for (const auto& pn : r.networks) {
            p.push_back(prices[m][index_of.at(pn.key)].total_ms);
            y.push_back(pn.latency_ms);
        }
        if (!y.empty())
            network_summary[a.models[m]] = {{"mape", train::mape(p, y)},
                                            {"within_10", train::error_bound_accuracy(p, y, 0.10)},
                                            {"networks", y.size()}};
    }
    const bool complete = a.plan || (r.failed == 0 && r.without_profile == 0 && r.networks.size() == nets.size());
    if (a.json_out) {
        json networks = json::array(), kernels = json::array();
        std::vector<json> measured(nets.size());  // null for a network not profiled
        for (const auto& pn : r.networks) measured[index_of.at(pn.key)] = pn.latency_ms;
        for (std::size_t i = 0; i < nets.size(); ++i) {
            json predicted = json::object();
            for (std::size_t m = 0; m < models.size(); ++m) predicted[a.models[m]] = prices[m][i].total_ms;
            networks.push_back({{"name", nets[i].name()},
                                {"key", keys[i]},
                                {"predicted_ms", predicted},
                                {"measured_ms", measured[i]}});
        }
        for (const auto& b : beyond) {
            json predicted = json::object();
            for (std::size_t m = 0; m < models.size(); ++m) predicted[a.models[m]] = b.predicted[m];
            kernels.push_back({{"network", nets[b.network].name()},
                               {"key", b.key},
                               {"kind", b.kind},
                               {"flops", b.flops},
                               {"family_max_flops", b.family_max},
                               {"flops_ratio", b.flops / b.family_max},
                               {"measured_ms", b.measured_ms},
                               {"predicted_ms", std::move(predicted)}});
        }
        print_json({{"models", a.models},
                    {"samples", samples_path.string()},
                    {"device", rules.device},
                    {"runners", a.runners},
                    {"plan", a.plan},
                    {"judged", "kernel"},
                    {"networks", std::move(networks)},
                    {"kernels_judged", judged_kernels},
                    {"kernels", std::move(kernels)},
                    {"failed", r.failed + r.without_profile},
                    {"disturbed", disturbance.disturbed > 0 ? json(disturbance.summary()) : json(nullptr)},
                    {"summary", std::move(summary)},
                    {"network_summary", std::move(network_summary)}});
        return complete;
    }
    std::cout << nets.size() << " networks beyond the build's";
    if (!a.plan)
        std::cout << ", " << r.networks.size() << " profiled: " << judged_kernels << " kernels, " << beyond.size()
                  << " of them larger than every sample of their family";
    std::cout << '\n';
    for (std::size_t i = 0; i < nets.size(); ++i) std::cout << "  " << nets[i].name() << '\n';
    for (std::size_t m = 0; m < models.size(); ++m) {
        std::cout << "model " << m + 1 << ": " << a.models[m];
        if (network_summary.contains(a.models[m]))
            std::cout << "; the networks: MAPE " << percent(network_summary[a.models[m]]["mape"].get<double>())
                      << ", within 10 % " << percent(network_summary[a.models[m]]["within_10"].get<double>());
        std::cout << '\n';
        for (const auto& [band, range] : bands) {
            if (!summary[a.models[m]].contains(band)) continue;
            const auto& v = summary[a.models[m]][band];
            std::cout << "  " << std::left << std::setw(8) << band << std::right << std::setw(6)
                      << v["kernels"].get<std::size_t>() << " kernels: MAPE " << percent(v["mape"].get<double>())
                      << ", within 20 % " << percent(v["within_20"].get<double>()) << ", by time "
                      << percent(v["weighted_error"].get<double>()) << '\n';
        }
    }
    return complete;
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
    if (a.networks > 0) {
        if (!a.kernels.empty() || a.isolated || a.no_profile)
            raise<config_error>(
                "device extrapolate: --networks judges kernels by their profiled times inside whole "
                "networks; it takes no --kernels, --isolated or --no-profile");
        return run_networks(a, models, samples_path);
    }
    std::vector<Kernel> kernels;
    std::size_t not_rebuilt = 0, too_large = 0;
    if (!a.kernels.empty())
        kernels = listed_kernels(a.kernels, rules, !a.isolated);
    else
        kernels = grown_kernels(a, rules, samples_path, not_rebuilt, too_large);
    // every graph to price and measure: the grown kernels', then their edges'
    std::vector<const device::KernelSample*> todo;
    std::map<std::string, std::size_t> at;  // graph key -> index in todo (two kernels may share an edge)
    const auto add = [&](const device::KernelSample& s) {
        if (at.emplace(s.key, todo.size()).second) todo.push_back(&s);
    };
    for (const auto& k : kernels) add(k.sample);
    for (const auto& k : kernels)
        if (k.edge) add(*k.edge);
    std::vector<const graph::Graph*> graphs;
    for (const auto* s : todo) graphs.push_back(&s->graph);
    // each model's price of every network, and of its kernel
    std::vector<std::vector<double>> net_price(models.size()), kernel_price(models.size());
    std::vector<std::size_t> index_in;  // of each graph's own kernel among its kernels
    for (const auto* s : todo) index_in.push_back(kernel_index(*s, rules));
    for (std::size_t m = 0; m < models.size(); ++m) {
        const auto prices = models[m]->price_networks(graphs);
        for (std::size_t i = 0; i < prices.size(); ++i) {
            net_price[m].push_back(prices[i].total_ms);
            kernel_price[m].push_back(prices[i].kernels.at(index_in[i]).ms);
        }
    }
    std::map<std::string, Measured> measured;
    std::size_t failed = 0;
    device::Disturbance disturbance;
    if (!a.plan) {
        measured = measure(a, todo, rules, models.front()->run_overhead_ms(), work_dir(a), failed, disturbance);
        warn_if_disturbed(disturbance);
    }
    const auto measured_of = [&](const device::KernelSample& s) {
        const auto it = measured.find(s.key);
        return it == measured.end() ? Measured{} : it->second;
    };
    // judged by the kernels' own times where every one has one (or, planning, will have)
    bool by_kernel = a.plan ? !a.isolated && !a.no_profile : !measured.empty();
    for (const auto* s : todo) by_kernel = by_kernel && (a.plan || std::isfinite(measured_of(*s).kernel_ms));
    const std::string judged = by_kernel ? "kernel" : "network";
    const auto time_of = [&](const Measured& t) { return by_kernel ? t.kernel_ms : t.network_ms; };
    const auto price_of = [&](std::size_t m, const device::KernelSample& s) {
        const auto i = at.at(s.key);
        return by_kernel ? kernel_price[m][i] : net_price[m][i];
    };

    const double nan = std::numeric_limits<double>::quiet_NaN();
    const auto finite_or_null = [](double v) { return std::isfinite(v) ? json(v) : json(nullptr); };
    json rows = json::array();
    std::vector<double> meas, net_meas;
    // each edge measured here over its sample's time in the build: how near this harness comes to
    // the context the samples were measured in (a sample of a profiled network is a kernel's own
    // time, so only when judged by kernel)
    std::vector<double> edge_over_sample;
    std::vector<std::vector<double>> pred(models.size()), net_pred(models.size()), from_edge(models.size());
    for (const auto& k : kernels) {
        const auto& c = k.sample.config;
        const auto t = measured_of(k.sample);
        json row{{"kind", c.kind},
                 {"key", k.sample.key},
                 {"grown_from", k.from_key},
                 {"config", config_json(c)},
                 {"flops", k.flops},
                 {"family_max_flops", k.family_max},
                 {"flops_ratio", k.family_max > 0 ? json(k.flops / k.family_max) : json(nullptr)}};
        row["measured_ms"] = finite_or_null(time_of(t));
        row["network_measured_ms"] = finite_or_null(t.network_ms);
        meas.push_back(time_of(t));
        net_meas.push_back(t.network_ms);
        const auto e = k.edge ? measured_of(*k.edge) : Measured{};
        json p = json::object(), np = json::object(), fe = json::object(), ep = json::object();
        for (std::size_t m = 0; m < models.size(); ++m) {
            const double price = price_of(m, k.sample);
            p[a.models[m]] = price;
            np[a.models[m]] = net_price[m][at.at(k.sample.key)];
            pred[m].push_back(price);
            net_pred[m].push_back(np[a.models[m]].get<double>());
            // the grown kernel priced from its edge's measured time, grown as the model grows it
            const double edge_price = k.edge ? price_of(m, *k.edge) : nan;
            const double anchored = time_of(e) * price / edge_price;
            from_edge[m].push_back(anchored);
            fe[a.models[m]] = finite_or_null(anchored);
            ep[a.models[m]] = finite_or_null(edge_price);
        }
        row["predicted_ms"] = std::move(p);
        row["network_predicted_ms"] = std::move(np);
        const double over_sample = by_kernel ? time_of(e) / k.from_ms : nan;
        if (std::isfinite(over_sample) && over_sample > 0) edge_over_sample.push_back(over_sample);
        if (k.edge)
            row["edge"] = {{"key", k.edge->key},
                           {"config", config_json(k.edge->config)},
                           {"measured_ms", finite_or_null(time_of(e))},
                           {"sample_ms", finite_or_null(k.from_ms)},
                           {"predicted_ms", std::move(ep)},
                           {"grown_from_edge_ms", std::move(fe)}};
        rows.push_back(std::move(row));
    }
    std::size_t measured_kernels = 0;
    for (double v : meas) measured_kernels += std::isfinite(v) ? 1 : 0;
    json against_sample = nullptr;
    if (!edge_over_sample.empty()) {
        std::sort(edge_over_sample.begin(), edge_over_sample.end());
        against_sample = {{"edges", edge_over_sample.size()},
                          {"median", median_high(edge_over_sample)},
                          {"min", edge_over_sample.front()},
                          {"max", edge_over_sample.back()}};
    }
    const bool complete = a.plan || (failed == 0 && measured_kernels == kernels.size());
    if (a.json_out) {
        print_json({{"models", a.models},
                    {"samples", a.kernels.empty() ? samples_path.string() : std::string()},
                    {"kernels_from", a.kernels},
                    {"device", rules.device},
                    {"runners", a.runners},
                    {"factor", a.factor},
                    {"plan", a.plan},
                    {"in_network", !a.isolated},
                    {"judged", judged},
                    {"kernels", rows},
                    {"not_rebuilt", not_rebuilt},
                    {"too_large", too_large},
                    {"measured", measured_kernels},
                    {"failed", failed},
                    {"disturbed", disturbance.disturbed > 0 ? json(disturbance.summary()) : json(nullptr)},
                    {"summary", accuracy(a.models, pred, meas)},
                    {"network_summary", accuracy(a.models, net_pred, net_meas)},
                    {"from_edge_summary", accuracy(a.models, from_edge, meas)},
                    {"edge_against_sample", against_sample}});
        return complete;
    }
    std::cout << (by_kernel ? "each kernel's own time in its network's profile" : "each network's latency")
              << ", ms; 'from edge': the model's growth from the kernel it was grown from, measured beside it\n";
    std::cout << std::left << std::setw(18) << "kind" << std::setw(26) << "n c h w -> k" << std::right << std::setw(8)
              << "FLOPs x" << std::setw(12) << "measured";
    for (std::size_t m = 0; m < models.size(); ++m)
        std::cout << std::setw(12) << ("model " + std::to_string(m + 1)) << std::setw(12) << "from edge";
    std::cout << '\n';
    for (std::size_t i = 0; i < kernels.size(); ++i) {
        const auto& k = kernels[i];
        const auto& c = k.sample.config;
        std::cout << std::left << std::setw(18) << c.kind << std::setw(26)
                  << (std::to_string(c.n) + " " + std::to_string(c.c) + " " + std::to_string(c.h) + " " +
                      std::to_string(c.w) + " -> " + std::to_string(c.k))
                  << std::right << std::setw(8) << std::setprecision(3)
                  << (k.family_max > 0 ? dnncost::concat(std::setprecision(3), k.flops / k.family_max) : "-")
                  << std::setw(12) << (std::isfinite(meas[i]) ? std::to_string(meas[i]) : std::string("-"));
        for (std::size_t m = 0; m < models.size(); ++m)
            std::cout << std::setw(12) << pred[m][i] << std::setw(12)
                      << (std::isfinite(from_edge[m][i]) ? std::to_string(from_edge[m][i]) : std::string("-"));
        std::cout << '\n';
    }
    const auto line = [](const json& acc, const std::string& name) {
        if (!acc.contains(name)) return std::string();
        return "MAPE " + percent(acc[name]["mape"].get<double>()) + ", within 20 % " +
               percent(acc[name]["within_20"].get<double>());
    };
    const auto acc = accuracy(a.models, pred, meas), acc_edge = accuracy(a.models, from_edge, meas),
               acc_net = accuracy(a.models, net_pred, net_meas);
    for (std::size_t m = 0; m < models.size(); ++m) {
        std::cout << "model " << m + 1 << ": " << a.models[m];
        if (acc.contains(a.models[m])) std::cout << ": " << line(acc, a.models[m]);
        if (acc_edge.contains(a.models[m])) std::cout << "; from edge: " << line(acc_edge, a.models[m]);
        if (by_kernel && acc_net.contains(a.models[m])) std::cout << "; whole networks: " << line(acc_net, a.models[m]);
        std::cout << '\n';
    }
    if (!against_sample.is_null())
        std::cout << "edges here over their samples in the build (" << against_sample["edges"].get<std::size_t>()
                  << "): median " << std::setprecision(3) << against_sample["median"].get<double>() << ", "
                  << against_sample["min"].get<double>() << " to " << against_sample["max"].get<double>() << '\n';
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
    cmd->add_option("--networks", a->networks,
                    "Rather than growing single kernels, profile this many whole networks larger than the build's "
                    "(convolutional ones at twice the resolution, transformers at four times the tokens) and judge "
                    "each of their kernels larger than every sample of its family")
        ->transform(check::integer(1, 1000, "a count in [1, 1000]"));
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
    cmd->add_flag("--no-profile", a->no_profile,
                  "Inside a network, judge each kernel by the network's latency rather than by its own time in the "
                  "runtime's profile (what a runner that cannot profile gives)");
    a->flags.add_to(*cmd, {});
    add_json_flag(*cmd, a->json_out);
    cmd->callback([a, &ctx] { ctx.exit_code = dx::run(*a) ? 0 : 3; });
}

}  // namespace dnncost::cli
