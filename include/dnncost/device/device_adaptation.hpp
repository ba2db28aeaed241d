#pragma once
/// @file device_adaptation.hpp
/// Adapting to a new device from a few of its measurements and a pool of measured devices, as
/// one call (adapt_to_device): match the new device's networks to the pool, choose the shots,
/// encode the networks, fit the pool prior or the MAPLE-Edge regressor, and measure it (and a
/// shots-only ridge baseline) on the new device's other networks.
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <Eigen/Dense>

#include <dnncost/core/config.hpp>
#include <dnncost/core/error.hpp>
#include <dnncost/cost/analytic.hpp>
#include <dnncost/device/pool_prior.hpp>
#include <dnncost/estimators/adaptation.hpp>
#include <dnncost/estimators/capabilities.hpp>
#include <dnncost/estimators/estimator.hpp>
#include <dnncost/features/op_aggregates.hpp>
#include <dnncost/spaces/nb201.hpp>
#include <dnncost/spaces/registry.hpp>
#include <dnncost/train/dataset.hpp>
#include <dnncost/train/design.hpp>
#include <dnncost/train/metrics.hpp>
#include <dnncost/train/split.hpp>

namespace dnncost::device {

/// The network a data-set key names, whatever the file's spelling (`nb201:|...|` or `|...|`).
DNNCOST_FUNC std::string canonical_key(const std::string& key, const std::string& space);

/// How networks are encoded for adaptation.
enum class AdaptEncoding { nb201, aggregates, embedding };

/// Architecture encodings of some items of a data set, one row each: NB201 one-hot + operation
/// counts, per-operator-type aggregates (any network; the vocabulary is fixed by the first
/// call), or a trained estimator's graph embedding.
class NetworkEncoder {
public:
    /// @param model the estimator whose embedding is the encoding (AdaptEncoding::embedding only)
    NetworkEncoder(AdaptEncoding kind, std::string space, const estimators::Estimator* model = nullptr)
        : m_kind(kind), m_space(std::move(space)), m_model(model) {
        if (kind == AdaptEncoding::embedding && !model)
            raise<config_error>("NetworkEncoder: an embedding encoder needs a trained model");
    }
    /// `linear`: features a cost is linear in (operation counts; raw aggregates), for the
    /// pool prior and D-optimal designs; else the regressor's encoding.
    Eigen::MatrixXd encode(const train::Dataset& ds, const std::vector<std::size_t>& items, bool linear = false) {
        if (linear && m_kind == AdaptEncoding::embedding)
            raise<config_error>(
                "--method prior needs --encoder nb201 or aggregates (a GNN embedding is not a linear "
                "cost feature); use --method maple with ",
                m_model->name());
        if (m_kind == AdaptEncoding::nb201) return nb201_rows(ds, items, linear);
        Eigen::MatrixXd x;
        constexpr std::size_t chunk = 1024;
        for (std::size_t s = 0; s < items.size(); s += chunk) {
            const std::vector<std::size_t> part(
                items.begin() + static_cast<std::ptrdiff_t>(s),
                items.begin() + static_cast<std::ptrdiff_t>(std::min(items.size(), s + chunk)));
            const auto graphs = ds.graphs(part);
            Eigen::MatrixXd e;
            if (m_kind == AdaptEncoding::aggregates) {
                if (m_vocabulary.empty()) m_vocabulary = vocabulary_of(graphs.pointers());
                e = aggregates(graphs.pointers(), linear);
            } else {
                e = estimators::embed(*m_model, graphs);
            }
            if (x.size() == 0) x.resize(static_cast<Index>(items.size()), e.cols());
            x.middleRows(static_cast<Index>(s), e.rows()) = e;
        }
        return x;
    }

private:
    Eigen::MatrixXd nb201_rows(const train::Dataset& ds, const std::vector<std::size_t>& items, bool linear) const {
        Eigen::MatrixXd x(static_cast<Index>(items.size()), estimators::nb201_encoding_width);
        for (std::size_t i = 0; i < items.size(); ++i) {
            const auto q = spaces::split_qualified(ds.key(items[i]));
            const std::string arch = q ? std::string(q->arch) : ds.key(items[i]);
            if ((q && q->space->name != "nb201") || (!q && m_space != "nb201"))
                raise<config_error>(ds.source(), ":", ds.line(items[i]), ": the nb201 encoder reads NB201 cells, not '",
                                    ds.key(items[i]), "' (use --encoder aggregates or a GNN model)");
            const auto e = estimators::nb201_encoding(arch);
            for (std::size_t j = 0; j < e.size(); ++j) x(static_cast<Index>(i), static_cast<Index>(j)) = e[j];
        }
        // the counts are the encoding's last columns
        return linear ? Eigen::MatrixXd(x.rightCols(dnncost::nb201::num_ops)) : x;
    }
    static std::vector<std::string> vocabulary_of(const std::vector<const graph::Graph*>& graphs) {
        std::vector<std::string> v;
        for (const auto* g : graphs)
            for (const auto& n : g->nodes()) v.push_back(n.op_type);
        std::sort(v.begin(), v.end());
        v.erase(std::unique(v.begin(), v.end()), v.end());
        return v;
    }
    Eigen::MatrixXd aggregates(const std::vector<const graph::Graph*>& graphs, bool linear) const {
        Eigen::MatrixXd x(static_cast<Index>(graphs.size()),
                          static_cast<Index>(m_vocabulary.size()) * features::OpAggregates::per_type);
        for (std::size_t i = 0; i < graphs.size(); ++i) {
            const auto f = features::OpAggregates::raw(*graphs[i], m_vocabulary);
            for (std::size_t j = 0; j < f.size(); ++j)
                x(static_cast<Index>(i), static_cast<Index>(j)) = linear ? f[j] : std::log1p(f[j]);
        }
        return x;
    }
    AdaptEncoding m_kind;
    std::string m_space;
    const estimators::Estimator* m_model;
    std::vector<std::string> m_vocabulary;
};

/// What an adaptation run asks for.
struct AdaptRequest {
    std::vector<std::string> pool_targets;  ///< pool device columns
    std::string target;                     ///< the new device's column
    std::string space;                      ///< the space of keys without a SPACE: prefix
    bool prior = true;                      ///< the pool prior; false: the MAPLE-Edge regressor
    AdaptEncoding encoding = AdaptEncoding::nb201;
    const estimators::Estimator* embedding_model = nullptr;  ///< with AdaptEncoding::embedding
    std::size_t shots = 10;
    std::string sampling = "uniform";       ///< uniform | random | doptimal
    std::string proxy;                      ///< a pool column or macs (uniform sampling); empty: the first pool target
    estimators::AdaptationOptions maple{};  ///< the regressor's options (seed: of the shots too)
    bool baseline = false;                  ///< also fit a ridge on the shots alone
};

/// What an adaptation run found.
struct AdaptReport {
    std::size_t candidates = 0;          ///< the new device's networks found in the pool
    std::vector<std::string> shot_keys;  ///< the networks measured for adaptation
    std::size_t n_test = 0;
    train::AccuracyReport test;                     ///< on the new device's other networks
    std::optional<train::AccuracyReport> baseline;  ///< the shots-only ridge
    std::string baseline_name;
    std::optional<std::string> prior_device;  ///< the pool device the prior pulled towards
    std::string proxy;
    double seconds = 0;  ///< fitting time
};

namespace detail {
inline Eigen::MatrixXd rows_of(const Eigen::MatrixXd& x, const std::vector<std::size_t>& rows) {
    Eigen::MatrixXd out(static_cast<Index>(rows.size()), x.cols());
    for (std::size_t i = 0; i < rows.size(); ++i) out.row(static_cast<Index>(i)) = x.row(static_cast<Index>(rows[i]));
    return out;
}
}  // namespace detail

/// Adapt to the device of `target` (a column of `target_data`, or of `pool` when null) from
/// `r.shots` of its measurements and the pool devices' columns, and evaluate on the rest.
/// @throws config_error for columns or options that do not fit, or too few shot candidates
DNNCOST_FUNC AdaptReport adapt_to_device(const train::Dataset& pool, const train::Dataset* target_data,
                                         const AdaptRequest& r);

}  // namespace dnncost::device

#if !defined(DNNCOST_COMPILED)
#include <dnncost/device/device_adaptation_impl.hpp>
#endif
