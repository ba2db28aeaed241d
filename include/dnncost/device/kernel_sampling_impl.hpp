#pragma once
/// @file kernel_sampling_impl.hpp
/// The definitions of kernel_sampling.hpp: compiled once into dnncost::compiled in compiled mode
/// (core/config.hpp), included by kernel_sampling.hpp in header-only mode.
#include <dnncost/device/kernel_sampling.hpp>

DNNCOST_FUNC auto dnncost::device::measure_kernel_samples(const std::vector<KernelSample>& samples,
                                                          const FusionRules& rules, const KernelSamplingSetup& setup)
    -> KernelSamplingResult {
    detail::BudgetedRun run(setup, "kernel sampling");
    rules.check();
    run.open_store("sample");
    auto& store = run.store();

    KernelSamplingResult out;
    auto& progress = run.progress;
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
    run.report();

    // the model of sample i for the runner, written when missing; false (and the reason kept)
    // when it cannot be written
    const auto add_network = [&](std::size_t i, std::vector<measure::Network>& networks) {
        const auto& s = samples[i];
        measure::Network n{s.key, "kernel:" + s.config.kind, run.model_dir() / (s.key + ".onnx")};
        try {
            if (!std::filesystem::exists(n.model))
                measure::write_model_for_runner(s.graph, n.model, setup.seed, setup.opset);
        } catch (const config_error& e) {
            out.model_errors.push_back("sample '" + s.key + "' (" + s.config.kind + "): " + e.what());
            return false;
        }
        networks.push_back(std::move(n));
        return true;
    };
    std::vector<std::vector<std::size_t>> chunk_items;  // the samples of each chunk the harness ran
    std::size_t next = 0;
    while (next < todo.size()) {
        const std::size_t take = run.next_chunk(todo.size() - next, setup.chunk);
        if (take == 0) break;
        std::vector<measure::Network> networks;
        std::vector<std::size_t> batch;
        for (std::size_t j = next; j < next + take; ++j)
            if (add_network(todo[j], networks)) batch.push_back(todo[j]);
        next += take;
        if (!networks.empty()) {
            const auto summary = run.harness().run(store, networks);
            run.disturbance.note(summary.conditions);
            chunk_items.push_back(std::move(batch));
            out.failed += summary.failed;
            out.measured += summary.measured;
        }
        progress.measured += take;
        progress.done += take;
        run.report();
    }
    out.over_budget = todo.size() - next;
    run.retake_disturbed(chunk_items, [&](std::size_t, const std::vector<std::size_t>& items) {
        std::vector<measure::Network> networks;
        for (const auto i : items) add_network(i, networks);
        return run.harness_afresh().run(store, networks).conditions;
    });
    run.finish();

    for (const auto& s : samples) {
        const auto* r = store.result(s.key);
        if (!(r && r->ok() && std::isfinite(r->latency_ms) && r->latency_ms >= 0)) continue;
        const auto kg = kernel_graph(s.graph, rules);
        KernelRow row{s.config.kind, s.key, {}, r->latency_ms, kg.num_reorders(), false};
        bool found = false;
        std::size_t last = kg.kernels.size();  // the in-network reduction, which is not the sample's kernel
        if (s.in_network)
            while (last > 0 && kg.kernels[last - 1].is_reorder()) --last;
        for (std::size_t k = 0; k < kg.kernels.size(); ++k) {
            if (kg.kernels[k].is_reorder() || (s.in_network && k + 1 == last)) continue;
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
    out.disturbance = run.disturbance;
    out.seconds = run.elapsed();
    return out;
}
