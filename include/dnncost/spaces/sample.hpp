#pragma once
/// @file sample.hpp
/// Distinct architectures of a search space, drawn with a seed: what `dnncost space --sample`
/// prints and what `dnncost measure --space NAME --sample N` measures.
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <dnncost/core/error.hpp>
#include <dnncost/core/rng.hpp>
#include <dnncost/spaces/nb201.hpp>
#include <dnncost/spaces/registry.hpp>

namespace dnncost::spaces {

/// `n` distinct architecture strings of `space`, drawn by its own sampler with `rng` (repeats
/// are drawn again). @throws config_error when the sampler keeps repeating itself (n beyond the
/// space's size)
inline std::vector<std::string> sample_distinct(const SpaceInfo& space, std::size_t n, Rng& rng) {
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

/// `n` distinct NB201 architecture strings drawn without replacement by index (a partial
/// Fisher-Yates shuffle), so that any n up to the whole space is reachable.
/// @throws config_error for n beyond the 15625 architectures
inline std::vector<std::string> sample_nb201_by_index(std::size_t n, Rng& rng) {
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

}  // namespace dnncost::spaces
