#pragma once
/// @file model_selection_impl.hpp
/// The definitions of model_selection.hpp: compiled once into dnncost::compiled in compiled mode
/// (core/config.hpp), included by model_selection.hpp in header-only mode.
#include <dnncost/estimators/model_selection.hpp>

DNNCOST_FUNC auto dnncost::estimators::selection_improvement(const std::vector<double>& untrained,
                                                             const std::vector<std::vector<double>>& epochs,
                                                             const std::vector<double>& y, std::uint64_t seed,
                                                             int resamples) -> Improvement {
    Improvement result;
    const std::size_t n = y.size();
    if (epochs.empty() || n < 10) return result;
    Rng rng(seed ^ 0x6f6f6262ULL);
    std::vector<std::size_t> count(n);
    std::vector<double> predicted, truth;
    double sum = 0, sum_squares = 0;
    int used = 0;
    for (int k = 0; k < resamples; ++k) {
        std::fill(count.begin(), count.end(), 0);
        for (std::size_t i = 0; i < n; ++i) ++count[static_cast<std::size_t>(rng.below(n))];
        // predictions and labels of the in-bag items (each as often as drawn) or the out-of-bag ones
        const auto subset = [&](const std::vector<double>& p, bool in_bag) {
            predicted.clear();
            truth.clear();
            for (std::size_t i = 0; i < n; ++i)
                for (std::size_t c = 0; c < (in_bag ? count[i] : (count[i] == 0 ? 1u : 0u)); ++c) {
                    predicted.push_back(p[i]);
                    truth.push_back(y[i]);
                }
        };
        std::size_t best = 0;
        double best_score = std::numeric_limits<double>::infinity();
        for (std::size_t e = 0; e < epochs.size(); ++e) {
            subset(epochs[e], true);
            const double score = validation_score(predicted, truth);
            if (score < best_score) {
                best_score = score;
                best = e;
            }
        }
        subset(untrained, false);
        if (predicted.size() < 5) continue;
        const double untrained_score = validation_score(predicted, truth);
        subset(epochs[best], false);
        const double gain = untrained_score - validation_score(predicted, truth);
        sum += gain;
        sum_squares += gain * gain;
        ++used;
    }
    if (used == 0) return result;
    result.mean = sum / used;
    result.se = std::sqrt(std::max(0.0, sum_squares / used - result.mean * result.mean));
    return result;
}

DNNCOST_FUNC auto dnncost::estimators::unpaid_share(std::span<const double> removed_cost,
                                                    std::span<const double> predicted, std::span<const double> y,
                                                    double degenerate) -> UnpaidShare {
    if (removed_cost.size() != y.size() || predicted.size() != y.size())
        raise<shape_error>("unpaid_share: ", removed_cost.size(), " removed costs and ", predicted.size(),
                           " predictions for ", y.size(), " labels");
    std::vector<double> charge, residual;  // per item: charge share and relative residual
    for (std::size_t i = 0; i < y.size(); ++i) {
        if (!(y[i] >= degenerate) || !(y[i] > 0)) continue;
        charge.push_back(removed_cost[i] / y[i]);
        residual.push_back((y[i] - predicted[i]) / y[i]);
    }
    UnpaidShare out;
    out.n = charge.size();
    if (charge.size() < 3) return out;
    const double n = static_cast<double>(charge.size());
    const double mean_charge = std::accumulate(charge.begin(), charge.end(), 0.0) / n;
    const double mean_residual = std::accumulate(residual.begin(), residual.end(), 0.0) / n;
    double charge_variation = 0, covariation = 0;  // sums of squares and cross-products about the means
    for (std::size_t i = 0; i < charge.size(); ++i) {
        charge_variation += (charge[i] - mean_charge) * (charge[i] - mean_charge);
        covariation += (charge[i] - mean_charge) * (residual[i] - mean_residual);
    }
    if (!(charge_variation > 1e-12 * std::max(1.0, mean_charge * mean_charge) * n) ||
        !std::isfinite(charge_variation) || !std::isfinite(covariation))
        return out;
    const double slope = covariation / charge_variation;
    double squared_errors = 0;
    for (std::size_t i = 0; i < charge.size(); ++i) {
        const double error = residual[i] - mean_residual - slope * (charge[i] - mean_charge);
        squared_errors += error * error;
    }
    out.share = -slope;
    out.se = std::sqrt(squared_errors / (n - 2.0) / charge_variation);
    out.verdict = std::isfinite(out.share) && std::isfinite(out.se);
    return out;
}
