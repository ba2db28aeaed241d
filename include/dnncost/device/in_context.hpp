#pragma once
/// @file in_context.hpp
/// Kernel samples in context: the kernels of a whole network as its runtime ran them. A profiled
/// run (runner_protocol.hpp: the runtime's kernels with their times, and the nodes of its
/// optimised graph) is mapped onto the kernel pass's kernels (check_kernels, kernel_check.hpp);
/// every pass kernel that runtime kernels ran gives one sample: its kind and features
/// (device/kernel_features.hpp) and the time of those runtime kernels. Such a time holds what a
/// model of one kernel cannot show: the caches, layouts and threads its neighbours leave it.
///
/// The profiler slows the runs it records in two ways: every kernel it times takes a few
/// microseconds more (its own bookkeeping, inside the timed span), and the whole run a little
/// longer. The first is removed kernel by kernel (ProfilerCost, fitted across the profiled
/// networks: without it the many small kernels of a small network would be priced as if each
/// carried the profiler); then the times are scaled until the profile's kernels, all of them, add
/// up with the run overhead to the network's unprofiled latency:
/// scale = (latency - overhead) / (sum of the profile's times less the per-kernel cost), the
/// numerator never below a tenth of the latency (as DeviceModel::kernel_time keeps a single-kernel
/// sample's). Pass kernels no runtime kernel ran are skipped and counted, and so is the consumer
/// the runtime fused such a kernel into (its time is not its own). Needs the `dnncost::onnx`
/// target.
#include <algorithm>
#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include <dnncost/core/config.hpp>
#include <dnncost/device/fusion_rules.hpp>
#include <dnncost/device/kernel_check.hpp>
#include <dnncost/device/kernel_sampling.hpp>
#include <dnncost/graph/graph.hpp>
#include <dnncost/measure/runner_protocol.hpp>

namespace dnncost::device {

/// What the profiler adds to the times it records: a kernel that runs t ms alone is profiled as
/// about factor * t + per_kernel_ms. Fitted across profiled networks (fit_profiler_cost); the
/// default removes nothing.
struct ProfilerCost {
    double per_kernel_ms = 0;
    double factor = 1;
    std::size_t networks = 0;  ///< networks the fit used; 0: not fitted
    /// A runtime kernel's profiled time less the per-kernel cost, never below a tenth of it
    /// (a kernel profiled at less than the cost did run, briefly).
    double net_ms(double profiled_ms) const { return std::max(profiled_ms - per_kernel_ms, 0.1 * profiled_ms); }
};

/// One profiled network's totals: its profile's kernel times added up, how many kernels it has,
/// and its unprofiled latency.
struct ProfiledTotals {
    double profiled_ms = 0;
    std::size_t kernels = 0;
    double latency_ms = 0;
};

/// The profiler's cost from networks profiled and measured on one device: the profiled kernel
/// sum P of a network of n kernels and unprofiled latency L is P = factor * (L - overhead) +
/// per_kernel_ms * n, fitted by least absolute relative error (a disturbed network does not pull
/// the fit), with per_kernel_ms >= 0 and below every network's mean kernel time (at most 0.9 of
/// the smallest). Networks whose kernel counts do not span a factor of two get the factor alone
/// (a per-run difference would pass for a per-kernel cost). Fewer than three usable networks, or
/// networks that all have the same kernels per millisecond, leave the cost unfitted (nothing is
/// removed).
DNNCOST_FUNC ProfilerCost fit_profiler_cost(std::span<const ProfiledTotals> networks, double run_overhead_ms);

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
    double profiler_ms = 0;   ///< of them, the profiler's per-kernel cost (ProfilerCost), removed
    /// Of the rest, the times in the samples (before scaling): the others ran in kernels the pass
    /// has no sample of (reorders and kernels the runtime inserted, skipped kernels).
    double sampled_ms = 0;
    double scale = 1;  ///< the factor every kernel time was multiplied by
};

/// The in-context samples of network `g` (store key `key`) under `rules`, from its profile
/// (`kernels` in execution order, `nodes` of the optimised graph; see check_kernels) and its
/// unprofiled latency, less `profiler`'s per-kernel cost.
/// @throws config_error for a latency or overhead that is not finite and >= 0, or a profile whose
/// kernel times add up to no time
DNNCOST_FUNC InContextSamples in_context_samples(const graph::Graph& g, const std::string& key,
                                                 const FusionRules& rules,
                                                 const std::vector<measure::RuntimeKernel>& kernels,
                                                 const std::vector<measure::RuntimeNode>& nodes, double latency_ms,
                                                 double run_overhead_ms, const ProfilerCost& profiler = {});

}  // namespace dnncost::device

#if !defined(DNNCOST_COMPILED)
#include <dnncost/device/in_context_impl.hpp>
#endif
