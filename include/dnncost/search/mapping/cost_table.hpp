#pragma once
/// @file cost_table.hpp
/// An N-dimensional table of per-block costs: any number of block-parameter axes (a block's
/// position, or its kind, graph operator, width, ...) x compute unit x DVFS setting x the six
/// BlockCost fields, held in one xtensor array, plus a support mask over parameters x CU (a
/// missing entry means the CU cannot run that block). Lookups are a stride computation, so a
/// table is as fast as the flat arrays the mapping evaluator builds from it.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <xtensor/xarray.hpp>

#include <dnncost/core/error.hpp>
#include <dnncost/search/mapping/platform.hpp>

namespace dnncost::search::mapping {

/// One block-parameter axis of a CostTable: its name and the names of its levels.
struct Axis {
    std::string name;
    std::vector<std::string> levels;
};

/// Costs indexed by block parameters x CU x DVFS setting.
class CostTable {
public:
    CostTable() = default;
    /// @throws config_error for an invalid platform, an axis without levels or a table above
    ///         2^28 entries (far beyond any block space; a sign of a wrong axis).
    CostTable(std::vector<Axis> axes, Platform platform) : m_axes(std::move(axes)), m_platform(std::move(platform)) {
        m_platform.validate();
        std::vector<std::size_t> shape;
        std::size_t entries = 1;
        for (const auto& a : m_axes) {
            if (a.levels.empty()) raise<config_error>("CostTable: axis '", a.name, "' has no levels");
            shape.push_back(a.levels.size());
            entries *= a.levels.size();
            if (entries > (std::size_t{1} << 28))
                raise<config_error>("CostTable: more than 2^28 parameter combinations");
        }
        shape.push_back(m_platform.num_cus());
        m_supported = xt::zeros<std::uint8_t>(shape);
        shape.push_back(m_platform.num_dvfs());
        shape.push_back(BlockCost::fields);
        m_values = xt::zeros<double>(shape);
    }

    const std::vector<Axis>& axes() const { return m_axes; }
    const Platform& platform() const { return m_platform; }
    std::size_t num_axes() const { return m_axes.size(); }
    /// The whole array: shape [levels of each axis..., CUs, DVFS settings, 6 cost fields].
    const xt::xarray<double>& values() const { return m_values; }
    /// Support mask: shape [levels of each axis..., CUs], 1 where the CU runs the block.
    const xt::xarray<std::uint8_t>& support() const { return m_supported; }

    /// Store the cost of the block with parameters `index` on `cu` at `dvfs`; marks it supported.
    /// @throws config_error for an index out of range or an invalid cost (NaN, infinite, < 0).
    void set(std::span<const std::size_t> index, std::size_t cu, std::size_t dvfs, const BlockCost& c) {
        const std::size_t base = offset(index, cu, dvfs);
        if (const auto k = c.first_invalid_field(); k < BlockCost::fields)
            raise<config_error>("CostTable: ", BlockCost::field_names[k], " = ", c.field(k), " at ",
                                describe(index, cu, dvfs), " (costs must be finite and >= 0)");
        for (std::size_t k = 0; k < BlockCost::fields; ++k) m_values.data()[base + k] = c.field(k);
        m_supported.data()[support_offset(index, cu)] = 1;
    }
    void set(std::initializer_list<std::size_t> index, std::size_t cu, std::size_t dvfs, const BlockCost& c) {
        set(std::span<const std::size_t>(index.begin(), index.size()), cu, dvfs, c);
    }

    bool supports(std::span<const std::size_t> index, std::size_t cu) const {
        return m_supported.data()[support_offset(index, cu)] != 0;
    }
    /// The cost, or nullopt where the CU does not run the block.
    std::optional<BlockCost> get(std::span<const std::size_t> index, std::size_t cu, std::size_t dvfs) const {
        if (!supports(index, cu)) return std::nullopt;
        const std::size_t base = offset(index, cu, dvfs);
        BlockCost c;
        for (std::size_t k = 0; k < BlockCost::fields; ++k) c.set_field(k, m_values.data()[base + k]);
        return c;
    }
    std::optional<BlockCost> get(std::initializer_list<std::size_t> index, std::size_t cu, std::size_t dvfs) const {
        return get(std::span<const std::size_t>(index.begin(), index.size()), cu, dvfs);
    }

    /// "axis=level, ..., cu=NAME, dvfs=NAME" for messages.
    std::string describe(std::span<const std::size_t> index, std::size_t cu, std::size_t dvfs) const {
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

private:
    void check(std::span<const std::size_t> index, std::size_t cu, std::size_t dvfs) const {
        if (index.size() != m_axes.size())
            raise<config_error>("CostTable: ", index.size(), " block parameters given, the table has ", m_axes.size(),
                                " axes");
        for (std::size_t a = 0; a < index.size(); ++a)
            if (index[a] >= m_axes[a].levels.size())
                raise<config_error>("CostTable: level ", index[a], " of axis '", m_axes[a].name, "' (it has ",
                                    m_axes[a].levels.size(), ")");
        if (cu >= m_platform.num_cus())
            raise<config_error>("CostTable: compute unit ", cu, " of ", m_platform.num_cus());
        if (dvfs >= m_platform.num_dvfs())
            raise<config_error>("CostTable: DVFS setting ", dvfs, " of ", m_platform.num_dvfs());
    }
    std::size_t support_offset(std::span<const std::size_t> index, std::size_t cu) const {
        check(index, cu, 0);
        std::size_t off = 0;
        const auto& st = m_supported.strides();
        for (std::size_t a = 0; a < index.size(); ++a) off += index[a] * static_cast<std::size_t>(st[a]);
        return off + cu * static_cast<std::size_t>(st[index.size()]);
    }
    std::size_t offset(std::span<const std::size_t> index, std::size_t cu, std::size_t dvfs) const {
        check(index, cu, dvfs);
        std::size_t off = 0;
        const auto& st = m_values.strides();
        for (std::size_t a = 0; a < index.size(); ++a) off += index[a] * static_cast<std::size_t>(st[a]);
        return off + cu * static_cast<std::size_t>(st[index.size()]) +
               dvfs * static_cast<std::size_t>(st[index.size() + 1]);
    }

    std::vector<Axis> m_axes;
    Platform m_platform;
    xt::xarray<double> m_values;
    xt::xarray<std::uint8_t> m_supported;
};

}  // namespace dnncost::search::mapping
