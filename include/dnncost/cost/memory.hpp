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

#include <dnncost/core/config.hpp>
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
DNNCOST_FUNC PeakMemory peak_memory(const graph::Graph& g, const std::vector<int>& schedule);

/// Peak memory in the graph's stable topological order (Graph::topological_order).
inline PeakMemory peak_memory(const graph::Graph& g) { return peak_memory(g, g.topological_order()); }

}  // namespace dnncost::cost

#if !defined(DNNCOST_COMPILED)
#include <dnncost/cost/memory_impl.hpp>
#endif
