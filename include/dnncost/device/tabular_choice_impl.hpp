#pragma once
/// @file tabular_choice_impl.hpp
/// The definitions of tabular_choice.hpp: compiled once into dnncost::compiled in compiled mode
/// (core/config.hpp), included by tabular_choice.hpp in header-only mode.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <numeric>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <dnncost/core/config.hpp>
#include <dnncost/core/rng.hpp>
#include <dnncost/device/mlp_regressor.hpp>
#include <dnncost/device/roofline_regressor.hpp>
#include <dnncost/device/tabular_choice.hpp>
#include <dnncost/device/tabular_regressor.hpp>
#include <dnncost/io/serialize.hpp>
#include <dnncost/train/metrics.hpp>
#if defined(DNNCOST_HAS_XGBOOST)
#include <dnncost/device/gbt_regressor.hpp>
#endif

namespace dnncost::device {

DNNCOST_FUNC std::vector<TabularCandidate> default_tabular_candidates(std::uint64_t seed) {
    std::vector<TabularCandidate> c;
    c.push_back({"mlp", [seed] {
                     MlpRegressorOptions o;
                     o.seed = seed;
                     return std::make_unique<MlpRegressor>(o);
                 }});
#if defined(DNNCOST_HAS_XGBOOST)
    c.push_back({"gbt", [seed] {
                     GbtRegressorOptions o;
                     o.seed = seed;
                     return std::make_unique<GbtRegressor>(o);
                 }});
    c.push_back({"gbt-linear", [seed] {
                     GbtRegressorOptions o;
                     o.seed = seed;
                     o.linear_base = true;
                     // the kernel features of work and traffic (device/kernel_features.hpp)
                     o.linear_features = {"log_flops", "log_input_bytes", "log_output_bytes", "log_weight_bytes"};
                     return std::make_unique<GbtRegressor>(o);
                 }});
#endif
    return c;
}

DNNCOST_FUNC std::vector<TabularCandidate> roofline_candidates(std::vector<TabularCandidate> inner,
                                                               const RooflineRegressorOptions& options) {
    std::vector<TabularCandidate> c;
    for (auto& i : inner)
        c.push_back({"roofline-" + i.name, [make = std::move(i.make), options]() -> std::unique_ptr<TabularRegressor> {
                         auto correction = make();
                         if (!correction) return nullptr;
                         return std::make_unique<RooflineRegressor>(std::move(correction), options);
                     }});
    return c;
}

DNNCOST_FUNC HeldOutSplit held_out_split(Index n, double fraction, std::uint64_t seed,
                                         std::span<const std::string> groups) {
    if (!(fraction > 0 && fraction < 1))
        raise<config_error>("held_out_split: held-out fraction ", fraction, " outside (0, 1)");
    if (!groups.empty() && static_cast<Index>(groups.size()) != n)
        raise<config_error>("held_out_split: ", groups.size(), " group names for ", n, " rows");
    const Index n_held = std::max<Index>(1, static_cast<Index>(std::lround(fraction * static_cast<double>(n))));
    if (n_held >= n) raise<shape_error>("held_out_split: ", n, " rows are too few to hold any out");
    Rng rng(seed);
    HeldOutSplit split;
    if (!groups.empty()) {
        // the rows of each group, groups in order of their first row
        std::vector<std::vector<Index>> members;
        std::map<std::string_view, std::size_t> index_of;
        for (Index i = 0; i < n; ++i) {
            const std::string_view g = groups[static_cast<std::size_t>(i)];
            std::size_t m = members.size();
            if (g.empty())
                members.emplace_back();
            else if (const auto [it, added] = index_of.emplace(g, m); !added)
                m = it->second;
            else
                members.emplace_back();
            members[m].push_back(i);
        }
        std::vector<std::size_t> order(members.size());
        std::iota(order.begin(), order.end(), std::size_t{0});
        rng.shuffle(order.begin(), order.end());
        for (const auto m : order) {
            auto& side = static_cast<Index>(split.held.size()) < n_held ? split.held : split.train;
            side.insert(side.end(), members[m].begin(), members[m].end());
        }
        if (!split.train.empty() && static_cast<Index>(split.held.size()) <= 2 * n_held) return split;
        split = {};
        rng = Rng(seed);
    }
    std::vector<Index> order(static_cast<std::size_t>(n));
    std::iota(order.begin(), order.end(), Index{0});
    rng.shuffle(order.begin(), order.end());
    split.held.assign(order.begin(), order.begin() + n_held);
    split.train.assign(order.begin() + n_held, order.end());
    return split;
}

DNNCOST_FUNC TabularChoice choose_tabular_regressor(const Mat<double>& x, std::span<const double> latency_ms,
                                                    const std::vector<std::string>& feature_names,
                                                    const std::vector<TabularCandidate>& candidates,
                                                    const TabularChoiceOptions& options,
                                                    std::span<const std::string> groups) {
    if (candidates.empty()) raise<config_error>("choose_tabular_regressor: no candidates");
    if (!(options.held_out_fraction > 0 && options.held_out_fraction < 1))
        raise<config_error>("choose_tabular_regressor: held-out fraction ", options.held_out_fraction,
                            " outside (0, 1)");
    if (!(options.beyond_fraction >= 0 && options.beyond_fraction < 1))
        raise<config_error>("choose_tabular_regressor: beyond fraction ", options.beyond_fraction, " outside [0, 1)");
    if (static_cast<Index>(latency_ms.size()) != x.rows())
        raise<shape_error>("choose_tabular_regressor: ", x.rows(), " feature rows but ", latency_ms.size(),
                           " latencies");
    // checked here so that errors name rows of the caller's matrix, not of a split
    for (Index i = 0; i < x.rows(); ++i) {
        const double y = latency_ms[static_cast<std::size_t>(i)];
        if (!(std::isfinite(y) && y > 0))
            raise<config_error>("choose_tabular_regressor: latency of row ", i, " is ", y,
                                " ms; it must be finite and positive");
        for (Index j = 0; j < x.cols(); ++j)
            if (!std::isfinite(x(i, j)))
                raise<config_error>("choose_tabular_regressor: feature ", j, " of row ", i, " is ", x(i, j));
    }
    const Index n = x.rows();
    const auto split = held_out_split(n, options.held_out_fraction, options.seed, groups);
    auto take = [&](const std::vector<Index>& rows, std::size_t from, std::size_t to, Mat<double>& xs,
                    std::vector<double>& ys) {
        xs.resize(static_cast<Index>(to - from), x.cols());
        ys.clear();
        for (std::size_t k = from; k < to; ++k) {
            xs.row(static_cast<Index>(k - from)) = x.row(rows[k]);
            ys.push_back(latency_ms[static_cast<std::size_t>(rows[k])]);
        }
    };
    Mat<double> x_held, x_train;
    std::vector<double> y_held, y_train;
    take(split.held, 0, split.held.size(), x_held, y_held);
    take(split.train, 0, split.train.size(), x_train, y_train);

    // the beyond test: the rows of the largest size last, the held-out ones after the cut
    Mat<double> x_small, x_large;
    std::vector<double> y_small, y_large;
    const Index n_large = static_cast<Index>(std::lround(options.beyond_fraction * static_cast<double>(n)));
    for (const auto& f : options.size_features) {
        const auto col = std::find(feature_names.begin(), feature_names.end(), f);
        if (col == feature_names.end() || n_large < 3 || n - n_large < 10) continue;
        const auto j = static_cast<Index>(col - feature_names.begin());
        if (j >= x.cols()) continue;
        std::vector<Index> by_size(static_cast<std::size_t>(n));
        std::iota(by_size.begin(), by_size.end(), Index{0});
        std::stable_sort(by_size.begin(), by_size.end(), [&](Index a, Index b) { return x(a, j) < x(b, j); });
        // a size the rows all share tells nothing about growth
        if (!(x(by_size.front(), j) < x(by_size.back(), j))) continue;
        const auto cut = static_cast<std::size_t>(n - n_large);
        take(by_size, 0, cut, x_small, y_small);
        take(by_size, cut, by_size.size(), x_large, y_large);
        break;
    }
    const bool beyond = !y_large.empty();

    TabularChoice choice;
    choice.held_out_rows = static_cast<Index>(split.held.size());
    choice.beyond_rows = beyond ? n_large : 0;
    std::size_t best = 0;
    auto criterion = [](const TabularScore& s) { return s.beyond_mape ? (s.mape + *s.beyond_mape) / 2 : s.mape; };
    const auto make = [&](std::size_t c) {
        auto model = candidates[c].make();
        if (!model) raise<config_error>("choose_tabular_regressor: candidate '", candidates[c].name, "' made no model");
        return model;
    };
    for (std::size_t c = 0; c < candidates.size(); ++c) {
        auto model = make(c);
        model->fit(x_train, y_train, feature_names);
        const auto pred = model->predict(x_held);
        TabularScore score{candidates[c].name, train::mape(pred, y_held),
                           train::error_bound_accuracy(pred, y_held, 0.10), std::nullopt};
        if (beyond) {
            auto grown = make(c);
            grown->fit(x_small, y_small, feature_names);
            score.beyond_mape = train::mape(grown->predict(x_large), y_large);
        }
        choice.scores.push_back(std::move(score));
        if (c == 0 || criterion(choice.scores[c]) < criterion(choice.scores[best])) {
            best = c;
            choice.model = std::move(model);
        }
    }
    choice.chosen = candidates[best].name;
    if (options.refit_on_all) {
        choice.model = make(best);
        choice.model->fit(x, latency_ms, feature_names);
    }
    return choice;
}

DNNCOST_FUNC std::unique_ptr<TabularRegressor> load_tabular_regressor(std::string_view bytes,
                                                                      const std::string& source) {
    const auto kind = io::read_container(bytes, std::nullopt, source).kind;
    if (kind.starts_with("tabular-roofline-")) {
        const RooflineRegressor::Loader inner = [](std::string_view b, const std::string& s) {
            return load_tabular_regressor(b, s);
        };
        return std::make_unique<RooflineRegressor>(RooflineRegressor::load(bytes, source, inner));
    }
    if (kind == "tabular-mlp") return std::make_unique<MlpRegressor>(MlpRegressor::load(bytes, source));
    if (kind == "tabular-gbt" || kind == "tabular-gbt-linear") {
#if defined(DNNCOST_HAS_XGBOOST)
        return std::make_unique<GbtRegressor>(GbtRegressor::load(bytes, source));
#else
        raise<parse_error>(source,
                           ": a gradient-boosted-trees regressor needs a dnncost build with XGBoost "
                           "(target dnncost::xgboost, Debian package libxgboost-dev)");
#endif
    }
    raise<parse_error>(source, ": model kind '", kind,
                       "' is not a tabular regressor (tabular-mlp, tabular-gbt, "
                       "tabular-gbt-linear or tabular-roofline-<one of them>)");
}

}  // namespace dnncost::device
