#pragma once
/// @file kernel_graph_sample_impl.hpp
/// The definitions of kernel_graph_sample.hpp: compiled once into dnncost::compiled in compiled
/// mode (core/config.hpp), included by kernel_graph_sample.hpp in header-only mode.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>
#include <vector>

#include <dnncost/core/config.hpp>
#include <dnncost/core/error.hpp>
#include <dnncost/device/kernel_features.hpp>
#include <dnncost/device/kernel_graph.hpp>
#include <dnncost/device/kernel_graph_sample.hpp>
#include <dnncost/graph/graph.hpp>

namespace dnncost::device {

DNNCOST_FUNC KernelGraphSample make_kernel_graph_sample(const graph::Graph& g, const KernelGraph& kg,
                                                        std::int64_t block, std::span<const double> kernel_ms,
                                                        double overhead_ms) {
    const std::size_t n = kg.kernels.size();
    if (kernel_ms.size() != n)
        raise<shape_error>("make_kernel_graph_sample: graph '", g.name(), "': ", kernel_ms.size(),
                           " kernel latencies for ", n, " kernels");
    if (!(std::isfinite(overhead_ms) && overhead_ms >= 0))
        raise<config_error>("make_kernel_graph_sample: graph '", g.name(), "': overhead ", overhead_ms,
                            " ms is not a finite non-negative latency");
    KernelGraphSample s;
    s.kernel_ms.assign(kernel_ms.begin(), kernel_ms.end());
    s.sum_ms = overhead_ms;
    for (std::size_t k = 0; k < n; ++k) {
        const double ms = kernel_ms[k];
        if (!(std::isfinite(ms) && ms > 0))
            raise<config_error>("make_kernel_graph_sample: graph '", g.name(), "': kernel ", k, " (",
                                kg.kernels[k].kind, ") has latency ", ms, " ms, not positive and finite");
        const auto f = kernel_features(g, kg, k, block);
        if (k == 0) s.features.resize(static_cast<Index>(n), static_cast<Index>(f.values.size()) + 1);
        for (std::size_t j = 0; j < f.values.size(); ++j)
            s.features(static_cast<Index>(k), static_cast<Index>(j)) = f.values[j];
        s.features(static_cast<Index>(k), static_cast<Index>(f.values.size())) = std::log(ms);
        s.sum_ms += ms;
    }
    for (const auto& e : kg.edges) s.edges.emplace_back(e.src, e.dst);
    std::sort(s.edges.begin(), s.edges.end());
    s.edges.erase(std::unique(s.edges.begin(), s.edges.end()), s.edges.end());
    return s;
}

}  // namespace dnncost::device
