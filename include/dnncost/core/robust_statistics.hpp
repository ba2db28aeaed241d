#pragma once
/// @file robust_statistics.hpp
/// The median and the median absolute deviation (MAD), in one place for every layer: the
/// measurement harness, the noise and accuracy figures, fusion discovery and the device model's
/// calibration all summarise noisy timings by them. Pulls in the standard library and
/// core/error.hpp only.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <span>
#include <vector>

#include <dnncost/core/error.hpp>

namespace dnncost {

/// The median: the middle value for an odd count, the mean of the two middle values for an even
/// count; NaN when empty.
inline double median(std::span<const double> v) {
    if (v.empty()) return std::numeric_limits<double>::quiet_NaN();
    std::vector<double> s(v.begin(), v.end());
    const auto mid = s.size() / 2;
    std::nth_element(s.begin(), s.begin() + static_cast<std::ptrdiff_t>(mid), s.end());
    const double upper = s[mid];
    if (s.size() % 2) return upper;
    // nth_element leaves the lower half in front: its largest is the lower middle value
    return 0.5 * (upper + *std::max_element(s.begin(), s.begin() + static_cast<std::ptrdiff_t>(mid)));
}

/// The high median: the middle value for an odd count, the upper of the two middle values for an
/// even count. Always one of the values, for a caller that takes it as a scale or a label.
/// @throws config_error when empty
inline double median_high(std::span<const double> v) {
    if (v.empty()) raise<config_error>("median_high: no values");
    std::vector<double> s(v.begin(), v.end());
    const auto mid = s.begin() + static_cast<std::ptrdiff_t>(s.size() / 2);
    std::nth_element(s.begin(), mid, s.end());
    return *mid;
}

/// The median absolute deviation from `center`: median(|x - center|), unscaled; NaN when empty.
inline double mad(std::span<const double> v, double center) {
    std::vector<double> dev;
    dev.reserve(v.size());
    for (const double x : v) dev.push_back(std::abs(x - center));
    return median(dev);
}
/// The median absolute deviation from the median, unscaled; NaN when empty.
inline double mad(std::span<const double> v) { return mad(v, median(v)); }

/// The factor that makes a MAD estimate the standard deviation of normal data (1 / Phi^-1(3/4),
/// rounded as the literature quotes it).
inline constexpr double mad_to_sigma = 1.4826;

/// A standard deviation robust to outliers: mad_to_sigma x mad(v, center); NaN when empty.
inline double mad_sigma(std::span<const double> v, double center) { return mad_to_sigma * mad(v, center); }
/// mad_sigma() about the median.
inline double mad_sigma(std::span<const double> v) { return mad_to_sigma * mad(v); }

}  // namespace dnncost
