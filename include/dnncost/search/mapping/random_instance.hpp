#pragma once
/// @file random_instance.hpp
/// Random mapping instances with real trade-offs, for tests and benchmarks: CU 0 is fast and
/// power-hungry, CU 1 slow and frugal, further CUs in between; every block has its own affinity
/// to each CU; transfers cost a noticeable share of a block's computation, so that where the CU
/// changes matters; optionally some CUs do not run some blocks.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <dnncost/core/config.hpp>
#include <dnncost/core/error.hpp>
#include <dnncost/core/rng.hpp>
#include <dnncost/search/mapping/mapping_cost.hpp>

namespace dnncost::search::mapping {

/// Shape of a random instance.
struct RandomInstanceOptions {
    std::size_t blocks = 20;
    std::size_t cus = 2;
    double transfer_share = 0.15;  ///< mean transfer cost relative to a block's computation
    double unsupported = 0.0;      ///< probability that a CU does not run a block (CU 0 always does)
};

/// A random instance (deterministic in `seed`).
DNNCOST_FUNC MappingInstance random_instance(const RandomInstanceOptions& o, std::uint64_t seed);

}  // namespace dnncost::search::mapping

#if !defined(DNNCOST_COMPILED)
#include <dnncost/search/mapping/random_instance_impl.hpp>
#endif
