#pragma once
/// @file kernel_graph_sample.hpp
/// One network as the device model's graph-level residual (kernel_residual.hpp) reads it: its
/// kernels' features and figures, and the edges between its kernels.
///
/// make_kernel_graph_sample is defined in kernel_graph_sample_impl.hpp: compiled into
/// dnncost::compiled in compiled mode (core/config.hpp), included at the end of this header
/// otherwise.
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include <dnncost/core/config.hpp>
#include <dnncost/core/matrix.hpp>
#include <dnncost/device/kernel_graph.hpp>
#include <dnncost/graph/graph.hpp>

namespace dnncost::device {

/// One network as the residual reads it.
struct KernelGraphSample {
    Mat<double> features;                    ///< one row per kernel, any fixed number of columns
    std::vector<double> kernel_ms;           ///< per-kernel predictions of the kernel regressors (ms, > 0)
    std::vector<std::pair<int, int>> edges;  ///< producer kernel index -> consumer kernel index
    double sum_ms = 0;                       ///< the additive path: sum of kernel_ms plus the run overhead
};

/// The sample of graph `g` from its kernel graph: one row per kernel (reorders included), the
/// row being device::kernel_features(g, kg, k, block).values with log(kernel_ms[k]) appended;
/// the kernel graph's edges, one per (producer, consumer) pair; sum_ms = overhead_ms + sum of
/// kernel_ms.
/// @throws shape_error when kernel_ms.size() != kg.kernels.size(); config_error for a kernel_ms
///         that is not positive and finite, or an overhead that is negative or not finite
DNNCOST_FUNC KernelGraphSample make_kernel_graph_sample(const graph::Graph& g, const KernelGraph& kg,
                                                        std::int64_t block, std::span<const double> kernel_ms,
                                                        double overhead_ms);

}  // namespace dnncost::device

#if !defined(DNNCOST_COMPILED)
#include <dnncost/device/kernel_graph_sample_impl.hpp>
#endif
