#pragma once
/// @file computed_targets.hpp
/// Targets computed from a network's graph instead of measured: a model can learn them next to
/// measured ones (one PerfSAGE model, latency and exact peak memory), and a data set needs no
/// column for them.
#include <algorithm>
#include <array>
#include <string>
#include <string_view>
#include <vector>

#include <dnncost/cost/memory.hpp>
#include <dnncost/graph/graph.hpp>
#include <dnncost/train/dataset.hpp>

namespace dnncost::train {

/// Weights plus the peak of live activations under the sequential schedule of cost/memory.hpp,
/// in bytes: exact for the IR, whatever a runtime's allocator adds.
inline constexpr std::string_view ir_peak_memory_target = "ir_peak_memory_bytes";

inline constexpr std::array<std::string_view, 1> computed_targets{ir_peak_memory_target};

inline bool is_computed_target(std::string_view name) {
    return std::find(computed_targets.begin(), computed_targets.end(), name) != computed_targets.end();
}

/// The value of computed target `name` for graph g.
inline double computed_target(std::string_view name, const graph::Graph& g) {
    if (name == ir_peak_memory_target) return static_cast<double>(cost::peak_memory(g).total_bytes());
    raise<config_error>("unknown computed target '", name, "'");
}

/// `names` without the computed targets: the columns to read from a file.
inline std::vector<std::string> measured_columns(const std::vector<std::string>& names) {
    std::vector<std::string> out;
    for (const auto& n : names)
        if (!is_computed_target(n)) out.push_back(n);
    return out;
}

/// Add to `ds` each computed target of `names` that it does not hold as a column yet.
inline void add_computed_targets(Dataset& ds, const std::vector<std::string>& names) {
    for (const auto& n : names) {
        if (!is_computed_target(n) || ds.has_column(n)) continue;
        ds.add_column(n, ds.map_graphs([&n](const graph::Graph& g) { return computed_target(n, g); }));
    }
}

}  // namespace dnncost::train
