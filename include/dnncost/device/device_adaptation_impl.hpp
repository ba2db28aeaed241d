#pragma once
/// @file device_adaptation_impl.hpp
/// The definitions of device_adaptation.hpp: compiled once into dnncost::compiled in compiled mode
/// (core/config.hpp), included by device_adaptation.hpp in header-only mode.
#include <dnncost/device/device_adaptation.hpp>

DNNCOST_FUNC auto dnncost::device::canonical_key(const std::string& key, const std::string& space) -> std::string {
    if (const auto q = spaces::split_qualified(key))
        return std::string(q->space->name) + ":" + q->space->canonical(q->arch);
    if (space != train::onnx_keys) {
        const auto& s = spaces::find_space(space);
        return std::string(s.name) + ":" + s.canonical(key);
    }
    return key;
}

DNNCOST_FUNC auto dnncost::device::adapt_to_device(const train::Dataset& pool, const train::Dataset* target_data,
                                                   const AdaptRequest& r) -> AdaptReport {
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
    estimators::check_shot_candidates(candidates.size(), r.shots);  // before the pool is encoded

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
        chosen = estimators::choose_shots(positions, candidate_proxy, r.shots, train::parse_sampling(r.sampling),
                                          r.maple.seed);
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

    estimators::MapleEdge maple;
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
            base_pred = estimators::shots_only_ridge(shot_archs, shot_ms, test_archs);
        } else {
            // the pool prior with the aggregates encoder has these features already
            const bool reuse = r.prior && r.encoding == AdaptEncoding::aggregates;
            NetworkEncoder linear(AdaptEncoding::aggregates, r.space);
            const auto all = reuse ? pool_x : linear.encode(pool, pool.all_items(), true);  // fixes the vocabulary
            const auto test_lin = reuse         ? test_x
                                  : target_data ? linear.encode(tds, test, true)
                                                : detail::rows_of(all, test);
            base_pred = estimators::shots_only_linear_ridge(detail::rows_of(all, shot_rows), shot_ms, test_lin);
        }
        out.baseline = train::evaluate(base_pred, truth);
        out.baseline_name =
            cells ? "baseline ridge (op counts), shots alone" : "baseline ridge (aggregates), shots alone";
    }
    return out;
}
