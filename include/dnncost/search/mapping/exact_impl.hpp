#pragma once
/// @file exact_impl.hpp
/// The definitions of exact.hpp: compiled once into dnncost::compiled in compiled mode
/// (core/config.hpp), included by exact.hpp in header-only mode.
#include <dnncost/search/mapping/exact.hpp>

namespace dnncost::search::mapping {

DNNCOST_FUNC std::vector<detail::ScoredIndex> detail::nondominated(std::vector<ScoredIndex> pts) {
    std::sort(pts.begin(), pts.end(), [](const ScoredIndex& a, const ScoredIndex& b) {
        if (a.t != b.t) return a.t < b.t;
        if (a.e != b.e) return a.e < b.e;
        return a.index < b.index;
    });
    std::vector<ScoredIndex> front;
    for (const auto& p : pts)
        if (front.empty() || p.e < front.back().e) front.push_back(p);
    return front;
}

DNNCOST_FUNC bool detail::OnlineFront::insert(TimeEnergy v, std::span<const std::uint8_t> genes) {
    auto by_t = [](const MappingPoint& a, double t) { return a.value.t < t; };
    auto it = std::lower_bound(m_points.begin(), m_points.end(), v.t, by_t);
    // the member with the largest t <= v.t has the smallest e among them
    auto le = it;
    if (le != m_points.end() && le->value.t == v.t) {
        if (le->value.e <= v.e) return false;
    } else if (le != m_points.begin() && std::prev(le)->value.e <= v.e) {
        return false;
    }
    auto last = it;
    while (last != m_points.end() && last->value.e >= v.e) ++last;
    it = m_points.erase(it, last);
    m_points.insert(it, MappingPoint{std::vector<std::uint8_t>(genes.begin(), genes.end()), v});
    return true;
}

DNNCOST_FUNC ExactFront exact_front(const MappingEvaluator& ev, const Preference& pref, std::uint64_t limit) {
    const std::size_t n = ev.num_blocks();
    const auto card = ev.cardinalities();
    std::uint64_t total = 1;
    for (auto k : card) {
        if (total > limit / k)
            raise<config_error>("exact_front: more than ", limit, " mappings; too many to enumerate");
        total *= k;
    }
    std::vector<std::uint8_t> g(n, 0);
    std::vector<TimeEnergy> prefix(n);
    auto recompute_from = [&](std::size_t i) {
        for (std::size_t k = i; k < n; ++k) {
            const auto& v = ev.term(k, k ? g[k - 1] : std::uint8_t{0}, g[k]);
            prefix[k] = k ? TimeEnergy{prefix[k - 1].t + v.t, prefix[k - 1].e + v.e} : v;
        }
    };
    recompute_from(0);
    std::vector<detail::ScoredIndex> pts;
    pts.reserve(static_cast<std::size_t>(std::min<std::uint64_t>(total, std::uint64_t{1} << 20)));
    ExactFront out;
    for (std::uint64_t idx = 0;; ++idx) {
        const TimeEnergy v = prefix[n - 1];
        ++out.evaluations;
        if (pref.feasible(v)) {
            ++out.feasible;
            pts.push_back({v.t, v.e, idx});
        }
        // advance the odometer
        std::size_t i = n;
        while (i > 0 && ++g[i - 1] == card[i - 1]) g[--i] = 0;
        if (i == 0) break;
        recompute_from(i - 1);
    }
    for (const auto& p : detail::nondominated(std::move(pts))) {
        MappingPoint m;
        m.genes.resize(n);
        std::uint64_t r = p.index;
        for (std::size_t k = n; k-- > 0;) {
            m.genes[k] = static_cast<std::uint8_t>(r % card[k]);
            r /= card[k];
        }
        m.value = {p.t, p.e};
        out.front.push_back(std::move(m));
    }
    return out;
}

DNNCOST_FUNC ExactFront transition_limited_front(const MappingEvaluator& ev, std::size_t max_transitions,
                                                 const Preference& pref, std::uint64_t limit) {
    const std::size_t n = ev.num_blocks();
    std::vector<std::uint8_t> g(n, 0);
    detail::OnlineFront front;
    ExactFront out;
    auto cu_of = [&](std::size_t i, std::uint8_t gene) { return ev.supported(i)[gene]; };
    // depth-first over blocks: prefix (T, E) and the transitions used so far
    auto visit = [&](auto&& self, std::size_t i, TimeEnergy acc, std::size_t used) -> void {
        if (i == n) {
            if (++out.evaluations > limit)
                raise<config_error>("transition_limited_front: more than ", limit, " mappings with at most ",
                                    max_transitions, " transitions");
            if (pref.feasible(acc)) {
                ++out.feasible;
                front.insert(acc, g);
            }
            return;
        }
        const auto card = ev.supported(i).size();
        for (std::size_t a = 0; a < card; ++a) {
            const auto gene = static_cast<std::uint8_t>(a);
            const std::size_t change = i > 0 && cu_of(i, gene) != cu_of(i - 1, g[i - 1]) ? 1 : 0;
            if (used + change > max_transitions) continue;
            g[i] = gene;
            const auto& v = ev.term(i, i ? g[i - 1] : std::uint8_t{0}, gene);
            self(self, i + 1, i ? TimeEnergy{acc.t + v.t, acc.e + v.e} : v, used + change);
        }
    };
    visit(visit, 0, TimeEnergy{}, 0);
    out.front = front.take();
    return out;
}

}  // namespace dnncost::search::mapping
