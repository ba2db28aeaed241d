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

#include <dnncost/core/error.hpp>
#include <dnncost/cost/analytic.hpp>
#include <dnncost/estimators/adaptation.hpp>
#include <dnncost/estimators/capabilities.hpp>
#include <dnncost/estimators/estimator.hpp>
#include <dnncost/estimators/pool_prior.hpp>
#include <dnncost/features/op_aggregates.hpp>
#include <dnncost/spaces/nb201.hpp>
#include <dnncost/spaces/registry.hpp>
#include <dnncost/train/dataset.hpp>
#include <dnncost/train/design.hpp>
#include <dnncost/train/metrics.hpp>
#include <dnncost/train/split.hpp>

namespace dnncost::estimators {

/// The network a data-set key names, whatever the file's spelling (`nb201:|...|` or `|...|`).
inline std::string canonical_key(const std::string& key, const std::string& space) {
    if (const auto q = spaces::split_qualified(key))
        return std::string(q->space->name) + ":" + q->space->canonical(q->arch);
    if (space != train::onnx_keys) {
        const auto& s = spaces::find_space(space);
        return std::string(s.name) + ":" + s.canonical(key);
    }
    return key;
}

/// How networks are encoded for adaptation.
enum class AdaptEncoding { nb201, aggregates, embedding };

/// Architecture encodings of some items of a data set, one row each: NB201 one-hot + operation
/// counts, per-operator-type aggregates (any network; the vocabulary is fixed by the first
/// call), or a trained estimator's graph embedding.
class NetworkEncoder {
public:
    /// @param model the estimator whose embedding is the encoding (AdaptEncoding::embedding only)
    NetworkEncoder(AdaptEncoding kind, std::string space, const Estimator* model = nullptr)
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
                e = embed(*m_model, graphs);
            }
            if (x.size() == 0) x.resize(static_cast<Index>(items.size()), e.cols());
            x.middleRows(static_cast<Index>(s), e.rows()) = e;
        }
        return x;
    }

private:
    Eigen::MatrixXd nb201_rows(const train::Dataset& ds, const std::vector<std::size_t>& items, bool linear) const {
        Eigen::MatrixXd x(static_cast<Index>(items.size()), nb201_encoding_width);
        for (std::size_t i = 0; i < items.size(); ++i) {
            const auto q = spaces::split_qualified(ds.key(items[i]));
            const std::string arch = q ? std::string(q->arch) : ds.key(items[i]);
            if ((q && q->space->name != "nb201") || (!q && m_space != "nb201"))
                raise<config_error>(ds.source(), ":", ds.line(items[i]), ": the nb201 encoder reads NB201 cells, not '",
                                    ds.key(items[i]), "' (use --encoder aggregates or a GNN model)");
            const auto e = nb201_encoding(arch);
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
    const Estimator* m_model;
    std::vector<std::string> m_vocabulary;
};

/// What an adaptation run asks for.
struct AdaptRequest {
    std::vector<std::string> pool_targets;  ///< pool device columns
    std::string target;                     ///< the new device's column
    std::string space;                      ///< the space of keys without a SPACE: prefix
    bool prior = true;                      ///< the pool prior; false: the MAPLE-Edge regressor
    AdaptEncoding encoding = AdaptEncoding::nb201;
    const Estimator* embedding_model = nullptr;  ///< with AdaptEncoding::embedding
    std::size_t shots = 10;
    std::string sampling = "uniform";  ///< uniform | random | doptimal
    std::string proxy;                 ///< a pool column or macs (uniform sampling); empty: the first pool target
    AdaptationOptions maple{};         ///< the regressor's options (seed: of the shots too)
    bool baseline = false;             ///< also fit a ridge on the shots alone
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
inline AdaptReport adapt_to_device(const train::Dataset& pool, const train::Dataset* target_data,
                                   const AdaptRequest& r) {
    if (r.pool_targets.empty()) raise<config_error>("--pool-targets names no column");
    for (const auto& c : r.pool_targets)
        if (!target_data && c == r.target)
            raise<config_error>("the target column '", r.target,
                                "' is also a pool device; leave it out of --pool-targets");
    AdaptReport out;
    out.proxy = r.proxy.empty() ? r.pool_targets.front() : r.proxy;
    if (out.proxy != "macs" &&
        std::find(r.pool_targets.begin(), r.pool_targets.end(), out.proxy) == r.pool_targets.end())
        raise<config_error>("--proxy '", out.proxy, "' is neither macs nor one of --pool-targets");
    const train::Dataset& tds = target_data ? *target_data : pool;

    // pool rows by network; the target's rows found in the pool are the shot candidates
    std::map<std::string, std::size_t> pool_row;
    for (std::size_t i = 0; i < pool.size(); ++i) pool_row.emplace(canonical_key(pool.key(i), r.space), i);
    std::vector<std::size_t> candidates, candidate_item;  // pool rows, the matching target items
    for (std::size_t i = 0; i < tds.size(); ++i)
        if (const auto it = pool_row.find(canonical_key(tds.key(i), r.space)); it != pool_row.end()) {
            candidates.push_back(it->second);
            candidate_item.push_back(i);
        }
    if (candidates.empty()) raise<config_error>(tds.source(), ": none of its networks is in the pool ", pool.source());
    out.candidates = candidates.size();
    check_shot_candidates(candidates.size(), r.shots);  // before the pool is encoded

    NetworkEncoder encoder(r.encoding, r.space, r.embedding_model);
    const auto pool_x = encoder.encode(pool, pool.all_items(), r.prior);
    Eigen::MatrixXd pool_ms(static_cast<Index>(pool.size()), static_cast<Index>(r.pool_targets.size()));
    for (std::size_t d = 0; d < r.pool_targets.size(); ++d) {
        const auto& col = pool.column(r.pool_targets[d]);
        for (std::size_t i = 0; i < pool.size(); ++i) pool_ms(static_cast<Index>(i), static_cast<Index>(d)) = col[i];
    }
    const auto linear_kind = r.encoding == AdaptEncoding::nb201 ? AdaptEncoding::nb201 : AdaptEncoding::aggregates;

    // the shots: positions among the candidates
    std::vector<std::size_t> chosen;
    if (r.sampling == "doptimal") {
        // over the linear cost features: the pool prior's own, else those of a linear encoder
        const Eigen::MatrixXd design = r.prior ? detail::rows_of(pool_x, candidates)
                                               : NetworkEncoder(linear_kind, r.space).encode(pool, candidates, true);
        chosen = train::d_optimal_rows(design, r.shots, r.maple.seed);
        std::sort(chosen.begin(), chosen.end());
    } else {
        std::vector<double> candidate_proxy;
        if (r.sampling == "uniform") {
            const auto proxy_values =
                out.proxy == "macs" ? pool.map_graphs([](const graph::Graph& g) { return cost::total_cost(g).macs; })
                                    : pool.column(out.proxy);
            for (auto row : candidates) candidate_proxy.push_back(proxy_values[row]);
        }
        std::vector<std::size_t> positions(candidates.size());
        for (std::size_t k = 0; k < positions.size(); ++k) positions[k] = k;
        chosen = choose_shots(positions, candidate_proxy, r.shots, train::parse_sampling(r.sampling), r.maple.seed);
    }
    std::vector<std::size_t> shot_rows, shot_items;
    std::vector<double> shot_ms;
    for (auto k : chosen) {
        shot_rows.push_back(candidates[k]);
        shot_items.push_back(candidate_item[k]);
        shot_ms.push_back(tds.column(r.target)[candidate_item[k]]);
        out.shot_keys.push_back(tds.key(candidate_item[k]));
    }
    std::vector<std::size_t> test;
    {
        std::vector<char> is_shot(tds.size(), 0);
        for (auto i : shot_items) is_shot[i] = 1;
        for (std::size_t i = 0; i < tds.size(); ++i)
            if (!is_shot[i]) test.push_back(i);
    }
    out.n_test = test.size();

    MapleEdge maple;
    PoolPriorAdaptation pool_prior;
    const auto start = std::chrono::steady_clock::now();
    if (r.prior)
        pool_prior.fit(pool_x, pool_ms, shot_rows, shot_ms);
    else
        maple.fit(pool_x, pool_ms, shot_rows, shot_ms, r.maple);
    out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const auto test_x = target_data ? encoder.encode(tds, test, r.prior) : detail::rows_of(pool_x, test);
    const auto truth = tds.values(test, r.target);
    out.test = train::evaluate(r.prior ? pool_prior.predict(test_x) : maple.predict(test_x), truth);
    if (r.prior) out.prior_device = r.pool_targets[static_cast<std::size_t>(pool_prior.prior_device())];

    if (r.baseline) {
        // NB201 cells: the five per-cell operation counts; any other network: the linear
        // aggregates (per-operator-type count, MACs, bytes) of the aggregates encoder
        const bool cells = r.encoding == AdaptEncoding::nb201;
        std::vector<double> base_pred;
        if (cells) {
            std::vector<std::string> shot_archs, test_archs;
            const auto arch_of = [&](std::size_t i) {
                const auto q = spaces::split_qualified(tds.key(i));
                return q ? std::string(q->arch) : tds.key(i);
            };
            for (auto i : shot_items) shot_archs.push_back(arch_of(i));
            for (auto i : test) test_archs.push_back(arch_of(i));
            base_pred = shots_only_ridge(shot_archs, shot_ms, test_archs);
        } else {
            // the pool prior with the aggregates encoder has these features already
            const bool reuse = r.prior && r.encoding == AdaptEncoding::aggregates;
            NetworkEncoder linear(AdaptEncoding::aggregates, r.space);
            const auto all = reuse ? pool_x : linear.encode(pool, pool.all_items(), true);  // fixes the vocabulary
            const auto test_lin = reuse         ? test_x
                                  : target_data ? linear.encode(tds, test, true)
                                                : detail::rows_of(all, test);
            base_pred = shots_only_linear_ridge(detail::rows_of(all, shot_rows), shot_ms, test_lin);
        }
        out.baseline = train::evaluate(base_pred, truth);
        out.baseline_name =
            cells ? "baseline ridge (op counts), shots alone" : "baseline ridge (aggregates), shots alone";
    }
    return out;
}

}  // namespace dnncost::estimators
