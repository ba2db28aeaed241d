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

#include <dnncost/core/config.hpp>
#include <dnncost/core/error.hpp>
#include <dnncost/core/rng.hpp>
#include <dnncost/spaces/nb201.hpp>
#include <dnncost/spaces/registry.hpp>

namespace dnncost::spaces {

/// `n` distinct architecture strings of `space`, drawn by its own sampler with `rng` (repeats
/// are drawn again). @throws config_error when the sampler keeps repeating itself (n beyond the
/// space's size)
DNNCOST_FUNC std::vector<std::string> sample_distinct(const SpaceInfo& space, std::size_t n, Rng& rng);

/// `n` distinct NB201 architecture strings drawn without replacement by index (a partial
/// Fisher-Yates shuffle), so that any n up to the whole space is reachable.
/// @throws config_error for n beyond the 15625 architectures
DNNCOST_FUNC std::vector<std::string> sample_nb201_by_index(std::size_t n, Rng& rng);

}  // namespace dnncost::spaces

#if !defined(DNNCOST_COMPILED)
#include <dnncost/spaces/sample_impl.hpp>
#endif
