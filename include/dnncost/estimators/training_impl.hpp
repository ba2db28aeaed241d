#pragma once
/// @file training_impl.hpp
/// The definitions of training.hpp: compiled once into dnncost::compiled in compiled mode
/// (core/config.hpp), included by training.hpp in header-only mode.
#include <dnncost/estimators/training.hpp>

DNNCOST_FUNC auto dnncost::estimators::predict_items(const Estimator& est, const train::Dataset& ds,
                                                     const std::vector<std::size_t>& items, UnknownOperators& unknown)
    -> std::vector<Prediction> {
    constexpr std::size_t chunk = 2048;
    std::vector<Prediction> out;
    out.reserve(items.size());
    for (std::size_t s = 0; s < items.size(); s += chunk) {
        const auto part = std::span(items).subspan(s, std::min(chunk, items.size() - s));
        const auto graphs = ds.graphs(part);
        unknown.add(est, graphs);
        try {
            const auto p = est.predict(graphs);
            out.insert(out.end(), p.begin(), p.end());
        } catch (const prediction_error& e) {
            detail::rethrow_naming(e, est, s, detail::item_name(ds, part[e.index()]));
        }
    }
    return out;
}

DNNCOST_FUNC auto dnncost::estimators::predict_target_items(const Estimator& est, const train::Dataset& ds,
                                                            const std::vector<std::size_t>& items,
                                                            UnknownOperators& unknown)
    -> std::vector<std::vector<double>> {
    constexpr std::size_t chunk = 2048;
    std::vector<std::vector<double>> out;
    for (std::size_t s = 0; s < items.size(); s += chunk) {
        const auto part = std::span(items).subspan(s, std::min(chunk, items.size() - s));
        const auto graphs = ds.graphs(part);
        unknown.add(est, graphs);
        try {
            const auto p = predict_targets(est, graphs);
            if (out.empty()) out.resize(p.size());
            for (std::size_t k = 0; k < p.size(); ++k) out[k].insert(out[k].end(), p[k].begin(), p[k].end());
        } catch (const prediction_error& e) {
            detail::rethrow_naming(e, est, s, detail::item_name(ds, part[e.index()]));
        }
    }
    return out;
}

DNNCOST_FUNC auto dnncost::estimators::balance_spaces(const train::Dataset& ds, const std::vector<std::size_t>& items,
                                                      const std::string& default_space, std::uint64_t seed)
    -> std::pair<std::vector<std::size_t>, std::size_t> {
    std::vector<std::string> group;
    for (auto i : items) group.push_back(space_of_key(ds.key(i), default_space));
    std::set<std::string> distinct(group.begin(), group.end());
    if (distinct.size() < 2 || static_cast<double>(distinct.size()) * min_space_share >= 1.0)
        return {items, distinct.size()};
    std::vector<std::size_t> up;
    for (auto k : train::upsample(group, min_space_share, seed)) up.push_back(items[k]);
    return {std::move(up), distinct.size()};
}

DNNCOST_FUNC auto dnncost::estimators::train_estimator(const train::Dataset& ds, const TrainRequest& r) -> TrainReport {
    if (r.targets.empty()) raise<config_error>("train_estimator: no target column");
    if (r.ensemble < 0 || r.ensemble > EnsembleEstimator::max_members)
        raise<config_error>("train_estimator: an ensemble of ", r.ensemble, " members");
    TrainReport out;
    out.split = train::make_split(ds.size(), r.split, r.proxy);
    const auto note = [&](const std::string& line) {
        if (r.on_note) r.on_note(line);
    };
    note(dnncost::concat("split (seed ", r.split.seed, ", ", train::to_string(r.split.sampling),
                                 "): ", out.split.train.size(), " train, ", out.split.validation.size(),
                                 " validation, ", out.split.test.size(), " test"));
    out.model = r.ensemble >= 2
                    ? make_ensemble(r.preset, r.ensemble, EnsembleEstimator::Resample::bootstrap, r.settings)
                    : make_estimator(r.preset, r.settings);
    if (r.targets.size() > 1 && (r.ensemble >= 2 || static_cast<int>(r.targets.size()) > max_targets(*out.model)))
        raise<config_error>("--target names ", r.targets.size(), " columns; preset '", r.preset,
                            r.ensemble >= 2 ? "' ensembles" : "'", " learn one (perfsage learns several)");
    auto [items, spaces] = balance_spaces(ds, out.split.train, r.default_space, r.split.seed);
    out.upsampled = spaces >= 2 && static_cast<double>(spaces) * min_space_share < 1.0;
    out.spaces = spaces;
    out.training_examples = items.size();
    if (out.upsampled)
        note(dnncost::concat(spaces, " search spaces in the training split; upsampled to ", items.size(),
                                     " training examples (each space >= ", 100 * min_space_share, " %)"));
    if (r.targets.size() > 1)
        out.fit =
            fit_targets(*out.model, ds.subset(items, r.targets), ds.subset(out.split.validation, r.targets), r.fit);
    else
        out.fit = out.model->fit(ds.subset(items, r.targets[0]), ds.subset(out.split.validation, r.targets[0]), r.fit);

    const auto& test = out.split.test;
    std::vector<std::vector<double>> means;
    std::vector<Prediction> first;
    if (r.targets.size() > 1) {
        means = predict_target_items(*out.model, ds, test, out.unknown);
    } else {
        first = predict_items(*out.model, ds, test, out.unknown);
        means.emplace_back();
        for (const auto& p : first) means.back().push_back(p.mean);
    }
    for (std::size_t k = 0; k < r.targets.size(); ++k)
        out.test.push_back({r.targets[k], train::evaluate(means[k], ds.values(test, r.targets[k]))});
    if (r.ensemble >= 2) out.coverage_2sigma = coverage_2sigma(first, ds.values(test, r.targets[0]));
    return out;
}

DNNCOST_FUNC auto dnncost::estimators::evaluate_estimator(const Estimator& est, const train::Dataset& ds,
                                                          const std::vector<std::string>& targets,
                                                          const std::string& model_source) -> EvalReport {
    if (targets.empty()) raise<config_error>("evaluate_estimator: no target column");
    EvalReport out;
    const auto items = ds.all_items();
    if (targets.size() > 1) {
        out.model_targets = target_names(est);
        if (out.model_targets.size() != targets.size())
            raise<config_error>("--target names ", targets.size(), " columns; ", model_source, " predicts ",
                                std::max<std::size_t>(1, out.model_targets.size()));
        const auto p = predict_target_items(est, ds, items, out.unknown);
        for (std::size_t k = 0; k < targets.size(); ++k)
            out.targets.push_back({targets[k], train::evaluate(p[k], ds.values(items, targets[k]))});
        return out;
    }
    const auto pred = predict_items(est, ds, items, out.unknown);
    const auto truth = ds.values(items, targets[0]);
    std::vector<double> mean;
    for (const auto& p : pred) mean.push_back(p.mean);
    out.targets.push_back({targets[0], train::evaluate(mean, truth)});
    if (std::any_of(pred.begin(), pred.end(), [](const Prediction& p) { return p.sigma > 0; }))
        out.coverage_2sigma = coverage_2sigma(pred, truth);
    return out;
}

DNNCOST_FUNC auto dnncost::estimators::predict_networks(const Estimator& est,
                                                        std::span<const graph::Graph* const> graphs,
                                                        const std::vector<std::string>& names) -> PredictReport {
    if (names.size() != graphs.size())
        raise<shape_error>("predict_networks: ", graphs.size(), " graphs, ", names.size(), " names");
    PredictReport out;
    out.unknown.add(est, graphs);
    try {
        if (const auto t = target_names(est); t.size() > 1) {
            out.columns = t;
            const auto p = predict_targets(est, graphs);
            out.values.assign(graphs.size(), std::vector<double>(p.size()));
            for (std::size_t k = 0; k < p.size(); ++k)
                for (std::size_t i = 0; i < graphs.size(); ++i) out.values[i][k] = p[k][i];
            return out;
        }
        out.columns = {"latency"};
        const auto p = est.predict(graphs);
        const bool has_sigma = dynamic_cast<const EnsembleEstimator*>(&est) != nullptr;
        for (const auto& x : p) {
            out.values.push_back({x.mean});
            if (has_sigma) out.sigma.push_back(x.sigma);
        }
    } catch (const prediction_error& e) {
        detail::rethrow_naming(e, est, 0, "'" + names.at(e.index()) + "'");
    }
    return out;
}
