#pragma once
/// @file warm_start_impl.hpp
/// The definitions of warm_start.hpp: compiled once into dnncost::compiled in compiled mode
/// (core/config.hpp), included by warm_start.hpp in header-only mode.
#include <dnncost/estimators/warm_start.hpp>

DNNCOST_FUNC auto dnncost::estimators::warm_start_additive_path(
    const features::OpAggregates& aggregates, const train::TrainData& train,
    const std::vector<features::EncodedGraph>& train_encoded, const train::TrainData& validation,
    const std::vector<features::EncodedGraph>& validation_encoded, double label_scale, std::size_t path_width)
    -> AdditivePathStart {
    const auto& yt = train.targets;
    const auto& yv = validation.targets;
    if (train_encoded.size() != yt.size() || validation_encoded.size() != yv.size() ||
        train.graphs.size() != yt.size() || validation.graphs.size() != yv.size())
        raise<shape_error>("warm_start_additive_path: ", train_encoded.size(), " + ", validation_encoded.size(),
                           " encoded graphs for ", yt.size(), " + ", yv.size(), " labels");
    if (yt.empty()) raise<config_error>("warm_start_additive_path: no training data");
    const Index k = static_cast<Index>(aggregates.size());
    if (k > 0 && path_width != aggregates.size())
        raise<config_error>("warm_start_additive_path: a path of ", path_width, " inputs for ", k, " aggregates");
    AdditivePathStart start;
    if (k == 0) {
        const double mean = std::accumulate(yt.begin(), yt.end(), 0.0) / static_cast<double>(yt.size());
        start.weights.assign(path_width, 0.0);
        start.bias = mean / label_scale;
        return start;
    }
    std::vector<Index> eager_columns;  // the aggregates of candidate (a)
    for (Index j = 0; j < k; ++j)
        if (!aggregates.is_compiled_feature(aggregates.keep[static_cast<std::size_t>(j)])) eager_columns.push_back(j);
    // design matrix with a leading column of ones: every aggregate, or those of candidate (a)
    const auto design = [&](const std::vector<features::EncodedGraph>& encoded, bool every_aggregate) {
        const Index width = every_aggregate ? k : static_cast<Index>(eager_columns.size());
        Eigen::MatrixXd matrix(static_cast<Index>(encoded.size()), 1 + width);
        matrix.col(0).setOnes();
        for (std::size_t i = 0; i < encoded.size(); ++i)
            for (Index c = 0; c < width; ++c)
                matrix(static_cast<Index>(i), 1 + c) = encoded[i].graph_x[static_cast<std::size_t>(
                    every_aggregate ? c : eager_columns[static_cast<std::size_t>(c)])];
        return matrix;
    };
    const Index n = static_cast<Index>(train_encoded.size());
    const double y_scale = std::accumulate(yt.begin(), yt.end(), 0.0) / static_cast<double>(n);
    const Eigen::VectorXd y = Eigen::Map<const Eigen::VectorXd>(yt.data(), n) / y_scale;
    const double degenerate = train::degenerate_threshold(yt) / y_scale;
    const bool has_validation = !validation_encoded.empty();
    Eigen::VectorXd y_val;
    if (has_validation) y_val = Eigen::Map<const Eigen::VectorXd>(yv.data(), static_cast<Index>(yv.size())) / y_scale;
    const Eigen::MatrixXd xa = design(train_encoded, false),
                          xa_val = has_validation ? design(validation_encoded, false) : Eigen::MatrixXd();
    // the same choice of signs as the additive baseline, so that candidate (a) is that baseline
    RidgeFit best = RidgeFit::select(xa, y, has_validation ? &xa_val : nullptr, has_validation ? &y_val : nullptr,
                                     degenerate, {}, RidgeFit::Signs::either);
    if (has_validation && static_cast<Index>(eager_columns.size()) < k) {
        // what (a) charges each labelled network for the operators a compiler removes
        const std::size_t half = aggregates.vocabulary.size() * features::OpAggregates::per_type;
        std::vector<double> removed, predicted, truth;
        const auto charge = [&](const train::TrainData& data, const Eigen::MatrixXd& x, const Eigen::VectorXd& labels) {
            const Eigen::VectorXd baseline = x * best.beta;
            for (std::size_t i = 0; i < data.size(); ++i) {
                if (!data.graphs[i]) raise<config_error>("warm_start_additive_path: labelled graph ", i, " is null");
                const auto raw =
                    features::OpAggregates::raw(*data.graphs[i], aggregates.vocabulary, true, aggregates.split_convs);
                double removed_cost = 0;
                for (std::size_t c = 0; c < eager_columns.size(); ++c) {
                    const auto feature = static_cast<std::size_t>(eager_columns[c]);
                    const auto j = static_cast<std::size_t>(aggregates.keep[feature]);
                    removed_cost +=
                        best.beta(static_cast<Index>(c) + 1) / aggregates.scale[feature] * (raw[j] - raw[half + j]);
                }
                removed.push_back(removed_cost);
                predicted.push_back(baseline(static_cast<Index>(i)));
                truth.push_back(labels(static_cast<Index>(i)));
            }
        };
        charge(train, xa, y);
        charge(validation, xa_val, y_val);
        start.compiler_test = unpaid_share(removed, predicted, truth, degenerate);
        if (start.compiler_test->compiled()) {
            const Eigen::MatrixXd xb = design(train_encoded, true), xb_val = design(validation_encoded, true);
            const auto scorer = [](const Eigen::VectorXd& p, const Eigen::VectorXd& t) {
                return validation_score(to_std_vector(p), to_std_vector(t));
            };
            best = RidgeFit::select(xb, y, &xb_val, &y_val, degenerate, scorer, RidgeFit::Signs::either);
            start.baseline_only = false;
        }
    }
    // back to the path's units: labels divided by label_scale
    const double units = y_scale / label_scale;
    start.weights.assign(static_cast<std::size_t>(k), 0.0);
    for (Index c = 0; c + 1 < best.beta.size(); ++c)
        start.weights[static_cast<std::size_t>(start.baseline_only ? eager_columns[static_cast<std::size_t>(c)] : c)] =
            best.beta(1 + c) * units;
    start.bias = best.beta(0) * units;
    return start;
}
