#pragma once
/// @file kernel_intensity_factor.hpp
/// A calibration factor that moves with a kernel's arithmetic intensity (FLOPs per byte moved).
/// Between two hosts the ratio of a kernel's time to its price is not one number per kernel
/// family: a host whose vector units are wider, or whose caches are larger, than those of the
/// host a model was built on runs compute-bound kernels (wide convolutions, large matrix
/// products) relatively faster than memory-bound ones, and a convolution can be either. The
/// factor is a power of the intensity, held flat outside the span of intensities that carry the
/// calibration networks' time, so that it is not extrapolated beyond what the fit saw:
///   factor(x) = (clamp(x, low, high) / high) ^ slope,
/// 1 for the most compute-bound kernels and for a slope of 0.
#include <algorithm>
#include <cmath>

namespace dnncost::device {

struct KernelIntensityFactor {
    /// Of log(factor) on log(intensity); negative: memory-bound kernels cost relatively more.
    double slope = 0;
    double low = 1, high = 1;  ///< the span of intensities (FLOPs per byte) the factor moves over

    /// The largest |slope| a calibration may fit: over the two decades of intensity that real
    /// kernels span, a factor steeper than this would change relative prices by more than 10x.
    static constexpr double max_slope = 0.5;

    bool active() const { return slope != 0; }
    bool operator==(const KernelIntensityFactor&) const = default;

    /// Whether the fields make a factor a model may carry: a finite slope within max_slope and,
    /// when it is not 0, a span 0 < low <= high < 1e9.
    bool valid() const {
        if (!(std::isfinite(slope) && std::abs(slope) <= max_slope)) return false;
        return slope == 0 || (std::isfinite(low) && std::isfinite(high) && low > 0 && low <= high && high < 1e9);
    }

    double operator()(double flops_per_byte) const {
        if (slope == 0) return 1.0;
        return std::pow(std::clamp(flops_per_byte, low, high) / high, slope);
    }
};

}  // namespace dnncost::device
