#pragma once
/// @file mapping_cost.hpp
/// Latency, energy and the scalar objective of a mapping (MaGNAS Eq. 5-8 and 13).
///
/// A network is a sequence of n blocks; a mapping m = [pi_1 .. pi_n] gives each block a compute
/// unit that supports it, and
///   T(m) = sum_i t_comp_i(pi_i) + [pi_{i-1} != pi_i] t_in_i(pi_i) + [pi_i != pi_{i+1}] t_out_i(pi_i)
/// (energy alike), where the first block pays no input transfer and the last no output transfer.
///
/// Genes: gene i is an index into the list of CUs that support block i (MappingInstance::
/// supported), so every genome is a valid mapping and NSGA-II's uniform operators need no repair.
///
/// Speed: MappingEvaluator folds the costs into one table of (T, E) increments per pair of
/// neighbouring genes, step_i(a, b) = comp_i(b) + [cu(a) != cu(b)] (out_{i-1}(a) + in_i(b)),
/// so a mapping costs one load and two additions per block; IncrementalMapping re-evaluates a
/// one-gene change from the two increments it touches.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <dnncost/core/error.hpp>
#include <dnncost/search/mapping/platform.hpp>

namespace dnncost::search::mapping {

/// One network on one platform at one DVFS setting: per-block, per-CU costs and support.
class MappingInstance {
public:
    MappingInstance() = default;
    /// @param cus names of the compute units (at most 255)
    /// @param blocks names of the blocks, in execution order
    MappingInstance(std::vector<std::string> cus, std::vector<std::string> blocks)
        : m_cus(std::move(cus)), m_blocks(std::move(blocks)) {
        if (m_cus.empty()) raise<config_error>("MappingInstance: no compute unit");
        if (m_cus.size() > 255) raise<config_error>("MappingInstance: ", m_cus.size(), " compute units; at most 255");
        m_costs.assign(m_blocks.size() * m_cus.size(), BlockCost{});
        m_has.assign(m_blocks.size() * m_cus.size(), 0);
    }

    std::size_t num_blocks() const { return m_blocks.size(); }
    std::size_t num_cus() const { return m_cus.size(); }
    const std::vector<std::string>& cu_names() const { return m_cus; }
    const std::vector<std::string>& block_names() const { return m_blocks; }

    /// Set the cost of `block` on `cu`, which marks the CU as supporting it.
    /// @throws config_error for indices out of range or a NaN, infinite or negative cost.
    void set(std::size_t block, std::size_t cu, const BlockCost& c) {
        check(block, cu);
        if (const auto k = c.first_invalid_field(); k < BlockCost::fields)
            raise<config_error>("MappingInstance: block ", block, " (", m_blocks[block], ") on ", m_cus[cu], ": ",
                                BlockCost::field_names[k], " = ", c.field(k), " (costs must be finite and >= 0)");
        m_costs[block * m_cus.size() + cu] = c;
        m_has[block * m_cus.size() + cu] = 1;
    }
    bool supports(std::size_t block, std::size_t cu) const {
        check(block, cu);
        return m_has[block * m_cus.size() + cu] != 0;
    }
    const BlockCost& cost(std::size_t block, std::size_t cu) const {
        check(block, cu);
        if (!m_has[block * m_cus.size() + cu])
            raise<config_error>("MappingInstance: ", m_cus[cu], " does not run block ", block, " (", m_blocks[block],
                                ")");
        return m_costs[block * m_cus.size() + cu];
    }
    /// CUs that run `block`, increasing; the gene of the block indexes this list.
    std::vector<std::uint8_t> supported(std::size_t block) const {
        std::vector<std::uint8_t> s;
        for (std::size_t c = 0; c < m_cus.size(); ++c)
            if (supports(block, c)) s.push_back(static_cast<std::uint8_t>(c));
        return s;
    }
    /// @throws config_error if there is no block or a block no CU supports.
    void validate() const {
        if (m_blocks.empty()) raise<config_error>("MappingInstance: the network has no block");
        for (std::size_t b = 0; b < m_blocks.size(); ++b) {
            bool any = false;
            for (std::size_t c = 0; c < m_cus.size(); ++c) any = any || m_has[b * m_cus.size() + c];
            if (!any)
                raise<config_error>("MappingInstance: no compute unit supports block ", b, " (", m_blocks[b], ")");
        }
    }
    /// Number of valid mappings (product of the support counts), saturating at 2^64 - 1.
    std::uint64_t num_mappings() const {
        std::uint64_t n = 1;
        for (std::size_t b = 0; b < m_blocks.size(); ++b) {
            const auto k = static_cast<std::uint64_t>(supported(b).size());
            if (k != 0 && n > std::numeric_limits<std::uint64_t>::max() / k)
                return std::numeric_limits<std::uint64_t>::max();
            n *= k;
        }
        return n;
    }

private:
    void check(std::size_t block, std::size_t cu) const {
        if (block >= m_blocks.size() || cu >= m_cus.size())
            raise<config_error>("MappingInstance: block ", block, " of ", m_blocks.size(), ", compute unit ", cu,
                                " of ", m_cus.size());
    }
    std::vector<std::string> m_cus, m_blocks;
    std::vector<BlockCost> m_costs;  // [block][cu]
    std::vector<std::uint8_t> m_has;
};

/// The user's preferences of the inner objective (Eq. 8 and 13): P(m) = (E/E_max)^gamma1 *
/// (T/T_max)^gamma2, lower is better, subject to T < t_target and E < e_target.
struct Preference {
    double gamma1 = 1.0;                                        ///< weight of energy
    double gamma2 = 1.0;                                        ///< weight of latency
    double t_target = std::numeric_limits<double>::infinity();  ///< ms; infinity = no constraint
    double e_target = std::numeric_limits<double>::infinity();  ///< mJ; infinity = no constraint

    bool constrained() const { return std::isfinite(t_target) || std::isfinite(e_target); }
    /// @throws config_error for negative or non-finite gammas or non-positive/NaN targets.
    void validate() const {
        if (!std::isfinite(gamma1) || !std::isfinite(gamma2) || gamma1 < 0.0 || gamma2 < 0.0)
            raise<config_error>("mapping: gamma1 and gamma2 must be finite and >= 0, got ", gamma1, " and ", gamma2);
        if (!(t_target > 0.0) || !(e_target > 0.0))
            raise<config_error>("mapping: the latency and energy targets must be > 0, got ", t_target, " ms and ",
                                e_target, " mJ");
    }
    /// T < t_target and E < e_target.
    bool feasible(TimeEnergy v) const { return v.t < t_target && v.e < e_target; }
    /// "T < 20 ms and E < 150 mJ" (the targets that are set), or "no target".
    std::string describe() const {
        std::string s;
        if (std::isfinite(t_target)) s += ::dnncost::concat("T < ", t_target, " ms");
        if (std::isfinite(e_target)) s += ::dnncost::concat(s.empty() ? "" : " and ", "E < ", e_target, " mJ");
        return s.empty() ? "no target" : s;
    }
    /// Relative violations of the two targets (0 = met; a value equal to the target is a tiny
    /// positive violation, since the constraints are strict).
    std::pair<double, double> violations(TimeEnergy v) const {
        auto viol = [](double x, double target) {
            if (x < target) return 0.0;
            return std::max(x / target - 1.0, 1e-12);
        };
        return {viol(v.t, t_target), viol(v.e, e_target)};
    }
};

/// The standalone maxima that normalise P(m): max over the CUs that run every block of the
/// latency and the energy of running the whole network there.
struct Normaliser {
    double t_max = 1.0;
    double e_max = 1.0;
};

/// P(m) = (E / e_max)^gamma1 * (T / t_max)^gamma2.
inline double objective_p(TimeEnergy v, const Normaliser& n, const Preference& pref) {
    const double e = v.e / n.e_max, t = v.t / n.t_max;
    const double pe = pref.gamma1 == 1.0 ? e : std::pow(e, pref.gamma1);
    const double pt = pref.gamma2 == 1.0 ? t : std::pow(t, pref.gamma2);
    return pe * pt;
}

/// Fast (T, E) of mappings of one MappingInstance.
class MappingEvaluator {
public:
    MappingEvaluator() = default;
    /// @throws config_error if the instance is invalid (see MappingInstance::validate).
    explicit MappingEvaluator(const MappingInstance& inst) {
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

    std::size_t num_blocks() const { return m_n; }
    std::size_t num_cus() const { return m_cus.size(); }
    const std::vector<std::string>& cu_names() const { return m_cus; }
    /// Number of valid mappings, saturating at 2^64 - 1.
    std::uint64_t num_mappings() const {
        std::uint64_t n = 1;
        for (const auto& s : m_supported) {
            if (n > std::numeric_limits<std::uint64_t>::max() / s.size())
                return std::numeric_limits<std::uint64_t>::max();
            n *= s.size();
        }
        return n;
    }
    /// Number of choices of each gene (the CUs that support each block).
    std::vector<std::size_t> cardinalities() const {
        std::vector<std::size_t> c(m_n);
        for (std::size_t b = 0; b < m_n; ++b) c[b] = m_supported[b].size();
        return c;
    }
    const std::vector<std::uint8_t>& supported(std::size_t block) const { return m_supported[block]; }

    /// (T, E) of the mapping whose genes are `genes` (n values, gene i < cardinalities()[i]).
    /// No range checks: the hot path of every search. See checked_evaluate for user input.
    TimeEnergy evaluate(const std::uint8_t* genes) const {
        const TimeEnergy* p = m_table.data();
        const std::size_t s = m_stride, ss = s * s;
        double t = p[genes[0]].t, e = p[genes[0]].e;
        const TimeEnergy* row = p + s;
        for (std::size_t i = 1; i < m_n; ++i, row += ss) {
            const TimeEnergy& v = row[genes[i - 1] * s + genes[i]];
            t += v.t;
            e += v.e;
        }
        return {t, e};
    }
    TimeEnergy evaluate(std::span<const std::uint8_t> genes) const { return evaluate(genes.data()); }

    /// evaluate() after checking the genome's length and every gene's range.
    /// @throws config_error naming the first bad gene.
    TimeEnergy checked_evaluate(std::span<const std::uint8_t> genes) const {
        check_genes(genes);
        return evaluate(genes.data());
    }
    void check_genes(std::span<const std::uint8_t> genes) const {
        if (genes.size() != m_n) raise<config_error>("mapping: ", genes.size(), " genes for ", m_n, " blocks");
        for (std::size_t i = 0; i < m_n; ++i)
            if (genes[i] >= m_supported[i].size())
                raise<config_error>("mapping: gene ", i, " is ", int(genes[i]), ", block ", i, " has ",
                                    m_supported[i].size(), " supporting compute unit(s)");
    }

    /// Genes -> CU indices.
    std::vector<std::uint8_t> to_cus(std::span<const std::uint8_t> genes) const {
        check_genes(genes);
        std::vector<std::uint8_t> cus(m_n);
        for (std::size_t i = 0; i < m_n; ++i) cus[i] = m_supported[i][genes[i]];
        return cus;
    }
    /// CU indices -> genes, or nullopt if some CU does not support its block.
    std::optional<std::vector<std::uint8_t>> to_genes(std::span<const std::uint8_t> cus) const {
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
    /// The genome that runs every block on `cu`, or nullopt if `cu` does not run them all.
    std::optional<std::vector<std::uint8_t>> standalone(std::size_t cu) const {
        return to_genes(std::vector<std::uint8_t>(m_n, static_cast<std::uint8_t>(cu)));
    }

    /// Computation cost (no transfer) of block i with gene g.
    const TimeEnergy& computation(std::size_t i, std::uint8_t g) const { return m_comp[i][g]; }

    /// Increment of block i's term given the genes of blocks i-1 and i (i >= 1), or of block 0.
    const TimeEnergy& term(std::size_t i, std::uint8_t prev_gene, std::uint8_t gene) const {
        if (i == 0) return m_table[gene];
        return m_table[step_offset(i) + prev_gene * m_stride + gene];
    }

private:
    std::size_t step_offset(std::size_t i) const { return m_stride + (i - 1) * m_stride * m_stride; }

    std::size_t m_n = 0, m_stride = 1;
    std::vector<std::string> m_cus;
    std::vector<std::vector<std::uint8_t>> m_supported;
    std::vector<std::vector<TimeEnergy>> m_comp;  // [block][gene]
    std::vector<TimeEnergy> m_table;              // block 0: stride entries; block i >= 1: stride x stride
};

/// A mapping held with its (T, E), re-evaluated in O(1) when one gene changes. Sums drift by
/// rounding over many changes; resync() recomputes them from scratch.
class IncrementalMapping {
public:
    IncrementalMapping(const MappingEvaluator& ev, std::vector<std::uint8_t> genes)
        : m_ev(&ev), m_genes(std::move(genes)) {
        ev.check_genes(m_genes);
        m_value = ev.evaluate(m_genes.data());
    }
    const std::vector<std::uint8_t>& genes() const { return m_genes; }
    TimeEnergy value() const { return m_value; }

    /// (T, E) the mapping would have with gene i set to g, without changing it.
    TimeEnergy with(std::size_t i, std::uint8_t g) const {
        const TimeEnergy d = delta(i, g);
        return {m_value.t + d.t, m_value.e + d.e};
    }
    /// Set gene i to g and update (T, E).
    void set(std::size_t i, std::uint8_t g) {
        const TimeEnergy d = delta(i, g);
        m_value.t += d.t;
        m_value.e += d.e;
        m_genes[i] = g;
    }
    void resync() { m_value = m_ev->evaluate(m_genes.data()); }

private:
    TimeEnergy delta(std::size_t i, std::uint8_t g) const {
        const auto& ev = *m_ev;
        const std::uint8_t old = m_genes[i];
        const std::uint8_t prev = i > 0 ? m_genes[i - 1] : 0;
        TimeEnergy d{ev.term(i, prev, g).t - ev.term(i, prev, old).t, ev.term(i, prev, g).e - ev.term(i, prev, old).e};
        if (i + 1 < m_genes.size()) {
            const std::uint8_t next = m_genes[i + 1];
            d.t += ev.term(i + 1, g, next).t - ev.term(i + 1, old, next).t;
            d.e += ev.term(i + 1, g, next).e - ev.term(i + 1, old, next).e;
        }
        return d;
    }
    const MappingEvaluator* m_ev;
    std::vector<std::uint8_t> m_genes;
    TimeEnergy m_value;
};

/// A standalone mapping: the whole network on one CU.
struct Standalone {
    std::size_t cu = 0;
    std::vector<std::uint8_t> genes;
    TimeEnergy value;
};

/// Every standalone mapping that exists (CUs that run every block), in CU order.
inline std::vector<Standalone> standalone_mappings(const MappingEvaluator& ev) {
    std::vector<Standalone> out;
    for (std::size_t c = 0; c < ev.num_cus(); ++c)
        if (auto g = ev.standalone(c)) out.push_back({c, *g, ev.evaluate(g->data())});
    return out;
}

/// The normaliser of P(m): max standalone latency and energy. When no CU runs every block, each
/// block's worst supporting CU stands in (computation only), so P stays defined.
inline Normaliser standalone_normaliser(const MappingEvaluator& ev) {
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

/// Lexicographic order of gene or CU vectors (a plain loop: GCC 12 warns falsely about the
/// memcmp inside std::vector's operator< on bytes).
inline bool genes_less(std::span<const std::uint8_t> a, std::span<const std::uint8_t> b) {
    const std::size_t n = std::min(a.size(), b.size());
    for (std::size_t i = 0; i < n; ++i)
        if (a[i] != b[i]) return a[i] < b[i];
    return a.size() < b.size();
}

/// Number of CU changes between neighbouring blocks of a mapping given as CU indices.
inline std::size_t transitions(std::span<const std::uint8_t> cus) {
    std::size_t k = 0;
    for (std::size_t i = 1; i < cus.size(); ++i) k += cus[i] != cus[i - 1];
    return k;
}

}  // namespace dnncost::search::mapping
