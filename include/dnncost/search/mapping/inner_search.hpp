#pragma once
/// @file inner_search.hpp
/// The inner optimisation engine (IOE) of MaGNAS (Sec. 4.3): NSGA-II over the mappings of one
/// network, minimising latency and energy under the targets T < T_target and E < E_target, and
/// returning the non-dominated mappings found and the one with the lowest P(m) (Eq. 13).
///
/// Since P grows with T and with E (gamma >= 0), the mapping with the lowest P is always on
/// the (T, E) front, so one bi-objective run gives both. Standalone mappings (whole network on
/// one CU) are evaluated too: they normalise P, they join the front when non-dominated, and when
/// no mapping meets the targets the best standalone one is returned, with a note saying so.
///
/// An instance with no more mappings than the search would evaluate is enumerated instead
/// (exact and cheaper; MappingSearchOptions::enumerate_small).
///
/// DVFS (Sec. 4.3.5): the setting is global to the network, so the brute-force option runs one
/// search per setting and merges the fronts; P is normalised at the platform's reference
/// setting throughout, so P values compare across settings.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <dnncost/core/config.hpp>
#include <dnncost/core/error.hpp>
#include <dnncost/core/rng.hpp>
#include <dnncost/search/mapping/exact.hpp>
#include <dnncost/search/mapping/mapping_cost.hpp>
#include <dnncost/search/operators.hpp>
#include <dnncost/search/problem.hpp>

namespace dnncost::search::mapping {

/// Variation settings of the IOE.
struct MappingOperators {
    double crossover_probability = 0.8;  ///< a pair of parents is recombined (uniform crossover)
    double swap_probability = 0.5;       ///< each gene pair is exchanged, when recombining
    /// Each gene is resampled with this probability; negative means 1 / number of blocks.
    /// MaGNAS resamples with 0.4 (Sec. 4.3.2); at its budget of 2,200 evaluations 1/n reached
    /// a larger hypervolume on the ViG instances (docs/mapping.md), hence the default.
    double mutation_probability = -1.0;
    /// Initial mappings drawn with a random preference per CU (each block picks a CU with
    /// probabilities from a flat Dirichlet draw), so the first population spans the range from
    /// nearly standalone to evenly mixed mappings instead of clustering at an even mix.
    bool stratified_initialisation = true;
};

/// The mapping search as a search::Problem: genes index each block's supporting CUs,
/// objectives (T, E), constraints the two targets (when set), operators MappingOperators.
class MappingProblem {
public:
    using Genome = std::vector<std::uint8_t>;
    /// @throws config_error for probabilities outside [0, 1] or invalid preferences.
    DNNCOST_FUNC MappingProblem(const MappingEvaluator& ev, const Preference& pref, const MappingOperators& op = {});
    MappingProblem(MappingEvaluator&&, const Preference&, const MappingOperators& = {}) = delete;  // would dangle

    std::size_t num_objectives() const { return 2; }
    std::size_t num_constraints() const { return m_pref.constrained() ? 2 : 0; }
    std::vector<std::size_t> cardinalities() const { return m_card; }
    search::Evaluation evaluate(const Genome& g) const {
        const TimeEnergy v = m_ev->evaluate(g.data());
        search::Evaluation r;
        r.objectives = {v.t, v.e};
        if (m_pref.constrained()) {
            const auto [vt, ve] = m_pref.violations(v);
            r.violations = {vt, ve};
        }
        return r;
    }

    DNNCOST_FUNC Genome random_genome(Rng& rng) const;
    std::pair<Genome, Genome> crossover(const Genome& a, const Genome& b, Rng& rng) const {
        std::pair<Genome, Genome> c{a, b};
        if (rng.bernoulli(m_op.crossover_probability))
            search::uniform_crossover<std::uint8_t>(c.first, c.second, m_op.swap_probability, rng);
        return c;
    }
    void mutate(Genome& g, Rng& rng) const {
        search::uniform_mutation<std::uint8_t>(g, m_card, m_op.mutation_probability, rng);
    }

    /// Genome hash for NSGA-II's duplicate removal: eight genes per multiply-xorshift step.
    std::size_t hash(const Genome& g) const {
        std::uint64_t h = 0x9e3779b97f4a7c15ULL ^ g.size();
        std::size_t i = 0;
        for (; i + 8 <= g.size(); i += 8) {
            std::uint64_t w;
            std::memcpy(&w, g.data() + i, 8);
            h = (h ^ w) * 0xbf58476d1ce4e5b9ULL;
            h ^= h >> 31;
        }
        std::uint64_t w = 0;
        if (i < g.size()) std::memcpy(&w, g.data() + i, g.size() - i);
        h = (h ^ w) * 0x94d049bb133111ebULL;
        return static_cast<std::size_t>(h ^ (h >> 29));
    }
    const MappingEvaluator& evaluator() const { return *m_ev; }
    const Preference& preference() const { return m_pref; }

private:
    const MappingEvaluator* m_ev;
    Preference m_pref;
    MappingOperators m_op;
    std::vector<std::size_t> m_card;
};

/// Settings of the IOE (MaGNAS's budget by default).
struct MappingSearchOptions {
    std::size_t population = 200;     ///< mappings per generation
    std::size_t generations = 10;     ///< generations after the initial one
    std::size_t max_evaluations = 0;  ///< additional budget in evaluations (0 = none)
    MappingOperators operators{};
    Preference preference{};
    std::uint64_t seed = 1;
    /// Enumerate every mapping instead when there are no more of them than the search would
    /// evaluate (population x (generations + 1), or max_evaluations): exact, and cheaper.
    bool enumerate_small = true;
};

/// One mapping as reported: CU of every block, (T, E), P and the DVFS setting.
struct MappingSolution {
    std::vector<std::uint8_t> cus;  ///< CU index of each block
    TimeEnergy value;
    double p = 0.0;
    std::size_t dvfs = 0;
    bool feasible = true;
};

/// What the IOE returns.
struct MappingSearchResult {
    std::vector<MappingSolution> front;       ///< non-dominated mappings found, increasing T
    std::vector<MappingSolution> standalone;  ///< whole network on one CU (CUs that run every block)
    MappingSolution best;                     ///< lowest P among the front, or the fallback
    bool fallback = false;                    ///< no mapping met the targets: best is the best standalone
    std::string note;                         ///< says so, when fallback
    Normaliser normaliser;
    bool enumerated = false;      ///< the instance was small enough to enumerate
    std::size_t evaluations = 0;  ///< mappings evaluated (standalone ones included)
};

namespace detail {

DNNCOST_FUNC MappingSolution solution_of(const MappingEvaluator& ev, std::span<const std::uint8_t> genes, TimeEnergy v,
                                         const Normaliser& norm, const Preference& pref, std::size_t dvfs);

/// Keep the non-dominated solutions among the feasible ones (or among all, when none is
/// feasible), sorted by increasing T; one solution per distinct (T, E).
DNNCOST_FUNC std::vector<MappingSolution> nondominated(std::vector<MappingSolution> all);

/// Choose the best P on the front, or fall back to the best standalone mapping.
DNNCOST_FUNC void choose_best(MappingSearchResult& r, const Preference& pref, const std::vector<std::string>& cu_names);

}  // namespace detail

/// The non-dominated mappings among `all`: the feasible ones when any is feasible, one per
/// distinct (T, E), increasing T.
DNNCOST_FUNC std::vector<MappingSolution> nondominated_solutions(std::vector<MappingSolution> all);

/// Run the IOE on one instance at one DVFS setting.
/// @param norm the normaliser of P; empty = the standalone maxima of this instance.
/// @param dvfs recorded in the solutions (index of the instance's DVFS setting).
/// @throws config_error for bad options or preferences.
DNNCOST_FUNC MappingSearchResult search_mappings(const MappingEvaluator& ev, const MappingSearchOptions& options,
                                                 std::optional<Normaliser> norm = std::nullopt, std::size_t dvfs = 0);

/// Brute force over DVFS settings: one IOE per setting (evaluators[d] = instance at setting d),
/// fronts merged, P normalised at setting `reference`.
DNNCOST_FUNC MappingSearchResult search_mappings_dvfs(std::span<const MappingEvaluator> evaluators,
                                                      std::size_t reference, const MappingSearchOptions& options);

}  // namespace dnncost::search::mapping

#if !defined(DNNCOST_COMPILED)
#include <dnncost/search/mapping/inner_search_impl.hpp>
#endif
