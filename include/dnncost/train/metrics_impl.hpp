#pragma once
/// @file metrics_impl.hpp
/// The definitions of metrics.hpp: compiled once into dnncost::compiled in compiled mode
/// (core/config.hpp), included by metrics.hpp in header-only mode.
#include <dnncost/train/metrics.hpp>

DNNCOST_FUNC auto dnncost::train::detail::check_values(std::span<const double> predicted, std::span<const double> truth,
                                                       const char* fn) -> void {
    for (std::size_t i = 0; i < truth.size(); ++i) {
        if (!std::isfinite(predicted[i]))
            raise<config_error>(fn, ": prediction ", i, " is not finite (", predicted[i], ")");
        if (!std::isfinite(truth[i])) raise<config_error>(fn, ": true value ", i, " is not finite (", truth[i], ")");
        if (truth[i] == 0) raise<config_error>(fn, ": true value ", i, " is zero (relative errors are undefined)");
    }
}

DNNCOST_FUNC auto dnncost::train::mape(std::span<const double> predicted, std::span<const double> truth) -> double {
    detail::check_sizes(predicted, truth, "mape");
    if (truth.empty()) return detail::nan();
    double total = 0.0;
    for (std::size_t i = 0; i < truth.size(); ++i) total += std::abs(predicted[i] - truth[i]) / std::abs(truth[i]);
    return total / static_cast<double>(truth.size());
}

DNNCOST_FUNC auto dnncost::train::rmse(std::span<const double> predicted, std::span<const double> truth) -> double {
    detail::check_sizes(predicted, truth, "rmse");
    if (truth.empty()) return detail::nan();
    double squares = 0.0;
    for (std::size_t i = 0; i < truth.size(); ++i) squares += (predicted[i] - truth[i]) * (predicted[i] - truth[i]);
    return std::sqrt(squares / static_cast<double>(truth.size()));
}

DNNCOST_FUNC auto dnncost::train::error_bound_accuracy(std::span<const double> predicted, std::span<const double> truth,
                                                       double bound) -> double {
    detail::check_sizes(predicted, truth, "error_bound_accuracy");
    if (truth.empty()) return detail::nan();
    std::size_t hit = 0;
    // A tiny slack so that an error of exactly the bound, computed in floating point, counts.
    const double b = bound * (1.0 + 1e-12);
    for (std::size_t i = 0; i < truth.size(); ++i)
        if (std::abs(predicted[i] - truth[i]) <= b * std::abs(truth[i])) ++hit;
    return static_cast<double>(hit) / static_cast<double>(truth.size());
}

DNNCOST_FUNC auto dnncost::train::average_ranks(std::span<const double> x) -> std::vector<double> {
    std::vector<std::size_t> order(x.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return x[a] < x[b]; });
    std::vector<double> rank(x.size());
    for (std::size_t i = 0; i < order.size();) {
        std::size_t j = i;
        while (j + 1 < order.size() && x[order[j + 1]] == x[order[i]]) ++j;
        const double r = 0.5 * static_cast<double>(i + j) + 1.0;
        for (std::size_t k = i; k <= j; ++k) rank[order[k]] = r;
        i = j + 1;
    }
    return rank;
}

DNNCOST_FUNC auto dnncost::train::pearson(std::span<const double> a, std::span<const double> b) -> double {
    detail::check_sizes(a, b, "pearson");
    const std::size_t n = a.size();
    if (n < 2) return detail::nan();
    const double mean_a = std::accumulate(a.begin(), a.end(), 0.0) / static_cast<double>(n);
    const double mean_b = std::accumulate(b.begin(), b.end(), 0.0) / static_cast<double>(n);
    double cross = 0, squares_a = 0, squares_b = 0;  // sums of products about the means
    for (std::size_t i = 0; i < n; ++i) {
        cross += (a[i] - mean_a) * (b[i] - mean_b);
        squares_a += (a[i] - mean_a) * (a[i] - mean_a);
        squares_b += (b[i] - mean_b) * (b[i] - mean_b);
    }
    if (squares_a <= 0 || squares_b <= 0) return detail::nan();
    return cross / std::sqrt(squares_a * squares_b);
}

DNNCOST_FUNC auto dnncost::train::kendall(std::span<const double> x, std::span<const double> y) -> double {
    detail::check_sizes(x, y, "kendall");
    const std::size_t n = x.size();
    if (n < 2) return detail::nan();
    std::vector<std::size_t> order(n);
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::sort(order.begin(), order.end(),
              [&](std::size_t a, std::size_t b) { return x[a] < x[b] || (x[a] == x[b] && y[a] < y[b]); });
    auto pairs = [](std::uint64_t k) { return k * (k - 1) / 2; };
    const std::uint64_t n0 = pairs(n);
    // Ties in x (n1) and joint ties in x and y (n3), from runs of the (x, y)-sorted order.
    std::uint64_t n1 = 0, n3 = 0;
    for (std::size_t i = 0; i < n;) {
        std::size_t j = i;
        while (j + 1 < n && x[order[j + 1]] == x[order[i]]) ++j;
        n1 += pairs(j - i + 1);
        for (std::size_t a = i; a <= j;) {
            std::size_t b = a;
            while (b + 1 <= j && y[order[b + 1]] == y[order[a]]) ++b;
            n3 += pairs(b - a + 1);
            a = b + 1;
        }
        i = j + 1;
    }
    // Sort the y sequence by merge sort, counting exchanges = discordant pairs.
    std::vector<double> ys(n), buf(n);
    for (std::size_t i = 0; i < n; ++i) ys[i] = y[order[i]];
    std::uint64_t swaps = 0;
    for (std::size_t width = 1; width < n; width *= 2) {
        for (std::size_t lo = 0; lo < n; lo += 2 * width) {
            const std::size_t mid = std::min(lo + width, n), hi = std::min(lo + 2 * width, n);
            std::size_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi) {
                if (ys[j] < ys[i]) {
                    swaps += mid - i;
                    buf[k++] = ys[j++];
                } else {
                    buf[k++] = ys[i++];
                }
            }
            while (i < mid) buf[k++] = ys[i++];
            while (j < hi) buf[k++] = ys[j++];
        }
        std::swap(ys, buf);
    }
    std::uint64_t n2 = 0;
    for (std::size_t i = 0; i < n;) {
        std::size_t j = i;
        while (j + 1 < n && ys[j + 1] == ys[i]) ++j;
        n2 += pairs(j - i + 1);
        i = j + 1;
    }
    const double denom = std::sqrt(static_cast<double>(n0 - n1) * static_cast<double>(n0 - n2));
    if (denom == 0) return detail::nan();
    // concordant - discordant = n0 - n1 - n2 + n3 - 2 * swaps
    const double numer = static_cast<double>(n0) - static_cast<double>(n1) - static_cast<double>(n2) +
                         static_cast<double>(n3) - 2.0 * static_cast<double>(swaps);
    return numer / denom;
}

DNNCOST_FUNC auto dnncost::train::compute_metrics(std::span<const double> predicted, std::span<const double> truth)
    -> Metrics {
    detail::check_sizes(predicted, truth, "compute_metrics");
    detail::check_values(predicted, truth, "compute_metrics");
    Metrics m;
    m.n = truth.size();
    m.mape = train::mape(predicted, truth);
    m.rmse = train::rmse(predicted, truth);
    m.within_1 = error_bound_accuracy(predicted, truth, 0.01);
    m.within_5 = error_bound_accuracy(predicted, truth, 0.05);
    m.within_10 = error_bound_accuracy(predicted, truth, 0.10);
    m.spearman = train::spearman(predicted, truth);
    m.kendall = train::kendall(predicted, truth);
    return m;
}

DNNCOST_FUNC auto dnncost::train::evaluate(std::span<const double> predicted, std::span<const double> truth,
                                           double fraction_of_median) -> AccuracyReport {
    detail::check_sizes(predicted, truth, "evaluate");
    AccuracyReport e;
    e.all = compute_metrics(predicted, truth);
    e.degenerate_threshold = fraction_of_median * median(truth);
    std::vector<double> p, t;
    p.reserve(truth.size());
    t.reserve(truth.size());
    for (std::size_t i = 0; i < truth.size(); ++i) {
        if (truth[i] < e.degenerate_threshold) {
            ++e.n_degenerate;
            continue;
        }
        p.push_back(predicted[i]);
        t.push_back(truth[i]);
    }
    e.non_degenerate = compute_metrics(p, t);
    return e;
}

DNNCOST_FUNC auto dnncost::train::coverage(std::span<const double> mean, std::span<const double> sigma,
                                           std::span<const double> truth, double k) -> double {
    detail::check_sizes(mean, truth, "coverage");
    detail::check_sizes(sigma, truth, "coverage");
    if (truth.empty()) return detail::nan();
    std::size_t in = 0;
    for (std::size_t i = 0; i < truth.size(); ++i)
        if (std::abs(truth[i] - mean[i]) <= k * sigma[i]) ++in;
    return static_cast<double>(in) / static_cast<double>(truth.size());
}
