#pragma once
/// @file exact.hpp
/// Exact (T, E) Pareto fronts by enumeration: of every mapping of a small instance (up to a
/// limit, 2^20 by default), and of the mappings with at most k CU changes (the "constrained
/// transition" baselines of MaGNAS Table 3, after Kang et al.), which stays small for any n.
///
/// Enumeration walks the mappings as an odometer (last gene fastest) keeping the prefix sums
/// of the evaluator's increments, so each mapping costs O(1) amortised and its (T, E) is
/// bit-identical to MappingEvaluator::evaluate (same additions in the same order).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <span>
#include <vector>

#include <dnncost/core/config.hpp>
#include <dnncost/core/error.hpp>
#include <dnncost/search/mapping/mapping_cost.hpp>

namespace dnncost::search::mapping {

/// A mapping (genes, see mapping_cost.hpp) and its latency and energy.
struct MappingPoint {
    std::vector<std::uint8_t> genes;
    TimeEnergy value;
};

/// What an enumeration returns.
struct ExactFront {
    std::vector<MappingPoint> front;  ///< non-dominated feasible mappings, increasing T
    std::uint64_t evaluations = 0;    ///< mappings enumerated
    std::uint64_t feasible = 0;       ///< of which met the targets
};

namespace detail {

struct ScoredIndex {
    double t, e;
    std::uint64_t index;
};

/// Non-dominated subset of `pts` (minimise t and e); one mapping per distinct (t, e).
DNNCOST_FUNC std::vector<ScoredIndex> nondominated(std::vector<ScoredIndex> pts);

/// A 2-d front kept up to date point by point (increasing t, strictly decreasing e): a point
/// dominated by (or equal to) a member is dropped, members it dominates are removed.
class OnlineFront {
public:
    /// Insert; returns false if the point is dominated or equal to a member.
    DNNCOST_FUNC bool insert(TimeEnergy v, std::span<const std::uint8_t> genes);
    const std::vector<MappingPoint>& points() const { return m_points; }
    std::vector<MappingPoint> take() { return std::move(m_points); }

private:
    std::vector<MappingPoint> m_points;
};

}  // namespace detail

/// Exact front of every mapping (feasible under `pref`'s targets).
/// @param limit largest number of mappings to enumerate.
/// @throws config_error when the instance has more mappings than `limit`.
DNNCOST_FUNC ExactFront exact_front(const MappingEvaluator& ev, const Preference& pref = {},
                                    std::uint64_t limit = std::uint64_t{1} << 20);

/// Exact front of the mappings with at most `max_transitions` CU changes between neighbouring
/// blocks (feasible under `pref`). Their number grows as n^k, so k is limited to keep it below
/// `limit`. @throws config_error when there are more than `limit` such mappings.
DNNCOST_FUNC ExactFront transition_limited_front(const MappingEvaluator& ev, std::size_t max_transitions,
                                                 const Preference& pref = {},
                                                 std::uint64_t limit = std::uint64_t{1} << 22);

}  // namespace dnncost::search::mapping

#if !defined(DNNCOST_COMPILED)
#include <dnncost/search/mapping/exact_impl.hpp>
#endif
