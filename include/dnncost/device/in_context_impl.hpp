#pragma once
/// @file in_context_impl.hpp
/// The definitions of in_context.hpp: compiled once into dnncost::compiled in compiled mode
/// (core/config.hpp), included by in_context.hpp in header-only mode.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <span>
#include <vector>

#include <dnncost/core/robust_statistics.hpp>
#include <dnncost/device/in_context.hpp>
#include <dnncost/device/kernel_features.hpp>
#include <dnncost/device/kernel_graph.hpp>

DNNCOST_FUNC auto dnncost::device::in_context_samples(const graph::Graph& g, const std::string& key,
                                                      const FusionRules& rules,
                                                      const std::vector<measure::RuntimeKernel>& kernels,
                                                      const std::vector<measure::RuntimeNode>& nodes, double latency_ms,
                                                      double run_overhead_ms, const ProfilerCost& profiler)
    -> InContextSamples {
    if (!(std::isfinite(latency_ms) && latency_ms >= 0) || !(std::isfinite(run_overhead_ms) && run_overhead_ms >= 0))
        raise<config_error>("in-context samples of '", g.name(), "': latency ", latency_ms, " ms and run overhead ",
                            run_overhead_ms, " ms must be finite and >= 0");
    InContextSamples out;
    double net_ms = 0;
    for (const auto& k : kernels) {
        out.profiled_ms += k.ms;
        net_ms += profiler.net_ms(k.ms);
    }
    if (!(out.profiled_ms > 0) || !std::isfinite(out.profiled_ms))
        raise<config_error>("in-context samples of '", g.name(), "': its profile's ", kernels.size(),
                            " kernels add up to ", out.profiled_ms, " ms");
    out.profiler_ms = out.profiled_ms - net_ms;
    out.scale = std::max(latency_ms - run_overhead_ms, 0.1 * latency_ms) / net_ms;
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
        for (const auto r : ran) ms += profiler.net_ms(kernels[r].ms);
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

DNNCOST_FUNC auto dnncost::device::fit_profiler_cost(std::span<const ProfiledTotals> networks, double run_overhead_ms)
    -> ProfilerCost {
    // each network, relative to its profiled sum P: 1 = factor * (L - overhead) / P + cost * n / P
    std::vector<std::array<double, 2>> x;
    double cost_cap = std::numeric_limits<double>::infinity();
    std::size_t fewest_kernels = std::numeric_limits<std::size_t>::max(), most_kernels = 0;  // of those used
    for (const auto& n : networks) {
        const double busy = n.latency_ms - run_overhead_ms;
        if (!(std::isfinite(n.profiled_ms) && n.profiled_ms > 0 && std::isfinite(busy) && busy > 0 && n.kernels > 0))
            continue;
        x.push_back({busy / n.profiled_ms, static_cast<double>(n.kernels) / n.profiled_ms});
        fewest_kernels = std::min(fewest_kernels, n.kernels);
        most_kernels = std::max(most_kernels, n.kernels);
        cost_cap = std::min(cost_cap, 0.9 * n.profiled_ms / static_cast<double>(n.kernels));
    }
    ProfilerCost out;
    if (x.size() < 3) return out;
    // a per-kernel cost shows only across networks of different kernel counts: among networks of
    // about one count, a per-run difference between profiled and unprofiled runs passes for one
    const bool counts_differ = most_kernels >= 2 * fewest_kernels;
    // least absolute deviations by iteratively reweighted least squares (2 x 2 normal equations)
    std::vector<double> w(x.size(), 1.0);
    double a = 1, c = 0;
    bool solved = false;
    for (int it = 0; it < 100; ++it) {
        double s11 = 0, s12 = 0, s22 = 0, b1 = 0, b2 = 0;
        for (std::size_t i = 0; i < x.size(); ++i) {
            s11 += w[i] * x[i][0] * x[i][0];
            s12 += w[i] * x[i][0] * x[i][1];
            s22 += w[i] * x[i][1] * x[i][1];
            b1 += w[i] * x[i][0];
            b2 += w[i] * x[i][1];
        }
        const double det = s11 * s22 - s12 * s12;
        if (!(det > 1e-12 * s11 * s22)) break;  // the networks do not tell the two apart
        a = (b1 * s22 - b2 * s12) / det;
        c = (s11 * b2 - s12 * b1) / det;
        solved = true;
        for (std::size_t i = 0; i < x.size(); ++i)
            w[i] = 1.0 / std::max(std::abs(1.0 - a * x[i][0] - c * x[i][1]), 1e-4);
    }
    if (!solved || !std::isfinite(a) || !std::isfinite(c)) return out;
    if (c < 0 || a <= 0 || !counts_differ) {
        // no per-kernel cost shows: the proportional part alone, its median
        std::vector<double> r;
        for (const auto& xi : x) r.push_back(1.0 / xi[0]);
        a = median_high(r);
        c = 0;
    }
    out.per_kernel_ms = std::min(c, cost_cap);
    out.factor = a;
    out.networks = x.size();
    return out;
}
