#pragma once
/// @file harness_impl.hpp
/// The definitions of harness.hpp: compiled once into dnncost::compiled in compiled mode
/// (core/config.hpp), included by harness.hpp in header-only mode.
#include <dnncost/measure/harness.hpp>

DNNCOST_FUNC auto dnncost::measure::statistic_of(std::vector<double> v, Statistic s) -> double {
    if (v.empty()) return std::nan("");
    if (s == Statistic::minimum) return *std::min_element(v.begin(), v.end());
    return median(v);
}

DNNCOST_FUNC auto dnncost::measure::relative_spread(const std::vector<double>& v, double center) -> double {
    if (v.size() < 2 || !(center > 0)) return 0.0;
    return mad(v, center) / center;
}
