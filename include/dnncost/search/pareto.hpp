#pragma once
/// @file pareto.hpp
/// Pareto dominance, fast non-dominated sorting, crowding distance and front extraction.
///
/// Point sets are flat row-major arrays: point i occupies values[i*m, i*m + m). All objectives
/// are minimised. Sorting works on index vectors, never on copies of the points.
///
/// Non-dominated sorting (every algorithm returns the same, exact ranks):
///  - m == 2: lexicographic sort, then each point finds its front by binary search over the
///    fronts' last members: O(N log N).
///  - m == 3: lexicographic sort, then binary search over fronts where each front keeps the
///    2-d staircase of its members projected on objectives 2 and 3: O(N log^2 N).
///  - m >= 4: Efficient Non-dominated Sort with binary search over fronts (Zhang et al. 2015),
///    comparing against a front's members newest first. Worst case O(M N^2), but far below
///    Deb's O(M N^2) on real populations, which compares every pair.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <numeric>
#include <span>
#include <utility>
#include <vector>

#include <dnncost/core/error.hpp>

namespace dnncost::search {

/// True if a Pareto-dominates b (no worse in every objective, better in at least one).
inline bool dominates(const double* a, const double* b, std::size_t m) noexcept {
    bool better = false;
    for (std::size_t k = 0; k < m; ++k) {
        if (a[k] > b[k]) return false;
        if (a[k] < b[k]) better = true;
    }
    return better;
}
inline bool dominates(std::span<const double> a, std::span<const double> b) noexcept {
    return dominates(a.data(), b.data(), std::min(a.size(), b.size()));
}

namespace detail {

inline void check_point_set(std::span<const double> values, std::size_t m, const char* who) {
    if (m == 0) raise<config_error>(who, ": number of objectives must be at least 1, got 0");
    if (values.size() % m != 0)
        raise<shape_error>(who, ": ", values.size(), " values do not form points of ", m, " objectives");
    // NaN compares false both ways: such a point would be silently kept or dropped (infinities
    // are ordered, and allowed)
    for (std::size_t i = 0; i < values.size(); ++i)
        if (std::isnan(values[i])) raise<config_error>(who, ": objective ", i % m, " of point ", i / m, " is NaN");
}

/// Indices of the selected points sorted lexicographically (ties by index, so deterministic).
inline void lexicographic_order(std::span<const double> v, std::size_t m, std::vector<std::size_t>& idx) {
    std::sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) {
        const double* pa = v.data() + a * m;
        const double* pb = v.data() + b * m;
        for (std::size_t k = 0; k < m; ++k) {
            if (pa[k] < pb[k]) return true;
            if (pb[k] < pa[k]) return false;
        }
        return a < b;
    });
}

/// Binary search for the first front that does not dominate the point; `front_dominates(k)` is
/// monotone (true for a prefix of fronts) because dominance is transitive.
template <class Pred>
std::size_t first_free_front(std::size_t fronts, Pred front_dominates) {
    std::size_t lo = 0, hi = fronts;
    while (lo < hi) {
        const std::size_t mid = lo + (hi - lo) / 2;
        if (front_dominates(mid))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

inline std::size_t sort_2d(std::span<const double> v, const std::vector<std::size_t>& order,
                           std::vector<std::size_t>& rank) {
    // In lexicographic order a front's newest member has its smallest second objective, so it
    // alone decides whether the front dominates a later point.
    std::vector<std::size_t> last;
    for (std::size_t p : order) {
        const double* pp = v.data() + 2 * p;
        const std::size_t k =
            first_free_front(last.size(), [&](std::size_t f) { return dominates(v.data() + 2 * last[f], pp, 2); });
        rank[p] = k;
        if (k == last.size())
            last.push_back(p);
        else
            last[k] = p;
    }
    return last.size();
}

inline std::size_t sort_3d(std::span<const double> v, const std::vector<std::size_t>& order,
                           std::vector<std::size_t>& rank) {
    // Every earlier point is no worse in objective 1, so dominance reduces to the projection on
    // objectives 2 and 3, except that an exact duplicate never dominates. Each front keeps the
    // 2-d non-dominated staircase of its projected members: y ascending, z strictly descending.
    struct Step {
        double y, z;
        std::size_t id;
    };
    std::vector<std::vector<Step>> fronts;
    auto front_dominates = [&](const std::vector<Step>& s, const double* p) {
        auto it = std::upper_bound(s.begin(), s.end(), p[1], [](double y, const Step& st) { return y < st.y; });
        if (it == s.begin()) return false;
        --it;  // largest y <= p.y: the smallest z among those
        if (it->z > p[2]) return false;
        return dominates(v.data() + 3 * it->id, p, 3);
    };
    for (std::size_t p : order) {
        const double* pp = v.data() + 3 * p;
        const std::size_t k =
            first_free_front(fronts.size(), [&](std::size_t f) { return front_dominates(fronts[f], pp); });
        rank[p] = k;
        if (k == fronts.size()) fronts.emplace_back();
        auto& s = fronts[k];
        auto first = std::lower_bound(s.begin(), s.end(), pp[1], [](const Step& st, double y) { return st.y < y; });
        auto last = first;
        while (last != s.end() && last->z >= pp[2]) ++last;
        if (first != last) {
            *first = Step{pp[1], pp[2], p};
            s.erase(first + 1, last);
        } else {
            s.insert(first, Step{pp[1], pp[2], p});
        }
    }
    return fronts.size();
}

inline std::size_t sort_general(std::span<const double> v, std::size_t m, const std::vector<std::size_t>& order,
                                std::vector<std::size_t>& rank) {
    std::vector<std::vector<std::size_t>> fronts;
    for (std::size_t p : order) {
        const double* pp = v.data() + m * p;
        const std::size_t k = first_free_front(fronts.size(), [&](std::size_t f) {
            const auto& members = fronts[f];
            // Newest members are closest in lexicographic order and most likely to dominate.
            for (auto it = members.rbegin(); it != members.rend(); ++it)
                if (dominates(v.data() + m * *it, pp, m)) return true;
            return false;
        });
        rank[p] = k;
        if (k == fronts.size()) fronts.emplace_back();
        fronts[k].push_back(p);
    }
    return fronts.size();
}

}  // namespace detail

/// Pareto rank of every point (0 = non-dominated) under Deb's constrained-domination rule:
/// a feasible point (total violation <= 0) dominates every infeasible one, of two infeasible
/// points the smaller total violation dominates, and feasible points compare by Pareto
/// dominance. Exact duplicates share a rank.
/// @param values n*m objective values, row-major.
/// @param m number of objectives.
/// @param violation empty (all feasible) or n total constraint violations (> 0 = infeasible).
/// @throws shape_error if the sizes do not fit, config_error if m == 0.
inline std::vector<std::size_t> non_dominated_ranks(std::span<const double> values, std::size_t m,
                                                    std::span<const double> violation = {}) {
    detail::check_point_set(values, m, "non_dominated_ranks");
    const std::size_t n = values.size() / m;
    if (!violation.empty() && violation.size() != n)
        raise<shape_error>("non_dominated_ranks: ", violation.size(), " violations for ", n, " points");
    for (std::size_t i = 0; i < violation.size(); ++i)
        if (std::isnan(violation[i])) raise<config_error>("non_dominated_ranks: violation of point ", i, " is NaN");
    std::vector<std::size_t> rank(n, 0);
    std::vector<std::size_t> feasible, infeasible;
    feasible.reserve(n);
    for (std::size_t i = 0; i < n; ++i)
        (violation.empty() || !(violation[i] > 0.0) ? feasible : infeasible).push_back(i);
    std::size_t fronts = 0;
    if (!feasible.empty()) {
        detail::lexicographic_order(values, m, feasible);
        if (m == 1) {
            for (std::size_t i = 0; i < feasible.size(); ++i) {
                const bool same = i > 0 && values[feasible[i]] == values[feasible[i - 1]];
                rank[feasible[i]] = i == 0 ? 0 : rank[feasible[i - 1]] + (same ? 0 : 1);
            }
            fronts = rank[feasible.back()] + 1;
        } else if (m == 2) {
            fronts = detail::sort_2d(values, feasible, rank);
        } else if (m == 3) {
            fronts = detail::sort_3d(values, feasible, rank);
        } else {
            fronts = detail::sort_general(values, m, feasible, rank);
        }
    }
    if (!infeasible.empty()) {
        std::sort(infeasible.begin(), infeasible.end(), [&](std::size_t a, std::size_t b) {
            return violation[a] < violation[b] || (violation[a] == violation[b] && a < b);
        });
        std::size_t r = fronts;
        for (std::size_t i = 0; i < infeasible.size(); ++i) {
            if (i > 0 && violation[infeasible[i]] != violation[infeasible[i - 1]]) ++r;
            rank[infeasible[i]] = r;
        }
    }
    return rank;
}

/// Group points by rank: fronts[0] holds the non-dominated points, in increasing index order.
inline std::vector<std::vector<std::size_t>> fronts_from_ranks(std::span<const std::size_t> rank) {
    std::size_t count = 0;
    for (std::size_t r : rank) count = std::max(count, r + 1);
    std::vector<std::vector<std::size_t>> fronts(count);
    for (std::size_t i = 0; i < rank.size(); ++i) fronts[rank[i]].push_back(i);
    return fronts;
}

/// Non-dominated fronts (see non_dominated_ranks for the rule and parameters).
inline std::vector<std::vector<std::size_t>> non_dominated_fronts(std::span<const double> values, std::size_t m,
                                                                  std::span<const double> violation = {}) {
    const auto rank = non_dominated_ranks(values, m, violation);
    return fronts_from_ranks(rank);
}

/// Crowding distance of the points of one front (Deb et al. 2002): the normalised perimeter of
/// the cuboid spanned by each point's neighbours, summed over objectives; the extreme points of
/// every objective get +infinity. Result i belongs to front[i].
inline std::vector<double> crowding_distance(std::span<const double> values, std::size_t m,
                                             std::span<const std::size_t> front) {
    detail::check_point_set(values, m, "crowding_distance");
    const std::size_t n = front.size();
    for (std::size_t i : front)
        if (i >= values.size() / m)
            raise<shape_error>("crowding_distance: front index ", i, " out of range of ", values.size() / m, " points");
    std::vector<double> distance(n, 0.0);
    if (n <= 2) {
        std::fill(distance.begin(), distance.end(), std::numeric_limits<double>::infinity());
        return distance;
    }
    // Sort (value, position) pairs rather than positions through an indirection: contiguous.
    std::vector<std::pair<double, std::size_t>> order(n);
    for (std::size_t k = 0; k < m; ++k) {
        for (std::size_t i = 0; i < n; ++i) order[i] = {values[front[i] * m + k], i};
        std::sort(order.begin(), order.end());
        const double lo = order.front().first, hi = order.back().first;
        distance[order.front().second] = distance[order.back().second] = std::numeric_limits<double>::infinity();
        if (!(hi > lo) || !std::isfinite(hi - lo)) continue;  // no spread, or an infinite one: boundaries only
        const double scale = 1.0 / (hi - lo);
        for (std::size_t j = 1; j + 1 < n; ++j)
            distance[order[j].second] += (order[j + 1].first - order[j - 1].first) * scale;
    }
    return distance;
}

/// Indices of the non-dominated points (rank 0 under constrained domination), increasing.
inline std::vector<std::size_t> pareto_front_indices(std::span<const double> values, std::size_t m,
                                                     std::span<const double> violation = {}) {
    const auto rank = non_dominated_ranks(values, m, violation);
    std::vector<std::size_t> out;
    for (std::size_t i = 0; i < rank.size(); ++i)
        if (rank[i] == 0) out.push_back(i);
    return out;
}

/// The non-dominated points themselves, flat row-major; exact duplicates are kept once.
inline std::vector<double> pareto_front(std::span<const double> values, std::size_t m) {
    auto idx = pareto_front_indices(values, m);
    detail::lexicographic_order(values, m, idx);
    std::vector<double> out;
    for (std::size_t j = 0; j < idx.size(); ++j) {
        const double* p = values.data() + idx[j] * m;
        if (j > 0 && std::equal(p, p + m, values.data() + idx[j - 1] * m)) continue;
        out.insert(out.end(), p, p + m);
    }
    return out;
}

}  // namespace dnncost::search
