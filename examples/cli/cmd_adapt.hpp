#pragma once
// `dnncost adapt`: adapt to a new device from a few of its measurements and a pool of measured
// devices (MAPLE-Edge), and evaluate on the rest of the new device's measurements.
#include <algorithm>
#include <chrono>
#include <iomanip>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "cmd_train.hpp"
#include "common.hpp"

#include <dnncost/estimators/adaptation.hpp>
#include <dnncost/estimators/pool_prior.hpp>
#include <dnncost/estimators/presets.hpp>
#include <dnncost/train/design.hpp>

namespace dnncost::cli {

namespace adapt_detail {

/// The network a data set key names, whatever the file's spelling (`nb201:|...|` or `|...|`).
inline std::string canonical_key(const std::string& key, const std::string& space) {
    if (const auto q = spaces::split_qualified(key))
        return std::string(q->space->name) + ":" + q->space->canonical(q->arch);
    if (space != train::onnx_keys) {
        const auto& s = spaces::find_space(space);
        return std::string(s.name) + ":" + s.canonical(key);
    }
    return key;
}

inline std::vector<std::string> split_list(const std::string& s) {
    std::vector<std::string> out;
    std::stringstream ss(s);
    std::string item;
    while (std::getline(ss, item, ','))
        if (!item.empty()) out.push_back(item);
    return out;
}

/// Architecture encodings of some items of a data set, one row each.
class Encoder {
public:
    Encoder(std::string kind, const std::string& space) : m_kind(std::move(kind)), m_space(space) {
        if (m_kind != "nb201" && m_kind != "aggregates") {
            auto m = train_detail::load_model(m_kind);
            m_model = std::move(m.est);
            if (!dynamic_cast<estimators::HiFiSage*>(m_model.get()) &&
                !dynamic_cast<estimators::BrpNas*>(m_model.get()))
                raise<config_error>(m_kind, ": --encoder takes nb201, aggregates or a saved hifisage/brpnas model (",
                                    m_model->preset(), " given)");
        }
    }
    /// `linear`: features a cost is linear in (operation counts; raw aggregates), for the
    /// pool-prior method; else the regressor's encoding.
    Eigen::MatrixXd encode(const train::Dataset& ds, const std::vector<std::size_t>& items, bool linear = false) {
        Eigen::MatrixXd x;
        if (linear && m_model)
            raise<config_error>(
                "--method prior needs --encoder nb201 or aggregates (a GNN embedding is not a "
                "linear cost feature); use --method maple with ",
                m_kind);
        if (m_kind == "nb201") {
            x.resize(static_cast<Index>(items.size()), estimators::nb201_encoding_width);
            for (std::size_t i = 0; i < items.size(); ++i) {
                const auto q = spaces::split_qualified(ds.key(items[i]));
                const std::string arch = q ? std::string(q->arch) : ds.key(items[i]);
                if ((q && q->space->name != "nb201") || (!q && m_space != "nb201"))
                    raise<config_error>(ds.source(), ":", ds.line(items[i]),
                                        ": the nb201 encoder reads NB201 cells, not '", ds.key(items[i]),
                                        "' (use --encoder aggregates or a GNN model)");
                const auto e = estimators::nb201_encoding(arch);
                for (std::size_t j = 0; j < e.size(); ++j) x(static_cast<Index>(i), static_cast<Index>(j)) = e[j];
            }
            // the counts are the encoding's last columns
            return linear ? Eigen::MatrixXd(x.rightCols(dnncost::nb201::num_ops)) : x;
        }
        constexpr std::size_t chunk = 1024;
        for (std::size_t s = 0; s < items.size(); s += chunk) {
            const std::vector<std::size_t> part(
                items.begin() + static_cast<std::ptrdiff_t>(s),
                items.begin() + static_cast<std::ptrdiff_t>(std::min(items.size(), s + chunk)));
            const auto graphs = ds.graphs(part);
            Eigen::MatrixXd e;
            if (m_kind == "aggregates") {
                if (m_vocabulary.empty()) m_vocabulary = vocabulary_of(graphs.pointers());
                e = aggregates(graphs.pointers(), linear);
            } else if (auto* h = dynamic_cast<estimators::HiFiSage*>(m_model.get())) {
                e = estimators::gnn_encoding(*h, graphs.pointers());
            } else {
                e = estimators::gnn_encoding(*dynamic_cast<estimators::BrpNas*>(m_model.get()), graphs.pointers());
            }
            if (x.size() == 0) x.resize(static_cast<Index>(items.size()), e.cols());
            x.middleRows(static_cast<Index>(s), e.rows()) = e;
        }
        return x;
    }

private:
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
    std::string m_kind, m_space;
    std::unique_ptr<estimators::Estimator> m_model;
    std::vector<std::string> m_vocabulary;
};

}  // namespace adapt_detail

inline void add_adapt_commands(CLI::App& app, Context& ctx) {
    namespace td = train_detail;
    namespace ad = adapt_detail;
    struct AdaptArgs {
        std::string pool, pool_targets, target, data, space = "nb201", space_options, sampling = "uniform", proxy,
                                                      encoder = "nb201", report, baseline = "none", method = "prior";
        std::size_t shots = 10, pool_networks = 2000;
        int clones = 7, epochs = 60, finetune = 0;
        bool calibrate = false, no_stack = false;
        std::uint64_t seed = 0;
    };
    auto a = std::make_shared<AdaptArgs>();
    auto* cmd = app.add_subcommand(
        "adapt", "Adapt to a new device from a few of its measurements and a pool of measured devices (MAPLE-Edge)");
    cmd->add_option("--pool", a->pool, "CSV of the pool devices: a key column + one latency column per device")
        ->required();
    cmd->add_option("--pool-targets", a->pool_targets, "Pool device columns, comma-separated (A,B,C)")->required();
    cmd->add_option("--target", a->target,
                    "Column of the new device: in --data if given (default latency_ms for a results file of "
                    "`dnncost measure`), else in --pool");
    cmd->add_option("--data", a->data,
                    "Measurements of the new device: a CSV or a results file of `dnncost measure` (default: --pool)");
    add_space_options(*cmd, a->space, a->space_options);
    cmd->add_option("--method", a->method,
                    "prior: a linear cost model fitted on the shots, pulled towards the pool device the shots look "
                    "most like | maple: the MAPLE-Edge regressor over [encoding | hardware descriptor]")
        ->check(CLI::IsMember({"prior", "maple"}));
    cmd->add_option("--shots", a->shots, "Measurements of the new device used for adaptation")
        ->transform(check::integer(2, 100000));
    cmd->add_option("--seed", a->seed, "Seed of the shots and of training")->transform(check::seed());
    cmd->add_option("--sampling", a->sampling,
                    "How the shots are chosen: uniform (MAPLE-Edge targeted) | random | doptimal (a greedy D-optimal "
                    "design over the linear cost features: NB201 op counts with --encoder nb201, else the "
                    "per-operator-type aggregates)")
        ->check(CLI::IsMember({"random", "uniform", "doptimal"}));
    cmd->add_option("--proxy", a->proxy,
                    "Ranking of uniform sampling: a pool column (default: the first pool target) | macs");
    cmd->add_option("--clones", a->clones, "K: each shot enters the training set K times")
        ->transform(check::integer(1, 1000));
    cmd->add_option("--pool-networks", a->pool_networks, "Networks drawn per pool device (0: all)")
        ->transform(check::integer(0, 100000000));
    cmd->add_option("--epochs", a->epochs, "Training epochs of the regressor")->transform(check::integer(1, 100000));
    cmd->add_option("--finetune", a->finetune, "Epochs on the cloned shots alone after the joint training")
        ->transform(check::integer(0, 100000));
    cmd->add_flag("--no-stack", a->no_stack,
                  "Predict with the regressor alone, without the ridge over its pool-device predictions fitted on "
                  "the shots");
    cmd->add_flag("--calibrate", a->calibrate, "Shift the predictions by the mean log residual on the shots");
    cmd->add_option("--encoder", a->encoder,
                    "Architecture encoding: nb201 (one-hot + op counts) | aggregates (per-operator-type count, MACs, "
                    "bytes; any network) | MODEL.dnnc (a trained hifisage or brpnas model's graph embedding)");
    cmd->add_option(
           "--baseline", a->baseline,
           "Also report a baseline on the same shots: none | ridge (a ridge fitted on the shots alone: the five "
           "NB201 op counts with --encoder nb201, else the per-operator-type aggregates)")
        ->check(CLI::IsMember({"none", "ridge"}));
    cmd->add_option("--report", a->report, "Write a JSON report of the test metrics");
    cmd->callback([a, &ctx] {
        if (!a->report.empty()) io::check_writable(a->report);
        const auto pool_cols = ad::split_list(a->pool_targets);
        if (pool_cols.empty()) raise<config_error>("--pool-targets names no column");
        const bool results = !a->data.empty() && measure::is_results_file(a->data);
        std::string target = a->target;
        if (target.empty()) {
            if (!results)
                raise<config_error>("--target is required unless --data is a results file of dnncost measure");
            target = "latency_ms";
        }
        for (const auto& c : pool_cols)
            if (a->data.empty() && c == target)
                raise<config_error>("the target column '", target,
                                    "' is also a pool device; leave it out of --pool-targets");
        std::string proxy = a->proxy.empty() ? pool_cols.front() : a->proxy;
        if (proxy != "macs" && std::find(pool_cols.begin(), pool_cols.end(), proxy) == pool_cols.end())
            raise<config_error>("--proxy '", proxy, "' is neither macs nor one of --pool-targets");

        // NaN or missing values are errors here, not skipped rows: a pool or target column
        // with holes is a data problem the user must see (file and line).
        auto pool_columns = pool_cols;
        if (a->data.empty()) pool_columns.push_back(target);
        const auto pool = td::load(a->pool, a->space, a->space_options, pool_columns, true);
        std::unique_ptr<train::Dataset> own_target;
        if (!a->data.empty())
            own_target =
                std::make_unique<train::Dataset>(td::load(a->data, a->space, a->space_options, {target}, true));
        const train::Dataset& tds = own_target ? *own_target : pool;

        // pool rows by network; the target's rows found in the pool are the shot candidates
        std::map<std::string, std::size_t> pool_row;
        for (std::size_t i = 0; i < pool.size(); ++i) pool_row.emplace(ad::canonical_key(pool.key(i), a->space), i);
        std::vector<std::size_t> candidates;      // pool rows
        std::vector<std::size_t> candidate_item;  // the matching target items
        for (std::size_t i = 0; i < tds.size(); ++i) {
            const auto it = pool_row.find(ad::canonical_key(tds.key(i), a->space));
            if (it == pool_row.end()) continue;
            candidates.push_back(it->second);
            candidate_item.push_back(i);
        }
        if (candidates.empty())
            raise<config_error>(tds.source(), ": none of its networks is in the pool ", pool.source());
        std::cerr << "dnncost: " << candidates.size() << " of the target's " << tds.size()
                  << " networks are in the pool (shot candidates)\n";
        estimators::check_shot_candidates(candidates.size(), a->shots);  // before the pool is encoded

        ad::Encoder encoder(a->encoder, a->space);
        const bool prior = a->method == "prior";
        const auto pool_x = encoder.encode(pool, pool.all_items(), prior);
        Eigen::MatrixXd pool_ms(static_cast<Index>(pool.size()), static_cast<Index>(pool_cols.size()));
        for (std::size_t d = 0; d < pool_cols.size(); ++d) {
            const auto& col = pool.column(pool_cols[d]);
            for (std::size_t i = 0; i < pool.size(); ++i)
                pool_ms(static_cast<Index>(i), static_cast<Index>(d)) = col[i];
        }

        // the shots: positions among the candidates
        std::vector<std::size_t> chosen;
        if (a->sampling == "doptimal") {
            // over the linear cost features: the pool prior's own, else those of a linear encoder
            Eigen::MatrixXd design(static_cast<Index>(candidates.size()), 0);
            if (prior) {
                design.resize(static_cast<Index>(candidates.size()), pool_x.cols());
                for (std::size_t k = 0; k < candidates.size(); ++k)
                    design.row(static_cast<Index>(k)) = pool_x.row(static_cast<Index>(candidates[k]));
            } else {
                design = ad::Encoder(a->encoder == "nb201" ? "nb201" : "aggregates", a->space)
                             .encode(pool, candidates, true);
            }
            chosen = train::d_optimal_rows(design, a->shots, a->seed);
            std::sort(chosen.begin(), chosen.end());
        } else {
            std::vector<double> candidate_proxy;
            if (a->sampling == "uniform") {
                const auto proxy_values =
                    proxy == "macs" ? pool.map_graphs([](const graph::Graph& g) { return cost::total_cost(g).macs; })
                                    : pool.column(proxy);
                for (auto r : candidates) candidate_proxy.push_back(proxy_values[r]);
            }
            std::vector<std::size_t> positions(candidates.size());
            for (std::size_t k = 0; k < positions.size(); ++k) positions[k] = k;
            chosen = estimators::choose_shots(positions, candidate_proxy, a->shots,
                                              train::parse_sampling(a->sampling), a->seed);
        }
        std::vector<std::size_t> shot_rows, shot_items;
        std::vector<double> shot_ms;
        for (auto k : chosen) {
            shot_rows.push_back(candidates[k]);
            shot_items.push_back(candidate_item[k]);
            shot_ms.push_back(tds.column(target)[candidate_item[k]]);
        }
        std::vector<std::size_t> test;
        {
            std::vector<char> is_shot(tds.size(), 0);
            for (auto i : shot_items) is_shot[i] = 1;
            for (std::size_t i = 0; i < tds.size(); ++i)
                if (!is_shot[i]) test.push_back(i);
        }

        estimators::MapleEdge maple;
        estimators::PoolPriorAdaptation pool_prior;
        const auto start = std::chrono::steady_clock::now();
        if (prior) {
            pool_prior.fit(pool_x, pool_ms, shot_rows, shot_ms);
        } else {
            estimators::AdaptationOptions o;
            o.clones = a->clones;
            o.pool_networks = a->pool_networks;
            o.epochs = a->epochs;
            o.seed = a->seed;
            o.finetune_epochs = a->finetune;
            o.calibrate = a->calibrate;
            o.stack = !a->no_stack;
            maple.fit(pool_x, pool_ms, shot_rows, shot_ms, o);
        }
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        const auto test_x = own_target ? encoder.encode(tds, test, prior) : [&] {
            Eigen::MatrixXd x(static_cast<Index>(test.size()), pool_x.cols());
            for (std::size_t i = 0; i < test.size(); ++i)
                x.row(static_cast<Index>(i)) = pool_x.row(static_cast<Index>(test[i]));
            return x;
        }();
        const auto pred = prior ? pool_prior.predict(test_x) : maple.predict(test_x);
        const auto truth = tds.values(test, target);
        const auto ev = train::evaluate(pred, truth);
        std::cout << "adapt: target " << target << ", pool " << a->pool_targets << ", " << a->shots << " shots ("
                  << a->sampling << ", seed " << a->seed << "), method " << a->method;
        if (prior)
            std::cout << " (prior: " << pool_cols[static_cast<std::size_t>(pool_prior.prior_device())] << ")";
        else
            std::cout << ", " << a->clones << " clones";
        std::cout << ", encoder " << a->encoder << ", " << std::setprecision(3) << seconds << " s\n";
        td::print_metrics(std::cout, "test", ev.all);
        td::print_metrics(std::cout, "test, non-degenerate", ev.non_degenerate);
        json report = td::evaluation_json(ev);
        if (a->baseline == "ridge") {
            std::vector<std::string> shot_archs, test_archs;
            const auto arch_of = [&](std::size_t i) {
                const auto q = spaces::split_qualified(tds.key(i));
                return q ? std::string(q->arch) : tds.key(i);
            };
            for (auto i : shot_items) shot_archs.push_back(arch_of(i));
            for (auto i : test) test_archs.push_back(arch_of(i));
            // NB201 cells: the five per-cell operation counts; any other network: the linear
            // aggregates (per-operator-type count, MACs, bytes) of the aggregates encoder
            const bool cells = a->encoder == "nb201";
            std::vector<double> base_pred;
            if (cells) {
                base_pred = estimators::shots_only_ridge(shot_archs, shot_ms, test_archs);
            } else {
                // the pool prior with the aggregates encoder has these features already
                const bool reuse = prior && a->encoder == "aggregates";
                ad::Encoder linear("aggregates", a->space);
                const auto all = reuse ? pool_x : linear.encode(pool, pool.all_items(), true);  // fixes the vocabulary
                Eigen::MatrixXd shots_x(static_cast<Index>(shot_rows.size()), all.cols());
                for (std::size_t k = 0; k < shot_rows.size(); ++k)
                    shots_x.row(static_cast<Index>(k)) = all.row(static_cast<Index>(shot_rows[k]));
                const auto test_lin = reuse ? test_x
                                      : own_target
                                          ? linear.encode(tds, test, true)
                                          : [&] {
                                                Eigen::MatrixXd x(static_cast<Index>(test.size()), all.cols());
                                                for (std::size_t i = 0; i < test.size(); ++i)
                                                    x.row(static_cast<Index>(i)) = all.row(static_cast<Index>(test[i]));
                                                return x;
                                            }();
                base_pred = estimators::shots_only_linear_ridge(shots_x, shot_ms, test_lin);
            }
            const auto base = train::evaluate(base_pred, truth);
            td::print_metrics(
                std::cout,
                cells ? "baseline ridge (op counts), shots alone" : "baseline ridge (aggregates), shots alone",
                base.all);
            report["baseline"] = td::evaluation_json(base);
        }
        if (!a->report.empty()) {
            report["preset"] = prior ? "pool-prior" : "maple-edge";
            report["method"] = a->method;
            if (prior) report["prior_device"] = pool_cols[static_cast<std::size_t>(pool_prior.prior_device())];
            report["target"] = target;
            report["data"] = a->data.empty() ? a->pool : a->data;
            report["pool"] = a->pool;
            report["pool_targets"] = pool_cols;
            report["encoder"] = a->encoder;
            report["seed"] = a->seed;
            report["sampling"] = a->sampling;
            report["proxy"] = proxy;
            report["clones"] = a->clones;
            report["n_train"] = shot_items.size();
            report["n_val"] = 0;
            report["n_test"] = test.size();
            report["epochs"] = a->epochs;
            report["train_seconds"] = seconds;
            std::vector<std::string> keys;
            for (auto i : shot_items) keys.push_back(tds.key(i));
            report["shots"] = keys;
            io::write_file_atomic(a->report, report.dump(2) + "\n");
        }
        ctx.exit_code = 0;
    });
}

}  // namespace dnncost::cli
