#pragma once
/// @file inner_search_impl.hpp
/// The definitions of inner_search.hpp: compiled once into dnncost::compiled in compiled mode
/// (core/config.hpp), included by inner_search.hpp in header-only mode.
#include <dnncost/search/mapping/inner_search.hpp>
#include <dnncost/search/nsga2.hpp>

namespace dnncost::search::mapping {

DNNCOST_FUNC MappingProblem::MappingProblem(const MappingEvaluator& ev, const Preference& pref,
                                            const MappingOperators& op)
    : m_ev(&ev), m_pref(pref), m_op(op), m_card(ev.cardinalities()) {
    m_pref.validate();
    if (m_op.mutation_probability < 0.0) m_op.mutation_probability = 1.0 / static_cast<double>(m_card.size());
    for (double p : {m_op.crossover_probability, m_op.swap_probability, m_op.mutation_probability})
        if (!(p >= 0.0 && p <= 1.0)) raise<config_error>("mapping search: probabilities must be in [0, 1], got ", p);
}

DNNCOST_FUNC MappingProblem::Genome MappingProblem::random_genome(Rng& rng) const {
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

DNNCOST_FUNC MappingSolution detail::solution_of(const MappingEvaluator& ev, std::span<const std::uint8_t> genes,
                                                 TimeEnergy v, const Normaliser& norm, const Preference& pref,
                                                 std::size_t dvfs) {
    return {ev.to_cus(genes), v, objective_p(v, norm, pref), dvfs, pref.feasible(v)};
}

DNNCOST_FUNC std::vector<MappingSolution> detail::nondominated(std::vector<MappingSolution> all) {
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

DNNCOST_FUNC void detail::choose_best(MappingSearchResult& r, const Preference& pref,
                                      const std::vector<std::string>& cu_names) {
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
                                   "; returning the best standalone mapping (", cu_names[r.best.cus.front()], " only)");
    } else {
        r.best = *std::min_element(r.front.begin(), r.front.end(),
                                   [](const MappingSolution& a, const MappingSolution& b) { return a.p < b.p; });
        r.note = ::dnncost::concat("no mapping found meets ", pref.describe(),
                                   " and no compute unit runs every block; returning the lowest-P mapping found");
    }
}

DNNCOST_FUNC std::vector<MappingSolution> nondominated_solutions(std::vector<MappingSolution> all) {
    return detail::nondominated(std::move(all));
}

DNNCOST_FUNC MappingSearchResult search_mappings(const MappingEvaluator& ev, const MappingSearchOptions& options,
                                                 std::optional<Normaliser> norm, std::size_t dvfs) {
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

DNNCOST_FUNC MappingSearchResult search_mappings_dvfs(std::span<const MappingEvaluator> evaluators,
                                                      std::size_t reference, const MappingSearchOptions& options) {
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
