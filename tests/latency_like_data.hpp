#pragma once
// NB201 networks with a latency-like label and a small GNN configuration with an additive path,
// shared by the model-selection and the bf16 precision tests.
#include <cmath>
#include <vector>

#include <dnncost/cost/analytic.hpp>
#include <dnncost/graph/graph.hpp>
#include <dnncost/nn/config.hpp>
#include <dnncost/spaces/nb201.hpp>
#include <dnncost/train/train_data.hpp>

namespace dnncost::test {

inline constexpr nn::GnnConfig additive_preset{.conv = nn::Conv::sage,
                                               .depth = 2,
                                               .width = 16,
                                               .residual = true,
                                               .readout = nn::Readout::lcm_sum,
                                               .readout_width = 8,
                                               .head = {.layers = 2, .width = 16, .additive_path = true},
                                               .features = {.rw_steps = 2, .compiler_view = false},
                                               .train = {.batch_size = 8, .max_epochs = 2, .patience = 5}};

// NB201 architectures with a latency-like label: additive in MACs and op counts plus a
// deterministic non-additive wiggle, so that no linear model is exact.
struct LatencyLikeData {
    std::vector<graph::Graph> graphs;
    train::TrainData train, val;
    explicit LatencyLikeData(int n_train = 60, int n_val = 40) {
        nb201::Nb201Options o;
        o.cells_per_stage = 1;
        for (int i = 0; i < n_train + n_val; ++i)
            graphs.push_back(nb201::build_graph(nb201::from_index(i * 151 + 3), o));
        for (int i = 0; i < n_train + n_val; ++i) {
            const auto c = nb201::op_counts(nb201::from_index(i * 151 + 3));
            const double y = 1.0 +
                             1e-8 * static_cast<double>(cost::total_cost(graphs[static_cast<std::size_t>(i)]).macs) +
                             0.3 * c[3] + 0.05 * std::sin(1.7 * i);
            auto& d = i < n_train ? train : val;
            d.graphs.push_back(&graphs[static_cast<std::size_t>(i)]);
            d.targets.push_back(y);
        }
    }
};

}  // namespace dnncost::test
