#pragma once
/// @file memory_impl.hpp
/// The definitions of memory.hpp: compiled once into dnncost::compiled in compiled mode
/// (core/config.hpp), included by memory.hpp in header-only mode.
#include <dnncost/cost/memory.hpp>

DNNCOST_FUNC auto dnncost::cost::peak_memory(const graph::Graph& g, const std::vector<int>& schedule) -> PeakMemory {
    const auto n = static_cast<int>(g.num_nodes());
    if (static_cast<int>(schedule.size()) != n)
        raise<config_error>("peak_memory: schedule of graph '", g.name(), "' lists ", schedule.size(),
                            " nodes, the graph has ", n);
    std::vector<int> step_of(static_cast<std::size_t>(n), -1);
    for (int s = 0; s < n; ++s) {
        const int v = schedule[static_cast<std::size_t>(s)];
        if (v < 0 || v >= n || step_of[static_cast<std::size_t>(v)] >= 0)
            raise<config_error>("peak_memory: schedule of graph '", g.name(), "' has a bad or repeated node index ", v);
        step_of[static_cast<std::size_t>(v)] = s;
    }
    PeakMemory r;
    // delta[s]: bytes allocated when step s starts; freed[s]: bytes released after step s.
    std::vector<std::int64_t> alloc(static_cast<std::size_t>(n) + 1, 0), freed(static_cast<std::size_t>(n) + 1, 0);
    std::int64_t initially_live = 0;
    for (const auto& t : g.tensors()) {
        if (t.kind == graph::TensorKind::weight) {
            if (!t.consumers.empty()) r.weight_bytes = detail::checked_add(r.weight_bytes, t.bytes());
            continue;
        }
        int first = 0;
        if (t.kind == graph::TensorKind::activation) {
            if (t.producer < 0) continue;  // never computed (Graph::validate rejects reading it)
            first = step_of[static_cast<std::size_t>(t.producer)];
        }
        int last = first;
        for (int c : t.consumers) {
            const int s = step_of[static_cast<std::size_t>(c)];
            if (t.kind == graph::TensorKind::activation && s <= first)
                raise<config_error>("peak_memory: schedule of graph '", g.name(), "' runs node '", g.node(c).name,
                                    "' before the producer of its input '", t.name, "'");
            last = std::max(last, s);
        }
        const std::int64_t bytes = t.bytes();
        if (t.kind == graph::TensorKind::input)
            initially_live = detail::checked_add(initially_live, bytes);
        else
            alloc[static_cast<std::size_t>(first)] = detail::checked_add(alloc[static_cast<std::size_t>(first)], bytes);
        if (!t.is_output)
            freed[static_cast<std::size_t>(last)] = detail::checked_add(freed[static_cast<std::size_t>(last)], bytes);
    }
    std::int64_t live = initially_live;
    r.live_bytes.reserve(static_cast<std::size_t>(n));
    for (int s = 0; s < n; ++s) {
        live = detail::checked_add(live, alloc[static_cast<std::size_t>(s)]);
        r.live_bytes.push_back(live);
        if (live > r.peak_activation_bytes || r.peak_node < 0) {
            r.peak_activation_bytes = live;
            r.peak_node = schedule[static_cast<std::size_t>(s)];
        }
        live -= freed[static_cast<std::size_t>(s)];
    }
    if (n == 0) r.peak_activation_bytes = initially_live;
    return r;
}
