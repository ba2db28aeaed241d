#pragma once
/// @file cost_table_impl.hpp
/// The definitions of cost_table.hpp: compiled once into dnncost::compiled in compiled mode
/// (core/config.hpp), included by cost_table.hpp in header-only mode.
#include <dnncost/search/mapping/cost_table.hpp>

namespace dnncost::search::mapping {

DNNCOST_FUNC CostTable::CostTable(std::vector<Axis> axes, Platform platform)
    : m_axes(std::move(axes)), m_platform(std::move(platform)) {
    m_platform.validate();
    std::vector<std::size_t> shape;
    std::size_t entries = 1;
    for (const auto& a : m_axes) {
        if (a.levels.empty()) raise<config_error>("CostTable: axis '", a.name, "' has no levels");
        shape.push_back(a.levels.size());
        entries *= a.levels.size();
        if (entries > (std::size_t{1} << 28)) raise<config_error>("CostTable: more than 2^28 parameter combinations");
    }
    shape.push_back(m_platform.num_cus());
    m_supported = xt::zeros<std::uint8_t>(shape);
    shape.push_back(m_platform.num_dvfs());
    shape.push_back(BlockCost::fields);
    m_values = xt::zeros<double>(shape);
}

DNNCOST_FUNC void CostTable::set(std::span<const std::size_t> index, std::size_t cu, std::size_t dvfs,
                                 const BlockCost& c) {
    const std::size_t base = offset(index, cu, dvfs);
    if (const auto k = c.first_invalid_field(); k < BlockCost::fields)
        raise<config_error>("CostTable: ", BlockCost::field_names[k], " = ", c.field(k), " at ",
                            describe(index, cu, dvfs), " (costs must be finite and >= 0)");
    for (std::size_t k = 0; k < BlockCost::fields; ++k) m_values.data()[base + k] = c.field(k);
    m_supported.data()[support_offset(index, cu)] = 1;
}

DNNCOST_FUNC std::string CostTable::describe(std::span<const std::size_t> index, std::size_t cu,
                                             std::size_t dvfs) const {
    std::string s;
    for (std::size_t a = 0; a < index.size() && a < m_axes.size(); ++a) {
        s += m_axes[a].name + "=";
        s += index[a] < m_axes[a].levels.size() ? m_axes[a].levels[index[a]] : std::to_string(index[a]);
        s += ", ";
    }
    s += "cu=" + (cu < m_platform.num_cus() ? m_platform.cus[cu] : std::to_string(cu));
    s += ", dvfs=" + (dvfs < m_platform.num_dvfs() ? m_platform.dvfs[dvfs].name : std::to_string(dvfs));
    return s;
}

DNNCOST_FUNC void CostTable::check(std::span<const std::size_t> index, std::size_t cu, std::size_t dvfs) const {
    if (index.size() != m_axes.size())
        raise<config_error>("CostTable: ", index.size(), " block parameters given, the table has ", m_axes.size(),
                            " axes");
    for (std::size_t a = 0; a < index.size(); ++a)
        if (index[a] >= m_axes[a].levels.size())
            raise<config_error>("CostTable: level ", index[a], " of axis '", m_axes[a].name, "' (it has ",
                                m_axes[a].levels.size(), ")");
    if (cu >= m_platform.num_cus()) raise<config_error>("CostTable: compute unit ", cu, " of ", m_platform.num_cus());
    if (dvfs >= m_platform.num_dvfs())
        raise<config_error>("CostTable: DVFS setting ", dvfs, " of ", m_platform.num_dvfs());
}

DNNCOST_FUNC std::size_t CostTable::support_offset(std::span<const std::size_t> index, std::size_t cu) const {
    check(index, cu, 0);
    std::size_t off = 0;
    const auto& st = m_supported.strides();
    for (std::size_t a = 0; a < index.size(); ++a) off += index[a] * static_cast<std::size_t>(st[a]);
    return off + cu * static_cast<std::size_t>(st[index.size()]);
}

DNNCOST_FUNC std::size_t CostTable::offset(std::span<const std::size_t> index, std::size_t cu, std::size_t dvfs) const {
    check(index, cu, dvfs);
    std::size_t off = 0;
    const auto& st = m_values.strides();
    for (std::size_t a = 0; a < index.size(); ++a) off += index[a] * static_cast<std::size_t>(st[a]);
    return off + cu * static_cast<std::size_t>(st[index.size()]) +
           dvfs * static_cast<std::size_t>(st[index.size() + 1]);
}

}  // namespace dnncost::search::mapping
