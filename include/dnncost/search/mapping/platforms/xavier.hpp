#pragma once
/// @file xavier.hpp
/// An NVIDIA Jetson AGX Xavier-like platform (GPU + DLA sharing a 136.5 GB/s LPDDR4x memory)
/// whose per-block costs reproduce the standalone totals MaGNAS measured for the four ViG-S
/// baselines (Table 2), with the paper's DVFS grid (Table 1). It is a model calibrated on
/// eight published totals, not a measurement of per-block costs; docs/mapping.md explains it.
///
/// Per-block split. Each layer of a block (vig_space.hpp) gets a raw weight on each unit,
///   time:   FLOPs / (peak x eff) + bytes / (136.5 GB/s x eff)
///   energy: FLOPs x energy per FLOP + bytes x 40 pJ / eff
/// with nominal fp16 peaks (GPU 11 TFLOP/s, DLA 2.5 TFLOP/s), 1.0 / 0.4 pJ per FLOP, and
/// efficiencies 1 except on the DLA: 0.25 for gather-class layers (k-NN top-k, neighbour
/// gather and aggregation, which the DLA lacks and TensorRT runs by GPU fallback) and 0.5 for
/// elementwise layers. A block's cost is scale x sum of the weights of its layers, where the
/// layers of graph operator o carry a factor f_o. Per unit and metric, the scale is fixed by
/// the GIN baseline (f_GIN = 1: GIN is a sum and a dense layer, assumed to run at the dense
/// layers' efficiency) and f_o of the other three operators by their own baselines, so all
/// eight totals per metric are met exactly. The totals contain no transfer (standalone).
///
/// Transfers: a block's input or output features (196 x 320 fp16 = 125,440 bytes) cross the
/// shared memory at 136.5 GB/s, 40 pJ per byte.
///
/// DVFS scaling (documented model, not measured): with r = clock / maximum clock of a domain,
/// phi = the block's compute share of its raw time on the unit, lambda = 0.05 (CPU-side
/// dispatch share), sigma = 0.25 (static share of energy at MaxN), kappa = 0.10 (CPU share of
/// energy at MaxN) and the relative voltage v(r) = 0.6 + 0.4 r:
///   t = t_max [(1 - lambda)(phi / r_unit + (1 - phi) / r_emc) + lambda / r_cpu]
///   E = E_max [(1 - sigma - kappa)(phi v(r_unit)^2 + (1 - phi) v(r_emc)^2)
///              + (sigma + kappa r_cpu v(r_cpu)^2) t / t_max]
/// and transfers scale as 1 / r_emc in time and v(r_emc)^2 in energy. Settings are named
/// "cpu<MHz>-gpu<MHz>-emc<MHz>-dla<MHz>"; the first is MaxN (the reference of P).
#include <array>
#include <cmath>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include <dnncost/core/config.hpp>
#include <dnncost/core/error.hpp>
#include <dnncost/search/mapping/platform.hpp>
#include <dnncost/search/mapping/vig_space.hpp>
#include <dnncost/search/mapping/workload.hpp>

namespace dnncost::search::mapping {

/// Standalone totals of MaGNAS Table 2 (ViG-S baselines b0-b3 on the Xavier AGX, MaxN).
struct XavierTable2Row {
    GraphOp op;
    double gpu_ms, dla_ms, gpu_mj, dla_mj;
};
inline constexpr std::array<XavierTable2Row, 4> xavier_table2 = {{
    {GraphOp::max_relative, 25.28, 40.11, 459.44, 224.41},
    {GraphOp::edge_conv, 33.74, 62.11, 770.36, 323.70},
    {GraphOp::graph_sage, 29.57, 57.77, 623.76, 263.48},
    {GraphOp::gin, 22.49, 39.62, 429.07, 214.35},
}};

/// The Xavier-like GPU + DLA platform (see the file comment).
class XavierLikePlatform {
public:
    static constexpr std::size_t gpu = 0, dla = 1;
    static constexpr double memory_bandwidth = 136.5e9;  // B/s
    static constexpr double energy_per_byte = 40e-12;    // J
    static constexpr double dispatch_share = 0.05, static_share = 0.25, cpu_share = 0.10, voltage_floor = 0.6;

    /// Nominal figures of one unit.
    struct Unit {
        const char* name;
        const char* clock_domain;
        double peak_flops;
        double energy_per_flop;
        std::array<double, num_op_classes> efficiency;  // conv, dense, gather, elementwise
    };
    /// Calibrated scales and graph-operator factors (per unit; factors in GraphOp order).
    struct Calibration {
        std::array<double, 2> time_scale{}, energy_scale{};
        std::array<std::array<double, num_graph_ops>, 2> time_factor{}, energy_factor{};
    };

    /// Build the DVFS grid and calibrate on Table 2 (blocks of VigSpace's baselines).
    /// @throws config_error if the calibration fails (a non-positive factor).
    DNNCOST_FUNC XavierLikePlatform();

    const Platform& platform() const { return m_platform; }
    const Calibration& calibration() const { return m_calibration; }
    const std::array<Unit, 2>& units() const { return m_units; }
    /// Maximum clock (MHz) of a domain: the clocks of MaxN.
    double max_clock(const std::string& domain) const { return m_platform.dvfs[0].clock(domain); }

    /// Cost of a block on unit `cu` at DVFS setting `dvfs` (ms, mJ). Every block runs on both.
    DNNCOST_FUNC std::optional<BlockCost> cost(const BlockWork& w, std::size_t cu, std::size_t dvfs) const;

private:
    DNNCOST_FUNC static std::string mhz(double f);

    /// Raw weights (see the file comment) of a network's layers on unit `cu`: the part shared
    /// by every graph operator and the part of graph operator `op`.
    DNNCOST_FUNC void raw_sums(const VigSpace& space, GraphOp op, std::size_t cu, double& t_shared, double& t_op,
                               double& e_shared, double& e_op) const;

    DNNCOST_FUNC void calibrate();

    std::array<Unit, 2> m_units;
    Platform m_platform;
    Calibration m_calibration;
};

}  // namespace dnncost::search::mapping

#if !defined(DNNCOST_COMPILED)
#include <dnncost/search/mapping/platforms/xavier_impl.hpp>
#endif
