#pragma once
/// @file fusion_probe_impl.hpp
/// The definitions of fusion_probe.hpp: compiled once into dnncost::compiled in compiled mode
/// (core/config.hpp), included by fusion_probe.hpp in header-only mode.
#include <dnncost/device/fusion_probe.hpp>

DNNCOST_FUNC auto dnncost::device::probe_fusion_rules(const std::vector<graph::Graph>& graphs,
                                                      const FusionProbeSetup& setup) -> FusionProbeResult {
    if (setup.runners.empty()) raise<config_error>("fusion probe: no runner command");
    if (setup.store.empty()) raise<config_error>("fusion probe: no results store path");
    setup.harness.check();
    auto options = setup.discovery;
    if (options.device.empty()) options.device = setup.device;
    options.check();
    if (!setup.rules_out.empty()) io::check_writable(setup.rules_out);
    if (!setup.evidence_out.empty()) io::check_writable(setup.evidence_out);

    const auto sidecar = measure::sidecar_path(setup.store);
    const auto info = measure::read_store_info(sidecar);
    std::error_code ec;
    const bool has_rows = std::filesystem::exists(setup.store, ec) && std::filesystem::file_size(setup.store, ec) > 0;
    if (info && has_rows && (info->device != setup.device || info->runners != setup.runners))
        raise<config_error>("fusion probe: ", setup.store.string(), " holds measurements of device '", info->device,
                            "' by other runners; probe this device into another store");
    measure::ResultsStore store(setup.store);
    measure::StoreInfo new_info{setup.device, setup.runners, info ? info->runner_device : std::string(),
                                setup.harness.to_json()};
    measure::write_store_info(sidecar, new_info);

    measure::RunnerPool pool(setup.runners, setup.pool);
    measure::Harness harness(pool, setup.harness);
    const auto dir =
        setup.model_dir.empty() ? std::filesystem::path(setup.store.string() + ".models") : setup.model_dir;
    HarnessMeasure measure(harness, store, dir, setup.seed, setup.opset, setup.events);
    const MeasureBatch batch = [&](const std::vector<graph::Graph>& gs) { return measure(gs); };
    FusionProbeResult out;
    out.discovery = discover_fusion_rules(graphs, batch, options);
    out.failed = measure.failed();
    out.model_errors = measure.errors();
    const auto& result = out.discovery;

    if (new_info.runner_device.empty() && !pool.device().empty()) {
        new_info.runner_device = pool.device();
        measure::write_store_info(sidecar, new_info);
    }
    if (!setup.rules_out.empty()) io::write_file_atomic(setup.rules_out, result.rules.to_text());
    if (!setup.evidence_out.empty())
        io::write_file_atomic(setup.evidence_out, result.to_json(options.threshold) + "\n");
    return out;
}
