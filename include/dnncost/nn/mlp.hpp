#pragma once
/// @file mlp.hpp
/// Multi-layer perceptron of any depth: Linear -> activation -> dropout for every hidden
/// layer, a plain Linear last.
#include <vector>

#include <dnncost/nn/activations.hpp>
#include <dnncost/nn/dropout.hpp>
#include <dnncost/nn/linear.hpp>

namespace dnncost::nn {

/// Build an MLP through the widths dims[0] -> dims[1] -> ... -> dims.back().
/// @throws config_error for fewer than two widths, a non-positive width or a bad dropout rate
template <class T>
std::unique_ptr<Sequential<T>> make_mlp(const std::vector<Index>& dims, Act activation, double dropout, Rng& rng) {
    if (dims.size() < 2) raise<config_error>("make_mlp: needs at least input and output widths, got ", dims.size());
    for (auto d : dims)
        if (d < 1) raise<config_error>("make_mlp: width ", d, " is not positive");
    if (!(dropout >= 0 && dropout < 1)) raise<config_error>("make_mlp: dropout ", dropout, " outside [0, 1)");
    auto seq = std::make_unique<Sequential<T>>();
    const Init init = (activation == Act::relu || activation == Act::leaky_relu) ? Init::kaiming : Init::xavier;
    for (std::size_t i = 0; i + 1 < dims.size(); ++i) {
        const bool last = i + 2 == dims.size();
        seq->add(std::make_unique<Linear<T>>(dims[i], dims[i + 1], rng, last ? Init::xavier : init));
        if (!last) {
            seq->add(make_activation<T>(activation));
            if (dropout > 0) seq->add(std::make_unique<Dropout<T>>(dropout));
        }
    }
    return seq;
}

}  // namespace dnncost::nn
