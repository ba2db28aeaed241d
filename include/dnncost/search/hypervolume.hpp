#pragma once
/// @file hypervolume.hpp
/// Exact hypervolume (Lebesgue measure of the region dominated by a point set and bounded by a
/// reference point), all objectives minimised.
///  - m == 2: sort and sweep, O(N log N).
///  - m == 3: sweep along objective 3 keeping the 2-d staircase of objectives 1-2 and its area
///    updated incrementally in a balanced tree (Beume et al. 2009), O(N log N).
///  - m >= 4: WFG (While, Bradstreet, Barone 2012): the volume is the sum of every point's
///    exclusive contribution, each computed from the non-dominated "limit set" of the points
///    after it, recursing down to the 3-d algorithm.
/// Points that do not strictly dominate the reference point contribute nothing and are dropped.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <memory_resource>
#include <numeric>
#include <set>
#include <span>
#include <vector>

#include <dnncost/core/error.hpp>
#include <dnncost/search/pareto.hpp>

namespace dnncost::search {

namespace detail {

/// Points are rows of `p` (m values each), already filtered to lie strictly inside the box.
inline double hv_2d(std::vector<double> p, const double* ref) {
    const std::size_t n = p.size() / 2;
    std::vector<std::size_t> idx(n);
    std::iota(idx.begin(), idx.end(), std::size_t{0});
    std::sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) {
        return p[2 * a] < p[2 * b] || (p[2 * a] == p[2 * b] && p[2 * a + 1] < p[2 * b + 1]);
    });
    double volume = 0.0, height = ref[1];
    for (std::size_t i : idx) {
        const double y = p[2 * i + 1];
        if (y < height) {
            volume += (ref[0] - p[2 * i]) * (height - y);
            height = y;
        }
    }
    return volume;
}

inline double hv_3d(const std::vector<double>& p, const double* ref) {
    const std::size_t n = p.size() / 3;
    std::vector<std::size_t> idx(n);
    std::iota(idx.begin(), idx.end(), std::size_t{0});
    std::sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) { return p[3 * a + 2] < p[3 * b + 2]; });
    struct Pt {
        double x, y;
        bool operator<(const Pt& o) const { return x < o.x; }
    };
    // One arena for all tree nodes: the tree only grows and dies with this call.
    std::pmr::monotonic_buffer_resource arena;
    std::pmr::set<Pt> stair(&arena);  // x ascending, y strictly descending
    double area = 0.0, volume = 0.0;
    for (std::size_t j = 0; j < n; ++j) {
        const double* q = p.data() + 3 * idx[j];
        if (j > 0) volume += area * (q[2] - p[3 * idx[j - 1] + 2]);
        const Pt pt{q[0], q[1]};
        auto right = stair.lower_bound(pt);  // first with x >= q.x
        if (right != stair.end() && right->x == q[0] && right->y <= q[1]) continue;
        if (right != stair.begin() && std::prev(right)->y <= q[1]) continue;
        double upper = right == stair.begin() ? ref[1] : std::prev(right)->y;
        double x = q[0];
        double added = 0.0;
        auto it = right;
        while (it != stair.end() && it->y >= q[1]) {
            added += (it->x - x) * (upper - q[1]);
            x = it->x;
            upper = it->y;
            ++it;
        }
        const double bound = it == stair.end() ? ref[0] : it->x;
        added += (bound - x) * (upper - q[1]);
        area += added;
        stair.erase(right, it);
        stair.insert(it, pt);
    }
    if (n > 0) volume += area * (ref[2] - p[3 * idx[n - 1] + 2]);
    return volume;
}

inline double hv_any(std::vector<double> p, std::size_t m, const double* ref);

/// WFG: sum of exclusive contributions, processing points by decreasing last objective so that
/// limit sets (the worse-of-two points) stay small.
inline double hv_wfg(std::vector<double> p, std::size_t m, const double* ref) {
    const std::size_t n = p.size() / m;
    std::vector<std::size_t> idx(n);
    std::iota(idx.begin(), idx.end(), std::size_t{0});
    std::sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) { return p[a * m + m - 1] > p[b * m + m - 1]; });
    std::vector<double> sorted(p.size());
    for (std::size_t i = 0; i < n; ++i) std::copy_n(p.data() + idx[i] * m, m, sorted.data() + i * m);
    double volume = 0.0;
    std::vector<double> limit;
    for (std::size_t i = 0; i < n; ++i) {
        const double* a = sorted.data() + i * m;
        double inclusive = 1.0;
        for (std::size_t k = 0; k < m; ++k) inclusive *= ref[k] - a[k];
        limit.clear();
        for (std::size_t j = i + 1; j < n; ++j) {
            const double* b = sorted.data() + j * m;
            for (std::size_t k = 0; k < m; ++k) limit.push_back(std::max(a[k], b[k]));
        }
        double covered = 0.0;
        if (!limit.empty()) {
            const auto front = pareto_front(limit, m);
            covered = hv_any(front, m, ref);
        }
        volume += inclusive - covered;
    }
    return volume;
}

inline double hv_any(std::vector<double> p, std::size_t m, const double* ref) {
    if (p.empty()) return 0.0;
    if (m == 1) {
        double best = ref[0];
        for (double v : p) best = std::min(best, v);
        return ref[0] - best;
    }
    if (m == 2) return hv_2d(std::move(p), ref);
    if (m == 3) return hv_3d(p, ref);
    if (p.size() == m) {
        double v = 1.0;
        for (std::size_t k = 0; k < m; ++k) v *= ref[k] - p[k];
        return v;
    }
    return hv_wfg(std::move(p), m, ref);
}

}  // namespace detail

/// Exact hypervolume of a point set with respect to a reference point (minimisation).
/// @param points n*m objective values, row-major; dominated points and duplicates are allowed.
/// @param reference m values; points not strictly better than it in every objective add nothing.
/// @throws shape_error if the sizes do not fit; config_error for NaN values.
inline double hypervolume(std::span<const double> points, std::span<const double> reference) {
    const std::size_t m = reference.size();
    detail::check_point_set(points, m, "hypervolume");
    for (double r : reference)
        if (std::isnan(r)) raise<config_error>("hypervolume: reference point contains NaN");
    std::vector<double> inside;
    inside.reserve(points.size());
    for (std::size_t i = 0; i < points.size(); i += m) {
        bool keep = true;
        for (std::size_t k = 0; k < m; ++k) {
            if (std::isnan(points[i + k])) raise<config_error>("hypervolume: point ", i / m, " has a NaN objective");
            keep = keep && points[i + k] < reference[k];
        }
        if (keep) inside.insert(inside.end(), points.begin() + static_cast<std::ptrdiff_t>(i),
                                points.begin() + static_cast<std::ptrdiff_t>(i + m));
    }
    if (m >= 4 && !inside.empty()) inside = pareto_front(inside, m);
    return detail::hv_any(std::move(inside), m, reference.data());
}

}  // namespace dnncost::search
