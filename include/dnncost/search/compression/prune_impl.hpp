#pragma once
/// @file prune_impl.hpp
/// The definitions of prune.hpp: compiled once into dnncost::compiled in compiled mode
/// (core/config.hpp), included by prune.hpp in header-only mode.
#include <dnncost/search/compression/prune.hpp>

DNNCOST_FUNC auto dnncost::search::compression::keep_steps(double lowest, double highest, double step)
    -> std::vector<double> {
    if (!(lowest > 0) || !(highest <= 1) || !(lowest <= highest) || !(step > 0))
        raise<config_error>("keep-ratio steps need 0 < lowest <= highest <= 1 and a positive step, got ", lowest, ":",
                            highest, ":", step);
    const double count = std::floor((highest - lowest) / step + 1e-9) + 1;
    if (count > 1000) raise<config_error>("more than 1000 keep-ratio steps");
    std::vector<double> out;
    // rounded so that 0.3 + 2 x 0.3 is the 0.9 a user typed
    for (int i = 0; i < static_cast<int>(count); ++i) out.push_back(std::round((lowest + step * i) * 1e9) / 1e9);
    if (highest - out.back() > 1e-9) out.push_back(highest);
    return out;
}
