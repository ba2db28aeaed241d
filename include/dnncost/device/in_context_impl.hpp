#pragma once
/// @file in_context_impl.hpp
/// The definitions of in_context.hpp: compiled once into dnncost::compiled in compiled mode
/// (core/config.hpp), included by in_context.hpp in header-only mode.
#include <algorithm>
#include <cmath>

#include <dnncost/device/in_context.hpp>
#include <dnncost/device/kernel_features.hpp>
#include <dnncost/device/kernel_graph.hpp>

DNNCOST_FUNC auto dnncost::device::in_context_samples(const graph::Graph& g, const std::string& key,
                                                      const FusionRules& rules,
                                                      const std::vector<measure::RuntimeKernel>& kernels,
                                                      const std::vector<measure::RuntimeNode>& nodes, double latency_ms,
                                                      double run_overhead_ms) -> InContextSamples {
    if (!(std::isfinite(latency_ms) && latency_ms >= 0) || !(std::isfinite(run_overhead_ms) && run_overhead_ms >= 0))
        raise<config_error>("in-context samples of '", g.name(), "': latency ", latency_ms, " ms and run overhead ",
                            run_overhead_ms, " ms must be finite and >= 0");
    InContextSamples out;
    for (const auto& k : kernels) out.profiled_ms += k.ms;
    if (!(out.profiled_ms > 0) || !std::isfinite(out.profiled_ms))
        raise<config_error>("in-context samples of '", g.name(), "': its profile's ", kernels.size(),
                            " kernels add up to ", out.profiled_ms, " ms");
    out.scale = std::max(latency_ms - run_overhead_ms, 0.1 * latency_ms) / out.profiled_ms;
    const auto kg = kernel_graph(g, rules);
    const auto check = check_kernels(g, kg, kernels, nodes);
    out.pass_kernels = kg.kernels.size();
    // a pass kernel no runtime kernel ran was fused by the runtime into a consumer's kernel (as
    // check_kernels reports it): that consumer's time holds its work too
    std::vector<char> merged(kg.kernels.size(), 0);
    for (std::size_t k = 0; k < kg.kernels.size(); ++k) {
        if (!check.runtime_of[k].empty()) continue;
        for (const auto& e : kg.edges)
            if (e.src == static_cast<int>(k) && !check.runtime_of[static_cast<std::size_t>(e.dst)].empty()) {
                merged[static_cast<std::size_t>(e.dst)] = 1;
                break;
            }
    }
    for (std::size_t k = 0; k < kg.kernels.size(); ++k) {
        const auto& ran = check.runtime_of[k];
        if (ran.empty()) {
            ++out.unmapped;
            continue;
        }
        if (merged[k]) {
            ++out.merged;
            continue;
        }
        double ms = 0;
        for (const auto r : ran) ms += kernels[r].ms;
        if (!(ms > 0)) {
            ++out.untimed;
            continue;
        }
        auto f = kernel_features(g, kg, k, rules.layout.block);
        KernelRow row;
        row.kind = f.kind.key;
        row.key = key + "#" + std::to_string(k);
        row.features = std::move(f.values);
        row.latency_ms = ms * out.scale;
        out.sampled_ms += ms;
        row.in_context = true;
        out.rows.push_back(std::move(row));
    }
    return out;
}
