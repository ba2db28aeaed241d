#pragma once
// A small GNN configuration the nn tests share: two SAGE layers of width 32, a sum readout.
#include <dnncost/nn/config.hpp>

namespace dnncost::test {

inline constexpr nn::GnnConfig small_sum{.conv = nn::Conv::sage,
                              .depth = 2,
                              .width = 32,
                              .residual = true,
                              .readout = nn::Readout::sum,
                              .head = {.layers = 2, .width = 32}};

}  // namespace dnncost::test
