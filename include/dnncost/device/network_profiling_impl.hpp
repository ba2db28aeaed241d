#pragma once
/// @file network_profiling_impl.hpp
/// The definitions of network_profiling.hpp: compiled once into dnncost::compiled in compiled mode
/// (core/config.hpp), included by network_profiling.hpp in header-only mode.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <memory>
#include <set>

#include <dnncost/device/kernel_check.hpp>
#include <dnncost/device/network_profiling.hpp>
#include <dnncost/measure/kernel_profiles.hpp>
#include <dnncost/measure/model_file.hpp>
#include <dnncost/measure/sidecar.hpp>
#include <dnncost/measure/store.hpp>

DNNCOST_FUNC auto dnncost::device::profile_networks(const std::vector<graph::Graph>& networks, const FusionRules& rules,
                                                    double run_overhead_ms, const NetworkProfilingSetup& setup)
    -> NetworkProfilingResult {
    if (setup.runners.empty()) raise<config_error>("network profiling: no runner command");
    if (setup.store.empty()) raise<config_error>("network profiling: no results store path");
    if (!(setup.budget_minutes >= 0) || !std::isfinite(setup.budget_minutes))
        raise<config_error>("network profiling: the budget must be a finite number of minutes >= 0, got ",
                            setup.budget_minutes);
    if (setup.chunk < 1) raise<config_error>("network profiling: the chunk size must be at least 1");
    setup.harness.check();
    rules.check();

    const auto steady_start = std::chrono::steady_clock::now();
    const auto now = [&] {
        return setup.clock ? setup.clock()
                           : std::chrono::duration<double>(std::chrono::steady_clock::now() - steady_start).count();
    };
    const double start = now();

    const auto sidecar = measure::sidecar_path(setup.store);
    const auto info = measure::read_store_info(sidecar);
    std::error_code ec;
    const bool has_rows = std::filesystem::exists(setup.store, ec) && std::filesystem::file_size(setup.store, ec) > 0;
    if (info && has_rows && (info->device != setup.device || info->runners != setup.runners))
        raise<config_error>("network profiling: ", setup.store.string(), " holds measurements of device '",
                            info->device, "' by other runners; profile this device into another store");
    // a damaged kernel file stops the run before anything is measured
    const auto profiles_path = measure::kernel_profiles_path(setup.store);
    std::map<std::string, measure::KernelProfile> profiles;
    for (auto& p : measure::read_kernel_profiles(profiles_path)) profiles[p.key] = std::move(p);
    measure::ResultsStore store(setup.store);
    measure::StoreInfo new_info{setup.device, setup.runners, info ? info->runner_device : std::string(),
                                setup.harness.to_json()};
    measure::write_store_info(sidecar, new_info);
    const auto dir =
        setup.model_dir.empty() ? std::filesystem::path(setup.store.string() + ".models") : setup.model_dir;
    std::filesystem::create_directories(dir, ec);
    if (!std::filesystem::is_directory(dir))
        raise<io_error>("network profiling: cannot create the model directory '", dir.string(), "'");

    NetworkProfilingResult out;
    std::vector<measure::Network> nets;  // one per distinct network, in the order given
    std::vector<const graph::Graph*> graph_of;
    std::set<std::string> seen;
    for (const auto& g : networks) {
        const auto key = measure::network_key(g);
        if (!seen.insert(key).second) continue;
        nets.push_back({key, g.name().empty() ? key : g.name(), dir / (key + ".onnx")});
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
    SamplingProgress progress;
    progress.total = nets.size();
    progress.done = out.from_store;
    const auto report = [&] {
        progress.elapsed_seconds = now() - start;
        const auto left = progress.total - progress.done;
        if (progress.measured > 0) {
            progress.seconds_per_sample = progress.elapsed_seconds / double(progress.measured);
            progress.eta_seconds = progress.seconds_per_sample * double(left);
        }
        if (left == 0) progress.eta_seconds = 0;
        if (setup.on_progress) setup.on_progress(progress);
    };
    report();

    std::unique_ptr<measure::RunnerPool> pool;
    std::unique_ptr<measure::Harness> harness;
    const double budget = setup.budget_minutes * 60.0;
    std::size_t next = 0;
    while (next < todo.size()) {
        std::size_t take = std::min(setup.chunk, todo.size() - next);
        if (profiles.empty()) take = 1;  // whether the runner profiles at all, on one network
        if (budget > 0) {
            const double elapsed = now() - start;
            if (elapsed >= budget) break;
            if (progress.measured > 0) {
                const double per = elapsed / double(progress.measured);
                const auto fit = static_cast<std::size_t>(std::floor((budget - elapsed) / std::max(per, 1e-9)));
                take = std::min(take, fit);
                if (take == 0) break;
            } else {
                take = 1;  // the first network tells how long one takes
            }
        }
        std::vector<std::size_t> batch;
        for (std::size_t j = next; j < next + take; ++j) {
            const auto i = todo[j];
            try {
                if (!std::filesystem::exists(nets[i].model))
                    measure::write_model_for_runner(*graph_of[i], nets[i].model, setup.seed, setup.opset);
            } catch (const config_error& e) {
                out.problems.push_back(nets[i].id + ": its model cannot be written: " + e.what());
                continue;
            }
            batch.push_back(i);
        }
        next += take;
        if (!batch.empty() && !pool) {
            pool = std::make_unique<measure::RunnerPool>(setup.runners, setup.pool);
            harness = std::make_unique<measure::Harness>(*pool, setup.harness);
        }
        // the profile first: a runner that cannot profile is found before any latency is measured
        std::vector<std::size_t> to_profile;
        std::vector<measure::Request> requests;
        for (const auto i : batch)
            if (!profiles.count(nets[i].key) || setup.harness.force) {
                measure::Request req{0, nets[i].model.string(), setup.harness.warmup, setup.harness.repeats};
                req.profile = true;
                requests.push_back(std::move(req));
                to_profile.push_back(i);
            }
        std::vector<measure::KernelProfile> fresh;
        std::size_t without_kernels = 0;
        if (!requests.empty())
            pool->run(requests, [&](std::size_t k, const measure::Outcome& o) {
                const auto& n = nets[to_profile[k]];
                if (!o.ok() || o.answer.kernels.empty()) {
                    if (o.ok()) ++without_kernels;
                    ++out.without_profile;
                    out.problems.push_back(n.id + ": no profile: " +
                                           (o.ok() ? std::string("the runner answered without kernels")
                                                   : std::string(to_string(o.failure)) + ": " + o.detail));
                    return;
                }
                measure::KernelProfile p{n.key, n.id, o.answer.kernels, {}};
                if (!o.answer.optimized_model.empty()) {
                    try {
                        p.nodes = read_runtime_nodes(o.answer.optimized_model);
                    } catch (const error& e) {
                        ++out.without_profile;
                        out.problems.push_back(n.id + ": the runner's optimised model: " + e.what());
                        p.kernels.clear();
                    }
                    std::error_code e;
                    std::filesystem::remove(o.answer.optimized_model, e);
                }
                if (!p.kernels.empty()) fresh.push_back(std::move(p));
            });
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
        for (const auto i : batch)
            if (profiles.count(nets[i].key)) to_measure.push_back(nets[i]);
        if (!to_measure.empty()) {
            const auto summary = harness->run(store, to_measure);
            out.measured += summary.measured;
            out.failed += summary.failed;
        }
        for (const auto i : batch)
            if (done(i)) drop_model(i);
        progress.measured += take;
        progress.done += take;
        report();
    }
    out.over_budget = todo.size() - std::min(next, todo.size());
    if (pool && new_info.runner_device.empty() && !pool->device().empty()) {
        new_info.runner_device = pool->device();
        measure::write_store_info(sidecar, new_info);
    }
    if (!out.profiles) {
        out.seconds = now() - start;
        return out;
    }

    for (std::size_t i = 0; i < nets.size(); ++i) {
        const auto* r = store.result(nets[i].key);
        const auto p = profiles.find(nets[i].key);
        if (!(r && r->ok() && std::isfinite(r->latency_ms) && r->latency_ms > 0) || p == profiles.end()) continue;
        InContextSamples s;
        try {
            s = in_context_samples(*graph_of[i], nets[i].key, rules, p->second.kernels, p->second.nodes, r->latency_ms,
                                   run_overhead_ms);
        } catch (const config_error& e) {
            out.problems.push_back(nets[i].id + ": " + e.what());
            continue;
        }
        out.pass_kernels += s.pass_kernels;
        out.unmapped += s.unmapped;
        out.merged += s.merged;
        out.untimed += s.untimed;
        out.networks.push_back({nets[i].key, nets[i].id, r->latency_ms, s.profiled_ms, s.sampled_ms, s.scale,
                                s.rows.size(), s.unmapped, s.merged});
        for (auto& row : s.rows) out.rows.push_back(std::move(row));
    }
    out.seconds = now() - start;
    return out;
}
