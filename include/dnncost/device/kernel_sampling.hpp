#pragma once
/// @file kernel_sampling.hpp
/// Measuring kernel samples (device/kernel_sampler.hpp) on a real device: each sample's graph is
/// written as an ONNX model with seeded weights and measured by the harness into a results store
/// under its canonical hash, so a run that was interrupted, or is repeated with more samples,
/// measures only what the store lacks. Measuring goes in chunks; with a time budget, the time per
/// sample measured so far decides how many more fit. The result is one row per measured sample:
/// its kind, its kernel's features (device/kernel_features.hpp) and its latency. Needs the
/// `dnncost::onnx` target.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <dnncost/core/config.hpp>
#include <dnncost/core/error.hpp>
#include <dnncost/device/budgeted_run.hpp>
#include <dnncost/device/fusion_rules.hpp>
#include <dnncost/device/kernel_features.hpp>
#include <dnncost/device/kernel_graph.hpp>
#include <dnncost/device/kernel_sampler.hpp>
#include <dnncost/measure/harness.hpp>
#include <dnncost/measure/model_file.hpp>
#include <dnncost/measure/runner_pool.hpp>
#include <dnncost/measure/store.hpp>

namespace dnncost::device {

/// A measured sample, ready for a per-kind regressor.
struct KernelRow {
    std::string kind;  ///< kind key of the sample's kernel
    std::string key;   ///< the store key (canonical graph hash)
    std::vector<double> features;
    double latency_ms = 0;
    /// Reorder kernels the layout rule put around the sample's kernel: their time is in the
    /// latency too.
    std::size_t reorders = 0;
    /// A kernel of a profiled network (in_context.hpp): `latency_ms` is its own time, without
    /// the run overhead.
    bool in_context = false;
};

struct KernelSamplingSetup : MeasuringSetup {
    std::size_t chunk = 16;  ///< samples handed to the harness at once
};

struct KernelSamplingResult {
    std::vector<KernelRow> rows;  ///< every sample with a result, in sample order
    std::size_t measured = 0;     ///< in this run
    std::size_t from_store = 0;   ///< found in the store
    std::size_t over_budget = 0;  ///< not measured: the time budget ran out
    std::size_t failed = 0;       ///< measurements that failed (the store has the reasons)
    std::vector<std::string> model_errors;
    Disturbance disturbance;  ///< the chunks measured while other processes loaded the machine
    double seconds = 0;
};

/// Measure `samples` (single-kernel graphs under `rules`, or a kernel and its in-network reduction)
/// and return their rows: the features of the sample's kernel, the latency of the whole graph.
/// @throws config_error (no runner or store, bad options, a store of another device or runners,
/// a sample that is not one kernel), io_error, parse_error (an existing file that is not a store)
DNNCOST_FUNC KernelSamplingResult measure_kernel_samples(const std::vector<KernelSample>& samples,
                                                         const FusionRules& rules, const KernelSamplingSetup& setup);

}  // namespace dnncost::device

#if !defined(DNNCOST_COMPILED)
#include <dnncost/device/kernel_sampling_impl.hpp>
#endif
