#pragma once
/// @file roofline_impl.hpp
/// The definitions of roofline.hpp: compiled once into dnncost::compiled in compiled mode
/// (core/config.hpp), included by roofline.hpp in header-only mode.
#include <dnncost/search/mapping/roofline.hpp>

namespace dnncost::search::mapping {

DNNCOST_FUNC RooflinePlatform::RooflinePlatform(std::string name, std::vector<RooflineUnit> units,
                                                double transfer_bandwidth, double transfer_energy_per_byte)
    : m_units(std::move(units)), m_transfer_bandwidth(transfer_bandwidth), m_transfer_energy(transfer_energy_per_byte) {
    m_platform.name = std::move(name);
    for (const auto& u : m_units) {
        const cost::DeviceSpec& d = u.device;
        if (!(d.peak_flops > 0.0) || !(d.bandwidth > 0.0) || !std::isfinite(d.peak_flops) ||
            !std::isfinite(d.bandwidth))
            raise<config_error>("RooflinePlatform: unit '", d.name, "' needs a positive peak and bandwidth");
        if (!(d.per_op_overhead_s >= 0.0) || !std::isfinite(d.per_op_overhead_s))
            raise<config_error>("RooflinePlatform: unit '", d.name, "' needs a finite, non-negative overhead");
        for (double e : u.efficiency)
            if (!(e >= 0.0 && e <= 1.0))
                raise<config_error>("RooflinePlatform: unit '", d.name, "' has an efficiency ", e, " outside [0, 1]");
        if (!(u.energy_per_flop >= 0.0) || !(u.energy_per_byte >= 0.0) || !(u.static_power >= 0.0))
            raise<config_error>("RooflinePlatform: unit '", d.name, "' has a negative energy or power");
        m_platform.cus.push_back(d.name);
    }
    if (!(m_transfer_bandwidth > 0.0) || !(m_transfer_energy >= 0.0))
        raise<config_error>("RooflinePlatform: the transfer bandwidth must be > 0 and its energy >= 0");
    m_platform.dvfs = {{"nominal", {}}};
    m_platform.validate();
}

DNNCOST_FUNC std::optional<BlockCost> RooflinePlatform::cost(const BlockWork& w, std::size_t cu,
                                                             std::size_t dvfs) const {
    if (cu >= m_units.size() || dvfs >= m_platform.num_dvfs())
        raise<config_error>("RooflinePlatform: unit ", cu, " / DVFS setting ", dvfs, " out of range");
    const RooflineUnit& u = m_units[cu];
    double seconds = 0.0, joules = 0.0;
    for (const auto& l : w.layers) {
        const double eff = u.efficiency[static_cast<std::size_t>(l.op_class)];
        if (!(eff > 0.0)) return std::nullopt;
        // whole operation and byte counts, as cost::NodeCost carries them
        const double t = cost::roofline_seconds(std::round(l.flops), std::round(l.bytes), u.device.derated(eff));
        seconds += t;
        joules += l.flops * u.energy_per_flop + l.bytes * u.energy_per_byte + u.static_power * t;
    }
    BlockCost k;
    k.t_comp = 1e3 * seconds;
    k.e_comp = 1e3 * joules;
    k.t_in = 1e3 * w.input_bytes / m_transfer_bandwidth;
    k.t_out = 1e3 * w.output_bytes / m_transfer_bandwidth;
    k.e_in = 1e3 * w.input_bytes * m_transfer_energy;
    k.e_out = 1e3 * w.output_bytes * m_transfer_energy;
    return k;
}

DNNCOST_FUNC RooflinePlatform three_accelerator_platform() {
    std::vector<RooflineUnit> u(3);
    u[0] = {{"DSA-k", 4e12, 51.2e9, 0.0}, {0.55, 0.85, 0.0, 0.30}, 0.5e-12, 20e-12, 0.4};
    u[1] = {{"DSA-y", 4e12, 51.2e9, 0.0}, {0.85, 0.55, 0.25, 0.40}, 0.6e-12, 20e-12, 0.5};
    u[2] = {{"DSA-d", 2e12, 51.2e9, 0.0}, {0.35, 0.30, 0.70, 0.80}, 0.35e-12, 20e-12, 0.2};
    return RooflinePlatform("three-accelerator roofline", std::move(u), 51.2e9, 20e-12);
}

}  // namespace dnncost::search::mapping
