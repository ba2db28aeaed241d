#pragma once
/// @file kernel_sampling.hpp
/// Measuring kernel samples (cost/kernel_sampler.hpp) on a real device: each sample's graph is
/// written as an ONNX model with seeded weights and measured by the harness into a results store
/// under its canonical hash, so a run that was interrupted, or is repeated with more samples,
/// measures only what the store lacks. Measuring goes in chunks; with a time budget, the time per
/// sample measured so far decides how many more fit. The result is one row per measured sample:
/// its kind, its kernel's features (features/kernel_features.hpp) and its latency. Needs the
/// `dnncost::onnx` target.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <dnncost/core/error.hpp>
#include <dnncost/cost/fusion_rules.hpp>
#include <dnncost/cost/kernel_graph.hpp>
#include <dnncost/cost/kernel_sampler.hpp>
#include <dnncost/features/kernel_features.hpp>
#include <dnncost/measure/harness.hpp>
#include <dnncost/measure/model_file.hpp>
#include <dnncost/measure/runner_pool.hpp>
#include <dnncost/measure/store.hpp>

namespace dnncost::measure {

/// Where a sampling run stands.
struct SamplingProgress {
    std::size_t done = 0;        ///< samples with a result (from the store or measured now)
    std::size_t total = 0;       ///< samples asked for
    std::size_t measured = 0;    ///< measured in this run
    double elapsed_seconds = 0;  ///< of this run
    double seconds_per_sample = std::nan("");  ///< NaN until something was measured
    double eta_seconds = std::nan("");         ///< for the samples left (NaN: unknown yet)
};

/// A measured sample, ready for a per-kind regressor.
struct KernelRow {
    std::string kind;  ///< kind key of the sample's kernel
    std::string key;   ///< the store key (canonical graph hash)
    std::vector<double> features;
    double latency_ms = 0;
    /// Reorder kernels the layout rule put around the sample's kernel: their time is in the
    /// latency too.
    std::size_t reorders = 0;
};

struct KernelSamplingSetup {
    std::vector<std::string> runners;  ///< runner commands (run with /bin/sh -c)
    std::string device;                ///< stored in the store's sidecar
    std::filesystem::path store;       ///< results store (CSV; resumable)
    std::filesystem::path model_dir;   ///< model files; empty: "<store>.models" beside the store
    HarnessOptions harness{};
    PoolOptions pool{};
    std::uint64_t seed = 0;  ///< of the weight values
    int opset = 13;
    double budget_minutes = 0;  ///< 0: no time budget
    std::size_t chunk = 16;     ///< samples handed to the harness at once
    std::function<void(const SamplingProgress&)> on_progress;
    /// Seconds since an arbitrary origin; empty: a steady clock. Lets a caller (or a test)
    /// decide what elapsed time means.
    std::function<double()> clock;
};

struct KernelSamplingResult {
    std::vector<KernelRow> rows;  ///< every sample with a result, in sample order
    std::size_t measured = 0;     ///< in this run
    std::size_t from_store = 0;   ///< found in the store
    std::size_t over_budget = 0;  ///< not measured: the time budget ran out
    std::size_t failed = 0;       ///< measurements that failed (the store has the reasons)
    std::vector<std::string> model_errors;
    double seconds = 0;
};

/// Measure `samples` (single-kernel graphs under `rules`) and return their rows.
/// @throws config_error (no runner or store, bad options, a store of another device or runners,
/// a sample that is not one kernel), io_error, parse_error (an existing file that is not a store)
inline KernelSamplingResult measure_kernel_samples(const std::vector<cost::KernelSample>& samples,
                                                   const cost::FusionRules& rules, const KernelSamplingSetup& setup) {
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

    const auto sidecar = sidecar_path(setup.store);
    const auto info = read_store_info(sidecar);
    std::error_code ec;
    const bool has_rows = std::filesystem::exists(setup.store, ec) && std::filesystem::file_size(setup.store, ec) > 0;
    if (info && has_rows && (info->device != setup.device || info->runners != setup.runners))
        raise<config_error>("kernel sampling: ", setup.store.string(), " holds measurements of device '", info->device,
                            "' by other runners; sample this device into another store");
    ResultsStore store(setup.store);
    StoreInfo new_info{setup.device, setup.runners, info ? info->runner_device : std::string(),
                       setup.harness.to_json()};
    write_store_info(sidecar, new_info);
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

    std::unique_ptr<RunnerPool> pool;
    std::unique_ptr<Harness> harness;
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
        std::vector<Network> networks;
        std::vector<std::size_t> batch;
        for (std::size_t j = next; j < next + take; ++j) {
            const auto& s = samples[todo[j]];
            Network n{s.key, "kernel:" + s.config.kind, dir / (s.key + ".onnx")};
            try {
                if (!std::filesystem::exists(n.model)) write_model_for_runner(s.graph, n.model, setup.seed, setup.opset);
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
                pool = std::make_unique<RunnerPool>(setup.runners, setup.pool);
                harness = std::make_unique<Harness>(*pool, setup.harness);
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
        write_store_info(sidecar, new_info);
    }

    for (const auto& s : samples) {
        const auto* r = store.result(s.key);
        if (!(r && r->ok() && std::isfinite(r->latency_ms) && r->latency_ms >= 0)) continue;
        const auto kg = cost::kernel_graph(s.graph, rules);
        KernelRow row{s.config.kind, s.key, {}, r->latency_ms, kg.num_reorders()};
        bool found = false;
        for (std::size_t k = 0; k < kg.kernels.size(); ++k) {
            if (kg.kernels[k].is_reorder()) continue;
            if (found)
                raise<config_error>("kernel sampling: sample '", s.key, "' (", s.config.kind,
                                    ") is more than one kernel under these rules");
            auto f = features::kernel_features(s.graph, kg, k, rules.layout.block);
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

}  // namespace dnncost::measure
