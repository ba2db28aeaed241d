#pragma once
// The NB201 networks the pricing benchmarks cycle through: 64 seeded cells, built once.
#include <cstdint>
#include <vector>

#include <dnncost/core/rng.hpp>
#include <dnncost/graph/graph.hpp>
#include <dnncost/spaces/nb201.hpp>

namespace bench_networks {

inline const std::vector<dnncost::graph::Graph>& nb201_networks() {
    static const auto g = [] {
        std::vector<dnncost::graph::Graph> out;
        dnncost::Rng rng(2024);
        for (int i = 0; i < 64; ++i)
            out.push_back(dnncost::nb201::build_graph(dnncost::nb201::from_index(static_cast<std::int64_t>(rng() % 15625))));
        return out;
    }();
    return g;
}

}  // namespace bench_networks
