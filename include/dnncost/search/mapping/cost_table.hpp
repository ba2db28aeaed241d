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

#include <dnncost/core/config.hpp>
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
    DNNCOST_FUNC CostTable(std::vector<Axis> axes, Platform platform);

    const std::vector<Axis>& axes() const { return m_axes; }
    const Platform& platform() const { return m_platform; }
    std::size_t num_axes() const { return m_axes.size(); }
    /// The whole array: shape [levels of each axis..., CUs, DVFS settings, 6 cost fields].
    const xt::xarray<double>& values() const { return m_values; }
    /// Support mask: shape [levels of each axis..., CUs], 1 where the CU runs the block.
    const xt::xarray<std::uint8_t>& support() const { return m_supported; }

    /// Store the cost of the block with parameters `index` on `cu` at `dvfs`; marks it supported.
    /// @throws config_error for an index out of range or an invalid cost (NaN, infinite, < 0).
    DNNCOST_FUNC void set(std::span<const std::size_t> index, std::size_t cu, std::size_t dvfs, const BlockCost& c);
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
    DNNCOST_FUNC std::string describe(std::span<const std::size_t> index, std::size_t cu, std::size_t dvfs) const;

private:
    DNNCOST_FUNC void check(std::span<const std::size_t> index, std::size_t cu, std::size_t dvfs) const;
    DNNCOST_FUNC std::size_t support_offset(std::span<const std::size_t> index, std::size_t cu) const;
    DNNCOST_FUNC std::size_t offset(std::span<const std::size_t> index, std::size_t cu, std::size_t dvfs) const;

    std::vector<Axis> m_axes;
    Platform m_platform;
    xt::xarray<double> m_values;
    xt::xarray<std::uint8_t> m_supported;
};

}  // namespace dnncost::search::mapping

#if !defined(DNNCOST_COMPILED)
#include <dnncost/search/mapping/cost_table_impl.hpp>
#endif
