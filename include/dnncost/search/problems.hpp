#pragma once
/// @file problems.hpp
/// Standard multi-objective test problems: ZDT1, 2, 3, 4, 6 (Zitzler, Deb, Thiele 2000),
/// DTLZ1 and DTLZ2 (Deb, Thiele, Laumanns, Zitzler 2002), and the constrained CONSTR and SRN
/// (Deb et al. 2002). Each has `reference_front(points)`: a well-spread sample of its analytic
/// Pareto front, flat row-major, for IGD.
///  - Two-objective fronts: the front curve is sampled densely (200,001 values of f1), reduced to
///    its non-dominated part (this is what makes ZDT3's front disconnected), and `points` samples
///    are taken at equal arc-length steps along it; the gaps between ZDT3's pieces add no length.
///  - Three-objective fronts: a Fibonacci lattice, which is uniform in area: point i has
///    u = (i + 1/2) / points and v = frac(i * golden ratio). DTLZ2 (unit sphere octant) uses
///    height f3 = u and azimuth v * pi/2; DTLZ1 (simplex f1 + f2 + f3 = 1/2) maps (u, v) with the
///    area-preserving a = sqrt(u): f = 0.5 * (1 - a, a (1 - v), a v).
#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <functional>
#include <numbers>
#include <vector>

#include <dnncost/core/error.hpp>
#include <dnncost/search/pareto.hpp>
#include <dnncost/search/problem.hpp>

namespace dnncost::search::problems {

namespace detail {
/// g(x) = 1 + 9 * mean(x_2..x_n) of ZDT1, ZDT2 and ZDT3.
inline double zdt_g(const std::vector<double>& x) {
    double s = 0.0;
    for (std::size_t i = 1; i < x.size(); ++i) s += x[i];
    return 1.0 + 9.0 * s / static_cast<double>(x.size() - 1);
}

/// Equal arc-length sample of the non-dominated part of the curve (f1, h(f1)), f1 in [a, b].
inline std::vector<double> curve_front(const std::function<double(double)>& h, double a, double b, std::size_t points) {
    if (points < 2) raise<config_error>("reference_front: need at least 2 points, got ", points);
    constexpr std::size_t dense = 200001;
    std::vector<double> v(2 * dense);
    const double step = (b - a) / static_cast<double>(dense - 1);
    for (std::size_t i = 0; i < dense; ++i) {
        v[2 * i] = a + step * static_cast<double>(i);
        v[2 * i + 1] = h(v[2 * i]);
    }
    const auto idx = pareto_front_indices(v, 2);  // increasing index = increasing f1
    std::vector<double> length(idx.size(), 0.0);
    for (std::size_t j = 1; j < idx.size(); ++j) {
        const bool connected = idx[j] == idx[j - 1] + 1;
        const double dx = v[2 * idx[j]] - v[2 * idx[j - 1]], dy = v[2 * idx[j] + 1] - v[2 * idx[j - 1] + 1];
        length[j] = length[j - 1] + (connected ? std::hypot(dx, dy) : 0.0);
    }
    std::vector<double> out;
    out.reserve(2 * points);
    std::size_t j = 0;
    for (std::size_t k = 0; k < points; ++k) {
        const double target = length.back() * static_cast<double>(k) / static_cast<double>(points - 1);
        while (j + 1 < idx.size() && length[j + 1] <= target) ++j;
        // nearest dense sample at or after the target length
        std::size_t pick = j;
        if (length[pick] < target && pick + 1 < idx.size()) ++pick;
        out.push_back(v[2 * idx[pick]]);
        out.push_back(v[2 * idx[pick] + 1]);
    }
    return out;
}

template <class F>
std::vector<double> lattice_front(std::size_t points, F map) {
    if (points < 2) raise<config_error>("reference_front: need at least 2 points, got ", points);
    const double golden = (1.0 + std::sqrt(5.0)) / 2.0;
    std::vector<double> out;
    out.reserve(3 * points);
    for (std::size_t i = 0; i < points; ++i) {
        const double u = (static_cast<double>(i) + 0.5) / static_cast<double>(points);
        const double t = static_cast<double>(i) / golden;
        const auto p = map(u, t - std::floor(t));
        out.insert(out.end(), p.begin(), p.end());
    }
    return out;
}

inline std::vector<Bounds> unit_bounds(std::size_t n) { return std::vector<Bounds>(n, Bounds{0.0, 1.0}); }

inline void check_genes(std::size_t n, std::size_t minimum, const char* who) {
    if (n < minimum) raise<config_error>(who, ": needs at least ", minimum, " variables, got ", n);
}

}  // namespace detail

/// Common shape of the ZDT problems: f1 = f1(x0), f2 = g(x) * h(f1, g).
struct Zdt1 {
    using Genome = std::vector<double>;
    std::size_t variables = 30;
    std::size_t num_objectives() const { return 2; }
    std::vector<Bounds> bounds() const {
        detail::check_genes(variables, 2, "Zdt1");
        return detail::unit_bounds(variables);
    }
    std::array<double, 2> evaluate(const Genome& x) const {
        const double g = detail::zdt_g(x);
        return {x[0], g * (1.0 - std::sqrt(x[0] / g))};
    }
    static std::vector<double> reference_front(std::size_t points = 1000) {
        return detail::curve_front([](double f) { return 1.0 - std::sqrt(f); }, 0.0, 1.0, points);
    }
};

struct Zdt2 {
    using Genome = std::vector<double>;
    std::size_t variables = 30;
    std::size_t num_objectives() const { return 2; }
    std::vector<Bounds> bounds() const {
        detail::check_genes(variables, 2, "Zdt2");
        return detail::unit_bounds(variables);
    }
    std::array<double, 2> evaluate(const Genome& x) const {
        const double g = detail::zdt_g(x);
        const double r = x[0] / g;
        return {x[0], g * (1.0 - r * r)};
    }
    static std::vector<double> reference_front(std::size_t points = 1000) {
        return detail::curve_front([](double f) { return 1.0 - f * f; }, 0.0, 1.0, points);
    }
};

struct Zdt3 {
    using Genome = std::vector<double>;
    std::size_t variables = 30;
    std::size_t num_objectives() const { return 2; }
    std::vector<Bounds> bounds() const {
        detail::check_genes(variables, 2, "Zdt3");
        return detail::unit_bounds(variables);
    }
    std::array<double, 2> evaluate(const Genome& x) const {
        const double g = detail::zdt_g(x);
        const double r = x[0] / g;
        return {x[0], g * (1.0 - std::sqrt(r) - r * std::sin(10.0 * std::numbers::pi * x[0]))};
    }
    static std::vector<double> reference_front(std::size_t points = 1000) {
        return detail::curve_front(
            [](double f) { return 1.0 - std::sqrt(f) - f * std::sin(10.0 * std::numbers::pi * f); }, 0.0, 1.0, points);
    }
};

struct Zdt4 {
    using Genome = std::vector<double>;
    std::size_t variables = 10;
    std::size_t num_objectives() const { return 2; }
    std::vector<Bounds> bounds() const {
        detail::check_genes(variables, 2, "Zdt4");
        std::vector<Bounds> b(variables, Bounds{-5.0, 5.0});
        b[0] = {0.0, 1.0};
        return b;
    }
    std::array<double, 2> evaluate(const Genome& x) const {
        double s = 0.0;
        for (std::size_t i = 1; i < x.size(); ++i) s += x[i] * x[i] - 10.0 * std::cos(4.0 * std::numbers::pi * x[i]);
        const double g = 1.0 + 10.0 * static_cast<double>(x.size() - 1) + s;
        return {x[0], g * (1.0 - std::sqrt(x[0] / g))};
    }
    static std::vector<double> reference_front(std::size_t points = 1000) { return Zdt1::reference_front(points); }
};

struct Zdt6 {
    using Genome = std::vector<double>;
    std::size_t variables = 10;
    std::size_t num_objectives() const { return 2; }
    std::vector<Bounds> bounds() const {
        detail::check_genes(variables, 2, "Zdt6");
        return detail::unit_bounds(variables);
    }
    static double first(double x0) {
        return 1.0 - std::exp(-4.0 * x0) * std::pow(std::sin(6.0 * std::numbers::pi * x0), 6);
    }
    std::array<double, 2> evaluate(const Genome& x) const {
        double s = 0.0;
        for (std::size_t i = 1; i < x.size(); ++i) s += x[i];
        const double g = 1.0 + 9.0 * std::pow(s / static_cast<double>(x.size() - 1), 0.25);
        const double f1 = first(x[0]);
        const double r = f1 / g;
        return {f1, g * (1.0 - r * r)};
    }
    static std::vector<double> reference_front(std::size_t points = 1000) {
        // f1 reaches its minimum 1 - exp(-4 x0) for the first zero of sin^6(6 pi x0) away from 0,
        // i.e. the smallest f1 on the front is first(x0*) with x0* the minimiser in [0, 1/6].
        double lo = 1.0;
        for (int i = 0; i <= 200000; ++i) lo = std::min(lo, first(static_cast<double>(i) / 200000.0));
        return detail::curve_front([](double f) { return 1.0 - f * f; }, lo, 1.0, points);
    }
};

/// DTLZ1 with `objectives` objectives and k = 5 distance variables (variables = M + 4).
struct Dtlz1 {
    using Genome = std::vector<double>;
    std::size_t objectives = 3;
    std::size_t variables = 7;
    std::size_t num_objectives() const { return objectives; }
    std::vector<Bounds> bounds() const {
        if (objectives < 2) raise<config_error>("Dtlz1: needs at least 2 objectives, got ", objectives);
        detail::check_genes(variables, objectives, "Dtlz1");
        return detail::unit_bounds(variables);
    }
    std::vector<double> evaluate(const Genome& x) const {
        const std::size_t m = objectives;
        double g = 0.0;
        for (std::size_t i = m - 1; i < x.size(); ++i) {
            const double d = x[i] - 0.5;
            g += d * d - std::cos(20.0 * std::numbers::pi * d);
        }
        g = 100.0 * (static_cast<double>(x.size() - m + 1) + g);
        std::vector<double> f(m, 0.5 * (1.0 + g));
        for (std::size_t j = 0; j < m; ++j) {
            for (std::size_t i = 0; i + 1 + j < m; ++i) f[j] *= x[i];
            if (j > 0) f[j] *= 1.0 - x[m - 1 - j];
        }
        return f;
    }
    /// Three objectives only (the triangle f1 + f2 + f3 = 1/2).
    std::vector<double> reference_front(std::size_t points = 1000) const {
        if (objectives != 3) raise<not_implemented>("Dtlz1::reference_front: only for 3 objectives");
        return detail::lattice_front(points, [](double u, double v) {
            const double a = std::sqrt(u);
            return std::array<double, 3>{0.5 * (1.0 - a), 0.5 * a * (1.0 - v), 0.5 * a * v};
        });
    }
};

/// DTLZ2 with `objectives` objectives and k = 10 distance variables (variables = M + 9).
struct Dtlz2 {
    using Genome = std::vector<double>;
    std::size_t objectives = 3;
    std::size_t variables = 12;
    std::size_t num_objectives() const { return objectives; }
    std::vector<Bounds> bounds() const {
        if (objectives < 2) raise<config_error>("Dtlz2: needs at least 2 objectives, got ", objectives);
        detail::check_genes(variables, objectives, "Dtlz2");
        return detail::unit_bounds(variables);
    }
    std::vector<double> evaluate(const Genome& x) const {
        const std::size_t m = objectives;
        double g = 0.0;
        for (std::size_t i = m - 1; i < x.size(); ++i) g += (x[i] - 0.5) * (x[i] - 0.5);
        std::vector<double> f(m, 1.0 + g);
        const double half_pi = std::numbers::pi / 2.0;
        for (std::size_t j = 0; j < m; ++j) {
            for (std::size_t i = 0; i + 1 + j < m; ++i) f[j] *= std::cos(x[i] * half_pi);
            if (j > 0) f[j] *= std::sin(x[m - 1 - j] * half_pi);
        }
        return f;
    }
    /// Two objectives (quarter circle) or three (sphere octant).
    std::vector<double> reference_front(std::size_t points = 1000) const {
        if (objectives == 2)
            return detail::curve_front([](double f) { return std::sqrt(std::max(0.0, 1.0 - f * f)); }, 0.0, 1.0,
                                       points);
        if (objectives != 3) raise<not_implemented>("Dtlz2::reference_front: only for 2 or 3 objectives");
        return detail::lattice_front(points, [](double u, double v) {
            const double z = u, r = std::sqrt(1.0 - z * z), phi = v * std::numbers::pi / 2.0;
            return std::array<double, 3>{r * std::cos(phi), r * std::sin(phi), z};
        });
    }
};

/// CONSTR: min x1 and (1 + x2) / x1 subject to x2 + 9 x1 >= 6 and 9 x1 - x2 >= 1.
/// Front: f2 = 7 / f1 - 9 for f1 in [7/18, 2/3], then f2 = 1 / f1 for f1 in [2/3, 1].
struct Constr {
    using Genome = std::vector<double>;
    std::size_t num_objectives() const { return 2; }
    std::size_t num_constraints() const { return 2; }
    std::vector<Bounds> bounds() const { return {{0.1, 1.0}, {0.0, 5.0}}; }
    std::array<double, 2> evaluate(const Genome& x) const { return {x[0], (1.0 + x[1]) / x[0]}; }
    std::array<double, 2> constraints(const Genome& x) const {
        return {6.0 - (x[1] + 9.0 * x[0]), 1.0 - (9.0 * x[0] - x[1])};
    }
    static double front_f2(double f1) { return f1 < 2.0 / 3.0 ? 7.0 / f1 - 9.0 : 1.0 / f1; }
};

/// SRN: min 2 + (x1 - 2)^2 + (x2 - 1)^2 and 9 x1 - (x2 - 1)^2 subject to x1^2 + x2^2 <= 225
/// and x1 - 3 x2 + 10 <= 0. Pareto set: x1 = -2.5, x2 in [2.5, 14.79].
struct Srn {
    using Genome = std::vector<double>;
    std::size_t num_objectives() const { return 2; }
    std::size_t num_constraints() const { return 2; }
    std::vector<Bounds> bounds() const { return {{-20.0, 20.0}, {-20.0, 20.0}}; }
    std::array<double, 2> evaluate(const Genome& x) const {
        const double a = x[0] - 2.0, b = x[1] - 1.0;
        return {2.0 + a * a + b * b, 9.0 * x[0] - b * b};
    }
    std::array<double, 2> constraints(const Genome& x) const {
        return {x[0] * x[0] + x[1] * x[1] - 225.0, x[0] - 3.0 * x[1] + 10.0};
    }
};

}  // namespace dnncost::search::problems
