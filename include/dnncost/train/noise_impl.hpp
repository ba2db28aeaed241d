#pragma once
/// @file noise_impl.hpp
/// The definitions of noise.hpp: compiled once into dnncost::compiled in compiled mode
/// (core/config.hpp), included by noise.hpp in header-only mode.
#include <dnncost/train/noise.hpp>

DNNCOST_FUNC auto dnncost::train::pair_agreement(std::span<const std::pair<double, double>> pairs, double bound)
    -> double {
    if (pairs.empty()) raise<config_error>("pair_agreement: no pairs");
    std::size_t n = 0;
    for (std::size_t i = 0; i < pairs.size(); ++i) {
        const auto [a, b] = pairs[i];
        if (!(a > 0) || !(b > 0) || !std::isfinite(a) || !std::isfinite(b))
            raise<config_error>("pair_agreement: pair ", i, " is (", a, ", ", b,
                                "); costs must be finite and positive");
        n += std::abs(a / b - 1.0) <= bound;
        n += std::abs(b / a - 1.0) <= bound;
    }
    return static_cast<double>(n) / static_cast<double>(2 * pairs.size());
}

DNNCOST_FUNC auto dnncost::train::sigma_from_agreement(double p, double bound) -> double {
    if (!(p > 0.0 && p < 1.0)) raise<config_error>("sigma_from_agreement: agreement ", p, " is not in (0, 1)");
    if (!(bound > 0.0 && bound < 1.0)) raise<config_error>("sigma_from_agreement: bound ", bound, " is not in (0, 1)");
    const double lo = std::log(1.0 - bound), hi = std::log(1.0 + bound);
    double low = 1e-9, high = 100.0;  // the mass falls from 1 to ~0 over this range
    for (int i = 0; i < 200; ++i) {
        const double middle = 0.5 * (low + high);
        (detail::normal_mass(lo, hi, std::sqrt(2.0) * middle) > p ? low : high) = middle;
    }
    return 0.5 * (low + high);
}

DNNCOST_FUNC auto dnncost::train::pair_noise(std::span<const std::pair<double, double>> pairs, double bound)
    -> PairNoise {
    if (!(bound > 0.0 && bound < 1.0)) raise<config_error>("pair_noise: bound ", bound, " is not in (0, 1)");
    PairNoise r;
    r.pairs = pairs.size();
    r.agreement = pair_agreement(pairs, bound);
    std::vector<double> logs;
    logs.reserve(pairs.size());
    for (const auto& [a, b] : pairs) logs.push_back(std::log(a / b));
    r.sigma = mad_sigma(logs, 0.0) / std::sqrt(2.0);  // the log ratio is symmetric: its median is 0
    if (r.agreement >= 1.0)
        r.ceiling = 1.0;
    else if (r.agreement <= 0.0)
        r.ceiling = 0.0;
    else {
        const double s = sigma_from_agreement(r.agreement, bound);
        r.ceiling = detail::normal_mass(-std::log(1.0 + bound), -std::log(1.0 - bound), s);  // f / y in [1 - b, 1 + b]
    }
    return r;
}
