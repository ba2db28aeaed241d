#pragma once
/// @file cost_source.hpp
/// Where per-block costs come from. A cost source knows its platform and answers
/// cost(block, cu, dvfs) with a BlockCost, or nullopt when the CU does not run the block:
///
///   - TableCostSource: an N-dimensional CostTable indexed through the space's table_index
///     (the fast path of the nested search; tabulate() fills one from any analytic model);
///   - WorkloadCostSource: an analytic platform model (roofline.hpp, platforms/xavier.hpp)
///     applied to the space's layer workloads;
///   - CallableCostSource: any function, e.g. a trained latency/energy estimator wrapped by the
///     caller, so this layer does not depend on the estimators.
#include <array>
#include <concepts>
#include <cstddef>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <dnncost/core/error.hpp>
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
        names.push_back(name ? name(blocks[i]) : ::dnncost::detail::concat("block ", i));
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
