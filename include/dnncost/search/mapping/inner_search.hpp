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

#include <dnncost/core/error.hpp>
#include <dnncost/core/rng.hpp>
#include <dnncost/search/mapping/exact.hpp>
#include <dnncost/search/mapping/mapping_cost.hpp>
#include <dnncost/search/nsga2.hpp>
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
    MappingProblem(const MappingEvaluator& ev, const Preference& pref, const MappingOperators& op = {})
        : m_ev(&ev), m_pref(pref), m_op(op), m_card(ev.cardinalities()) {
        m_pref.validate();
        if (m_op.mutation_probability < 0.0) m_op.mutation_probability = 1.0 / static_cast<double>(m_card.size());
        for (double p : {m_op.crossover_probability, m_op.swap_probability, m_op.mutation_probability})
            if (!(p >= 0.0 && p <= 1.0))
                raise<config_error>("mapping search: probabilities must be in [0, 1], got ", p);
    }
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

    Genome random_genome(Rng& rng) const {
        Genome g(m_card.size());
        if (!m_op.stratified_initialisation) {
            for (std::size_t i = 0; i < g.size(); ++i) g[i] = static_cast<std::uint8_t>(rng.below(m_card[i]));
            return g;
        }
        std::vector<double> weight(m_ev->num_cus());
        for (auto& w : weight) w = -std::log1p(-rng.uniform());  // exponential: normalised, a flat Dirichlet
        for (std::size_t i = 0; i < g.size(); ++i) {
            const auto& sup = m_ev->supported(i);
            double total = 0.0;
            for (auto c : sup) total += weight[c];
            double u = rng.uniform() * total;
            std::size_t k = 0;
            while (k + 1 < sup.size() && (u -= weight[sup[k]]) >= 0.0) ++k;
            g[i] = static_cast<std::uint8_t>(k);
        }
        return g;
    }
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

inline MappingSolution solution_of(const MappingEvaluator& ev, std::span<const std::uint8_t> genes, TimeEnergy v,
                                   const Normaliser& norm, const Preference& pref, std::size_t dvfs) {
    return {ev.to_cus(genes), v, objective_p(v, norm, pref), dvfs, pref.feasible(v)};
}

/// Keep the non-dominated solutions among the feasible ones (or among all, when none is
/// feasible), sorted by increasing T; one solution per distinct (T, E).
inline std::vector<MappingSolution> nondominated(std::vector<MappingSolution> all) {
    const bool any_feasible = std::any_of(all.begin(), all.end(), [](const MappingSolution& s) { return s.feasible; });
    if (any_feasible) std::erase_if(all, [](const MappingSolution& s) { return !s.feasible; });
    std::sort(all.begin(), all.end(), [](const MappingSolution& a, const MappingSolution& b) {
        if (a.value.t != b.value.t) return a.value.t < b.value.t;
        if (a.value.e != b.value.e) return a.value.e < b.value.e;
        return genes_less(a.cus, b.cus);
    });
    std::vector<MappingSolution> front;
    for (auto& s : all)
        if (front.empty() || s.value.e < front.back().value.e) front.push_back(std::move(s));
    return front;
}

/// Choose the best P on the front, or fall back to the best standalone mapping.
inline void choose_best(MappingSearchResult& r, const Preference& pref, const std::vector<std::string>& cu_names) {
    const bool any_feasible =
        std::any_of(r.front.begin(), r.front.end(), [](const MappingSolution& s) { return s.feasible; });
    if (any_feasible) {
        r.best =
            *std::min_element(r.front.begin(), r.front.end(), [](const MappingSolution& a, const MappingSolution& b) {
                if (a.feasible != b.feasible) return a.feasible;
                return a.p < b.p;
            });
        r.fallback = false;
        return;
    }
    r.fallback = true;
    if (!r.standalone.empty()) {
        r.best = *std::min_element(r.standalone.begin(), r.standalone.end(),
                                   [](const MappingSolution& a, const MappingSolution& b) { return a.p < b.p; });
        r.note = ::dnncost::concat("no mapping found meets ", pref.describe(),
                                           "; returning the best standalone mapping (", cu_names[r.best.cus.front()],
                                           " only)");
    } else {
        r.best = *std::min_element(r.front.begin(), r.front.end(),
                                   [](const MappingSolution& a, const MappingSolution& b) { return a.p < b.p; });
        r.note =
            ::dnncost::concat("no mapping found meets ", pref.describe(),
                                      " and no compute unit runs every block; returning the lowest-P mapping found");
    }
}

}  // namespace detail

/// The non-dominated mappings among `all`: the feasible ones when any is feasible, one per
/// distinct (T, E), increasing T.
inline std::vector<MappingSolution> nondominated_solutions(std::vector<MappingSolution> all) {
    return detail::nondominated(std::move(all));
}

/// Run the IOE on one instance at one DVFS setting.
/// @param norm the normaliser of P; empty = the standalone maxima of this instance.
/// @param dvfs recorded in the solutions (index of the instance's DVFS setting).
/// @throws config_error for bad options or preferences.
inline MappingSearchResult search_mappings(const MappingEvaluator& ev, const MappingSearchOptions& options,
                                           std::optional<Normaliser> norm = std::nullopt, std::size_t dvfs = 0) {
    const Preference& pref = options.preference;
    MappingProblem problem(ev, pref, options.operators);
    MappingSearchResult r;
    r.normaliser = norm ? *norm : standalone_normaliser(ev);
    std::vector<MappingSolution> candidates;
    for (const auto& s : standalone_mappings(ev)) {
        r.standalone.push_back(detail::solution_of(ev, s.genes, s.value, r.normaliser, pref, dvfs));
        candidates.push_back(r.standalone.back());
        ++r.evaluations;
    }
    std::size_t budget = options.max_evaluations;
    if (options.generations > 0) {
        const std::size_t by_generations = options.population * (options.generations + 1);
        budget = budget == 0 ? by_generations : std::min(budget, by_generations);
    }
    if (options.enumerate_small && ev.num_mappings() <= budget) {
        const auto ex = exact_front(ev, pref, budget);
        r.enumerated = true;
        r.evaluations += ex.evaluations;
        for (const auto& p : ex.front)
            candidates.push_back(detail::solution_of(ev, p.genes, p.value, r.normaliser, pref, dvfs));
        r.front = detail::nondominated(std::move(candidates));
        detail::choose_best(r, pref, ev.cu_names());
        return r;
    }
    search::Options o;
    o.population = options.population;
    o.generations = options.generations;
    o.max_evaluations = options.max_evaluations;
    o.archive = true;
    // a mapping costs less to evaluate than to look up: no evaluation cache (duplicates of the
    // population are still re-drawn)
    o.cache = search::Cache::off;
    search::Nsga2 nsga(problem, o, options.seed);
    const auto res = nsga.run();
    r.evaluations += res.evaluations;
    for (const auto& ind : res.archive) {
        const TimeEnergy v{ind.objectives[0], ind.objectives[1]};
        candidates.push_back(detail::solution_of(ev, ind.genome, v, r.normaliser, pref, dvfs));
    }
    r.front = detail::nondominated(std::move(candidates));
    detail::choose_best(r, pref, ev.cu_names());
    return r;
}

/// Brute force over DVFS settings: one IOE per setting (evaluators[d] = instance at setting d),
/// fronts merged, P normalised at setting `reference`.
inline MappingSearchResult search_mappings_dvfs(std::span<const MappingEvaluator> evaluators, std::size_t reference,
                                                const MappingSearchOptions& options) {
    if (evaluators.empty()) raise<config_error>("search_mappings_dvfs: no DVFS setting");
    if (reference >= evaluators.size())
        raise<config_error>("search_mappings_dvfs: reference setting ", reference, " of ", evaluators.size());
    const Normaliser norm = standalone_normaliser(evaluators[reference]);
    MappingSearchResult all;
    all.normaliser = norm;
    std::vector<MappingSolution> candidates;
    Rng seeds(options.seed);
    for (std::size_t d = 0; d < evaluators.size(); ++d) {
        MappingSearchOptions o = options;
        o.seed = seeds.split();
        auto r = search_mappings(evaluators[d], o, norm, d);
        all.evaluations += r.evaluations;
        all.enumerated = all.enumerated || r.enumerated;
        for (auto& s : r.standalone) all.standalone.push_back(s);
        for (auto& s : r.front) candidates.push_back(std::move(s));
    }
    all.front = detail::nondominated(std::move(candidates));
    detail::choose_best(all, options.preference, evaluators.front().cu_names());
    return all;
}

}  // namespace dnncost::search::mapping
