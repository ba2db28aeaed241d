#pragma once
/// @file indicators.hpp
/// Distance-based quality indicators of an approximation set against a reference front.
/// Both sets are flat row-major arrays of m objective values per point; all objectives minimised.
///  - IGD  (inverted generational distance): mean, over the reference points, of the Euclidean
///    distance to the nearest approximation point.
///  - IGD+ (Ishibuchi et al. 2015): as IGD, but only the amount by which an approximation point
///    is worse than the reference point counts, d+(a, r) = sqrt(sum_k max(a_k - r_k, 0)^2),
///    which makes it weakly Pareto-compliant.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <span>

#include <dnncost/core/error.hpp>
#include <dnncost/search/pareto.hpp>

namespace dnncost::search {

namespace detail {
template <bool Plus>
double inverted_distance(std::span<const double> approximation, std::span<const double> reference, std::size_t m,
                         const char* who) {
    check_point_set(approximation, m, who);
    check_point_set(reference, m, who);
    if (reference.empty()) raise<config_error>(who, ": the reference front is empty");
    if (approximation.empty()) return std::numeric_limits<double>::infinity();
    double total = 0.0;
    for (std::size_t r = 0; r < reference.size(); r += m) {
        double best = std::numeric_limits<double>::infinity();
        for (std::size_t a = 0; a < approximation.size(); a += m) {
            double d2 = 0.0;
            for (std::size_t k = 0; k < m; ++k) {
                double diff = approximation[a + k] - reference[r + k];
                if constexpr (Plus) diff = std::max(diff, 0.0);
                d2 += diff * diff;
            }
            best = std::min(best, d2);
        }
        total += std::sqrt(best);
    }
    return total / static_cast<double>(reference.size() / m);
}
}  // namespace detail

/// Inverted generational distance; +infinity for an empty approximation.
/// @throws config_error if the reference front is empty, shape_error if sizes do not fit m.
inline double igd(std::span<const double> approximation, std::span<const double> reference, std::size_t m) {
    return detail::inverted_distance<false>(approximation, reference, m, "igd");
}

/// IGD+ (modified distance); +infinity for an empty approximation.
/// @throws config_error if the reference front is empty, shape_error if sizes do not fit m.
inline double igd_plus(std::span<const double> approximation, std::span<const double> reference, std::size_t m) {
    return detail::inverted_distance<true>(approximation, reference, m, "igd_plus");
}

}  // namespace dnncost::search
