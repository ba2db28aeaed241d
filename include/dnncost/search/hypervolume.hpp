#pragma once
/// @file hypervolume.hpp
/// Exact hypervolume (Lebesgue measure of the region dominated by a point set and bounded by a
/// reference point), all objectives minimised.
///  - m == 2: sort and sweep, O(N log N).
///  - m == 3: sweep along objective 3 keeping the 2-d staircase of objectives 1-2 and its area
///    updated incrementally (Beume et al. 2009), O(N log N). The staircase is a set of the
///    points' ranks by objective 1, held in a two-level bitset whose predecessor and successor
///    queries cost a few word operations, instead of a balanced tree.
///  - m >= 4: WFG (While, Bradstreet, Barone 2012): the volume is the sum of every point's
///    exclusive contribution, each computed from the non-dominated "limit set" of the points
///    after it, recursing down to the 3-d algorithm.
/// Points that do not strictly dominate the reference point contribute nothing and are dropped.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <span>
#include <utility>
#include <vector>

#include <dnncost/core/error.hpp>
#include <dnncost/search/pareto.hpp>

namespace dnncost::search {

namespace detail {

/// Unsigned key with the same order as the double (-0 and +0 equal).
inline std::uint64_t order_key(double d) {
    const auto bits = std::bit_cast<std::uint64_t>(d == 0.0 ? 0.0 : d);
    return (bits >> 63) ? ~bits : bits | (std::uint64_t{1} << 63);
}

/// Stable LSD radix sort of (key, value) pairs by key, 11 bits per pass, skipping passes in
/// which every key has the same digit. For the sizes where comparison sorts of doubles spend
/// most of their time on mispredicted branches.
inline void radix_sort(std::vector<std::pair<std::uint64_t, std::uint32_t>>& items) {
    const std::size_t n = items.size();
    if (n < 512) {
        std::stable_sort(items.begin(), items.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
        return;
    }
    std::vector<std::pair<std::uint64_t, std::uint32_t>> buffer(n);
    std::vector<std::size_t> count(2048);
    for (unsigned shift = 0; shift < 64; shift += 11) {
        std::fill(count.begin(), count.end(), std::size_t{0});
        for (const auto& it : items) ++count[(it.first >> shift) & 2047u];
        if (count[(items[0].first >> shift) & 2047u] == n) continue;
        std::size_t sum = 0;
        for (auto& c : count) {
            const std::size_t here = c;
            c = sum;
            sum += here;
        }
        for (const auto& it : items) buffer[count[(it.first >> shift) & 2047u]++] = it;
        items.swap(buffer);
    }
}

/// Points are rows of `p` (m values each), already filtered to lie strictly inside the box.
inline double hv_2d(const std::vector<double>& p, const double* ref) {
    const std::size_t n = p.size() / 2;
    std::vector<std::pair<std::uint64_t, std::uint32_t>> order(n);
    for (std::size_t i = 0; i < n; ++i) order[i] = {order_key(p[2 * i]), static_cast<std::uint32_t>(i)};
    radix_sort(order);
    // Points sharing the first objective may come in any order: their slabs add up the same.
    std::vector<std::pair<double, double>> pts(n);
    for (std::size_t i = 0; i < n; ++i) pts[i] = {p[2 * order[i].second], p[2 * order[i].second + 1]};
    double volume = 0.0, height = ref[1];
    for (const auto& [x, y] : pts) {
        if (y < height) {
            volume += (ref[0] - x) * (height - y);
            height = y;
        }
    }
    return volume;
}

/// A set of integers in [0, n) with predecessor / successor queries: one bit per value plus a
/// summary bit per 64-bit word, so each query touches a few words.
class RankSet {
public:
    static constexpr std::size_t none = static_cast<std::size_t>(-1);
    explicit RankSet(std::size_t n) : m_bits((n + 63) / 64, 0), m_summary((m_bits.size() + 63) / 64, 0) {}
    void insert(std::size_t r) {
        m_bits[r / 64] |= bit(r % 64);
        m_summary[r / 4096] |= bit((r / 64) % 64);
    }
    void erase(std::size_t r) {
        m_bits[r / 64] &= ~bit(r % 64);
        if (m_bits[r / 64] == 0) m_summary[r / 4096] &= ~bit((r / 64) % 64);
    }
    /// Largest member < r, or none.
    std::size_t predecessor(std::size_t r) const {
        if (r == 0) return none;
        --r;
        std::size_t w = r / 64;
        const std::uint64_t here = m_bits[w] & low_mask(r % 64 + 1);
        if (here) return w * 64 + top(here);
        if (w == 0) return none;
        // previous non-empty word through the summary
        std::size_t sw = (w - 1) / 64;
        std::uint64_t s = m_summary[sw] & low_mask((w - 1) % 64 + 1);
        for (;;) {
            if (s) {
                const std::size_t word = sw * 64 + top(s);
                return word * 64 + top(m_bits[word]);
            }
            if (sw == 0) return none;
            s = m_summary[--sw];
        }
    }
    /// Smallest member > r, or none.
    std::size_t successor(std::size_t r) const {
        ++r;
        std::size_t w = r / 64;
        if (w >= m_bits.size()) return none;
        const std::uint64_t here = m_bits[w] & ~low_mask(r % 64);
        if (here) return w * 64 + static_cast<std::size_t>(std::countr_zero(here));
        std::size_t sw = (w + 1) / 64;
        if (w + 1 >= m_bits.size()) return none;
        std::uint64_t s = m_summary[sw] & ~low_mask((w + 1) % 64);
        for (;;) {
            if (s) {
                const std::size_t word = sw * 64 + static_cast<std::size_t>(std::countr_zero(s));
                return word * 64 + static_cast<std::size_t>(std::countr_zero(m_bits[word]));
            }
            if (++sw >= m_summary.size()) return none;
            s = m_summary[sw];
        }
    }

private:
    static std::uint64_t bit(std::size_t i) { return std::uint64_t{1} << i; }
    static std::uint64_t low_mask(std::size_t count) { return count >= 64 ? ~std::uint64_t{0} : bit(count) - 1; }
    static std::size_t top(std::uint64_t v) { return 63 - static_cast<std::size_t>(std::countl_zero(v)); }
    std::vector<std::uint64_t> m_bits, m_summary;
};

inline double hv_3d(const std::vector<double>& p, const double* ref) {
    const std::size_t n = p.size() / 3;
    struct Pt {
        double x, y, z;
    };
    std::vector<std::pair<std::uint64_t, std::uint32_t>> order(n);
    for (std::size_t i = 0; i < n; ++i) order[i] = {order_key(p[3 * i + 2]), static_cast<std::uint32_t>(i)};
    radix_sort(order);
    std::vector<Pt> pts(n);
    for (std::size_t i = 0; i < n; ++i) {
        const double* q = p.data() + 3 * order[i].second;
        pts[i] = {q[0], q[1], q[2]};
    }
    // Rank of each point by (x, y, position): the staircase is a set of ranks, x ascending and y
    // strictly descending, holding at most one point per x value. Sort by x, then order each
    // (rare) run of equal x by y.
    for (std::size_t i = 0; i < n; ++i) order[i] = {order_key(pts[i].x), static_cast<std::uint32_t>(i)};
    radix_sort(order);
    for (std::size_t i = 0; i < n;) {
        std::size_t e = i + 1;
        while (e < n && order[e].first == order[i].first) ++e;
        if (e - i > 1)
            std::stable_sort(order.begin() + static_cast<std::ptrdiff_t>(i),
                             order.begin() + static_cast<std::ptrdiff_t>(e),
                             [&](const auto& a, const auto& b) { return pts[a.second].y < pts[b.second].y; });
        i = e;
    }
    std::vector<std::size_t> rank(n);
    std::vector<double> xs(n), ys(n);
    for (std::size_t r = 0; r < n; ++r) {
        rank[order[r].second] = r;
        xs[r] = pts[order[r].second].x;
        ys[r] = pts[order[r].second].y;
    }
    RankSet stair(n);
    double area = 0.0, volume = 0.0;
    for (std::size_t j = 0; j < n; ++j) {
        const Pt& q = pts[j];
        if (j > 0) volume += area * (q.z - pts[j - 1].z);
        const std::size_t r = rank[j];
        const std::size_t left = stair.predecessor(r);  // largest x <= q.x before q: smallest y there
        if (left != RankSet::none && ys[left] <= q.y) continue;
        std::size_t right = stair.successor(r);
        if (right != RankSet::none && xs[right] == q.x && ys[right] <= q.y) continue;  // same projection
        double upper = left == RankSet::none ? ref[1] : ys[left];
        double x = q.x, added = 0.0;
        while (right != RankSet::none && ys[right] >= q.y) {  // q dominates these in the projection
            added += (xs[right] - x) * (upper - q.y);
            x = xs[right];
            upper = ys[right];
            stair.erase(right);
            right = stair.successor(right);
        }
        const double bound = right == RankSet::none ? ref[0] : xs[right];
        added += (bound - x) * (upper - q.y);
        area += added;
        stair.insert(r);
    }
    if (n > 0) volume += area * (ref[2] - pts[n - 1].z);
    return volume;
}

inline double hv_any(std::vector<double> p, std::size_t m, const double* ref);

/// WFG: sum of exclusive contributions, processing points by decreasing last objective so that
/// limit sets (the worse-of-two points) stay small.
inline double hv_wfg(std::vector<double> p, std::size_t m, const double* ref) {
    const std::size_t n = p.size() / m;
    std::vector<std::size_t> idx(n);
    std::iota(idx.begin(), idx.end(), std::size_t{0});
    std::sort(idx.begin(), idx.end(),
              [&](std::size_t a, std::size_t b) { return p[a * m + m - 1] > p[b * m + m - 1]; });
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
    if (m == 2) return hv_2d(p, ref);
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
        if (keep)
            inside.insert(inside.end(), points.begin() + static_cast<std::ptrdiff_t>(i),
                          points.begin() + static_cast<std::ptrdiff_t>(i + m));
    }
    if (m >= 4 && !inside.empty()) inside = pareto_front(inside, m);
    return detail::hv_any(std::move(inside), m, reference.data());
}

}  // namespace dnncost::search
