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
    const auto measured_ok = [&](const std::string& key) {
        const auto* r = store.result(key);
        return r && r->ok() && !setup.harness.force;
    };
    const auto done = [&](std::size_t i) { return measured_ok(nets[i].key) && profiles.count(nets[i].key) > 0; };
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
        const std::size_t take = run.next_chunk(todo.size() - next, profiles.empty() ? 1 : setup.chunk);
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
    // a disturbed chunk's networks profiled and measured again, the profile kept if this one fails
    run.retake_disturbed(chunk_items, [&](const std::vector<std::size_t>& items) {
        const auto written = write_models(items);
        std::size_t without_kernels = 0;
        auto fresh = take_profiles(written, without_kernels, true);
        if (!fresh.empty()) {
            measure::merge_kernel_profiles(profiles_path, fresh);
            for (auto& p : fresh) profiles[p.key] = std::move(p);
        }
        std::vector<measure::Network> again;
        for (const auto i : written) again.push_back(nets[i]);
        measure::RunConditions c;
        if (!again.empty()) c = run.harness_afresh().run(store, again).conditions;
        for (const auto i : written) drop_model(i);
        return c;
    });
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
            const auto* r = store.result(nets[i].key);
            const auto p = profiles.find(nets[i].key);
            if (!(r && r->ok() && std::isfinite(r->latency_ms) && r->latency_ms > 0) || p == profiles.end()) continue;
            usable.emplace_back(i, r->latency_ms);
            ProfiledTotals t{0, p->second.kernels.size(), r->latency_ms};
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
            out.networks.push_back({nets[i].key, nets[i].id, latency_ms, s.profiled_ms, s.profiler_ms, s.sampled_ms,
                                    s.scale, s.rows.size(), s.unmapped, s.merged});
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
