#pragma once
/// @file split.hpp
/// Train / validation / test splits drawn from a seed: the same seed and inputs give the same split
/// on every platform (dnncost::Rng), and the three parts never overlap.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <dnncost/core/config.hpp>
#include <dnncost/core/error.hpp>
#include <dnncost/core/rng.hpp>

namespace dnncost::train {

/// How the training set is drawn (validation and test are always drawn at random from what is
/// left):
/// - random: a uniformly random subset.
/// - uniform: MAPLE-Edge's targeted uniform sampling. Candidates are ranked by a cheap proxy
///   (MACs, or the latency measured on another device), the ranking is cut into N bins of
///   (almost) equal size, and one candidate is drawn at random from each bin, so that the N
///   training samples cover the whole range of cost instead of clustering around its mode.
///   Ties in the proxy are ordered by the seeded shuffle, so they do not bias the bins.
enum class Sampling { random, uniform };

inline Sampling parse_sampling(std::string_view s) {
    if (s == "random") return Sampling::random;
    if (s == "uniform") return Sampling::uniform;
    raise<config_error>("unknown sampling strategy '", s, "' (expected random or uniform)");
}
inline std::string_view to_string(Sampling s) { return s == Sampling::random ? "random" : "uniform"; }

struct SplitOptions {
    std::size_t n_train = 100;
    std::size_t n_validation = 100;
    std::size_t n_test = 0;  ///< 0: every item not used for training or validation
    Sampling sampling = Sampling::random;
    std::uint64_t seed = 0;
};

/// Item indices of each part, each sorted ascending.
struct Split {
    std::vector<std::size_t> train, validation, test;
};

/// Draw a split of `n_items` items.
/// @param proxy one value per item, required for Sampling::uniform (ignored for random)
/// @throws config_error if the parts do not fit or the proxy is missing / has the wrong size
DNNCOST_FUNC Split make_split(std::size_t n_items, const SplitOptions& opt, std::span<const double> proxy = {});

}  // namespace dnncost::train

#if !defined(DNNCOST_COMPILED)
#include <dnncost/train/split_impl.hpp>
#endif
