#pragma once
/// @file memory.hpp
/// Exact peak memory of a graph under a sequential schedule, computed from the IR alone.
///
/// Model: nodes run one at a time in the schedule's order (by default the graph's stable
/// topological order). Every tensor is its own buffer (no in-place operators, no aliasing of
/// Reshape and friends, no reuse of a freed buffer's space by a bigger one: what a simple
/// allocator holds). An activation is allocated when its producer starts and freed once its
/// last consumer has finished; a graph input is live from the start until its last consumer
/// has finished; a graph output stays live to the end; an output nobody reads is freed when
/// its producer finishes. Weights are resident for the whole run and reported apart from the
/// activations. While a node runs, its inputs and its outputs are live together, so the peak
/// is the largest sum over the schedule's steps of the buffers live during that step.
#include <algorithm>
#include <cstdint>
#include <vector>

#include <dnncost/core/error.hpp>
#include <dnncost/graph/graph.hpp>

namespace dnncost::cost {

struct PeakMemory {
    std::int64_t weight_bytes = 0;           ///< every weight tensor some node reads
    std::int64_t peak_activation_bytes = 0;  ///< graph inputs and computed tensors, at the peak step
    int peak_node = -1;                      ///< the node running at the peak (-1 for an empty graph)
    /// Live activation bytes while each scheduled node runs, in schedule order.
    std::vector<std::int64_t> live_bytes;
    std::int64_t total_bytes() const { return weight_bytes + peak_activation_bytes; }
};

namespace detail {
inline std::int64_t checked_add(std::int64_t a, std::int64_t b) {
    std::int64_t r = 0;
    if (__builtin_add_overflow(a, b, &r))
        raise<shape_error>("peak_memory: byte count exceeds 64 bits (implausible shape)");
    return r;
}
}  // namespace detail

/// Peak memory of `g` when its nodes run in `schedule` (every node exactly once, producers
/// before consumers). @throws config_error for a schedule that is not such an order
inline PeakMemory peak_memory(const graph::Graph& g, const std::vector<int>& schedule) {
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

/// Peak memory in the graph's stable topological order (Graph::topological_order).
inline PeakMemory peak_memory(const graph::Graph& g) { return peak_memory(g, g.topological_order()); }

}  // namespace dnncost::cost
