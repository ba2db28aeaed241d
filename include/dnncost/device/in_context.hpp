#pragma once
/// @file in_context.hpp
/// Kernel samples in context: the kernels of a whole network as its runtime ran them. A profiled
/// run (runner_protocol.hpp: the runtime's kernels with their times, and the nodes of its
/// optimised graph) is mapped onto the kernel pass's kernels (check_kernels, kernel_check.hpp);
/// every pass kernel that runtime kernels ran gives one sample: its kind and features
/// (device/kernel_features.hpp) and the time of those runtime kernels. Such a time holds what a
/// model of one kernel cannot show: the caches, layouts and threads its neighbours leave it.
///
/// The profiler slows the runs it records, so the times are scaled until the profile's kernels,
/// all of them, add up with the run overhead to the network's unprofiled latency:
/// scale = (latency - overhead) / (sum of the profile's times), the numerator never below a tenth
/// of the latency (as DeviceModel::kernel_time keeps a single-kernel sample's). Pass kernels no
/// runtime kernel ran are skipped and counted, and so is the consumer the runtime fused such a
/// kernel into (its time is not its own). Needs the `dnncost::onnx` target.
#include <cstddef>
#include <string>
#include <vector>

#include <dnncost/core/config.hpp>
#include <dnncost/device/fusion_rules.hpp>
#include <dnncost/device/kernel_check.hpp>
#include <dnncost/device/kernel_sampling.hpp>
#include <dnncost/graph/graph.hpp>
#include <dnncost/measure/runner_protocol.hpp>

namespace dnncost::device {

struct InContextSamples {
    /// One per pass kernel that runtime kernels ran, in the pass's order, keyed
    /// "<network key>#<kernel index>"; `in_context` set, `latency_ms` the scaled time.
    std::vector<KernelRow> rows;
    std::size_t pass_kernels = 0;  ///< of the pass, reorders included
    std::size_t unmapped = 0;      ///< of them, run by no runtime kernel: skipped
    /// Mapped, but their runtime kernel also ran an unmapped producer of theirs (a fusion the
    /// rules miss): skipped, their time not theirs alone.
    std::size_t merged = 0;
    std::size_t untimed = 0;  ///< mapped, but their runtime kernels took no measurable time: skipped
    double profiled_ms = 0;   ///< the profile's kernel times added up, as profiled
    /// Of them, the times in the samples: the rest ran in kernels the pass has no sample of
    /// (reorders and kernels the runtime inserted, skipped kernels).
    double sampled_ms = 0;
    double scale = 1;  ///< the factor every kernel time was multiplied by
};

/// The in-context samples of network `g` (store key `key`) under `rules`, from its profile
/// (`kernels` in execution order, `nodes` of the optimised graph; see check_kernels) and its
/// unprofiled latency.
/// @throws config_error for a latency or overhead that is not finite and >= 0, or a profile whose
/// kernel times add up to no time
DNNCOST_FUNC InContextSamples in_context_samples(const graph::Graph& g, const std::string& key,
                                                 const FusionRules& rules,
                                                 const std::vector<measure::RuntimeKernel>& kernels,
                                                 const std::vector<measure::RuntimeNode>& nodes, double latency_ms,
                                                 double run_overhead_ms);

}  // namespace dnncost::device

#if !defined(DNNCOST_COMPILED)
#include <dnncost/device/in_context_impl.hpp>
#endif
