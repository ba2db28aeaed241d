#pragma once
/// @file adaptation_impl.hpp
/// The definitions of adaptation.hpp: compiled once into dnncost::compiled in compiled mode
/// (core/config.hpp), included by adaptation.hpp in header-only mode.
#include <dnncost/estimators/adaptation.hpp>

DNNCOST_FUNC auto dnncost::estimators::nb201_encoding(std::string_view arch) -> std::vector<double> {
    namespace nb = dnncost::nb201;
    const auto a = nb::parse(arch);
    std::vector<double> x(nb201_encoding_width, 0.0);
    for (int e = 0; e < nb::num_edges; ++e)
        x[static_cast<std::size_t>(e * nb::num_ops + static_cast<int>(a.ops[static_cast<std::size_t>(e)]))] = 1;
    const auto counts = nb::op_counts(a);
    for (int k = 0; k < nb::num_ops; ++k)
        x[static_cast<std::size_t>(nb::num_edges * nb::num_ops + k)] = counts[static_cast<std::size_t>(k)];
    return x;
}

DNNCOST_FUNC auto dnncost::estimators::aggregate_encoding(std::span<const graph::Graph* const> graphs)
    -> Eigen::MatrixXd {
    if (graphs.empty()) return {};
    std::vector<std::string> vocab;
    for (const auto* g : graphs)
        for (const auto& n : g->nodes()) vocab.push_back(n.op_type);
    std::sort(vocab.begin(), vocab.end());
    vocab.erase(std::unique(vocab.begin(), vocab.end()), vocab.end());
    Eigen::MatrixXd x(static_cast<Index>(graphs.size()),
                      static_cast<Index>(vocab.size()) * features::OpAggregates::per_type);
    for (std::size_t i = 0; i < graphs.size(); ++i) {
        const auto f = features::OpAggregates::raw(*graphs[i], vocab);
        for (std::size_t j = 0; j < f.size(); ++j) x(static_cast<Index>(i), static_cast<Index>(j)) = std::log1p(f[j]);
    }
    return x;
}

DNNCOST_FUNC auto dnncost::estimators::latency_descriptor(std::span<const double> reference_ms) -> std::vector<double> {
    if (reference_ms.empty()) raise<config_error>("latency_descriptor: no reference network");
    double mean = 0.0;
    for (double v : reference_ms) {
        if (!(v > 0) || !std::isfinite(v))
            raise<config_error>("latency_descriptor: reference latency ", v, " is not positive and finite");
        mean += std::log(v);
    }
    mean /= static_cast<double>(reference_ms.size());
    std::vector<double> h{mean};
    for (double v : reference_ms) h.push_back(std::log(v) - mean);
    return h;
}

DNNCOST_FUNC auto dnncost::estimators::choose_shots(std::span<const std::size_t> candidates,
                                                    std::span<const double> proxy, std::size_t shots,
                                                    train::Sampling sampling, std::uint64_t seed)
    -> std::vector<std::size_t> {
    check_shot_candidates(candidates.size(), shots);
    std::vector<double> p;
    if (sampling == train::Sampling::uniform) {
        p.reserve(candidates.size());
        for (auto r : candidates) p.push_back(proxy[r]);
    }
    const auto split = train::make_split(candidates.size(), {shots, 0, 0, sampling, seed}, p);
    std::vector<std::size_t> out;
    for (auto i : split.train) out.push_back(candidates[i]);
    std::sort(out.begin(), out.end());
    return out;
}

DNNCOST_FUNC auto dnncost::estimators::shots_only_ridge(std::span<const std::string> shot_archs,
                                                        std::span<const double> shot_ms,
                                                        std::span<const std::string> archs) -> std::vector<double> {
    namespace nb = dnncost::nb201;
    if (shot_archs.size() < 2 || shot_archs.size() != shot_ms.size())
        raise<config_error>("shots_only_ridge: needs at least 2 shots with one latency each, got ", shot_archs.size(),
                            " and ", shot_ms.size());
    const auto row = [](const std::string& a) {
        const auto c = nb::op_counts(nb::parse(a));
        Eigen::RowVectorXd r(1 + nb::num_ops);
        r(0) = 1;
        for (int k = 0; k < nb::num_ops; ++k) r(1 + k) = c[static_cast<std::size_t>(k)];
        return r;
    };
    const Index n = static_cast<Index>(shot_archs.size());
    Eigen::MatrixXd x(n, 1 + nb::num_ops);
    Eigen::VectorXd y(n);
    for (Index i = 0; i < n; ++i) {
        x.row(i) = row(shot_archs[static_cast<std::size_t>(i)]);
        y(i) = shot_ms[static_cast<std::size_t>(i)];
    }
    const double scale = y.mean();
    const double degenerate = train::degenerate_threshold(shot_ms) / scale;
    const auto fit = RidgeFit::select(x, y / scale, nullptr, nullptr, degenerate);
    std::vector<double> out;
    out.reserve(archs.size());
    for (const auto& a : archs) out.push_back(row(a).dot(fit.beta) * scale);
    return out;
}

DNNCOST_FUNC auto dnncost::estimators::shots_only_linear_ridge(const Eigen::MatrixXd& shot_features,
                                                               std::span<const double> shot_ms,
                                                               const Eigen::MatrixXd& features) -> std::vector<double> {
    const Index n = shot_features.rows(), p = shot_features.cols();
    if (n < 2 || static_cast<std::size_t>(n) != shot_ms.size() || features.cols() != p)
        raise<config_error>("shots_only_linear_ridge: ", n, " shots, ", shot_ms.size(), " latencies, ", p, " and ",
                            features.cols(), " features");
    Eigen::RowVectorXd scale = shot_features.array().square().colwise().mean().sqrt();
    for (Index j = 0; j < p; ++j)
        if (!(scale(j) > 0)) scale(j) = 1.0;
    const auto design = [&](const Eigen::MatrixXd& f) {
        Eigen::MatrixXd x(f.rows(), p + 1);
        x.col(0).setOnes();
        x.rightCols(p) = f.array().rowwise() / scale.array();
        return x;
    };
    const Eigen::Map<const Eigen::VectorXd> y(shot_ms.data(), n);
    const double y_scale = y.mean();
    const auto fit = RidgeFit::select(design(shot_features), y / y_scale, nullptr, nullptr,
                                      train::degenerate_threshold(shot_ms) / y_scale);
    const Eigen::VectorXd pred = design(features) * fit.beta * y_scale;
    return {pred.data(), pred.data() + pred.size()};
}
