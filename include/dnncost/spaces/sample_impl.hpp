#pragma once
/// @file sample_impl.hpp
/// The definitions of sample.hpp: compiled once into dnncost::compiled in compiled mode
/// (core/config.hpp), included by sample.hpp in header-only mode.
#include <dnncost/spaces/sample.hpp>

DNNCOST_FUNC auto dnncost::spaces::sample_distinct(const SpaceInfo& space, std::size_t n, Rng& rng)
    -> std::vector<std::string> {
    std::set<std::string> seen;
    std::vector<std::string> drawn;
    for (std::size_t draws = 0; drawn.size() < n; ++draws) {
        if (draws > 100 * n + 1000)
            raise<config_error>("--sample ", n, ": the ", space.name,
                                " sampler keeps repeating itself (is N beyond the space's size?)");
        auto arch = space.sample(rng);
        if (seen.insert(arch).second) drawn.push_back(std::move(arch));
    }
    return drawn;
}

DNNCOST_FUNC auto dnncost::spaces::sample_nb201_by_index(std::size_t n, Rng& rng) -> std::vector<std::string> {
    if (n > static_cast<std::size_t>(nb201::num_architectures))
        raise<config_error>("--sample ", n, " is more than the ", nb201::num_architectures, " NB201 architectures");
    std::vector<std::int64_t> idx(static_cast<std::size_t>(nb201::num_architectures));
    for (std::size_t i = 0; i < idx.size(); ++i) idx[i] = static_cast<std::int64_t>(i);
    std::vector<std::string> out;
    for (std::size_t i = 0; i < n; ++i) {
        const auto j = i + static_cast<std::size_t>(rng.below(idx.size() - i));
        std::swap(idx[i], idx[j]);
        out.push_back(nb201::to_string(nb201::from_index(idx[i])));
    }
    return out;
}
