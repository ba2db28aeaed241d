#pragma once
/// @file nsga2.hpp
/// NSGA-II (Deb, Pratap, Agarwal, Meyarivan 2002) over any search::Problem.
///
/// Each generation: binary tournaments on (rank, crowding distance) pick parents, the genome
/// operators make N offspring (duplicates of the population or of each other are re-drawn),
/// the offspring are evaluated as one batch (cached, optionally on a thread pool), and elitist
/// (mu + lambda) survival keeps the best N of parents and offspring by non-dominated rank under
/// Deb's constrained-domination rule, breaking the last front by crowding distance.
///
/// Reproducibility: every random number is drawn serially in the calling thread before a batch
/// is evaluated and results are stored by index, so one seed gives one front whatever the
/// number of threads.
///
/// @code
/// struct Schaffer {
///     using Genome = std::vector<double>;
///     std::size_t num_objectives() const { return 2; }
///     std::vector<search::Bounds> bounds() const { return {{-10.0, 10.0}}; }
///     std::array<double, 2> evaluate(const Genome& x) const { return {x[0] * x[0], (x[0] - 2) * (x[0] - 2)}; }
/// };
/// Schaffer problem;
/// search::Nsga2 nsga(problem, {.population = 50, .generations = 100}, /*seed=*/42);
/// auto result = nsga.run([](const auto& state) { return state.evaluations() > 4000; });  // true stops
/// for (const auto& ind : result.front) use(ind.genome, ind.objectives);
/// @endcode
#include <algorithm>
#include <array>
#include <bit>
#include <chrono>
#include <cmath>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <numeric>
#include <ranges>
#include <span>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include <dnncost/core/error.hpp>
#include <dnncost/core/parallel.hpp>
#include <dnncost/core/rng.hpp>
#include <dnncost/search/genome_set.hpp>
#include <dnncost/search/operators.hpp>
#include <dnncost/search/pareto.hpp>
#include <dnncost/search/problem.hpp>

namespace dnncost::search {

/// Whether evaluations are cached (see Options::cache).
enum class Cache { automatic, on, off };

/// Settings of one NSGA-II run. At least one budget (generations, evaluations, seconds) must be
/// non-zero; the run stops when the first one is reached, at the end of a generation.
struct Options {
    std::size_t population = 100;     ///< N, any value >= 2
    std::size_t generations = 250;    ///< offspring generations after the initial one; 0 = no limit
    std::size_t max_evaluations = 0;  ///< calls of the user's evaluate (cache hits excluded); 0 = no limit
    double max_seconds = 0.0;         ///< wall time; 0 = no limit
    std::size_t threads = 1;          ///< evaluation threads including the caller; 0 = all cores
    /// Never evaluate the same genome twice (needs a hashable genome). `automatic` caches
    /// integer, categorical and user-defined genomes; real vectors, where a repeat is almost
    /// always a copy of a parent that duplicate removal already re-draws, are not cached.
    Cache cache = Cache::automatic;
    bool remove_duplicates = true;        ///< re-draw offspring equal to a population member or sibling
    std::size_t duplicate_attempts = 10;  ///< re-draws per offspring before a duplicate is accepted
    /// Keep every non-dominated solution seen. Costs a binary search per offspring for two
    /// objectives, a scan of the archive for more (which can hold many thousands of points).
    bool archive = false;
    RealOperatorOptions real{};        ///< used when the problem gives bounds()
    IntegerOperatorOptions integer{};  ///< used when the problem gives cardinalities()
};

/// One member of a population or of the archive.
template <class G>
struct Individual {
    G genome;
    std::vector<double> objectives;
    std::vector<double> violations;
    double violation = 0.0;  ///< total violation, 0 = feasible
    std::size_t rank = 0;    ///< non-dominated rank in the population (0 = first front)
    double crowding = 0.0;   ///< crowding distance within its front
    bool feasible() const { return !(violation > 0.0); }
};

/// What a run returns.
template <class G>
struct Result {
    std::vector<Individual<G>> front;       ///< first front of the final population
    std::vector<Individual<G>> population;  ///< final population, best fronts first
    std::vector<Individual<G>> archive;     ///< every non-dominated solution seen (if Options::archive)
    std::size_t generations = 0;
    std::size_t evaluations = 0;
    std::size_t cache_hits = 0;
    double seconds = 0.0;
    bool stopped_by_callback = false;
};

namespace detail {

template <class P>
auto make_variation(const P& problem, const Options& options) {
    if constexpr (HasOwnOperators<P>)
        return ProblemVariation<P>(problem);
    else if constexpr (RealVectorProblem<P>)
        return RealVariation(problem.bounds(), options.real);
    else
        return IntegerVariation<typename P::Genome::value_type>(problem.cardinalities(), options.integer);
}

}  // namespace detail

/// NSGA-II over the problem P (see problem.hpp for what P provides).
template <class P>
class Nsga2 {
    static_assert(check_problem<P>());

public:
    using Genome = typename P::Genome;
    using Member = Individual<Genome>;
    using Variation = decltype(detail::make_variation(std::declval<const P&>(), std::declval<const Options&>()));
    static constexpr bool hashable = HashableGenome<P>;

    /// @param problem kept by reference: it must outlive the optimiser.
    /// @throws config_error for a population below 2, no budget, zero objectives, bad operator
    ///         settings or bounds.
    Nsga2(const P& problem, Options options = {}, std::uint64_t seed = 0)
        : m_problem(&problem),
          m_options(options),
          m_variation(detail::make_variation(problem, options)),
          m_rng(seed),
          m_cache(0, detail::GenomeHash<P>{&problem}) {
        if (m_options.population < 2)
            raise<config_error>("Nsga2: population must be at least 2, got ", m_options.population);
        if (m_options.population > (std::size_t{1} << 24))  // the sort is O(M N log N) or worse per generation
            raise<config_error>("Nsga2: population of ", m_options.population, " is beyond the supported 2^24");
        if (m_options.generations == 0 && m_options.max_evaluations == 0 && !(m_options.max_seconds > 0.0))
            raise<config_error>("Nsga2: no budget: set generations, max_evaluations or max_seconds");
        if (std::isnan(m_options.max_seconds) || m_options.max_seconds < 0.0)
            raise<config_error>("Nsga2: max_seconds must be >= 0, got ", m_options.max_seconds);
        m_objectives = static_cast<std::size_t>(problem.num_objectives());
        if (m_objectives == 0) raise<config_error>("Nsga2: the problem has 0 objectives");
        if constexpr (hashable) {
            m_caching = m_options.cache == Cache::on ||
                        (m_options.cache == Cache::automatic && !std::same_as<Genome, std::vector<double>>);
        }
        if constexpr (HasNumConstraints<P>) m_constraints = static_cast<std::size_t>(problem.num_constraints());
        if (m_options.threads != 1 && thread_safety_of<P>() == ThreadSafety::concurrent && !HasBatchEvaluation<P>)
            m_pool = std::make_unique<ThreadPool>(m_options.threads);
    }
    Nsga2(P&&, Options = {}, std::uint64_t = 0) = delete;  // the problem would dangle

    /// Run until a budget is reached or a callback returns true. Each callback is called with
    /// this optimiser after the initial population and after every generation; a callback that
    /// returns something convertible to bool stops the run by returning true.
    template <class... Callbacks>
    Result<Genome> run(Callbacks&&... callbacks) {
        static_assert((std::invocable<Callbacks&, const Nsga2&> && ...),
                      "dnncost::search::Nsga2::run: every callback must be callable as f(const Nsga2&)");
        m_start = std::chrono::steady_clock::now();
        initialize();
        // Every callback sees every generation, even when an earlier one asks to stop.
        bool stop = false;
        ((stop = invoke_callback(callbacks) || stop), ...);
        while (!stop && !budget_reached()) {
            step();
            ((stop = invoke_callback(callbacks) || stop), ...);
        }
        Result<Genome> result;
        for (const auto& m : m_population)
            if (m.rank == 0) result.front.push_back(m);
        result.population = m_population;
        result.archive = m_archive;
        result.generations = m_generation;
        result.evaluations = m_evaluations;
        result.cache_hits = m_cache_hits;
        result.seconds = seconds();
        result.stopped_by_callback = stop;
        return result;
    }

    /// Create and evaluate the initial population (generation 0).
    void initialize() {
        if (m_start == std::chrono::steady_clock::time_point{}) m_start = std::chrono::steady_clock::now();
        m_generation = 0;
        m_population.clear();
        m_hashes.clear();
        m_archive.clear();
        std::vector<Genome> genomes = draw_unique(m_options.population, [&] {
            std::array<Genome, 2> g{m_variation.random(m_rng), m_variation.random(m_rng)};
            repair(g[0]);
            repair(g[1]);
            return g;
        });
        auto members = evaluate(std::move(genomes));
        update_archive(members);
        std::vector<std::size_t> hashes = std::move(m_draw_hashes);
        survive(std::move(members), std::move(hashes));
    }

    /// One generation: selection, variation, evaluation, survival.
    void step() {
        if (m_population.empty()) initialize();
        std::vector<Genome> offspring = draw_unique(m_options.population, [&] {
            const Member& a = m_population[tournament()];
            const Member& b = m_population[tournament()];
            auto children = m_variation.crossover(a.genome, b.genome, m_rng);
            m_variation.mutate(children.first, m_rng);
            m_variation.mutate(children.second, m_rng);
            repair(children.first);
            repair(children.second);
            return std::array<Genome, 2>{std::move(children.first), std::move(children.second)};
        });
        auto members = evaluate(std::move(offspring));
        update_archive(members);
        // Genome hashes travel with their members so that a survivor is never hashed twice.
        std::vector<std::size_t> hashes = std::move(m_draw_hashes);
        if (hashes.size() == members.size() && m_hashes.size() == m_population.size())
            hashes.insert(hashes.end(), m_hashes.begin(), m_hashes.end());
        else
            hashes.clear();
        for (auto& m : m_population) members.push_back(std::move(m));
        survive(std::move(members), std::move(hashes));
        ++m_generation;
    }

    std::size_t generation() const { return m_generation; }
    std::size_t evaluations() const { return m_evaluations; }
    std::size_t cache_hits() const { return m_cache_hits; }
    double seconds() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - m_start).count(); }
    std::size_t num_objectives() const { return m_objectives; }
    const std::vector<Member>& population() const { return m_population; }
    const std::vector<Member>& archive() const { return m_archive; }
    const Options& options() const { return m_options; }
    const P& problem() const { return *m_problem; }

    /// Objectives of the first front of the current population, flat row-major.
    std::vector<double> front_objectives() const {
        std::vector<double> out;
        for (const auto& m : m_population)
            if (m.rank == 0) out.insert(out.end(), m.objectives.begin(), m.objectives.end());
        return out;
    }

private:
    template <class F>
    bool invoke_callback(F& f) {
        if constexpr (std::convertible_to<std::invoke_result_t<F&, const Nsga2&>, bool>) {
            return static_cast<bool>(std::invoke(f, std::as_const(*this)));
        } else {
            std::invoke(f, std::as_const(*this));
            return false;
        }
    }

    bool budget_reached() const {
        if (m_options.generations > 0 && m_generation >= m_options.generations) return true;
        if (m_options.max_evaluations > 0 && m_evaluations >= m_options.max_evaluations) return true;
        if (m_options.max_seconds > 0.0 && seconds() >= m_options.max_seconds) return true;
        return false;
    }

    void repair(Genome& g) const {
        if constexpr (HasRepair<P>) m_problem->repair(g);
    }

    /// Binary tournament: lower rank wins, then larger crowding distance, then the first drawn.
    std::size_t tournament() {
        const std::size_t n = m_population.size();
        const std::size_t i = static_cast<std::size_t>(m_rng.below(n));
        std::size_t j = static_cast<std::size_t>(m_rng.below(n - 1));
        if (j >= i) ++j;
        const Member& a = m_population[i];
        const Member& b = m_population[j];
        if (a.rank != b.rank) return a.rank < b.rank ? i : j;
        return b.crowding > a.crowding ? j : i;
    }

    /// Draw `count` genomes from `make` (which yields two per call), re-drawing those
    /// equal to a population member or an earlier draw up to duplicate_attempts times each.
    template <class Make>
    std::vector<Genome> draw_unique(std::size_t count, Make make) {
        std::vector<Genome> out;
        out.reserve(count + 1);
        if constexpr (hashable) {
            if (m_options.remove_duplicates) {
                // Pointers into the population and into `out`, which never reallocates (reserved).
                detail::GenomePtrSet<P> seen(m_population.size() + count, m_problem);
                const bool known = m_hashes.size() == m_population.size();
                for (std::size_t i = 0; i < m_population.size(); ++i)
                    seen.find_or_insert(&m_population[i].genome, 0,
                                        known ? m_hashes[i] : seen.hash(m_population[i].genome));
                m_draw_hashes.clear();
                m_draw_hashes.reserve(count);
                std::vector<Genome> rejected;
                const std::size_t max_draws = count * (m_options.duplicate_attempts + 1);
                std::size_t draws = 0;
                while (out.size() < count && draws < max_draws) {
                    for (auto& g : make()) {
                        ++draws;
                        if (out.size() >= count) break;
                        out.push_back(std::move(g));
                        const std::size_t h = seen.hash(out.back());
                        if (seen.find_or_insert(&out.back(), 0, h) == detail::GenomePtrSet<P>::none) {
                            m_draw_hashes.push_back(h);
                            continue;
                        }
                        // a duplicate: take it back out (`seen` holds no pointer to it)
                        g = std::move(out.back());
                        out.pop_back();
                        if (rejected.size() < count) rejected.push_back(std::move(g));
                    }
                }
                // A space with fewer distinct genomes than the population: accept duplicates.
                for (std::size_t k = 0; out.size() < count && k < rejected.size(); ++k)
                    out.push_back(std::move(rejected[k]));
                while (out.size() < count)
                    for (auto& g : make())
                        if (out.size() < count) out.push_back(std::move(g));
                for (std::size_t k = m_draw_hashes.size(); k < out.size(); ++k)
                    m_draw_hashes.push_back(seen.hash(out[k]));
                return out;
            }
        }
        m_draw_hashes.clear();
        while (out.size() < count)
            for (auto& g : make())
                if (out.size() < count) out.push_back(std::move(g));
        return out;
    }

    template <class R>
    Evaluation to_evaluation(R&& r, const Genome& g) const {
        if constexpr (std::same_as<std::remove_cvref_t<R>, Evaluation>) {
            return Evaluation(std::forward<R>(r));
        } else {
            Evaluation e;
            e.objectives.assign(std::ranges::begin(r), std::ranges::end(r));
            if constexpr (HasConstraints<P>) {
                auto c = m_problem->constraints(g);
                e.violations.assign(std::ranges::begin(c), std::ranges::end(c));
            }
            return e;
        }
    }

    void validate(const Evaluation& e) const {
        if (e.objectives.size() != m_objectives)
            raise<error>("Nsga2: evaluate returned ", e.objectives.size(), " objectives, the problem declares ",
                         m_objectives);
        for (std::size_t k = 0; k < e.objectives.size(); ++k)
            if (std::isnan(e.objectives[k])) raise<error>("Nsga2: evaluate returned NaN for objective ", k);
        if (e.violations.size() != m_constraints)
            raise<error>("Nsga2: evaluation has ", e.violations.size(), " constraint values, the problem declares ",
                         m_constraints);
        for (std::size_t k = 0; k < e.violations.size(); ++k)
            if (std::isnan(e.violations[k])) raise<error>("Nsga2: constraint ", k, " evaluated to NaN");
    }

    /// Evaluate a batch: cache lookups first, then one call for the genomes not yet seen.
    std::vector<Member> evaluate(std::vector<Genome> genomes) {
        const std::size_t n = genomes.size();
        std::vector<Evaluation> evals(n);
        std::vector<std::size_t> todo;       // genome indices to evaluate
        std::vector<std::size_t> source(n);  // where each genome's result comes from
        std::iota(source.begin(), source.end(), std::size_t{0});
        if constexpr (hashable) {
            if (m_caching) {
                detail::GenomePtrSet<P> batch(n, m_problem);
                for (std::size_t i = 0; i < n; ++i) {
                    if (auto it = m_cache.find(genomes[i]); it != m_cache.end()) {
                        evals[i] = it->second;
                        ++m_cache_hits;
                        source[i] = n;  // done
                    } else if (const auto j = batch.find_or_insert(&genomes[i], i);
                               j != detail::GenomePtrSet<P>::none) {
                        source[i] = j;
                        ++m_cache_hits;
                    } else {
                        todo.push_back(i);
                    }
                }
            }
        }
        if (todo.empty() && !m_caching) {
            todo.resize(n);
            std::iota(todo.begin(), todo.end(), std::size_t{0});
        }
        if (!todo.empty()) {
            if constexpr (HasBatchEvaluation<P>) {
                std::vector<Genome> batch;
                batch.reserve(todo.size());
                for (std::size_t i : todo) batch.push_back(genomes[i]);
                auto results = m_problem->evaluate_batch(std::span<const Genome>(batch));
                if (std::ranges::size(results) != todo.size())
                    raise<error>("Nsga2: evaluate_batch returned ", std::ranges::size(results), " results for ",
                                 todo.size(), " genomes");
                std::size_t k = 0;
                for (auto&& r : results) {
                    evals[todo[k]] = to_evaluation(std::move(r), genomes[todo[k]]);
                    ++k;
                }
            } else {
                auto body = [&](std::size_t k) {
                    const Genome& g = genomes[todo[k]];
                    evals[todo[k]] = to_evaluation(m_problem->evaluate(g), g);
                };
                if (m_pool && todo.size() > 1)
                    m_pool->parallel_for(0, todo.size(), body);
                else
                    for (std::size_t k = 0; k < todo.size(); ++k) body(k);
            }
            for (std::size_t i : todo) validate(evals[i]);
            m_evaluations += todo.size();
        }
        std::vector<Member> members(n);
        for (std::size_t i = 0; i < n; ++i) {
            if (source[i] != i && source[i] != n) evals[i] = evals[source[i]];
        }
        if constexpr (hashable) {
            if (m_caching)
                for (std::size_t i : todo) m_cache.emplace(genomes[i], evals[i]);
        }
        for (std::size_t i = 0; i < n; ++i) {
            members[i].genome = std::move(genomes[i]);
            members[i].violation = evals[i].total_violation();
            members[i].objectives = std::move(evals[i].objectives);
            members[i].violations = std::move(evals[i].violations);
        }
        return members;
    }

    /// Elitist survival: keep the best N by (rank, crowding distance).
    /// @param hashes the members' genome hashes, or empty when they are not tracked.
    void survive(std::vector<Member> pool, std::vector<std::size_t> hashes) {
        const std::size_t n = pool.size(), m = m_objectives;
        std::vector<double> values(n * m);
        std::vector<double> cv;
        for (std::size_t i = 0; i < n; ++i) std::copy_n(pool[i].objectives.data(), m, values.data() + i * m);
        if (m_constraints > 0) {
            cv.resize(n);
            for (std::size_t i = 0; i < n; ++i) cv[i] = pool[i].violation;
        }
        const auto rank = non_dominated_ranks(values, m, cv);
        const auto fronts = fronts_from_ranks(rank);
        const std::size_t keep = std::min(m_options.population, n);
        std::vector<std::size_t> chosen;
        chosen.reserve(keep);
        for (const auto& front : fronts) {
            if (chosen.size() >= keep) break;
            const auto crowd = crowding_distance(values, m, front);
            for (std::size_t j = 0; j < front.size(); ++j) {
                pool[front[j]].rank = rank[front[j]];
                pool[front[j]].crowding = crowd[j];
            }
            if (chosen.size() + front.size() <= keep) {
                chosen.insert(chosen.end(), front.begin(), front.end());
            } else {
                std::vector<std::size_t> order(front.size());
                std::iota(order.begin(), order.end(), std::size_t{0});
                std::stable_sort(order.begin(), order.end(),
                                 [&](std::size_t a, std::size_t b) { return crowd[a] > crowd[b]; });
                for (std::size_t j = 0; chosen.size() < keep; ++j) chosen.push_back(front[order[j]]);
            }
        }
        std::vector<Member> next;
        next.reserve(keep);
        for (std::size_t i : chosen) next.push_back(std::move(pool[i]));
        m_population = std::move(next);
        m_hashes.clear();
        if (hashes.size() == n)
            for (std::size_t i : chosen) m_hashes.push_back(hashes[i]);
    }

    /// Constrained domination between two members (Deb's rule).
    bool constrained_dominates(const Member& a, const Member& b) const {
        const bool fa = a.feasible(), fb = b.feasible();
        if (fa != fb) return fa;
        if (!fa) return a.violation < b.violation;
        return dominates(a.objectives.data(), b.objectives.data(), m_objectives);
    }

    bool same_genome(const Genome& a, const Genome& b) const {
        if constexpr (std::equality_comparable<Genome>)
            return a == b;
        else
            return false;
    }

    void update_archive(const std::vector<Member>& candidates) {
        if (!m_options.archive) return;
        for (const auto& c : candidates) {
            if (!m_archive.empty() && m_archive.front().feasible() != c.feasible()) {
                if (!c.feasible()) continue;  // a feasible archive dominates every infeasible point
                m_archive.clear();
            }
            if (!c.feasible()) {
                if (!m_archive.empty() && c.violation > m_archive.front().violation) continue;
                if (!m_archive.empty() && c.violation < m_archive.front().violation) m_archive.clear();
                if (std::none_of(m_archive.begin(), m_archive.end(),
                                 [&](const Member& a) { return same_genome(a.genome, c.genome); }))
                    m_archive.push_back(c);
                continue;
            }
            if (m_objectives == 2)
                insert_archive_2d(c);
            else
                insert_archive_general(c);
        }
    }

    // Two objectives: the archive is sorted by (f1, f2), f2 non-increasing, so dominance checks
    // and removals are a binary search and one contiguous range.
    void insert_archive_2d(const Member& c) {
        const double x = c.objectives[0], y = c.objectives[1];
        auto by_x = [](const Member& a, double v) { return a.objectives[0] < v; };
        auto first_ge = std::lower_bound(m_archive.begin(), m_archive.end(), x, by_x);
        auto first_gt = std::upper_bound(m_archive.begin(), m_archive.end(), x,
                                         [](double v, const Member& a) { return v < a.objectives[0]; });
        if (first_gt != m_archive.begin()) {
            const Member& left = *std::prev(first_gt);  // smallest f2 among f1 <= x
            if (left.objectives[1] < y || (left.objectives[1] == y && left.objectives[0] < x)) return;
            if (left.objectives[1] == y && left.objectives[0] == x) {
                for (auto it = first_ge; it != first_gt; ++it)
                    if (same_genome(it->genome, c.genome)) return;
                m_archive.insert(first_gt, c);
                return;
            }
        }
        auto last = first_ge;
        while (last != m_archive.end() && last->objectives[1] >= y) ++last;
        if (last != first_ge) {
            *first_ge = c;
            m_archive.erase(first_ge + 1, last);
        } else {
            m_archive.insert(first_ge, c);
        }
    }

    void insert_archive_general(const Member& c) {
        for (const auto& a : m_archive) {
            if (constrained_dominates(a, c)) return;
            if (same_genome(a.genome, c.genome)) return;
        }
        std::erase_if(m_archive, [&](const Member& a) { return constrained_dominates(c, a); });
        m_archive.push_back(c);
    }

    const P* m_problem;
    Options m_options;
    Variation m_variation;
    Rng m_rng;
    std::unique_ptr<ThreadPool> m_pool;
    std::unordered_map<Genome, Evaluation, detail::GenomeHash<P>> m_cache;
    std::size_t m_objectives = 0, m_constraints = 0;
    bool m_caching = false;
    std::vector<Member> m_population, m_archive;
    std::vector<std::size_t> m_hashes;       // genome hash of each population member, if tracked
    std::vector<std::size_t> m_draw_hashes;  // genome hashes of the last draw_unique result
    std::size_t m_generation = 0, m_evaluations = 0, m_cache_hits = 0;
    std::chrono::steady_clock::time_point m_start{};
};

}  // namespace dnncost::search
