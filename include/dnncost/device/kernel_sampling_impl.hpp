#pragma once
/// @file kernel_sampling_impl.hpp
/// The definitions of kernel_sampling.hpp: compiled once into dnncost::compiled in compiled mode
/// (core/config.hpp), included by kernel_sampling.hpp in header-only mode.
#include <dnncost/device/kernel_sampling.hpp>

DNNCOST_FUNC auto dnncost::device::measure_kernel_samples(const std::vector<KernelSample>& samples,
                                                          const FusionRules& rules, const KernelSamplingSetup& setup)
    -> KernelSamplingResult {
    if (setup.runners.empty()) raise<config_error>("kernel sampling: no runner command");
    if (setup.store.empty()) raise<config_error>("kernel sampling: no results store path");
    if (!(setup.budget_minutes >= 0) || !std::isfinite(setup.budget_minutes))
        raise<config_error>("kernel sampling: the budget must be a finite number of minutes >= 0, got ",
                            setup.budget_minutes);
    if (setup.chunk < 1) raise<config_error>("kernel sampling: the chunk size must be at least 1");
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
        raise<config_error>("kernel sampling: ", setup.store.string(), " holds measurements of device '", info->device,
                            "' by other runners; sample this device into another store");
    measure::ResultsStore store(setup.store);
    measure::StoreInfo new_info{setup.device, setup.runners, info ? info->runner_device : std::string(),
                                setup.harness.to_json()};
    measure::write_store_info(sidecar, new_info);
    const auto dir =
        setup.model_dir.empty() ? std::filesystem::path(setup.store.string() + ".models") : setup.model_dir;
    std::filesystem::create_directories(dir, ec);
    if (!std::filesystem::is_directory(dir))
        raise<io_error>("kernel sampling: cannot create the model directory '", dir.string(), "'");

    KernelSamplingResult out;
    SamplingProgress progress;
    progress.total = samples.size();
    const auto done_in_store = [&](const std::string& key) {
        const auto* r = store.result(key);
        return r && r->ok() && !setup.harness.force;
    };
    std::vector<std::size_t> todo;
    for (std::size_t i = 0; i < samples.size(); ++i) {
        if (samples[i].key.empty())
            raise<config_error>("kernel sampling: sample ", i, " (", samples[i].config.kind, ") has no key");
        if (done_in_store(samples[i].key))
            ++out.from_store;
        else
            todo.push_back(i);
    }
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
        if (budget > 0) {
            const double elapsed = now() - start;
            if (elapsed >= budget) break;
            if (progress.measured > 0) {
                const double per = elapsed / double(progress.measured);
                const auto fit = static_cast<std::size_t>(std::floor((budget - elapsed) / std::max(per, 1e-9)));
                take = std::min(take, fit);
                if (take == 0) break;
            } else {
                take = 1;  // the first sample tells how long one takes
            }
        }
        std::vector<measure::Network> networks;
        std::vector<std::size_t> batch;
        for (std::size_t j = next; j < next + take; ++j) {
            const auto& s = samples[todo[j]];
            measure::Network n{s.key, "kernel:" + s.config.kind, dir / (s.key + ".onnx")};
            try {
                if (!std::filesystem::exists(n.model))
                    measure::write_model_for_runner(s.graph, n.model, setup.seed, setup.opset);
            } catch (const config_error& e) {
                out.model_errors.push_back("sample '" + s.key + "' (" + s.config.kind + "): " + e.what());
                continue;
            }
            networks.push_back(std::move(n));
            batch.push_back(todo[j]);
        }
        next += take;
        if (!networks.empty()) {
            if (!pool) {
                pool = std::make_unique<measure::RunnerPool>(setup.runners, setup.pool);
                harness = std::make_unique<measure::Harness>(*pool, setup.harness);
            }
            const auto summary = harness->run(store, networks);
            out.failed += summary.failed;
            out.measured += summary.measured;
        }
        progress.measured += take;
        progress.done += take;
        report();
    }
    out.over_budget = todo.size() - next;
    if (pool && new_info.runner_device.empty() && !pool->device().empty()) {
        new_info.runner_device = pool->device();
        measure::write_store_info(sidecar, new_info);
    }

    for (const auto& s : samples) {
        const auto* r = store.result(s.key);
        if (!(r && r->ok() && std::isfinite(r->latency_ms) && r->latency_ms >= 0)) continue;
        const auto kg = kernel_graph(s.graph, rules);
        KernelRow row{s.config.kind, s.key, {}, r->latency_ms, kg.num_reorders(), false};
        bool found = false;
        for (std::size_t k = 0; k < kg.kernels.size(); ++k) {
            if (kg.kernels[k].is_reorder()) continue;
            if (found)
                raise<config_error>("kernel sampling: sample '", s.key, "' (", s.config.kind,
                                    ") is more than one kernel under these rules");
            auto f = kernel_features(s.graph, kg, k, rules.layout.block);
            row.kind = f.kind.key;
            row.features = std::move(f.values);
            found = true;
        }
        if (!found) raise<config_error>("kernel sampling: sample '", s.key, "' has no kernel under these rules");
        out.rows.push_back(std::move(row));
    }
    out.seconds = now() - start;
    return out;
}
