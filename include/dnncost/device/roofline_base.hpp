#pragma once
/// @file roofline_base.hpp
/// A kernel's time as the work it does: a fixed cost plus its FLOPs at one rate and the bytes it
/// moves at others (one per kind of bytes), either added (t = c0 + a F + b.B) or as a roofline
/// (t = c0 + max(a F, b.B)), every coefficient non-negative. Fitted to one kernel family's
/// measured samples, it keeps growing with the work beyond the largest of them, which a learnt
/// regressor need not do: it is the base of RooflineRegressor (roofline_regressor.hpp).
/// Fitting one is in roofline_base_fit.hpp.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include <Eigen/Core>

#include <dnncost/core/config.hpp>
#include <dnncost/core/error.hpp>
#include <dnncost/core/matrix.hpp>

namespace dnncost::device {

/// The time of a kernel of `flops` FLOPs that moves bytes of a few kinds (say the activations it
/// reads and writes, and its weights), in ms.
struct RooflineBase {
    enum class Form : std::uint8_t { sum = 0, max = 1 };
    Form form = Form::sum;
    double fixed_ms = 0;              ///< c0
    double ms_per_flop = 0;           ///< a
    std::vector<double> ms_per_byte;  ///< b, one rate per kind of bytes
    /// The least time the base gives: a kernel the fit sees neither work nor fixed cost in still
    /// costs something, so that the base is always positive.
    double floor_ms = 1e-6;

    /// @param bytes one count per rate of ms_per_byte (a missing one counts as none)
    double ms(double flops, std::span<const double> bytes) const {
        const double f = ms_per_flop * std::max(flops, 0.0);
        double b = 0;
        for (std::size_t j = 0; j < ms_per_byte.size() && j < bytes.size(); ++j)
            b += ms_per_byte[j] * std::max(bytes[j], 0.0);
        return std::max(fixed_ms + (form == Form::max ? std::max(f, b) : f + b), floor_ms);
    }

    /// Whether the coefficients are a base: finite, non-negative, and a positive floor.
    bool valid() const {
        const auto ok = [](double v) { return std::isfinite(v) && v >= 0; };
        return (form == Form::sum || form == Form::max) && ok(fixed_ms) && ok(ms_per_flop) &&
               std::all_of(ms_per_byte.begin(), ms_per_byte.end(), ok) && ok(floor_ms) && floor_ms > 0;
    }
};

/// The most kinds of bytes fit_roofline_base() takes: every support of the coefficients is tried.
inline constexpr Index roofline_max_byte_kinds = 6;

}  // namespace dnncost::device
