#pragma once
/// @file device_build.hpp
/// Building a kernel-level device model (device/device_model.hpp) on a real device, and
/// calibrating one to the machine at hand. Building runs its steps through the runner harness,
/// each resumable from its results store: the fusion and layout rules are discovered by measuring
/// operators alone and together (fusion_probe.hpp, skipped when rules are given); the run overhead
/// is measured on a model that does nearly nothing; then, when the runner profiles, whole networks
/// at real sizes (context_networks()) are profiled and measured, and each of their kernels is a
/// sample in context (network_profiling.hpp, in_context.hpp). Single-kernel samples, drawn from a
/// prior of the given networks and from ranges that cover real networks (kernel_sampling.hpp),
/// fill in the kinds the profiles miss, or are the only source when the runner cannot profile;
/// while time remains, more are drawn where such a kind's held-out error exceeds 10 %. Needs the
/// `dnncost::onnx` target.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <dnncost/core/config.hpp>
#include <dnncost/core/error.hpp>
#include <dnncost/core/rng.hpp>
#include <dnncost/device/device_model.hpp>
#include <dnncost/device/fusion_probe.hpp>
#include <dnncost/device/fusion_rules.hpp>
#include <dnncost/device/kernel_sample_file.hpp>
#include <dnncost/device/kernel_sampler.hpp>
#include <dnncost/device/kernel_sampling.hpp>
#include <dnncost/device/network_profiling.hpp>
#include <dnncost/graph/graph.hpp>
#include <dnncost/graph/hash.hpp>
#include <dnncost/measure/harness.hpp>
#include <dnncost/measure/model_file.hpp>
#include <dnncost/measure/runner_pool.hpp>
#include <dnncost/measure/store.hpp>
#include <dnncost/spaces/registry.hpp>
#include <dnncost/spaces/synthetic.hpp>
#include <dnncost/train/train_data.hpp>
#if !defined(DNNCOST_COMPILED)
// a build fits what it measured (header-only mode; the compiled library has the training)
#include <dnncost/device/device_model_training.hpp>
#endif

namespace dnncost::device {

/// Where a build stands, for a progress line.
struct DeviceBuildProgress {
    std::string step;  ///< "rules", "networks", "kernels", "adaptive round N"
    SamplingProgress sampling;
    double elapsed_seconds = 0;  ///< of the whole build
};

/// Sampling the sizes of real networks' layers: the largest activation of an ImageNet network at
/// batch 1 holds a few million values (112 x 112 x 256), its largest layer about a billion
/// multiply-accumulates; more of the draws come from the prior of real and space networks.
DNNCOST_FUNC KernelSamplerOptions device_sampler_options();

/// Where a build's kernel samples come from.
enum class InContext {
    automatic,  ///< profiled whole networks when the runner profiles, else single kernels
    on,         ///< profiled whole networks; a runner that cannot profile is an error
    off,        ///< single kernels only
};
/// "auto", "on" or "off". @throws config_error for anything else
DNNCOST_FUNC InContext parse_in_context(std::string_view s);

struct DeviceBuildSetup {
    std::vector<std::string> runners;
    std::string device;                       ///< the device's name, in the stores and the rules
    std::filesystem::path work_dir;           ///< stores and model files of every step (resumable)
    std::optional<FusionRules> rules;         ///< given rules: no discovery
    measure::HarnessOptions harness{};        ///< of the kernel samples and the overhead
    measure::HarnessOptions probe_harness{};  ///< of the fusion discovery's graphs
    measure::PoolOptions pool{};
    DiscoveryOptions discovery{};
    KernelSamplerOptions sampler = device_sampler_options();
    DeviceModelOptions model{};
    double budget_minutes = 60;          ///< the whole build; 0: no limit
    std::size_t per_kind = 60;           ///< first draw, per kind
    std::size_t prior_per_space = 30;    ///< networks of each search space in the sampling prior
    std::size_t probe_per_space = 2;     ///< of them, the first ones join the rule discovery's graphs
    std::size_t adaptive_samples = 300;  ///< drawn per adaptive round where the error is large
    int adaptive_rounds = 3;
    InContext in_context = InContext::automatic;
    std::size_t networks = 40;           ///< whole networks profiled (context_networks())
    synthetic::Limits network_limits{};  ///< of the profiled networks
    /// The networks to profile instead of context_networks(networks, seed, network_limits).
    std::vector<graph::Graph> profiled_networks;
    /// Of the budget left after the rules and the overhead, the share the profiled networks may
    /// take; single kernels of the kinds they miss get the rest.
    double network_share = 0.7;
    /// Measure each profiled network's latency twice, a third time where they disagree
    /// (NetworkProfilingSetup::confirm_latency).
    bool confirm_latency = true;
    std::uint64_t seed = 1;
    std::function<void(const DeviceBuildProgress&)> on_progress;
    std::function<double()> clock;  ///< seconds; empty: a steady clock
    bool retake_disturbed = true;   ///< measure the disturbed chunks once more (MeasuringSetup)
};

struct DeviceBuildResult {
    DeviceModel model;
    std::optional<DiscoveryResult> discovery;     ///< when the rules were discovered
    std::vector<std::string> probe_model_errors;  ///< graphs of the discovery that could not be written
    std::size_t samples = 0, measured = 0, over_budget = 0, failed = 0;
    int adaptive_rounds = 0;
    double seconds = 0;
    /// Whether profiled networks were the main source; when they were not in automatic mode,
    /// `in_context_note` says why.
    bool in_context = false;
    std::string in_context_note;
    std::size_t context_samples = 0, isolated_samples = 0;
    std::optional<NetworkProfilingResult> profiling;  ///< the networks' step, when it ran
    std::vector<std::string> isolated_kinds;          ///< kinds sampled alone (all of them without profiles)
    std::vector<std::string> warnings;                ///< what a user should know about the samples
    Disturbance kernel_disturbance;                   ///< how the single kernels' chunks were judged
};

/// The lowest ONNX opset every search space's graphs export at (HardSwish needs 14).
inline int spaces_opset() {
    int opset = 13;
    for (const auto& s : spaces::all_spaces()) opset = std::max(opset, s.onnx_opset);
    return opset;
}

namespace detail {
/// A model that does nearly nothing: one Relu on eight numbers.
DNNCOST_FUNC KernelSample overhead_sample();

inline std::vector<KernelMeasurement> measurements(const std::vector<KernelRow>& rows) {
    std::vector<KernelMeasurement> out;
    out.reserve(rows.size());
    for (const auto& r : rows)
        out.push_back({r.kind, r.features, r.latency_ms, r.in_context, r.in_context ? in_context_network(r.key) : ""});
    return out;
}
}  // namespace detail

/// Build a device model for the device behind `setup.runners`. `graphs` are the networks whose
/// operators the rules are discovered on and whose kernels join the sampling prior (with
/// `prior_per_space` networks of each search space).
/// @throws config_error (no runner, bad options, too few kernels measured), io_error, parse_error
DNNCOST_FUNC DeviceBuildResult build_device_model(const std::vector<graph::Graph>& graphs,
                                                  const DeviceBuildSetup& setup);

/// Fits a device model again to the kernel measurements a build saved in `work_dir`
/// (kernel_samples.json), with other options, measuring nothing.
/// @throws io_error / parse_error naming the file when there is none or it is damaged
inline DeviceModel refit_device_model(const std::filesystem::path& work_dir, const DeviceModelOptions& options) {
    const auto f = read_kernel_sample_file(work_dir / "kernel_samples.json");
    return DeviceModel::build(f.rules, f.samples, f.run_overhead_ms, options);
}

/// The whole networks a build profiles for in-context samples, seeded, at the sizes of deployed
/// networks: synthesised convolutional networks and transformers (spaces/synthetic.hpp; 128-320
/// pixels, up to 576 tokens, up to 4,096 channels, 1,000 classes; at least one in fourteen with
/// parallel branches joined by a concatenation; the other convolutional ones take each block kind
/// in turn) and search-space networks at
/// larger settings (Once-for-All at 160-320 pixels; NB201, FBNet and ViT at batch sizes of 4-32;
/// keyword spotting at batch 1, as it runs). A space network beyond `limits` gives way to a synthesised one; each is
/// named by what it is (its qualified architecture and settings, or its synthetic description).
DNNCOST_FUNC std::vector<graph::Graph> context_networks(std::size_t n, std::uint64_t seed = 2027,
                                                        const synthetic::Limits& limits = {});

/// The multiply-accumulates of one calibration network at most: ten of them measure in about a
/// minute on one core of a server CPU.
inline constexpr std::int64_t calibration_max_macs = 2'000'000'000;

/// The networks `device calibrate` measures, seeded: networks of the sizes users deploy, so that a
/// factor fitted on them carries to the networks priced after. Synthesised convolutional networks
/// of each block kind (plain, bottleneck, inverted with depthwise stages, parallel branches;
/// 128-320 pixels, 1,000 classes; the plain and bottleneck ones as wide as deployed ones end, 384
/// channels and more, 1,024 outputs and more), transformers (up to 576 tokens) and Once-for-All
/// at 224 or 256 pixels, each within calibration_max_macs and named by what it is (its synthetic
/// description, or its qualified architecture and resolution).
DNNCOST_FUNC std::vector<graph::Graph> calibration_networks(std::size_t n, std::uint64_t seed = 2026);

struct DeviceCalibrationSetup {
    std::vector<std::string> runners;
    std::string device;
    std::filesystem::path work_dir;  ///< the shots' store and model files (resumable)
    measure::HarnessOptions harness{};
    measure::PoolOptions pool{};
    std::uint64_t seed = 0;  ///< of the weight values
    measure::HarnessEvents events{};
    /// The opset to write each shot with (a network of the user's at its own); empty: every shot
    /// at spaces_opset().
    std::vector<int> opsets;
    /// Measure the shots once more when the run was disturbed (MeasuringSetup::retake_disturbed).
    bool retake_disturbed = true;
    /// Profile the shots as well (a request with "profile": true each, profile_networks), so that
    /// the family factors can come from their kernels; a runner that cannot profile is found on
    /// the first shot, and the shots are then measured without.
    bool profile = true;
};

struct DeviceCalibrationResult {
    std::vector<std::string> shots;    ///< the networks measured
    std::vector<double> measured_ms;   ///< as measured
    std::vector<double> predicted_ms;  ///< by the model before calibration
    double factor = 1;                 ///< the global factor fitted
    CalibrationReport report;          ///< family factors, cross-validation, whether applied
    /// Whether other processes loaded the machine while the shots were measured (a shot measured
    /// then is slower than the machine is: the factors would carry the load).
    Disturbance disturbance;
    /// The shots' kernels the profiles timed (0: not profiled), and why a shot or the runner gave
    /// none (a line each).
    std::size_t profiled_kernels = 0;
    std::vector<std::string> profile_problems;
};

/// Measure `shots` (networks the caller chose: calibration_networks(), or the user's own) on the
/// machine at hand, profiled unless setup.profile is false, and calibrate the model to them
/// (DeviceModel::calibrate; with their profiled kernels when the runner gave them). Networks that
/// fail to measure are left out; one measured without a profile counts by its latency alone.
/// @throws config_error when no shot could be measured
DNNCOST_FUNC DeviceCalibrationResult calibrate_device_model(DeviceModel& model, const std::vector<graph::Graph>& shots,
                                                            const DeviceCalibrationSetup& setup,
                                                            const CalibrationOptions& options = {});

/// Calibrate on networks already measured on the machine at hand (e.g. a results store of
/// `dnncost measure`): `shots` of them at evenly spaced quantiles of their latency, so that small
/// and large networks both count.
/// @throws config_error when `measured` is empty or a latency is not positive
DNNCOST_FUNC DeviceCalibrationResult calibrate_device_model(DeviceModel& model, const train::TrainData& measured,
                                                            std::size_t shots, const CalibrationOptions& options = {});

}  // namespace dnncost::device

#if !defined(DNNCOST_COMPILED)
#include <dnncost/device/device_build_impl.hpp>
#endif
