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

#include <dnncost/core/config.hpp>
#include <dnncost/core/error.hpp>
#include <dnncost/search/mapping/platform.hpp>

namespace dnncost::search::mapping {

/// One network on one platform at one DVFS setting: per-block, per-CU costs and support.
class MappingInstance {
public:
    MappingInstance() = default;
    /// @param cus names of the compute units (at most 255)
    /// @param blocks names of the blocks, in execution order
    DNNCOST_FUNC MappingInstance(std::vector<std::string> cus, std::vector<std::string> blocks);

    std::size_t num_blocks() const { return m_blocks.size(); }
    std::size_t num_cus() const { return m_cus.size(); }
    const std::vector<std::string>& cu_names() const { return m_cus; }
    const std::vector<std::string>& block_names() const { return m_blocks; }

    /// Set the cost of `block` on `cu`, which marks the CU as supporting it.
    /// @throws config_error for indices out of range or a NaN, infinite or negative cost.
    DNNCOST_FUNC void set(std::size_t block, std::size_t cu, const BlockCost& c);
    DNNCOST_FUNC bool supports(std::size_t block, std::size_t cu) const;
    /// The cost of `block` on `cu`. @throws config_error where the CU does not run the block.
    DNNCOST_FUNC const BlockCost& cost(std::size_t block, std::size_t cu) const;
    /// CUs that run `block`, increasing; the gene of the block indexes this list.
    DNNCOST_FUNC std::vector<std::uint8_t> supported(std::size_t block) const;
    /// @throws config_error if there is no block or a block no CU supports.
    DNNCOST_FUNC void validate() const;
    /// Number of valid mappings (product of the support counts), saturating at 2^64 - 1.
    DNNCOST_FUNC std::uint64_t num_mappings() const;

private:
    DNNCOST_FUNC void check(std::size_t block, std::size_t cu) const;
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
    DNNCOST_FUNC void validate() const;
    /// T < t_target and E < e_target.
    bool feasible(TimeEnergy v) const { return v.t < t_target && v.e < e_target; }
    /// "T < 20 ms and E < 150 mJ" (the targets that are set), or "no target".
    DNNCOST_FUNC std::string describe() const;
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
    DNNCOST_FUNC explicit MappingEvaluator(const MappingInstance& inst);

    std::size_t num_blocks() const { return m_n; }
    std::size_t num_cus() const { return m_cus.size(); }
    const std::vector<std::string>& cu_names() const { return m_cus; }
    /// Number of valid mappings, saturating at 2^64 - 1.
    DNNCOST_FUNC std::uint64_t num_mappings() const;
    /// Number of choices of each gene (the CUs that support each block).
    DNNCOST_FUNC std::vector<std::size_t> cardinalities() const;
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
    /// @throws config_error for a wrong genome length or a gene out of range, naming it.
    DNNCOST_FUNC void check_genes(std::span<const std::uint8_t> genes) const;

    /// Genes -> CU indices.
    DNNCOST_FUNC std::vector<std::uint8_t> to_cus(std::span<const std::uint8_t> genes) const;
    /// CU indices -> genes, or nullopt if some CU does not support its block.
    DNNCOST_FUNC std::optional<std::vector<std::uint8_t>> to_genes(std::span<const std::uint8_t> cus) const;
    /// The genome that runs every block on `cu`, or nullopt if `cu` does not run them all.
    DNNCOST_FUNC std::optional<std::vector<std::uint8_t>> standalone(std::size_t cu) const;

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
DNNCOST_FUNC std::vector<Standalone> standalone_mappings(const MappingEvaluator& ev);

/// The normaliser of P(m): max standalone latency and energy. When no CU runs every block, each
/// block's worst supporting CU stands in (computation only), so P stays defined.
DNNCOST_FUNC Normaliser standalone_normaliser(const MappingEvaluator& ev);

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

#if !defined(DNNCOST_COMPILED)
#include <dnncost/search/mapping/mapping_cost_impl.hpp>
#endif
