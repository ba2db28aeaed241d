#pragma once
/// @file cost_source.hpp
/// Where per-block costs come from. A cost source knows its platform and answers
/// cost(block, cu, dvfs) with a BlockCost, or nullopt when the CU does not run the block:
///
///   - TableCostSource: an N-dimensional CostTable indexed through the space's table_index
///     (the fast path of the nested search; tabulate() fills one from any analytic model);
///   - WorkloadCostSource: an analytic platform model (roofline.hpp, platforms/xavier.hpp)
///     applied to the space's layer workloads;
///   - PricedCostSource: every unit priced through the library's one pricing interface,
///     cost::CostSource (cost/source.hpp), on the graph the caller builds for a block: a
///     roofline device, a measured operator table, a trained estimator or a device model;
///   - CallableCostSource: any function, e.g. a trained latency/energy estimator wrapped by the
///     caller, so this layer does not depend on the estimators.
///
/// A BlockCostSource is the mapping's view of pricing, not a second pricing interface: it adds
/// to a latency what only a mapping needs (energy, transfers between units, the support
/// relation, DVFS settings). Analytic platforms layer on cost/ too: the roofline platform's
/// units are cost::DeviceSpec values costed by cost::roofline_seconds (roofline.hpp).
#include <array>
#include <cmath>
#include <concepts>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <dnncost/core/error.hpp>
#include <dnncost/cost/source.hpp>
#include <dnncost/graph/graph.hpp>
#include <dnncost/search/mapping/cost_table.hpp>
#include <dnncost/search/mapping/mapping_cost.hpp>
#include <dnncost/search/mapping/platform.hpp>
#include <dnncost/search/mapping/workload.hpp>

namespace dnncost::search::mapping {

/// A source of per-block costs for blocks of type Block.
template <class S, class Block>
concept BlockCostSource = requires(const S& s, const Block& b, std::size_t cu, std::size_t dvfs) {
    { s.platform() } -> std::convertible_to<const Platform&>;
    { s.cost(b, cu, dvfs) } -> std::convertible_to<std::optional<BlockCost>>;
};

/// An analytic model that costs a block from its workload.
template <class M>
concept WorkloadCostModel = requires(const M& m, const BlockWork& w, std::size_t cu, std::size_t dvfs) {
    { m.platform() } -> std::convertible_to<const Platform&>;
    { m.cost(w, cu, dvfs) } -> std::convertible_to<std::optional<BlockCost>>;
};

/// The mapping instance of a block sequence at one DVFS setting.
/// @param name block -> name for messages and reports (default: "block <i>").
/// @throws config_error when no CU runs some block (naming it).
template <class Block, BlockCostSource<Block> Source>
MappingInstance make_instance(const Source& source, std::span<const Block> blocks, std::size_t dvfs,
                              const std::type_identity_t<std::function<std::string(const Block&)>>& name = {}) {
    const Platform& p = source.platform();
    if (dvfs >= p.num_dvfs()) raise<config_error>("make_instance: DVFS setting ", dvfs, " of ", p.num_dvfs());
    std::vector<std::string> names;
    for (std::size_t i = 0; i < blocks.size(); ++i)
        names.push_back(name ? name(blocks[i]) : ::dnncost::concat("block ", i));
    MappingInstance inst(p.cus, names);
    for (std::size_t i = 0; i < blocks.size(); ++i)
        for (std::size_t c = 0; c < p.num_cus(); ++c)
            if (auto k = source.cost(blocks[i], c, dvfs)) inst.set(i, c, *k);
    inst.validate();
    return inst;
}

template <class Block, BlockCostSource<Block> Source>
MappingInstance make_instance(const Source& source, const std::vector<Block>& blocks, std::size_t dvfs,
                              const std::type_identity_t<std::function<std::string(const Block&)>>& name = {}) {
    return make_instance(source, std::span<const Block>(blocks), dvfs, name);
}

/// Costs looked up in a CostTable at the coordinates Space::table_index(block).
template <class Space>
class TableCostSource {
public:
    explicit TableCostSource(CostTable table) : m_table(std::move(table)) {}
    const Platform& platform() const { return m_table.platform(); }
    const CostTable& table() const { return m_table; }
    std::optional<BlockCost> cost(const typename Space::Block& b, std::size_t cu, std::size_t dvfs) const {
        const auto index = Space::table_index(b);
        return m_table.get(std::span<const std::size_t>(index.data(), index.size()), cu, dvfs);
    }

private:
    CostTable m_table;
};

/// An analytic model applied to the space's workloads.
template <class Space, WorkloadCostModel Model>
class WorkloadCostSource {
public:
    /// Both are kept by reference: they must outlive the source.
    WorkloadCostSource(const Space& space, const Model& model) : m_space(&space), m_model(&model) {}
    const Platform& platform() const { return m_model->platform(); }
    std::optional<BlockCost> cost(const typename Space::Block& b, std::size_t cu, std::size_t dvfs) const {
        return m_model->cost(m_space->workload(b), cu, dvfs);
    }

private:
    const Space* m_space;
    const Model* m_model;
};

/// How a compute unit at one DVFS setting is priced by a PricedCostSource.
struct PricedUnit {
    std::shared_ptr<const cost::CostSource> source;  ///< latency of a block's graph on the unit
    double power_w = 0.0;                            ///< average power while it runs a block (W)
};

/// Blocks priced through cost::CostSource: the caller builds each block's graph (its input
/// tensors are the features it reads, its outputs the features it writes), and the unit's
/// source prices it. t_comp is the source's total; e_comp = t_comp x the unit's power; a
/// transfer moves the graph's input (t_in, e_in) or output (t_out, e_out) bytes through the
/// shared memory at `transfer_bandwidth` B/s and `transfer_energy_per_byte` J per byte.
template <class Block>
class PricedCostSource {
public:
    using BlockGraph = std::function<graph::Graph(const Block&)>;
    /// Whether unit `cu` runs block `b` (empty: every unit runs every block).
    using Supports = std::function<bool(const Block&, std::size_t cu)>;

    /// @param units indexed [cu][dvfs] like the platform's units and settings
    /// @throws config_error for a platform that fails validation, units that do not match it,
    ///         a missing source, a negative or non-finite power, bandwidth or energy, or no
    ///         block-graph function
    PricedCostSource(Platform platform, std::vector<std::vector<PricedUnit>> units, BlockGraph block_graph,
                     double transfer_bandwidth, double transfer_energy_per_byte, Supports supports = {})
        : m_platform(std::move(platform)),
          m_units(std::move(units)),
          m_graph(std::move(block_graph)),
          m_supports(std::move(supports)),
          m_transfer_bandwidth(transfer_bandwidth),
          m_transfer_energy(transfer_energy_per_byte) {
        m_platform.validate();
        const std::string& name = m_platform.name;
        if (!m_graph) raise<config_error>("PricedCostSource '", name, "': no function building a block's graph");
        if (m_units.size() != m_platform.num_cus())
            raise<config_error>("PricedCostSource '", name, "': ", m_units.size(), " units for ", m_platform.num_cus(),
                                " compute units");
        for (std::size_t c = 0; c < m_units.size(); ++c) {
            if (m_units[c].size() != m_platform.num_dvfs())
                raise<config_error>("PricedCostSource '", name, "': unit '", m_platform.cus[c], "' has ",
                                    m_units[c].size(), " settings for ", m_platform.num_dvfs(), " DVFS settings");
            for (std::size_t d = 0; d < m_units[c].size(); ++d) {
                if (!m_units[c][d].source)
                    raise<config_error>("PricedCostSource '", name, "': unit '", m_platform.cus[c], "' at '",
                                        m_platform.dvfs[d].name, "' has no cost source");
                if (!(m_units[c][d].power_w >= 0.0) || !std::isfinite(m_units[c][d].power_w))
                    raise<config_error>("PricedCostSource '", name, "': unit '", m_platform.cus[c], "' at '",
                                        m_platform.dvfs[d].name, "' has power ", m_units[c][d].power_w, " W");
            }
        }
        if (!(m_transfer_bandwidth > 0.0) || !std::isfinite(m_transfer_bandwidth) || !(m_transfer_energy >= 0.0) ||
            !std::isfinite(m_transfer_energy))
            raise<config_error>("PricedCostSource '", name,
                                "': the transfer bandwidth must be > 0 and its energy >= 0");
    }

    const Platform& platform() const { return m_platform; }

    /// @throws config_error for a unit or setting out of range; what the unit's source throws
    std::optional<BlockCost> cost(const Block& b, std::size_t cu, std::size_t dvfs) const {
        if (cu >= m_platform.num_cus() || dvfs >= m_platform.num_dvfs())
            raise<config_error>("PricedCostSource '", m_platform.name, "': unit ", cu, " / DVFS setting ", dvfs,
                                " out of range");
        if (m_supports && !m_supports(b, cu)) return std::nullopt;
        const PricedUnit& u = m_units[cu][dvfs];
        const graph::Graph g = m_graph(b);
        BlockCost k;
        k.t_comp = u.source->cost(g).total_ms;
        k.e_comp = k.t_comp * u.power_w;  // ms x W = mJ
        double in = 0.0, out = 0.0;
        for (int t : g.inputs()) in += static_cast<double>(g.tensor(t).bytes());
        for (int t : g.outputs()) out += static_cast<double>(g.tensor(t).bytes());
        k.t_in = 1e3 * in / m_transfer_bandwidth;
        k.t_out = 1e3 * out / m_transfer_bandwidth;
        k.e_in = 1e3 * in * m_transfer_energy;
        k.e_out = 1e3 * out * m_transfer_energy;
        return k;
    }

private:
    Platform m_platform;
    std::vector<std::vector<PricedUnit>> m_units;
    BlockGraph m_graph;
    Supports m_supports;
    double m_transfer_bandwidth, m_transfer_energy;
};

/// Any function as a cost source (e.g. a trained estimator: the caller wraps its predictions).
template <class Block>
class CallableCostSource {
public:
    using Function = std::function<std::optional<BlockCost>(const Block&, std::size_t cu, std::size_t dvfs)>;
    CallableCostSource(Platform platform, Function f) : m_platform(std::move(platform)), m_f(std::move(f)) {
        m_platform.validate();
        if (!m_f) raise<config_error>("CallableCostSource: empty function");
    }
    const Platform& platform() const { return m_platform; }
    std::optional<BlockCost> cost(const Block& b, std::size_t cu, std::size_t dvfs) const { return m_f(b, cu, dvfs); }

private:
    Platform m_platform;
    Function m_f;
};

/// Fill a CostTable over Space::table_axes() with a model's cost of every Space::block_types()
/// entry, on every CU and at every DVFS setting.
template <class Space, WorkloadCostModel Model>
CostTable tabulate(const Space& space, const Model& model) {
    CostTable table(Space::table_axes(), model.platform());
    for (const auto& b : Space::block_types()) {
        const auto index = Space::table_index(b);
        const auto work = space.workload(b);
        for (std::size_t c = 0; c < model.platform().num_cus(); ++c)
            for (std::size_t d = 0; d < model.platform().num_dvfs(); ++d)
                if (auto k = model.cost(work, c, d))
                    table.set(std::span<const std::size_t>(index.data(), index.size()), c, d, *k);
    }
    return table;
}

}  // namespace dnncost::search::mapping
