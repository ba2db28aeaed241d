#pragma once
/// @file xavier_impl.hpp
/// The definitions of xavier.hpp: compiled once into dnncost::compiled in compiled mode
/// (core/config.hpp), included by xavier.hpp in header-only mode.
#include <dnncost/search/mapping/platforms/xavier.hpp>

namespace dnncost::search::mapping {

DNNCOST_FUNC XavierLikePlatform::XavierLikePlatform() {
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
                    s.name = ::dnncost::concat("cpu", mhz(cpu), "-gpu", mhz(g), "-emc", mhz(emc), "-dla", mhz(d));
                    s.clocks_mhz = {{"cpu", cpu}, {"gpu", g}, {"emc", emc}, {"dla", d}};
                    m_platform.dvfs.push_back(std::move(s));
                }
    m_platform.reference_dvfs = 0;
    m_platform.validate();
    calibrate();
}

DNNCOST_FUNC std::optional<BlockCost> XavierLikePlatform::cost(const BlockWork& w, std::size_t cu,
                                                               std::size_t dvfs) const {
    if (cu >= 2 || dvfs >= m_platform.num_dvfs())
        raise<config_error>("XavierLikePlatform: unit ", cu, " / DVFS setting ", dvfs, " out of range");
    const Unit& u = m_units[cu];
    double t0 = 0.0, e0 = 0.0, compute = 0.0;
    for (const auto& l : w.layers) {
        const double eff = u.efficiency[static_cast<std::size_t>(l.op_class)];
        const double ft = l.graph_op >= 0 ? m_calibration.time_factor[cu][static_cast<std::size_t>(l.graph_op)] : 1.0;
        const double fe = l.graph_op >= 0 ? m_calibration.energy_factor[cu][static_cast<std::size_t>(l.graph_op)] : 1.0;
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
    const double energy =
        (1.0 - static_share - cpu_share) * dynamic + (static_share + cpu_share * r_cpu * v(r_cpu) * v(r_cpu)) * slow;

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

DNNCOST_FUNC std::string XavierLikePlatform::mhz(double f) { return std::to_string(static_cast<long>(f)); }

DNNCOST_FUNC void XavierLikePlatform::raw_sums(const VigSpace& space, GraphOp op, std::size_t cu, double& t_shared,
                                               double& t_op, double& e_shared, double& e_op) const {
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

DNNCOST_FUNC void XavierLikePlatform::calibrate() {
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

}  // namespace dnncost::search::mapping
