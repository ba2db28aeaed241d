#pragma once
/// @file upsample.hpp
/// Data-set upsampling for training on several search spaces at once: items of the spaces
/// that make up less than a given share of the training set are repeated until every space
/// holds at least that share, so that a generalised model does not learn the largest space
/// alone.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <dnncost/core/config.hpp>
#include <dnncost/core/error.hpp>
#include <dnncost/core/rng.hpp>

namespace dnncost::train {

/// The smallest counts c_g >= n_g with c_g >= share * sum(c) for every group g (n: the groups'
/// sizes, all positive). Found by raising every short group to ceil(share * total) until the
/// total stops growing; the fixed point is the smallest solution because every step only
/// raises a count to a bound that any solution must meet.
/// @throws config_error when share * groups >= 1 (no solution) or share is outside [0, 1)
DNNCOST_FUNC std::vector<std::size_t> upsampled_counts(const std::vector<std::size_t>& n, double share);

/// Item positions 0..group.size()-1 with the items of short groups repeated so that every
/// group makes up at least `share` of the result (upsampled_counts): each item of a group
/// raised from n to c appears floor(c / n) times, and c mod n of them, drawn without
/// replacement with `seed`, once more. Groups that are large enough keep each item once.
/// Positions come grouped in the order of first appearance of their group.
DNNCOST_FUNC std::vector<std::size_t> upsample(const std::vector<std::string>& group, double share = 0.10,
                                         std::uint64_t seed = 0);

}  // namespace dnncost::train

#if !defined(DNNCOST_COMPILED)
#include <dnncost/train/upsample_impl.hpp>
#endif
