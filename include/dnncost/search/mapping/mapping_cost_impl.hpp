#pragma once
/// @file mapping_cost_impl.hpp
/// The definitions of mapping_cost.hpp: compiled once into dnncost::compiled in compiled mode
/// (core/config.hpp), included by mapping_cost.hpp in header-only mode.
#include <dnncost/search/mapping/mapping_cost.hpp>

namespace dnncost::search::mapping {

DNNCOST_FUNC MappingInstance::MappingInstance(std::vector<std::string> cus, std::vector<std::string> blocks)
    : m_cus(std::move(cus)), m_blocks(std::move(blocks)) {
    if (m_cus.empty()) raise<config_error>("MappingInstance: no compute unit");
    if (m_cus.size() > 255) raise<config_error>("MappingInstance: ", m_cus.size(), " compute units; at most 255");
    m_costs.assign(m_blocks.size() * m_cus.size(), BlockCost{});
    m_has.assign(m_blocks.size() * m_cus.size(), 0);
}

DNNCOST_FUNC void MappingInstance::set(std::size_t block, std::size_t cu, const BlockCost& c) {
    check(block, cu);
    if (const auto k = c.first_invalid_field(); k < BlockCost::fields)
        raise<config_error>("MappingInstance: block ", block, " (", m_blocks[block], ") on ", m_cus[cu], ": ",
                            BlockCost::field_names[k], " = ", c.field(k), " (costs must be finite and >= 0)");
    m_costs[block * m_cus.size() + cu] = c;
    m_has[block * m_cus.size() + cu] = 1;
}

DNNCOST_FUNC bool MappingInstance::supports(std::size_t block, std::size_t cu) const {
    check(block, cu);
    return m_has[block * m_cus.size() + cu] != 0;
}

DNNCOST_FUNC const BlockCost& MappingInstance::cost(std::size_t block, std::size_t cu) const {
    check(block, cu);
    if (!m_has[block * m_cus.size() + cu])
        raise<config_error>("MappingInstance: ", m_cus[cu], " does not run block ", block, " (", m_blocks[block], ")");
    return m_costs[block * m_cus.size() + cu];
}

DNNCOST_FUNC std::vector<std::uint8_t> MappingInstance::supported(std::size_t block) const {
    std::vector<std::uint8_t> s;
    for (std::size_t c = 0; c < m_cus.size(); ++c)
        if (supports(block, c)) s.push_back(static_cast<std::uint8_t>(c));
    return s;
}

DNNCOST_FUNC void MappingInstance::validate() const {
    if (m_blocks.empty()) raise<config_error>("MappingInstance: the network has no block");
    for (std::size_t b = 0; b < m_blocks.size(); ++b) {
        bool any = false;
        for (std::size_t c = 0; c < m_cus.size(); ++c) any = any || m_has[b * m_cus.size() + c];
        if (!any) raise<config_error>("MappingInstance: no compute unit supports block ", b, " (", m_blocks[b], ")");
    }
}

DNNCOST_FUNC std::uint64_t MappingInstance::num_mappings() const {
    std::uint64_t n = 1;
    for (std::size_t b = 0; b < m_blocks.size(); ++b) {
        const auto k = static_cast<std::uint64_t>(supported(b).size());
        if (k != 0 && n > std::numeric_limits<std::uint64_t>::max() / k)
            return std::numeric_limits<std::uint64_t>::max();
        n *= k;
    }
    return n;
}

DNNCOST_FUNC void MappingInstance::check(std::size_t block, std::size_t cu) const {
    if (block >= m_blocks.size() || cu >= m_cus.size())
        raise<config_error>("MappingInstance: block ", block, " of ", m_blocks.size(), ", compute unit ", cu, " of ",
                            m_cus.size());
}

DNNCOST_FUNC void Preference::validate() const {
    if (!std::isfinite(gamma1) || !std::isfinite(gamma2) || gamma1 < 0.0 || gamma2 < 0.0)
        raise<config_error>("mapping: gamma1 and gamma2 must be finite and >= 0, got ", gamma1, " and ", gamma2);
    if (!(t_target > 0.0) || !(e_target > 0.0))
        raise<config_error>("mapping: the latency and energy targets must be > 0, got ", t_target, " ms and ", e_target,
                            " mJ");
}

DNNCOST_FUNC std::string Preference::describe() const {
    std::string s;
    if (std::isfinite(t_target)) s += ::dnncost::concat("T < ", t_target, " ms");
    if (std::isfinite(e_target)) s += ::dnncost::concat(s.empty() ? "" : " and ", "E < ", e_target, " mJ");
    return s.empty() ? "no target" : s;
}

DNNCOST_FUNC MappingEvaluator::MappingEvaluator(const MappingInstance& inst) {
    inst.validate();
    m_n = inst.num_blocks();
    m_cus = inst.cu_names();
    m_supported.resize(m_n);
    m_stride = 1;
    for (std::size_t b = 0; b < m_n; ++b) {
        m_supported[b] = inst.supported(b);
        m_stride = std::max(m_stride, m_supported[b].size());
    }
    const std::size_t s = m_stride;
    m_comp.resize(m_n);
    for (std::size_t b = 0; b < m_n; ++b)
        for (auto cu : m_supported[b]) m_comp[b].push_back({inst.cost(b, cu).t_comp, inst.cost(b, cu).e_comp});
    m_table.assign(s + (m_n - 1) * s * s, TimeEnergy{});
    for (std::size_t g = 0; g < m_supported[0].size(); ++g) {
        const auto& c = inst.cost(0, m_supported[0][g]);
        m_table[g] = {c.t_comp, c.e_comp};
    }
    for (std::size_t i = 1; i < m_n; ++i) {
        TimeEnergy* row = m_table.data() + step_offset(i);
        for (std::size_t a = 0; a < m_supported[i - 1].size(); ++a) {
            const std::size_t ca = m_supported[i - 1][a];
            const auto& prev = inst.cost(i - 1, ca);
            for (std::size_t b = 0; b < m_supported[i].size(); ++b) {
                const std::size_t cb = m_supported[i][b];
                const auto& cur = inst.cost(i, cb);
                TimeEnergy v{cur.t_comp, cur.e_comp};
                if (ca != cb) {
                    v.t += prev.t_out + cur.t_in;
                    v.e += prev.e_out + cur.e_in;
                }
                row[a * s + b] = v;
            }
        }
    }
}

DNNCOST_FUNC std::uint64_t MappingEvaluator::num_mappings() const {
    std::uint64_t n = 1;
    for (const auto& s : m_supported) {
        if (n > std::numeric_limits<std::uint64_t>::max() / s.size()) return std::numeric_limits<std::uint64_t>::max();
        n *= s.size();
    }
    return n;
}

DNNCOST_FUNC std::vector<std::size_t> MappingEvaluator::cardinalities() const {
    std::vector<std::size_t> c(m_n);
    for (std::size_t b = 0; b < m_n; ++b) c[b] = m_supported[b].size();
    return c;
}

DNNCOST_FUNC void MappingEvaluator::check_genes(std::span<const std::uint8_t> genes) const {
    if (genes.size() != m_n) raise<config_error>("mapping: ", genes.size(), " genes for ", m_n, " blocks");
    for (std::size_t i = 0; i < m_n; ++i)
        if (genes[i] >= m_supported[i].size())
            raise<config_error>("mapping: gene ", i, " is ", int(genes[i]), ", block ", i, " has ",
                                m_supported[i].size(), " supporting compute unit(s)");
}

DNNCOST_FUNC std::vector<std::uint8_t> MappingEvaluator::to_cus(std::span<const std::uint8_t> genes) const {
    check_genes(genes);
    std::vector<std::uint8_t> cus(m_n);
    for (std::size_t i = 0; i < m_n; ++i) cus[i] = m_supported[i][genes[i]];
    return cus;
}

DNNCOST_FUNC std::optional<std::vector<std::uint8_t>> MappingEvaluator::to_genes(
    std::span<const std::uint8_t> cus) const {
    if (cus.size() != m_n) return std::nullopt;
    std::vector<std::uint8_t> genes(m_n);
    for (std::size_t i = 0; i < m_n; ++i) {
        const auto& s = m_supported[i];
        const auto it = std::find(s.begin(), s.end(), cus[i]);
        if (it == s.end()) return std::nullopt;
        genes[i] = static_cast<std::uint8_t>(it - s.begin());
    }
    return genes;
}

DNNCOST_FUNC std::optional<std::vector<std::uint8_t>> MappingEvaluator::standalone(std::size_t cu) const {
    return to_genes(std::vector<std::uint8_t>(m_n, static_cast<std::uint8_t>(cu)));
}

DNNCOST_FUNC std::vector<Standalone> standalone_mappings(const MappingEvaluator& ev) {
    std::vector<Standalone> out;
    for (std::size_t c = 0; c < ev.num_cus(); ++c)
        if (auto g = ev.standalone(c)) out.push_back({c, *g, ev.evaluate(g->data())});
    return out;
}

DNNCOST_FUNC Normaliser standalone_normaliser(const MappingEvaluator& ev) {
    const auto sa = standalone_mappings(ev);
    Normaliser n{0.0, 0.0};
    if (!sa.empty()) {
        for (const auto& s : sa) {
            n.t_max = std::max(n.t_max, s.value.t);
            n.e_max = std::max(n.e_max, s.value.e);
        }
    } else {
        for (std::size_t i = 0; i < ev.num_blocks(); ++i) {
            double t = 0.0, e = 0.0;
            for (std::size_t g = 0; g < ev.supported(i).size(); ++g) {
                t = std::max(t, ev.computation(i, static_cast<std::uint8_t>(g)).t);
                e = std::max(e, ev.computation(i, static_cast<std::uint8_t>(g)).e);
            }
            n.t_max += t;
            n.e_max += e;
        }
    }
    // an all-zero network would divide by zero: P is then the unnormalised product
    if (!(n.t_max > 0.0)) n.t_max = 1.0;
    if (!(n.e_max > 0.0)) n.e_max = 1.0;
    return n;
}

}  // namespace dnncost::search::mapping
