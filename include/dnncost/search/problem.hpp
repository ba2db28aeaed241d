#pragma once
/// @file problem.hpp
/// What a search problem must provide, checked by C++20 concepts.
///
/// Required:
///   using Genome = ...;                                  // any copyable type
///   std::size_t num_objectives() const;
///   Objectives evaluate(const Genome&) const;            // a sized range of double (e.g.
///                                                        // std::array<double,2>, std::vector<double>)
///                                                        // or a search::Evaluation; all minimised
/// and one way to create and vary genomes:
///   std::vector<Bounds> bounds() const;                  // Genome = std::vector<double>: SBX + polynomial mutation
///   std::vector<std::size_t> cardinalities() const;      // Genome = std::vector<integral>: uniform operators
///   or all three of
///     Genome random_genome(Rng&) const;
///     std::pair<Genome, Genome> crossover(const Genome&, const Genome&, Rng&) const;
///     void mutate(Genome&, Rng&) const;                  // user-supplied (mixed genomes, ...)
/// Optional:
///   std::size_t num_constraints() const;  std::vector<double> constraints(const Genome&) const;
///       // value > 0 is a violation; or return search::Evaluation from evaluate instead
///   void repair(Genome&) const;            // after variation: clamp, re-encode, resize genes
///                                          // whose count depends on other genes, ...
///   std::vector<R> evaluate_batch(std::span<const Genome>) const;   // R as evaluate returns;
///                                          // used instead of evaluate (hardware in the loop, ...)
///   static constexpr ThreadSafety thread_safety = ThreadSafety::none;  // never evaluate concurrently
///   std::size_t hash(const Genome&) const; // enables caching/duplicate removal for custom genomes
#include <concepts>
#include <cstddef>
#include <functional>
#include <ranges>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

#include <dnncost/core/rng.hpp>

namespace dnncost::search {

/// Closed interval of one real gene.
struct Bounds {
    double lower = 0.0;
    double upper = 1.0;
};

/// Objectives and constraint violations of one genome (violation: value > 0 means violated).
struct Evaluation {
    std::vector<double> objectives;
    std::vector<double> violations;

    /// Total violation: the sum of the positive parts (0 = feasible).
    double total_violation() const {
        double s = 0.0;
        for (double v : violations)
            if (v > 0.0) s += v;
        return s;
    }
};

/// May the optimiser call evaluate() from several threads at once?
enum class ThreadSafety {
    none,       ///< no: always evaluate serially
    concurrent  ///< yes (default): evaluate() is const and touches no shared mutable state
};

/// A sized range of floating-point values (std::array<double, M>, std::vector<double>, ...): what
/// evaluate() may return besides Evaluation. Not merely convertible to double, which would let a
/// std::string through.
template <class R>
concept ObjectiveRange = std::ranges::sized_range<R> && std::floating_point<std::ranges::range_value_t<R>>;

template <class R>
concept EvaluationResult = ObjectiveRange<R> || std::same_as<std::remove_cvref_t<R>, Evaluation>;

template <class P>
concept HasGenome = requires {
    typename P::Genome;
}
&&std::copyable<typename P::Genome>;

template <class P>
concept Evaluates = HasGenome<P> && requires(const P& p, const typename P::Genome& g) {
    { p.num_objectives() } -> std::convertible_to<std::size_t>;
    { p.evaluate(g) } -> EvaluationResult;
};

template <class P>
concept HasOwnOperators = HasGenome<P> &&
    requires(const P& p, typename P::Genome& g, const typename P::Genome& c, Rng& rng) {
    { p.random_genome(rng) } -> std::convertible_to<typename P::Genome>;
    { p.crossover(c, c, rng) } -> std::convertible_to<std::pair<typename P::Genome, typename P::Genome>>;
    p.mutate(g, rng);
};

template <class P>
concept RealVectorProblem = HasGenome<P> && std::same_as<typename P::Genome, std::vector<double>> &&
    requires(const P& p) {
    { p.bounds() } -> std::convertible_to<std::vector<Bounds>>;
};

template <class P>
concept IntegerVectorProblem = HasGenome<P> && requires(const P& p) {
    typename P::Genome::value_type;
    requires std::integral<typename P::Genome::value_type>;
    requires std::same_as<typename P::Genome, std::vector<typename P::Genome::value_type>>;
    { p.cardinalities() } -> std::convertible_to<std::vector<std::size_t>>;
};

template <class P>
concept HasConstraints = HasGenome<P> && requires(const P& p, const typename P::Genome& g) {
    { p.num_constraints() } -> std::convertible_to<std::size_t>;
    { p.constraints(g) } -> ObjectiveRange;
};

template <class P>
concept HasRepair = HasGenome<P> && requires(const P& p, typename P::Genome& g) {
    p.repair(g);
};

template <class P>
concept HasBatchEvaluation = HasGenome<P> && requires(const P& p, std::span<const typename P::Genome> gs) {
    { p.evaluate_batch(gs) } -> std::ranges::sized_range;
};

template <class P>
concept HasNumConstraints = requires(const P& p) {
    { p.num_constraints() } -> std::convertible_to<std::size_t>;
};

/// The problem's declared thread safety (ThreadSafety::concurrent unless it says otherwise).
template <class P>
constexpr ThreadSafety thread_safety_of() {
    if constexpr (requires {
                      { P::thread_safety } -> std::convertible_to<ThreadSafety>;
                  })
        return P::thread_safety;
    else
        return ThreadSafety::concurrent;
}

/// A complete search problem: it evaluates and there is a way to make and vary its genomes.
template <class P>
concept Problem = Evaluates<P> &&(HasOwnOperators<P> || RealVectorProblem<P> || IntegerVectorProblem<P>);

/// Hash of a genome, if one is available: the problem's hash(), std::hash, or element-wise for
/// ranges of arithmetic values. Without one the optimiser neither caches nor removes duplicates.
template <class P>
concept HashableGenome = HasGenome<P> && std::equality_comparable<typename P::Genome> &&(
    requires(const P& p, const typename P::Genome& g) {
        { p.hash(g) } -> std::convertible_to<std::size_t>;
    } ||
    requires(const typename P::Genome& g) {
        { std::hash<typename P::Genome>{}(g) } -> std::convertible_to<std::size_t>;
    } ||
    (std::ranges::range<typename P::Genome> && std::is_arithmetic_v<std::ranges::range_value_t<typename P::Genome>>));

/// Explain, at compile time and in words, what a type lacks to be a Problem.
template <class P>
constexpr bool check_problem() {
    static_assert(HasGenome<P>, "dnncost::search: the problem needs a copyable `using Genome = ...;`");
    static_assert(Evaluates<P>,
                  "dnncost::search: the problem needs `std::size_t num_objectives() const` and "
                  "`evaluate(const Genome&) const` returning a sized range of double or search::Evaluation");
    static_assert(HasOwnOperators<P> || RealVectorProblem<P> || IntegerVectorProblem<P>,
                  "dnncost::search: the problem needs a way to create and vary genomes: "
                  "`std::vector<Bounds> bounds() const` (Genome = std::vector<double>), "
                  "`std::vector<std::size_t> cardinalities() const` (Genome = std::vector<integer>), or "
                  "`random_genome(Rng&)`, `crossover(const Genome&, const Genome&, Rng&)` and "
                  "`mutate(Genome&, Rng&)`");
    return true;
}

}  // namespace dnncost::search
