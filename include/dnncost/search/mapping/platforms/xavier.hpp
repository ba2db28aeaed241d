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
    XavierLikePlatform() {
        m_units = {Unit{"GPU", "gpu", 11e12, 1.0e-12, {1.0, 1.0, 1.0, 1.0}},
                   Unit{"DLA", "dla", 2.5e12, 0.4e-12, {1.0, 1.0, 0.25, 0.5}}};
        m_platform.name = "Xavier-like GPU + DLA";
        m_platform.cus = {"GPU", "DLA"};
        m_platform.dvfs.clear();
        for (double cpu : {2265.0, 1728.0})
            for (double g : {1377.0, 900.0, 520.0})
                for (double emc : {2133.0, 1065.0})
                    for (double d : {1395.0, 1050.0}) {
                        DvfsSetting s;
                        s.name = ::dnncost::concat("cpu", mhz(cpu), "-gpu", mhz(g), "-emc", mhz(emc), "-dla",
                                                           mhz(d));
                        s.clocks_mhz = {{"cpu", cpu}, {"gpu", g}, {"emc", emc}, {"dla", d}};
                        m_platform.dvfs.push_back(std::move(s));
                    }
        m_platform.reference_dvfs = 0;
        m_platform.validate();
        calibrate();
    }

    const Platform& platform() const { return m_platform; }
    const Calibration& calibration() const { return m_calibration; }
    const std::array<Unit, 2>& units() const { return m_units; }
    /// Maximum clock (MHz) of a domain: the clocks of MaxN.
    double max_clock(const std::string& domain) const { return m_platform.dvfs[0].clock(domain); }

    /// Cost of a block on unit `cu` at DVFS setting `dvfs` (ms, mJ). Every block runs on both.
    std::optional<BlockCost> cost(const BlockWork& w, std::size_t cu, std::size_t dvfs) const {
        if (cu >= 2 || dvfs >= m_platform.num_dvfs())
            raise<config_error>("XavierLikePlatform: unit ", cu, " / DVFS setting ", dvfs, " out of range");
        const Unit& u = m_units[cu];
        double t0 = 0.0, e0 = 0.0, compute = 0.0;
        for (const auto& l : w.layers) {
            const double eff = u.efficiency[static_cast<std::size_t>(l.op_class)];
            const double ft =
                l.graph_op >= 0 ? m_calibration.time_factor[cu][static_cast<std::size_t>(l.graph_op)] : 1.0;
            const double fe =
                l.graph_op >= 0 ? m_calibration.energy_factor[cu][static_cast<std::size_t>(l.graph_op)] : 1.0;
            const double c = l.flops / (u.peak_flops * eff);
            compute += ft * c;
            t0 += ft * (c + l.bytes / (memory_bandwidth * eff));
            e0 += fe * (l.flops * u.energy_per_flop + l.bytes * energy_per_byte / eff);
        }
        const double phi = t0 > 0.0 ? compute / t0 : 0.0;
        t0 *= m_calibration.time_scale[cu] * 1e3;    // ms
        e0 *= m_calibration.energy_scale[cu] * 1e3;  // mJ

        const DvfsSetting& s = m_platform.dvfs[dvfs];
        const double r_unit = s.clock(u.clock_domain) / max_clock(u.clock_domain);
        const double r_emc = s.clock("emc") / max_clock("emc");
        const double r_cpu = s.clock("cpu") / max_clock("cpu");
        auto v = [](double r) { return voltage_floor + (1.0 - voltage_floor) * r; };
        const double slow = (1.0 - dispatch_share) * (phi / r_unit + (1.0 - phi) / r_emc) + dispatch_share / r_cpu;
        const double dynamic = phi * v(r_unit) * v(r_unit) + (1.0 - phi) * v(r_emc) * v(r_emc);
        const double energy = (1.0 - static_share - cpu_share) * dynamic +
                              (static_share + cpu_share * r_cpu * v(r_cpu) * v(r_cpu)) * slow;

        BlockCost k;
        k.t_comp = t0 * slow;
        k.e_comp = e0 * energy;
        const double tr_t = 1e3 / (memory_bandwidth * r_emc), tr_e = 1e3 * energy_per_byte * v(r_emc) * v(r_emc);
        k.t_in = w.input_bytes * tr_t;
        k.t_out = w.output_bytes * tr_t;
        k.e_in = w.input_bytes * tr_e;
        k.e_out = w.output_bytes * tr_e;
        return k;
    }

private:
    static std::string mhz(double f) { return std::to_string(static_cast<long>(f)); }

    /// Raw weights (see the file comment) of a network's layers on unit `cu`: the part shared
    /// by every graph operator and the part of graph operator `op`.
    void raw_sums(const VigSpace& space, GraphOp op, std::size_t cu, double& t_shared, double& t_op, double& e_shared,
                  double& e_op) const {
        t_shared = t_op = e_shared = e_op = 0.0;
        const Unit& u = m_units[cu];
        for (const auto& b : space.blocks(VigSpace::baseline(op)))
            for (const auto& l : space.workload(b).layers) {
                const double eff = u.efficiency[static_cast<std::size_t>(l.op_class)];
                const double t = l.flops / (u.peak_flops * eff) + l.bytes / (memory_bandwidth * eff);
                const double e = l.flops * u.energy_per_flop + l.bytes * energy_per_byte / eff;
                (l.graph_op >= 0 ? t_op : t_shared) += t;
                (l.graph_op >= 0 ? e_op : e_shared) += e;
            }
    }

    void calibrate() {
        const VigSpace space;
        for (std::size_t cu = 0; cu < 2; ++cu) {
            auto target = [&](const XavierTable2Row& r, bool time) {
                return 1e-3 * (time ? (cu == gpu ? r.gpu_ms : r.dla_ms) : (cu == gpu ? r.gpu_mj : r.dla_mj));
            };
            double ts = 0, to = 0, es = 0, eo = 0;
            raw_sums(space, GraphOp::gin, cu, ts, to, es, eo);
            const auto& gin = xavier_table2[3];
            m_calibration.time_scale[cu] = target(gin, true) / (ts + to);
            m_calibration.energy_scale[cu] = target(gin, false) / (es + eo);
            for (const auto& row : xavier_table2) {
                raw_sums(space, row.op, cu, ts, to, es, eo);
                const auto o = static_cast<std::size_t>(row.op);
                m_calibration.time_factor[cu][o] = (target(row, true) / m_calibration.time_scale[cu] - ts) / to;
                m_calibration.energy_factor[cu][o] = (target(row, false) / m_calibration.energy_scale[cu] - es) / eo;
                if (!(m_calibration.time_factor[cu][o] > 0.0) || !(m_calibration.energy_factor[cu][o] > 0.0))
                    raise<config_error>("XavierLikePlatform: calibration gives a non-positive factor for ",
                                        graph_op_name[o], " on ", m_units[cu].name);
            }
        }
    }

    std::array<Unit, 2> m_units;
    Platform m_platform;
    Calibration m_calibration;
};

}  // namespace dnncost::search::mapping
