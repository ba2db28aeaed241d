#pragma once
/// @file sample_boundary.hpp
/// What a single-kernel sample pays that the same kernel inside a network does not. A sample is
/// a whole model: the runtime copies its output out to the caller, and under a blocked layout
/// (NCHWc) it reorders the input into the block layout and the output back. Inside a network
/// the output stays in the runtime's arena and neighbouring blocked kernels pass blocked tensors
/// on, so a sum of sample latencies over-prices a network of many small kernels most.
///
/// The model is linear: a kernel's in-network time is its sample time less
///   ms_per_kernel + ms_per_output_mb · output MB + ms_per_reorder_mb · (input + output MB of a
///   blocked kernel),
/// never less than keep_share of the sample time. The byte counts are bounded by the largest a
/// kernel of the fitted networks had: past them the rates are not known to hold (a rate fitted on
/// small networks, taken per megabyte of a kernel forty times larger, takes off a share of its time
/// no fitted network showed), so a larger kernel loses what the largest fitted one did.
/// ms_per_kernel is what a run of one kernel costs beyond the run overhead measured once per device
/// (its own launch and bookkeeping). The three rates are not measured kernel by kernel; they are
/// fitted to whole networks measured on the device, by minimising the error of log(measured /
/// predicted) (fit_sample_boundary): three physical parameters that carry from small networks to
/// large ones, where a learnt residual would not. A scale fitted beside them (BoundaryScale::free)
/// would not carry: the rates take almost nothing off a large network, so a scale that small
/// networks ask for is all it gets. A model whose kernels are priced from in-context samples
/// (profiled inside whole networks) has no sample edges to remove: rates fitted to it take time off
/// by output size where the networks differ from its samples in level, which can distort large
/// networks. A scale alone (BoundaryScale::alone) fits such a model's level and keeps the kernel
/// sum's shape; the level of the networks it is fitted to is the level of the minutes they were
/// measured in, which a machine need not keep.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <span>
#include <utility>
#include <vector>

#include <dnncost/core/error.hpp>

namespace dnncost::device {

/// The costs of a sample's edges: per kernel, and per 2^20 bytes.
struct SampleBoundaryCost {
    double ms_per_kernel = 0;      ///< one kernel's own run cost beyond the device's run overhead
    double ms_per_output_mb = 0;   ///< the output copied out of the runtime
    double ms_per_reorder_mb = 0;  ///< a blocked kernel's input and output reordered at the sample's edges
    /// The most output and reordered MB a kernel is charged for: the largest of the networks the
    /// rates were fitted to (unbounded in models written before the bound).
    double max_output_mb = std::numeric_limits<double>::infinity();
    double max_reorder_mb = std::numeric_limits<double>::infinity();
    /// A kernel keeps at least this share of its sample time: the rates are averages, and a
    /// kernel whose sample was nearly all edge must not become free.
    static constexpr double keep_share = 0.1;
    /// The rates' megabyte, in bytes.
    static constexpr double bytes_per_mb = 1024.0 * 1024.0;

    bool is_zero() const { return ms_per_kernel == 0 && ms_per_output_mb == 0 && ms_per_reorder_mb == 0; }

    /// The in-network time of a kernel whose sample regressor says `sample_ms`.
    double in_network_ms(double sample_ms, double output_bytes, double reorder_bytes) const {
        const double edge = ms_per_kernel + ms_per_output_mb * std::min(output_bytes / bytes_per_mb, max_output_mb) +
                            ms_per_reorder_mb * std::min(reorder_bytes / bytes_per_mb, max_reorder_mb);
        return std::max(sample_ms - edge, keep_share * sample_ms);
    }
};

/// One kernel of a network as the fit reads it.
struct BoundaryKernel {
    double sample_ms = 0;      ///< the kernel regressor's figure
    double output_bytes = 0;   ///< bytes the kernel writes
    double reorder_bytes = 0;  ///< input + output bytes of a blocked kernel, 0 otherwise
};

/// One measured network as the fit reads it.
struct BoundaryNetwork {
    std::vector<BoundaryKernel> kernels;
    double overhead_ms = 0;  ///< the run overhead, paid once
    double measured_ms = 0;
};

struct SampleBoundaryFit {
    SampleBoundaryCost cost;
    double scale = 1;           ///< free, alone: exp(mean log(measured / predicted)) at the fitted rates
    double rms_log_zero = 0;    ///< the error minimised (spread about the mean, or root mean square), no rates
    double rms_log_fitted = 0;  ///< the same with the fitted rates
};

namespace detail {

inline double boundary_predicted_ms(const BoundaryNetwork& n, const SampleBoundaryCost& c) {
    double sum = n.overhead_ms;
    for (const auto& k : n.kernels) sum += c.in_network_ms(k.sample_ms, k.output_bytes, k.reorder_bytes);
    return sum;
}

/// Root mean square of log(measured / (scale · predicted)): the error at a given scale.
inline double boundary_log_rms(std::span<const BoundaryNetwork> nets, const SampleBoundaryCost& c, double scale) {
    double ss = 0;
    for (const auto& n : nets) {
        const double r = std::log(n.measured_ms / (scale * boundary_predicted_ms(n, c)));
        ss += r * r;
    }
    return std::sqrt(ss / static_cast<double>(nets.size()));
}

/// Spread (root mean square about the mean) of log(measured / predicted), and the mean.
inline std::pair<double, double> boundary_log_spread(std::span<const BoundaryNetwork> nets,
                                                     const SampleBoundaryCost& c) {
    double mean = 0;
    std::vector<double> r;
    r.reserve(nets.size());
    for (const auto& n : nets) {
        r.push_back(std::log(n.measured_ms / boundary_predicted_ms(n, c)));
        mean += r.back();
    }
    mean /= static_cast<double>(r.size());
    double ss = 0;
    for (double x : r) ss += (x - mean) * (x - mean);
    return {std::sqrt(ss / static_cast<double>(r.size())), mean};
}

}  // namespace detail

/// What the boundary fit does with the networks' overall level.
enum class BoundaryScale {
    free,  ///< a scale fitted with the rates: the spread about the mean is minimised
    one,   ///< no scale: the error itself is minimised, so large kernels keep their regressors' price
    alone, ///< a scale and no rates: exp(mean log(measured / kernel sum)), every network's shape kept
};

/// Fits the three rates (>= 0), and with BoundaryScale::free a scale, to measured networks: a grid
/// over the rates (zero, and geometric ranges: 1e-5 to 0.1 ms per kernel, 0.001 to 30 ms/MB),
/// then a pattern search (one and two rates at a time) from each of the grid's best local minima.
/// BoundaryScale::alone fits the scale and leaves the rates at zero.
/// @throws config_error for fewer than 3 networks, a network without kernels, or a latency or
///         kernel figure that is not finite and positive
inline SampleBoundaryFit fit_sample_boundary(std::span<const BoundaryNetwork> nets, BoundaryScale level) {
    if (nets.size() < 3)
        raise<config_error>("sample boundary fit: needs at least 3 measured networks, got ", nets.size());
    for (std::size_t i = 0; i < nets.size(); ++i) {
        const auto& n = nets[i];
        if (n.kernels.empty()) raise<config_error>("sample boundary fit: network ", i + 1, " has no kernels");
        if (!(std::isfinite(n.measured_ms) && n.measured_ms > 0))
            raise<config_error>("sample boundary fit: network ", i + 1, " has latency ", n.measured_ms, " ms");
        if (!(std::isfinite(n.overhead_ms) && n.overhead_ms >= 0))
            raise<config_error>("sample boundary fit: network ", i + 1, " has overhead ", n.overhead_ms, " ms");
        for (const auto& k : n.kernels)
            if (!(std::isfinite(k.sample_ms) && k.sample_ms > 0 && std::isfinite(k.output_bytes) &&
                  k.output_bytes >= 0 && std::isfinite(k.reorder_bytes) && k.reorder_bytes >= 0))
                raise<config_error>("sample boundary fit: network ", i + 1, " has a kernel of ", k.sample_ms, " ms, ",
                                    k.output_bytes, " output bytes, ", k.reorder_bytes, " reorder bytes");
    }
    if (level == BoundaryScale::alone) {
        SampleBoundaryFit f;
        f.rms_log_zero = detail::boundary_log_rms(nets, {}, 1.0);
        f.scale = std::exp(detail::boundary_log_spread(nets, {}).second);
        f.rms_log_fitted = detail::boundary_log_rms(nets, {}, f.scale);
        return f;
    }
    const auto geometric = [](double lo, double hi, int points) {
        std::vector<double> g{0.0};
        for (int i = 0; i < points; ++i) g.push_back(lo * std::pow(hi / lo, i / double(points - 1)));
        return g;
    };
    const auto per_kernel = geometric(1e-5, 0.1, 17), per_mb = geometric(1e-3, 30.0, 19);
    constexpr std::size_t max_starts = 4;  // local minima of the grid refined
    const auto error = [&](const SampleBoundaryCost& c) {
        return level == BoundaryScale::free ? detail::boundary_log_spread(nets, c).first
                                            : detail::boundary_log_rms(nets, c, 1.0);
    };
    SampleBoundaryFit best;
    best.rms_log_zero = error({});
    const std::size_t nk = per_kernel.size(), nm = per_mb.size();
    const auto at = [&](std::size_t i, std::size_t j, std::size_t l) { return (i * nm + j) * nm + l; };
    std::vector<double> grid(nk * nm * nm);
    for (std::size_t i = 0; i < nk; ++i)
        for (std::size_t j = 0; j < nm; ++j)
            for (std::size_t l = 0; l < nm; ++l) grid[at(i, j, l)] = error({per_kernel[i], per_mb[j], per_mb[l]});
    // the grid's local minima, best first: the rates meet the keep-share floor kernel by kernel,
    // so the error is not convex and a refinement from the best grid point alone can stop in the
    // wrong valley
    std::vector<std::pair<double, SampleBoundaryCost>> starts;
    for (std::size_t i = 0; i < nk; ++i)
        for (std::size_t j = 0; j < nm; ++j)
            for (std::size_t l = 0; l < nm; ++l) {
                const double e = grid[at(i, j, l)];
                bool least = true;
                for (int di = -1; di <= 1 && least; ++di)
                    for (int dj = -1; dj <= 1 && least; ++dj)
                        for (int dl = -1; dl <= 1 && least; ++dl) {
                            const auto ii = std::ptrdiff_t(i) + di, jj = std::ptrdiff_t(j) + dj,
                                       ll = std::ptrdiff_t(l) + dl;
                            if (ii < 0 || jj < 0 || ll < 0 || ii >= std::ptrdiff_t(nk) || jj >= std::ptrdiff_t(nm) ||
                                ll >= std::ptrdiff_t(nm))
                                continue;
                            least = grid[at(std::size_t(ii), std::size_t(jj), std::size_t(ll))] >= e;
                        }
                if (least) starts.push_back({e, {per_kernel[i], per_mb[j], per_mb[l]}});
            }
    // a rate the networks do not depend on (no blocked kernels: the reorder rate) makes plateaus
    // of equal minima; one start each, the first in the grid's order (that rate at zero)
    std::stable_sort(starts.begin(), starts.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    starts.erase(std::unique(starts.begin(), starts.end(),
                             [](const auto& a, const auto& b) { return b.first <= a.first * (1 + 1e-12); }),
                 starts.end());
    if (starts.size() > max_starts) starts.resize(max_starts);
    // refine around each start, one rate at a time and two together (the per-kernel and per-byte
    // rates trade against each other along a narrow valley), halving the steps when no move helps
    const auto rate = [](SampleBoundaryCost& c, int axis) -> double& {
        return axis == 0 ? c.ms_per_kernel : axis == 1 ? c.ms_per_output_mb : c.ms_per_reorder_mb;
    };
    static constexpr int moves[][3] = {{1, 0, 0},  {-1, 0, 0},  {0, 1, 0},  {0, -1, 0},  {0, 0, 1},  {0, 0, -1},
                                       {1, 1, 0},  {1, -1, 0},  {-1, 1, 0}, {-1, -1, 0}, {1, 0, 1},  {1, 0, -1},
                                       {-1, 0, 1}, {-1, 0, -1}, {0, 1, 1},  {0, 1, -1},  {0, -1, 1}, {0, -1, -1}};
    double best_rms = best.rms_log_zero;
    for (auto [start_rms, c0] : starts) {
        double step[3] = {std::max(c0.ms_per_kernel, 1e-5) * 0.5, std::max(c0.ms_per_output_mb, 1e-3) * 0.5,
                          std::max(c0.ms_per_reorder_mb, 1e-3) * 0.5};
        for (int it = 0; it < 200; ++it) {
            bool moved = false;
            for (const auto& m : moves) {
                auto c = c0;
                for (int axis = 0; axis < 3; ++axis)
                    rate(c, axis) = std::max(0.0, rate(c, axis) + m[axis] * step[axis]);
                const double rms = error(c);
                if (rms < start_rms) {
                    start_rms = rms;
                    c0 = c;
                    moved = true;
                }
            }
            if (!moved)
                for (double& x : step) x *= 0.5;
        }
        if (start_rms < best_rms) {
            best_rms = start_rms;
            best.cost = c0;
        }
    }
    best.rms_log_fitted = error(best.cost);
    best.scale = level == BoundaryScale::free ? std::exp(detail::boundary_log_spread(nets, best.cost).second) : 1.0;
    // bounds at the fitted networks' largest kernels: inside them the fit above is unchanged
    constexpr double mb = SampleBoundaryCost::bytes_per_mb;
    best.cost.max_output_mb = best.cost.max_reorder_mb = 0;
    for (const auto& n : nets)
        for (const auto& k : n.kernels) {
            best.cost.max_output_mb = std::max(best.cost.max_output_mb, k.output_bytes / mb);
            best.cost.max_reorder_mb = std::max(best.cost.max_reorder_mb, k.reorder_bytes / mb);
        }
    return best;
}

}  // namespace dnncost::device
