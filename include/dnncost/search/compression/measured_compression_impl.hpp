#pragma once
/// @file measured_compression_impl.hpp
/// The definitions of measured_compression.hpp: compiled once into dnncost::compiled in compiled mode
/// (core/config.hpp), included by measured_compression.hpp in header-only mode.
#include <dnncost/search/compression/measured_compression.hpp>

DNNCOST_FUNC auto dnncost::search::compression::run_measured_compression(const MeasuredCompressionOptions& o,
                                                                         const MeasuredCompressionEvents& events)
    -> MeasuredCompression {
    namespace fs = std::filesystem;
    (void)estimators::make_estimator(o.search.estimator);  // an unknown preset fails before any measurement
    std::error_code ec;
    fs::create_directories(o.out, ec);
    if (!fs::is_directory(o.out)) raise<io_error>("--out ", o.out.string(), ": cannot create the directory");
    const auto bytes = io::read_file(o.network);
    const int opset = io::onnx_opset(bytes, o.network.string());
    auto network = io::import_onnx(o.network);
    MeasuredCompression run;
    run.name = o.network.stem().string();
    if (network.name().empty()) network.set_name(run.name);
    const Pruner pruner(std::move(network));
    run.channel_groups = pruner.num_groups();
    run.layers_left_whole = pruner.analysis().fixed;
    if (events.on_network) events.on_network(run.name, pruner);

    run.store = o.store.empty() ? o.out / "results.csv" : o.store;
    measure::ResultsStore store(run.store);
    measure::StoreInfo info{"compress:" + run.name, {o.runner}, {}, o.harness.to_json()};
    if (const auto old = measure::read_store_info(measure::sidecar_path(run.store)); old)
        info.runner_device = old->runner_device;
    measure::write_store_info(measure::sidecar_path(run.store), info);
    measure::RunnerPool pool({o.runner}, o.pool);
    measure::Harness harness(pool, o.harness);
    measure::ScratchDir tmp;
    const auto model_file = [&](const graph::Graph& g, const std::string& key) {
        const auto path = tmp.path() / (key + ".onnx");
        if (!fs::exists(path)) measure::write_model_for_runner(g, path, o.search.seed, opset);
        return path;
    };
    LatencyOracle latency = [&](std::span<const graph::Graph* const> graphs) {
        std::vector<measure::Network> nets;
        for (const auto* g : graphs) {
            const auto key = measure::network_key(*g);
            const auto* present = store.result(key);
            measure::Network n{key, run.name + "#" + key.substr(0, 12), {}};
            if (!(present && present->ok())) n.model = model_file(*g, key);
            nets.push_back(std::move(n));
        }
        harness.run(store, nets, events.measuring);
        std::error_code e;
        for (const auto& n : nets)  // a pruned ResNet-50 with weights is tens of MB: keep no file
            if (!n.model.empty()) fs::remove(n.model, e);
        if (events.on_batch_done) events.on_batch_done();
        if (info.runner_device.empty() && !pool.device().empty()) {
            info.runner_device = pool.device();
            measure::write_store_info(measure::sidecar_path(run.store), info);
        }
        std::vector<std::optional<double>> out;
        for (const auto& n : nets) {
            const auto* r = store.result(n.key);
            out.push_back(r && r->ok() ? std::optional<double>(detail::as_stored(r->latency_ms)) : std::nullopt);
        }
        return out;
    };
    AccuracyOracle accuracy;
    std::unique_ptr<measure::RunnerPool> acc_pool;
    AccuracyCache acc_cache(o.out / "accuracy.csv");
    if (!o.accuracy.empty()) {
        measure::PoolOptions apo = o.pool;
        apo.runner.answers = measure::AnswerKind::accuracy;
        acc_pool = std::make_unique<measure::RunnerPool>(std::vector<std::string>{o.accuracy}, apo);
        accuracy = [&](std::span<const PruneGenome>, std::span<const graph::Graph* const> graphs) {
            std::vector<std::optional<double>> out(graphs.size());
            std::vector<measure::Request> requests;
            std::vector<std::size_t> which;
            std::vector<std::string> keys(graphs.size());
            for (std::size_t i = 0; i < graphs.size(); ++i) {
                keys[i] = measure::network_key(*graphs[i]);
                if (const auto* v = acc_cache.find(keys[i])) {
                    out[i] = *v;
                    continue;
                }
                requests.push_back({0, model_file(*graphs[i], keys[i]).string(), 0, 1});
                which.push_back(i);
            }
            if (requests.empty()) return out;
            acc_pool->run(requests, [&](std::size_t k, const measure::Outcome& a) {
                std::error_code e;
                fs::remove(requests[k].model, e);
                const auto i = which[k];
                if (a.ok() && a.answer.accuracy) {
                    out[i] = *a.answer.accuracy;
                    acc_cache.add(keys[i], *a.answer.accuracy);
                } else if (events.on_accuracy_failure) {
                    events.on_accuracy_failure(keys[i], std::string(measure::to_string(a.failure)), a.detail);
                }
            });
            return out;
        };
    }
    HandoverSearch search(pruner, o.search, latency, accuracy);
    search.set_estimator_cache({[&](const std::string& sig) {
                                    const auto f = o.out / ("estimator-" + sig + ".dnncost");
                                    std::error_code e;
                                    return fs::exists(f, e) ? io::read_file(f) : std::string();
                                },
                                [&](const std::string& sig, const std::string& b) {
                                    io::write_file_atomic(o.out / ("estimator-" + sig + ".dnncost"), b);
                                }});
    run.result = search.run(events.search);
    run.runner_device = info.runner_device;
    return run;
}
