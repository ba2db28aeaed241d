#pragma once
/// @file network_profiling.hpp
/// Measuring whole networks for in-context kernel samples (in_context.hpp) on a real device. Each
/// network is written as an ONNX model with seeded weights, profiled once (a request with
/// "profile": true; the runtime's kernels and its optimised graph's nodes go to the kernel file
/// beside the store, kernel_profiles.hpp) and measured without the profiler by the harness (its
/// latency in the results store). Both are resumable: what the store and the kernel file hold is
/// not measured again, and a network's model file is removed once it has both. Networks go in
/// chunks; with a time budget, the time per network so far decides how many more fit.
///
/// Each latency is measured a second time once every network has one, and a third time where the
/// two disagree (NetworkProfilingSetup::confirm_latency); the second store lies beside the first
/// (again_store_path).
///
/// A runner that answers the first profiled request without kernels cannot profile: the run stops
/// there, before any latency is measured, and says so (NetworkProfilingResult::profiles). Needs
/// the `dnncost::onnx` target.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include <dnncost/core/config.hpp>
#include <dnncost/device/fusion_rules.hpp>
#include <dnncost/device/in_context.hpp>
#include <dnncost/device/kernel_sampling.hpp>
#include <dnncost/graph/graph.hpp>
#include <dnncost/measure/harness.hpp>
#include <dnncost/measure/runner_pool.hpp>

namespace dnncost::device {

/// `store` holds the unprofiled latencies, the profiles lie beside it; the harness options are
/// those of the unprofiled rounds, and the profiled request takes their warm-up and repeats.
struct NetworkProfilingSetup : MeasuringSetup {
    std::size_t chunk = 4;  ///< networks profiled and measured at once
    /// A network's scale beyond this factor of the median network's (either way) is profiled
    /// once more; 0: never.
    double profile_disagreement = 1.5;
    /// Measure every network's latency once more after all were measured once (into
    /// again_store_path), and a third time where the two disagree beyond the noise bound
    /// (max(5 %, 3 x the larger spread)), keeping the median. The reference network, measured at
    /// each chunk's start and end, misses a host that slows for a spell between them; the kernels
    /// of a network measured in that spell would be scaled to a latency of another speed. The
    /// main loop keeps time for it within the budget; networks the budget leaves unconfirmed are
    /// counted (NetworkProfilingResult::unconfirmed).
    bool confirm_latency = true;
};

/// The store of the networks' second latencies, beside `store`: "networks.csv" ->
/// "networks.again.csv".
inline std::filesystem::path again_store_path(const std::filesystem::path& store) {
    return store.parent_path() / (store.stem().string() + ".again" + store.extension().string());
}

/// A network that gave samples: how its profile was scaled to its latency (InContextSamples).
struct ProfiledNetwork {
    std::string key, id;
    double latency_ms = 0, profiled_ms = 0, profiler_ms = 0, sampled_ms = 0, scale = 1;
    std::size_t samples = 0, unmapped = 0, merged = 0;
    /// Latencies measured, of which latency_ms is the median: 1 (not confirmed), 2 (they agreed),
    /// 3 (the first two disagreed).
    std::size_t latencies = 1;
};

struct NetworkProfilingResult {
    /// false: the runner answered a profiled request without kernels (it cannot profile), and
    /// nothing else was measured.
    bool profiles = true;
    std::vector<KernelRow> rows;            ///< in-context samples of every network with a latency and a profile
    std::vector<ProfiledNetwork> networks;  ///< those networks, in the order given
    ProfilerCost profiler_cost;             ///< fitted across them, removed from their samples
    std::size_t measured = 0;               ///< latencies measured in this run
    std::size_t profiled = 0;               ///< profiles taken in this run
    std::size_t from_store = 0;             ///< networks the store and the kernel file already held
    std::size_t failed = 0;                 ///< unprofiled measurements that failed (the store has the reasons)
    std::size_t without_profile = 0;        ///< profiled requests that failed or came back without kernels
    std::size_t over_budget = 0;            ///< not measured: the time budget ran out
    /// Profiled again in this run: their profile disagreed with their latency far more than the
    /// other networks' did (a profile disturbed by the host); the second profile is kept.
    std::size_t reprofiled = 0;
    /// Networks whose latency was measured twice (confirm_latency), in this run or before; of
    /// them, those measured a third time (the first two disagreed), one line each in
    /// `disagreements`; and those left with one latency by the budget.
    std::size_t confirmed = 0, latency_disagreed = 0, unconfirmed = 0;
    std::vector<std::string> disagreements;
    std::size_t pass_kernels = 0, unmapped = 0, merged = 0, untimed = 0;  ///< over the networks used (InContextSamples)
    std::vector<std::string> problems;  ///< a line per network without a profile or a model file
    Disturbance disturbance;            ///< the chunks measured while other processes loaded the machine
    double seconds = 0;
};

/// Profile and measure `networks` (keyed by network_key) and return their in-context samples
/// under `rules`, less the profiler's cost fitted across them, scaled with `run_overhead_ms`.
/// A network whose scale (its latency over its profile, the profiler's cost off) is more than
/// profile_disagreement away from the median network's is profiled once more: a profile is one
/// short run, and a host that slowed during it scales every kernel of it wrongly where the
/// slowdown was uneven.
/// @throws config_error (no runner or store, bad options, a store of another device or runners),
/// io_error, parse_error (an existing store or kernel file that is damaged)
DNNCOST_FUNC NetworkProfilingResult profile_networks(const std::vector<graph::Graph>& networks,
                                                     const FusionRules& rules, double run_overhead_ms,
                                                     const NetworkProfilingSetup& setup);

}  // namespace dnncost::device

#if !defined(DNNCOST_COMPILED)
#include <dnncost/device/network_profiling_impl.hpp>
#endif
