#pragma once
/// @file interpolation.hpp
/// Values on a rectilinear grid of any number of dimensions, and three ways to read a point that
/// is not on the grid: multilinear interpolation, the plane through the lower corner and its
/// axis neighbours, and a "step" reading that takes the next grid level up. The operator tables
/// (op_table.hpp) store measured latencies on such grids over channel counts.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <dnncost/core/error.hpp>

namespace dnncost::cost {

/// How a point between grid points is read.
enum class Interpolation {
    /// Multilinear: the weighted mean of the 2^D corners of the enclosing cell.
    multilinear,
    /// The plane (hyperplane) through the lower corner and its D axis neighbours, e.g. in two
    /// dimensions through (C_lo,K_lo), (C_hi,K_lo) and (C_lo,K_hi).
    plane,
    /// Cost jumps at chunk boundaries: each coordinate is rounded up to a multiple of the chunk,
    /// then to the next grid point, and that grid value is returned (hardware processes channels
    /// in fixed-size chunks, so a partial chunk costs a whole one).
    step,
};

inline std::string_view to_string(Interpolation m) {
    return m == Interpolation::multilinear ? "multilinear" : m == Interpolation::plane ? "plane" : "step";
}
/// "multilinear" | "plane" | "step"; @throws config_error for anything else
inline Interpolation parse_interpolation(std::string_view s) {
    if (s == "multilinear") return Interpolation::multilinear;
    if (s == "plane") return Interpolation::plane;
    if (s == "step") return Interpolation::step;
    raise<config_error>("unknown interpolation mode '", s, "' (expected plane, step or multilinear)");
}

/// Options of a grid query.
struct QueryOptions {
    Interpolation mode = Interpolation::multilinear;
    /// Outside the grid: extrapolate linearly from the edge cell (step mode: from the edge
    /// levels) when true, otherwise an error naming the coordinate and the grid's range.
    bool extrapolate = false;
    double chunk = 8;  ///< step mode: the chunk size coordinates are rounded up to
};

/// A value and its partial derivatives with respect to each coordinate (0 in step mode, where
/// the value is piecewise constant).
struct GridValue {
    double value = 0;
    std::vector<double> gradient;
};

/// A dense rectilinear grid: sorted, distinct coordinates per axis and one value per grid point
/// (NaN where no value is known; a query that needs such a point fails naming it).
class Grid {
public:
    Grid() = default;
    /// @throws config_error when an axis is empty, unsorted or repeats a coordinate
    explicit Grid(std::vector<std::vector<double>> axes) : m_axes(std::move(axes)) {
        if (m_axes.empty()) raise<config_error>("Grid: no axes");
        std::size_t n = 1;
        for (std::size_t d = 0; d < m_axes.size(); ++d) {
            const auto& a = m_axes[d];
            if (a.empty()) raise<config_error>("Grid: axis ", d, " has no points");
            for (std::size_t i = 0; i < a.size(); ++i) {
                if (!std::isfinite(a[i])) raise<config_error>("Grid: axis ", d, " has a non-finite coordinate");
                if (i > 0 && !(a[i] > a[i - 1]))
                    raise<config_error>("Grid: axis ", d, " is not strictly increasing at ", a[i]);
            }
            n *= a.size();
        }
        m_values.assign(n, std::nan(""));
    }

    std::size_t dims() const { return m_axes.size(); }
    const std::vector<std::vector<double>>& axes() const { return m_axes; }

    /// Value at grid indices `idx` (one per axis).
    double at(const std::vector<std::size_t>& idx) const { return m_values[flat(idx)]; }
    void set(const std::vector<std::size_t>& idx, double v) { m_values[flat(idx)] = v; }
    /// Set the value at a grid point given by its coordinates. @throws config_error if it is not one
    void set_at(const std::vector<double>& point, double v) {
        std::vector<std::size_t> idx(dims());
        for (std::size_t d = 0; d < dims(); ++d) {
            const auto& a = m_axes[d];
            const auto it = std::lower_bound(a.begin(), a.end(), point.at(d));
            if (it == a.end() || *it != point[d]) raise<config_error>("Grid: ", point[d], " is not on axis ", d);
            idx[d] = static_cast<std::size_t>(it - a.begin());
        }
        set(idx, v);
    }

    /// The value (and gradient) at `point`.
    /// @throws config_error for a point of the wrong dimension or outside the grid without
    /// extrapolation, or when a grid value the query needs is unknown
    GridValue query(const std::vector<double>& point, const QueryOptions& o = {}) const {
        if (point.size() != dims())
            raise<config_error>("grid query: ", point.size(), " coordinates for a ", dims(), "-dimensional grid");
        for (std::size_t d = 0; d < dims(); ++d) {
            const auto& a = m_axes[d];
            if (!std::isfinite(point[d])) raise<config_error>("grid query: coordinate ", d, " is not finite");
            // step mode reads below the lowest level as that level (the next level up)
            const bool below = point[d] < a.front() && o.mode != Interpolation::step;
            if (!o.extrapolate && (below || point[d] > a.back()))
                raise<config_error>("grid query: ", point[d], " on axis ", d, " is outside the table's range [",
                                    a.front(), ", ", a.back(), "] (allow extrapolation to extrapolate)");
        }
        if (o.mode == Interpolation::step) return step(point, o);
        // the enclosing (or, outside the grid, the edge) cell and the position in it
        std::vector<std::size_t> lo(dims());
        std::vector<double> t(dims()), width(dims());
        for (std::size_t d = 0; d < dims(); ++d) {
            const auto& a = m_axes[d];
            if (a.size() == 1) {  // a degenerate axis: constant along it
                lo[d] = 0;
                t[d] = 0;
                width[d] = 0;
                continue;
            }
            auto it = std::upper_bound(a.begin(), a.end(), point[d]);
            std::size_t i = it == a.begin() ? 0 : static_cast<std::size_t>(it - a.begin()) - 1;
            i = std::min(i, a.size() - 2);
            lo[d] = i;
            width[d] = a[i + 1] - a[i];
            t[d] = (point[d] - a[i]) / width[d];
        }
        GridValue r = o.mode == Interpolation::plane ? plane(point, lo, width) : multilinear(lo, t, width);
        // a grid point reads back its own value (the plane through a cell's lower corners
        // misses its upper corner)
        std::vector<std::size_t> exact(dims());
        for (std::size_t d = 0; d < dims(); ++d) {
            const auto& a = m_axes[d];
            const auto it = std::lower_bound(a.begin(), a.end(), point[d]);
            if (it == a.end() || *it != point[d]) return r;
            exact[d] = static_cast<std::size_t>(it - a.begin());
        }
        r.value = need(exact);
        return r;
    }

private:
    /// The plane through the cell's base corner and its axis neighbours in the cell. The base is
    /// the lower corner, except along an axis where the point lies on the grid's top edge: there
    /// it is the upper one, so that the reading on a grid line is the same from either side.
    GridValue plane(const std::vector<double>& point, const std::vector<std::size_t>& lo,
                    const std::vector<double>& width) const {
        GridValue r;
        r.gradient.assign(dims(), 0.0);
        auto base = lo;
        for (std::size_t d = 0; d < dims(); ++d)
            if (width[d] != 0 && point[d] == m_axes[d].back()) ++base[d];
        const double f0 = need(base);
        r.value = f0;
        for (std::size_t d = 0; d < dims(); ++d) {
            if (width[d] == 0) continue;
            auto a = base, b = base;
            a[d] = lo[d];
            b[d] = lo[d] + 1;
            const double slope = (need(b) - need(a)) / width[d];
            r.value += slope * (point[d] - m_axes[d][base[d]]);
            r.gradient[d] = slope;
        }
        return r;
    }
    GridValue multilinear(const std::vector<std::size_t>& lo, const std::vector<double>& t,
                          const std::vector<double>& width) const {
        GridValue r;
        r.gradient.assign(dims(), 0.0);
        // sum over the 2^D corners (axes of one point contribute one corner)
        const std::size_t corners = std::size_t{1} << dims();
        for (std::size_t mask = 0; mask < corners; ++mask) {
            bool skip = false;
            auto idx = lo;
            double w = 1;
            for (std::size_t d = 0; d < dims(); ++d) {
                const bool hi = (mask >> d) & 1U;
                if (width[d] == 0 && hi) skip = true;
                if (hi) ++idx[d];
                if (width[d] != 0) w *= hi ? t[d] : 1 - t[d];
            }
            if (skip) continue;
            const double f = need(idx);
            r.value += w * f;
            for (std::size_t d = 0; d < dims(); ++d) {
                if (width[d] == 0) continue;
                const bool hi = (mask >> d) & 1U;
                double g = (hi ? 1.0 : -1.0) / width[d];
                for (std::size_t e = 0; e < dims(); ++e)
                    if (e != d && width[e] != 0) g *= ((mask >> e) & 1U) ? t[e] : 1 - t[e];
                r.gradient[d] += g * f;
            }
        }
        return r;
    }

    std::size_t flat(const std::vector<std::size_t>& idx) const {
        if (idx.size() != dims()) raise<config_error>("Grid: ", idx.size(), " indices for ", dims(), " axes");
        std::size_t f = 0;
        for (std::size_t d = 0; d < dims(); ++d) {
            if (idx[d] >= m_axes[d].size()) raise<config_error>("Grid: index ", idx[d], " beyond axis ", d);
            f = f * m_axes[d].size() + idx[d];
        }
        return f;
    }
    /// A grid value that must be known.
    double need(const std::vector<std::size_t>& idx) const {
        const double v = at(idx);
        if (std::isnan(v)) {
            std::string p;
            for (std::size_t d = 0; d < dims(); ++d) {
                char buf[32];
                std::snprintf(buf, sizeof buf, "%g", m_axes[d][idx[d]]);
                if (d) p += ',';
                p += buf;
            }
            raise<config_error>("grid query: no value at grid point (", p, ") that the query needs");
        }
        return v;
    }
    GridValue step(const std::vector<double>& point, const QueryOptions& o) const {
        if (!(o.chunk > 0)) raise<config_error>("grid query: the step chunk must be positive, got ", o.chunk);
        GridValue r;
        r.gradient.assign(dims(), 0.0);
        std::vector<std::size_t> idx(dims());
        std::vector<double> beyond(dims(), 0.0);  // how far above the top level (extrapolation)
        for (std::size_t d = 0; d < dims(); ++d) {
            const auto& a = m_axes[d];
            const double up = std::ceil(point[d] / o.chunk - 1e-9) * o.chunk;
            // the grid level at or above the rounded-up coordinate
            const auto it = std::lower_bound(a.begin(), a.end(), up - 1e-9);
            if (it == a.end()) {
                idx[d] = a.size() - 1;
                beyond[d] = up - a.back();
            } else {
                idx[d] = static_cast<std::size_t>(it - a.begin());
            }
        }
        r.value = need(idx);
        // above the top level (only reached with extrapolation): continue the top cell's slope
        for (std::size_t d = 0; d < dims(); ++d) {
            if (beyond[d] <= 0 || m_axes[d].size() < 2) continue;
            auto below = idx;
            --below[d];
            const auto& a = m_axes[d];
            r.value += (need(idx) - need(below)) / (a[idx[d]] - a[below[d]]) * beyond[d];
        }
        return r;
    }

    std::vector<std::vector<double>> m_axes;
    std::vector<double> m_values;
};

}  // namespace dnncost::cost
