#pragma once
/// @file cosearch.hpp
/// The outer optimisation engine (OOE) of MaGNAS (Sec. 4.2): NSGA-II over architecture
/// choices, each architecture scored by a user accuracy function and by the inner engine's
/// (IOE, inner_search.hpp) best mapping: objectives (-accuracy, T, E) of that mapping, all
/// minimised; with latency/energy targets set, an architecture whose IOE found no feasible
/// mapping carries the best standalone mapping's violations as its constraint values.
///
/// Any architecture space plugs in (ArchitectureSpace): integer genes with cardinalities(),
/// decode(genes) -> Architecture, blocks(Architecture) -> the mapping blocks in order; optional
/// canonical(genes) (genomes that build the same network share one IOE run), gene_group(i) /
/// num_gene_groups() (crossover swaps whole groups, e.g. ViG superblocks) and block_name(block).
///
/// IOE results are cached per canonical architecture. A batch of architectures is evaluated on
/// a thread pool; every IOE's seed is derived from the run's seed and the architecture itself,
/// so the result does not depend on the number of threads or the order of evaluation.
#include <algorithm>
#include <chrono>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include <dnncost/core/config.hpp>
#include <dnncost/core/error.hpp>
#include <dnncost/core/parallel.hpp>
#include <dnncost/core/rng.hpp>
#include <dnncost/search/mapping/cost_source.hpp>
#include <dnncost/search/mapping/inner_search.hpp>
#include <dnncost/search/mapping/mapping_cost.hpp>
#include <dnncost/search/mapping/vig_space.hpp>
#include <dnncost/search/nsga2.hpp>
#include <dnncost/search/problem.hpp>

namespace dnncost::search::mapping {

/// An architecture space the OOE can search (see the file comment).
template <class S>
concept ArchitectureSpace = requires(const S& s, std::span<const std::uint8_t> g, const typename S::Architecture& a) {
    typename S::Architecture;
    typename S::Block;
    { s.cardinalities() } -> std::convertible_to<std::vector<std::size_t>>;
    { s.decode(g) } -> std::convertible_to<typename S::Architecture>;
    { s.blocks(a) } -> std::convertible_to<std::vector<typename S::Block>>;
};

/// Settings of the co-search (MaGNAS's budgets by default: OOE 100 x 50, IOE 200 x 10).
struct CoSearchOptions {
    std::size_t population = 100;
    std::size_t generations = 50;
    double crossover_probability = 0.8;  ///< a pair of parents is recombined
    double swap_probability = 0.5;       ///< each gene group is swapped, when recombining
    double mutation_probability = 0.4;   ///< each gene group has one gene resampled
    MappingSearchOptions inner{};        ///< IOE budget, operators, preference (gamma, targets)
    std::size_t dvfs = 0;                ///< DVFS setting of the platform used by the IOE
    bool dvfs_brute_force = false;       ///< run the IOE at every DVFS setting instead
    std::size_t threads = 1;             ///< architectures evaluated at once (0 = all cores)
    std::uint64_t seed = 1;
};

/// One architecture with its IOE result.
template <class Architecture>
struct CoSearchPoint {
    std::vector<std::uint8_t> genome;
    Architecture architecture;
    double accuracy = 0.0;
    MappingSearchResult mapping;  ///< the IOE's front, standalone mappings and best mapping
};

/// What the co-search returns.
template <class Architecture>
struct CoSearchResult {
    std::vector<CoSearchPoint<Architecture>> front;  ///< non-dominated (accuracy, T, E) seen
    std::size_t generations = 0;
    std::size_t outer_evaluations = 0;    ///< architectures scored by the OOE (its cache hits excluded)
    std::size_t inner_runs = 0;           ///< IOE runs (distinct networks)
    std::size_t mapping_evaluations = 0;  ///< mappings evaluated by all IOE runs
    double seconds = 0.0;
};

/// The co-search as a search::Problem over architecture genomes.
template <ArchitectureSpace Space, class Source, class Accuracy>
requires BlockCostSource<Source, typename Space::Block> &&
    std::convertible_to < std::invoke_result_t<const Accuracy&, const typename Space::Architecture&>,
double > class CoSearchProblem {
public:
    using Genome = std::vector<std::uint8_t>;
    using Architecture = typename Space::Architecture;
    using Block = typename Space::Block;
    struct Entry {
        double accuracy = 0.0;
        MappingSearchResult mapping;
    };

    /// space, source and accuracy are kept by reference and must outlive the problem.
    /// @throws config_error for bad probabilities, a DVFS setting out of range, a space
    ///         without genes or a gene with more than 256 choices.
    CoSearchProblem(const Space& space, const Source& source, const Accuracy& accuracy, CoSearchOptions options)
        : m_space(&space), m_source(&source), m_accuracy(&accuracy), m_options(std::move(options)) {
        m_card = space.cardinalities();
        if (m_card.empty()) raise<config_error>("co-search: the architecture space has no genes");
        for (auto c : m_card)
            if (c == 0 || c > 256) raise<config_error>("co-search: a gene has ", c, " choices (1 to 256 supported)");
        for (double p : {m_options.crossover_probability, m_options.swap_probability, m_options.mutation_probability})
            if (!(p >= 0.0 && p <= 1.0)) raise<config_error>("co-search: probabilities must be in [0, 1], got ", p);
        const Platform& pl = source.platform();
        if (m_options.dvfs >= pl.num_dvfs())
            raise<config_error>("co-search: DVFS setting ", m_options.dvfs, " of ", pl.num_dvfs());
        m_options.inner.preference.validate();
        m_groups.resize(m_card.size());
        std::size_t groups = 0;
        for (std::size_t i = 0; i < m_card.size(); ++i) {
            if constexpr (requires { space.gene_group(i); })
                m_groups[i] = space.gene_group(i);
            else
                m_groups[i] = i;
            groups = std::max(groups, m_groups[i] + 1);
        }
        m_members.assign(groups, {});
        for (std::size_t i = 0; i < m_card.size(); ++i) m_members[m_groups[i]].push_back(i);
        if (m_options.threads != 1) m_pool = std::make_unique<ThreadPool>(m_options.threads);
    }

    std::size_t num_objectives() const { return 3; }
    std::size_t num_constraints() const { return m_options.inner.preference.constrained() ? 2 : 0; }

    Genome random_genome(Rng& rng) const {
        Genome g(m_card.size());
        for (std::size_t i = 0; i < g.size(); ++i) g[i] = static_cast<std::uint8_t>(rng.below(m_card[i]));
        return g;
    }
    std::pair<Genome, Genome> crossover(const Genome& a, const Genome& b, Rng& rng) const {
        std::pair<Genome, Genome> c{a, b};
        if (!rng.bernoulli(m_options.crossover_probability)) return c;
        for (const auto& group : m_members)
            if (rng.bernoulli(m_options.swap_probability))
                for (std::size_t i : group) std::swap(c.first[i], c.second[i]);
        return c;
    }
    void mutate(Genome& g, Rng& rng) const {
        for (const auto& group : m_members) {
            if (!rng.bernoulli(m_options.mutation_probability)) continue;
            const std::size_t i = group[static_cast<std::size_t>(rng.below(group.size()))];
            g[i] = static_cast<std::uint8_t>(rng.below(m_card[i]));
        }
    }

    search::Evaluation evaluate(const Genome& g) const {
        return std::move(evaluate_batch(std::span<const Genome>(&g, 1))[0]);
    }

    /// Score a batch: distinct networks not yet in the cache run the IOE (in parallel).
    std::vector<search::Evaluation> evaluate_batch(std::span<const Genome> genomes) const {
        std::vector<Genome> keys;
        keys.reserve(genomes.size());
        for (const auto& g : genomes) keys.push_back(canonical(g));
        std::vector<const Genome*> todo;
        {
            std::lock_guard lock(m_mutex);
            std::unordered_map<Genome, bool, KeyHash> pending;
            for (const auto& k : keys)
                if (!m_cache.count(k) && pending.emplace(k, true).second) todo.push_back(&k);
        }
        std::vector<std::shared_ptr<const Entry>> fresh(todo.size());
        auto body = [&](std::size_t i) { fresh[i] = std::make_shared<const Entry>(evaluate_architecture(*todo[i])); };
        if (m_pool && todo.size() > 1)
            m_pool->parallel_for(0, todo.size(), body);
        else
            for (std::size_t i = 0; i < todo.size(); ++i) body(i);
        std::vector<search::Evaluation> out;
        out.reserve(genomes.size());
        std::lock_guard lock(m_mutex);
        for (std::size_t i = 0; i < todo.size(); ++i) {
            m_mapping_evaluations += fresh[i]->mapping.evaluations;
            m_cache.emplace(*todo[i], std::move(fresh[i]));
        }
        m_inner_runs += todo.size();
        for (const auto& k : keys) {
            const Entry& e = *m_cache.at(k);
            search::Evaluation r;
            r.objectives = {-e.accuracy, e.mapping.best.value.t, e.mapping.best.value.e};
            if (num_constraints() > 0) {
                const auto [vt, ve] = m_options.inner.preference.violations(e.mapping.best.value);
                r.violations = {vt, ve};
            }
            out.push_back(std::move(r));
        }
        return out;
    }

    /// The cached IOE result of a genome's network (runs the IOE if needed).
    std::shared_ptr<const Entry> entry(const Genome& g) const {
        (void)evaluate(g);
        std::lock_guard lock(m_mutex);
        return m_cache.at(canonical(g));
    }

    Genome canonical(const Genome& g) const {
        if constexpr (requires { m_space->canonical(g); })
            return m_space->canonical(g);
        else
            return g;
    }
    std::size_t inner_runs() const {
        std::lock_guard lock(m_mutex);
        return m_inner_runs;
    }
    std::size_t mapping_evaluations() const {
        std::lock_guard lock(m_mutex);
        return m_mapping_evaluations;
    }
    const CoSearchOptions& options() const { return m_options; }
    const Space& space() const { return *m_space; }

    /// IOE of one network (canonical genome): not cached, deterministic in (seed, genome).
    Entry evaluate_architecture(const Genome& key) const {
        const Architecture arch = m_space->decode(key);
        const std::vector<Block> blocks = m_space->blocks(arch);
        std::function<std::string(const Block&)> name;
        if constexpr (requires(const Block& b) {
                          { Space::block_name(b) } -> std::convertible_to<std::string>;
                      })
            name = [](const Block& b) { return Space::block_name(b); };
        MappingSearchOptions o = m_options.inner;
        o.seed = m_options.seed ^ (KeyHash{}(key)*0x9e3779b97f4a7c15ULL);
        const Platform& pl = m_source->platform();
        Entry e;
        e.accuracy = static_cast<double>((*m_accuracy)(arch));
        if (m_options.dvfs_brute_force) {
            std::vector<MappingEvaluator> evs;
            for (std::size_t d = 0; d < pl.num_dvfs(); ++d) evs.emplace_back(make_instance(*m_source, blocks, d, name));
            e.mapping = search_mappings_dvfs(evs, pl.reference_dvfs, o);
        } else {
            const MappingEvaluator ev(make_instance(*m_source, blocks, m_options.dvfs, name));
            const Normaliser norm = m_options.dvfs == pl.reference_dvfs
                                        ? standalone_normaliser(ev)
                                        : standalone_normaliser(MappingEvaluator(
                                              make_instance(*m_source, blocks, pl.reference_dvfs, name)));
            e.mapping = search_mappings(ev, o, norm, m_options.dvfs);
        }
        return e;
    }

private:
    struct KeyHash {
        std::size_t operator()(const Genome& g) const {
            std::uint64_t h = 0xcbf29ce484222325ULL;
            for (auto x : g) h = (h ^ x) * 0x100000001b3ULL;
            return static_cast<std::size_t>(h ^ (h >> 29));
        }
    };

    const Space* m_space;
    const Source* m_source;
    const Accuracy* m_accuracy;
    CoSearchOptions m_options;
    std::vector<std::size_t> m_card, m_groups;
    std::vector<std::vector<std::size_t>> m_members;
    std::unique_ptr<ThreadPool> m_pool;
    mutable std::mutex m_mutex;
    mutable std::unordered_map<Genome, std::shared_ptr<const Entry>, KeyHash> m_cache;
    mutable std::size_t m_inner_runs = 0, m_mapping_evaluations = 0;
};

/// Run the nested co-search: OOE over `space`, IOE per architecture on `source`'s platform.
/// @param accuracy callable Architecture -> accuracy (any unit; higher is better).
template <ArchitectureSpace Space, class Source, class Accuracy>
CoSearchResult<typename Space::Architecture> co_search(const Space& space, const Source& source,
                                                       const Accuracy& accuracy, const CoSearchOptions& options) {
    using Problem = CoSearchProblem<Space, Source, Accuracy>;
    const auto start = std::chrono::steady_clock::now();
    Problem problem(space, source, accuracy, options);
    search::Options o;
    o.population = options.population;
    o.generations = options.generations;
    o.archive = true;
    search::Nsga2 nsga(problem, o, options.seed);
    const auto res = nsga.run();
    CoSearchResult<typename Space::Architecture> out;
    out.generations = res.generations;
    out.outer_evaluations = res.evaluations;
    // genomes that build the same network (e.g. differing only in a skipped FFN's width) once
    std::vector<std::vector<std::uint8_t>> seen;
    for (const auto& ind : res.archive) {
        auto key = problem.canonical(ind.genome);
        if (std::find(seen.begin(), seen.end(), key) != seen.end()) continue;
        seen.push_back(std::move(key));
        const auto entry = problem.entry(ind.genome);
        out.front.push_back({ind.genome, space.decode(ind.genome), entry->accuracy, entry->mapping});
    }
    std::sort(out.front.begin(), out.front.end(), [](const auto& a, const auto& b) {
        if (a.mapping.best.value.t != b.mapping.best.value.t) return a.mapping.best.value.t < b.mapping.best.value.t;
        return genes_less(a.genome, b.genome);
    });
    out.inner_runs = problem.inner_runs();
    out.mapping_evaluations = problem.mapping_evaluations();
    out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return out;
}

#if defined(DNNCOST_COMPILED) && !defined(DNNCOST_BUILDING_LIBRARY)
// The co-search `dnncost cosearch` runs (the ViG space on a tabulated platform, scored by the
// accuracy proxy), built once, in the compiled library (src/mapping.cpp).
extern template class CoSearchProblem<VigSpace, TableCostSource<VigSpace>, VigAccuracyProxy>;
extern template CoSearchResult<VigArchitecture> co_search(const VigSpace&, const TableCostSource<VigSpace>&,
                                                          const VigAccuracyProxy&, const CoSearchOptions&);
#endif

}  // namespace dnncost::search::mapping
