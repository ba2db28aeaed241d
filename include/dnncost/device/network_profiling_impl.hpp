#pragma once
/// @file network_profiling_impl.hpp
/// The definitions of network_profiling.hpp: compiled once into dnncost::compiled in compiled mode
/// (core/config.hpp), included by network_profiling.hpp in header-only mode.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include <dnncost/core/robust_statistics.hpp>
#include <dnncost/device/kernel_check.hpp>
#include <dnncost/device/network_profiling.hpp>
#include <dnncost/measure/kernel_profiles.hpp>
#include <dnncost/measure/model_file.hpp>
#include <dnncost/measure/reference.hpp>
#include <dnncost/measure/run_conditions.hpp>
#include <dnncost/measure/store.hpp>

DNNCOST_FUNC auto dnncost::device::profile_networks(const std::vector<graph::Graph>& networks, const FusionRules& rules,
                                                    double run_overhead_ms, const NetworkProfilingSetup& setup)
    -> NetworkProfilingResult {
    detail::BudgetedRun run(setup, "network profiling");
    rules.check();
    // a damaged kernel file stops the run before anything is measured
    const auto profiles_path = measure::kernel_profiles_path(setup.store);
    std::map<std::string, measure::KernelProfile> profiles;
    for (auto& p : measure::read_kernel_profiles(profiles_path)) profiles[p.key] = std::move(p);
    run.open_store("profile");
    auto& store = run.store();
    // the second latencies (confirm_latency): a network is done once it has both
    std::unique_ptr<measure::ResultsStore> again_store;
    if (setup.confirm_latency) again_store = run.open_second_store(again_store_path(setup.store), "profile");
    // a second latency takes about half the time of a network profiled and measured
    constexpr double confirm_share = 0.5;

    NetworkProfilingResult out;
    std::vector<measure::Network> nets;  // one per distinct network, in the order given
    std::vector<const graph::Graph*> graph_of;
    std::set<std::string> seen;
    for (const auto& g : networks) {
        const auto key = measure::network_key(g);
        if (!seen.insert(key).second) continue;
        nets.push_back({key, g.name().empty() ? key : g.name(), run.model_dir() / (key + ".onnx")});
        graph_of.push_back(&g);
    }
    const auto latency_in = [](const measure::ResultsStore& st, const std::string& key) {
        const auto* r = st.result(key);
        return r && r->ok() && std::isfinite(r->latency_ms) && r->latency_ms > 0 ? r : nullptr;
    };
    const auto measured_ok = [&](const std::string& key) {
        const auto* r = store.result(key);
        return r && r->ok() && !setup.harness.force;
    };
    const auto confirmed_ok = [&](const std::string& key) {
        return !again_store || (latency_in(*again_store, key) && !setup.harness.force);
    };
    const auto done = [&](std::size_t i) {
        return measured_ok(nets[i].key) && profiles.count(nets[i].key) > 0 && confirmed_ok(nets[i].key);
    };
    const auto drop_model = [&](std::size_t i) {
        std::error_code e;
        std::filesystem::remove(nets[i].model, e);
    };
    std::vector<std::size_t> todo;
    for (std::size_t i = 0; i < nets.size(); ++i) {
        if (done(i)) {
            ++out.from_store;
            drop_model(i);
        } else {
            todo.push_back(i);
        }
    }
    auto& progress = run.progress;
    progress.total = nets.size();
    progress.done = out.from_store;
    run.report();

    // profiled requests for the networks `which`: their profiles, and how many answered without
    // kernels; `again`: networks that keep the profile they have when this one fails
    const auto take_profiles = [&](const std::vector<std::size_t>& which, std::size_t& without_kernels, bool again) {
        std::vector<measure::Request> requests;
        for (const auto i : which) {
            measure::Request req{0, nets[i].model.string(), setup.harness.warmup, setup.harness.repeats};
            req.profile = true;
            requests.push_back(std::move(req));
        }
        std::vector<measure::KernelProfile> fresh;
        if (!requests.empty())
            run.pool().run(requests, [&](std::size_t k, const measure::Outcome& o) {
                const auto& n = nets[which[k]];
                const std::string failed = again ? ": no second profile (the first is kept): " : ": no profile: ";
                if (!o.ok() || o.answer.kernels.empty()) {
                    if (o.ok()) ++without_kernels;
                    if (!again) ++out.without_profile;
                    out.problems.push_back(n.id + failed +
                                           (o.ok() ? std::string("the runner answered without kernels")
                                                   : std::string(to_string(o.failure)) + ": " + o.detail));
                    return;
                }
                measure::KernelProfile p{n.key, n.id, o.answer.kernels, {}};
                if (!o.answer.optimized_model.empty()) {
                    try {
                        p.nodes = read_runtime_nodes(o.answer.optimized_model);
                    } catch (const error& e) {
                        if (!again) ++out.without_profile;
                        out.problems.push_back(n.id + failed + "the runner's optimised model: " + e.what());
                        p.kernels.clear();
                    }
                    std::error_code e;
                    std::filesystem::remove(o.answer.optimized_model, e);
                }
                if (!p.kernels.empty()) fresh.push_back(std::move(p));
            });
        return fresh;
    };

    // the models of the networks `which` written where missing (a model is dropped once measured);
    // those that cannot be written are left out, with the reason kept
    const auto write_models = [&](const std::vector<std::size_t>& which) {
        std::vector<std::size_t> written;
        for (const auto i : which) {
            try {
                if (!std::filesystem::exists(nets[i].model))
                    measure::write_model_for_runner(*graph_of[i], nets[i].model, setup.seed, setup.opset);
                written.push_back(i);
            } catch (const config_error& e) {
                out.problems.push_back(nets[i].id + ": its model cannot be written: " + e.what());
            }
        }
        return written;
    };

    std::vector<std::vector<std::size_t>> chunk_items;  // the networks of each chunk the harness ran
    std::size_t next = 0;
    while (next < todo.size()) {
        // the first chunk is one network: whether the runner profiles at all
        const std::size_t take =
            run.next_chunk(todo.size() - next, profiles.empty() ? 1 : setup.chunk, again_store ? 1 + confirm_share : 1);
        if (take == 0) break;
        const auto batch = write_models(
            std::vector<std::size_t>(todo.begin() + std::ptrdiff_t(next), todo.begin() + std::ptrdiff_t(next + take)));
        next += take;
        // the profile first: a runner that cannot profile is found before any latency is measured
        std::vector<std::size_t> to_profile;
        for (const auto i : batch)
            if (!profiles.count(nets[i].key) || setup.harness.force) to_profile.push_back(i);
        std::size_t without_kernels = 0;
        auto fresh = take_profiles(to_profile, without_kernels, false);
        if (without_kernels > 0 && profiles.empty() && fresh.empty()) {
            out.profiles = false;
            out.without_profile = 0;
            out.problems.clear();
            next = todo.size();  // nothing is over the budget: the runner cannot profile
            break;
        }
        out.profiled += fresh.size();
        if (!fresh.empty()) {
            measure::merge_kernel_profiles(profiles_path, fresh);
            for (auto& p : fresh) profiles[p.key] = std::move(p);
        }
        std::vector<measure::Network> to_measure;
        std::vector<std::size_t> measured_here;
        for (const auto i : batch)
            if (profiles.count(nets[i].key)) {
                to_measure.push_back(nets[i]);
                measured_here.push_back(i);
            }
        if (!to_measure.empty()) {
            const auto summary = run.harness().run(store, to_measure);
            run.disturbance.note(summary.conditions);
            chunk_items.push_back(std::move(measured_here));
            out.measured += summary.measured;
            out.failed += summary.failed;
        }
        for (const auto i : batch)
            if (done(i)) drop_model(i);
        progress.measured += take;
        progress.done += take;
        run.report();
    }
    out.over_budget = todo.size() - std::min(next, todo.size());
    std::vector<char> into_again(chunk_items.size(), 0);  // per chunk: measured into again_store

    // the second latencies, in the order the first were taken: each a few minutes after its first
    if (out.profiles && again_store) {
        std::vector<std::size_t> to_confirm;
        for (std::size_t i = 0; i < nets.size(); ++i)
            if (latency_in(store, nets[i].key) && profiles.count(nets[i].key) && !confirmed_ok(nets[i].key))
                to_confirm.push_back(i);
        for (std::size_t at = 0; at < to_confirm.size();) {
            const auto take = run.next_chunk(to_confirm.size() - at, setup.chunk, confirm_share);
            if (take == 0) break;
            const auto written = write_models(std::vector<std::size_t>(to_confirm.begin() + std::ptrdiff_t(at),
                                                                       to_confirm.begin() + std::ptrdiff_t(at + take)));
            at += take;
            std::vector<measure::Network> batch;
            for (const auto i : written) batch.push_back(nets[i]);
            if (!batch.empty()) {
                const auto summary = run.harness().run(*again_store, batch);
                run.disturbance.note(summary.conditions);
                chunk_items.push_back(written);
                into_again.push_back(1);
            }
            for (const auto i : written) drop_model(i);
            run.report();
        }
    }

    // a disturbed chunk's networks measured again (and profiled again, where the chunk took the
    // first latencies; the profile kept if this one fails)
    const auto measure_chunk_again = [&](std::size_t chunk, const std::vector<std::size_t>& items) {
        const auto written = write_models(items);
        if (!into_again[chunk]) {
            std::size_t without_kernels = 0;
            auto fresh = take_profiles(written, without_kernels, true);
            if (!fresh.empty()) {
                measure::merge_kernel_profiles(profiles_path, fresh);
                for (auto& p : fresh) profiles[p.key] = std::move(p);
            }
        }
        std::vector<measure::Network> again;
        for (const auto i : written) again.push_back(nets[i]);
        measure::RunConditions c;
        if (!again.empty()) c = run.harness_afresh().run(into_again[chunk] ? *again_store : store, again).conditions;
        for (const auto i : written) drop_model(i);
        return c;
    };
    run.retake_disturbed(chunk_items, measure_chunk_again);

    // where the two latencies disagree, a third decides: the median is kept, in both stores (a
    // resumed run then finds them agreeing); with no third, the first stays
    std::unordered_map<std::string, double> kept_latency;
    std::unordered_map<std::string, std::size_t> latencies_of;
    if (out.profiles && again_store) {
        std::vector<std::size_t> disagree;
        for (std::size_t i = 0; i < nets.size(); ++i) {
            const auto* first = latency_in(store, nets[i].key);
            const auto* second = latency_in(*again_store, nets[i].key);
            if (!first || !profiles.count(nets[i].key)) continue;
            if (!second) {
                ++out.unconfirmed;
                continue;
            }
            ++out.confirmed;
            const auto noise = [](const measure::Record& r) { return std::isfinite(r.spread) ? r.spread : 0.0; };
            const double bound = std::max(measure::reference_min_difference,
                                          measure::reference_spread_factor * std::max(noise(*first), noise(*second)));
            const auto [lo, hi] = std::minmax(first->latency_ms, second->latency_ms);
            latencies_of[nets[i].key] = 2;
            if (hi / lo - 1 > bound)
                disagree.push_back(i);
            else
                kept_latency[nets[i].key] = (lo + hi) / 2;
        }
        out.latency_disagreed = disagree.size();
        const auto text = [](double ms) { return measure::detail::fixed(ms, 4) + " ms"; };
        std::vector<std::pair<measure::Record, measure::Record>> firsts;
        for (const auto i : disagree)
            firsts.emplace_back(*latency_in(store, nets[i].key), *latency_in(*again_store, nets[i].key));
        std::vector<std::size_t> written;
        if (!disagree.empty() && run.next_chunk(disagree.size(), disagree.size(), confirm_share) == disagree.size()) {
            written = write_models(disagree);
            std::vector<measure::Network> batch;
            for (const auto i : written) batch.push_back(nets[i]);
            if (!batch.empty()) {
                run.disturbance.note(run.harness_afresh().run(*again_store, batch).conditions);
                std::vector<std::vector<std::size_t>> only_this(chunk_items.size());
                only_this.push_back(written);
                chunk_items.push_back(written);
                into_again.push_back(1);
                run.retake_disturbed(only_this, measure_chunk_again);
            }
            for (const auto i : written) drop_model(i);
        }
        for (std::size_t d = 0; d < disagree.size(); ++d) {
            const auto i = disagree[d];
            const auto& [first, second] = firsts[d];
            std::string line = nets[i].id + ": latency " + text(first.latency_ms) + ", then " + text(second.latency_ms);
            const auto* third = std::find(written.begin(), written.end(), i) != written.end()
                                    ? latency_in(*again_store, nets[i].key)
                                    : nullptr;
            if (!third) {
                out.disagreements.push_back(line + "; no third measurement (" +
                                            (written.empty() ? "the budget is spent" : "it failed") +
                                            "), the first is kept");
                continue;
            }
            std::vector<const measure::Record*> three{&first, &second, third};
            std::sort(three.begin(), three.end(),
                      [](const auto* a, const auto* b) { return a->latency_ms < b->latency_ms; });
            const measure::Record median = *three[1];
            out.disagreements.push_back(line + ", then " + text(third->latency_ms) + ": the median " +
                                        text(median.latency_ms) + " is kept");
            store.append(median);
            again_store->append(median);
            kept_latency[nets[i].key] = median.latency_ms;
            latencies_of[nets[i].key] = 3;
        }
        if (!written.empty()) {
            store.compact();
            again_store->compact();
        }
    }
    if (!out.profiles) {
        run.finish();
        out.disturbance = run.disturbance;
        out.seconds = run.elapsed();
        return out;
    }

    // the networks with a latency and a profile; first the profiler's cost across all of them
    const auto take_samples = [&] {
        out.rows.clear();
        out.networks.clear();
        out.pass_kernels = out.unmapped = out.merged = out.untimed = 0;
        std::vector<std::pair<std::size_t, double>> usable;  // network, its latency
        std::vector<ProfiledTotals> totals;
        for (std::size_t i = 0; i < nets.size(); ++i) {
            const auto* r = latency_in(store, nets[i].key);
            const auto p = profiles.find(nets[i].key);
            if (!r || p == profiles.end()) continue;
            const auto kept = kept_latency.find(nets[i].key);
            const double latency_ms = kept == kept_latency.end() ? r->latency_ms : kept->second;
            usable.emplace_back(i, latency_ms);
            ProfiledTotals t{0, p->second.kernels.size(), latency_ms};
            for (const auto& k : p->second.kernels) t.profiled_ms += k.ms;
            totals.push_back(t);
        }
        out.profiler_cost = fit_profiler_cost(totals, run_overhead_ms);
        std::vector<std::string> problems;
        for (const auto& [i, latency_ms] : usable) {
            const auto& p = profiles.at(nets[i].key);
            InContextSamples s;
            try {
                s = in_context_samples(*graph_of[i], nets[i].key, rules, p.kernels, p.nodes, latency_ms,
                                       run_overhead_ms, out.profiler_cost);
            } catch (const config_error& e) {
                problems.push_back(nets[i].id + ": " + e.what());
                continue;
            }
            out.pass_kernels += s.pass_kernels;
            out.unmapped += s.unmapped;
            out.merged += s.merged;
            out.untimed += s.untimed;
            const auto count = latencies_of.find(nets[i].key);
            out.networks.push_back({nets[i].key, nets[i].id, latency_ms, s.profiled_ms, s.profiler_ms, s.sampled_ms,
                                    s.scale, s.rows.size(), s.unmapped, s.merged,
                                    count == latencies_of.end() ? std::size_t(1) : count->second});
            for (auto& row : s.rows) out.rows.push_back(std::move(row));
        }
        return problems;
    };
    auto sample_problems = take_samples();

    // a profile far out of line with the others (its scale beyond profile_disagreement of the
    // median's) is taken once more: the host may have slowed during that one short run
    if (setup.profile_disagreement > 1 && out.networks.size() >= 3 && out.over_budget == 0) {
        std::vector<double> scales;
        for (const auto& n : out.networks) scales.push_back(n.scale);
        const double median = median_high(scales);
        std::unordered_map<std::string, std::size_t> index_of;
        for (std::size_t i = 0; i < nets.size(); ++i) index_of.emplace(nets[i].key, i);
        std::vector<std::size_t> again;
        for (const auto& n : out.networks)
            if (n.scale > median * setup.profile_disagreement || n.scale * setup.profile_disagreement < median)
                if (const auto it = index_of.find(n.key); it != index_of.end()) again.push_back(it->second);
        const auto written = write_models(again);
        std::size_t without_kernels = 0;
        auto fresh = take_profiles(written, without_kernels, true);
        for (const auto i : written) drop_model(i);
        if (!fresh.empty()) {
            out.reprofiled = fresh.size();
            out.profiled += fresh.size();
            measure::merge_kernel_profiles(profiles_path, fresh);
            for (auto& p : fresh) profiles[p.key] = std::move(p);
            sample_problems = take_samples();
        }
    }
    run.finish();
    for (auto& p : sample_problems) out.problems.push_back(std::move(p));
    out.disturbance = run.disturbance;
    out.seconds = run.elapsed();
    return out;
}
