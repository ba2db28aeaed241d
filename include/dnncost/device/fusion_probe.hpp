#pragma once
/// @file fusion_probe.hpp
/// Fusion rule discovery (device/fusion_discovery.hpp) on a real device: the small graphs the
/// discovery asks for are written as ONNX models (measure::write_model_for_runner, with weights,
/// so the runtime folds and fuses as in a deployed model) and measured through runners by the
/// harness into a results store. Needs the `dnncost::onnx` target.
///
/// Every repeat of a graph is its own store entry (key "HASH/rN": the graph's canonical hash and
/// the repeat's number), so a discovery that is interrupted and run again with the same graphs
/// and options asks for the same entries in the same order, finds the finished ones in the store
/// and measures only the rest.
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <dnncost/core/config.hpp>
#include <dnncost/core/error.hpp>
#include <dnncost/device/fusion_discovery.hpp>
#include <dnncost/graph/graph.hpp>
#include <dnncost/io/file.hpp>
#include <dnncost/measure/harness.hpp>
#include <dnncost/measure/model_file.hpp>
#include <dnncost/measure/runner_pool.hpp>
#include <dnncost/measure/store.hpp>

namespace dnncost::device {

/// The discovery's measurement callback (a device::MeasureBatch) through a harness and a store:
/// latencies in ms, NaN for a graph whose measurement failed (the store says why).
class HarnessMeasure {
public:
    /// `model_dir` receives the model files (created when missing); `seed` seeds their weights;
    /// `opset` as in write_model_for_runner.
    HarnessMeasure(measure::Harness& harness, measure::ResultsStore& store, std::filesystem::path model_dir,
                   std::uint64_t seed = 0, int opset = 13, measure::HarnessEvents events = {})
        : m_harness(harness),
          m_store(store),
          m_dir(std::move(model_dir)),
          m_seed(seed),
          m_opset(opset),
          m_events(std::move(events)) {
        std::error_code ec;
        std::filesystem::create_directories(m_dir, ec);
        if (!std::filesystem::is_directory(m_dir))
            raise<io_error>("fusion probe: cannot create the model directory '", m_dir.string(), "'",
                            ec ? ": " + ec.message() : std::string());
    }

    /// A graph that cannot be written as a model (e.g. an integer constant whose values the graph
    /// does not know) is not measured: its latency is NaN and the reason is kept (errors()).
    /// @throws config_error when a runner cannot be started; io_error when a model file or the
    /// store cannot be written
    std::vector<double> operator()(const std::vector<graph::Graph>& graphs) {
        std::vector<measure::Network> networks;
        std::vector<std::string> keys;  // per graph; empty when it could not be written
        for (const auto& g : graphs) {
            const auto base = measure::network_key(g);
            const int repeat = ++m_seen[base];
            measure::Network n{
                base + "/r" + std::to_string(repeat), "fusion:" + g.name() + " r" + std::to_string(repeat), {}};
            const auto* done = m_store.result(n.key);
            if (!(done && done->ok()) || m_harness.options().force) {
                n.model = m_dir / (base + ".onnx");
                try {
                    if (!std::filesystem::exists(n.model)) measure::write_model_for_runner(g, n.model, m_seed, m_opset);
                } catch (const config_error& e) {
                    m_errors.push_back("graph '" + g.name() + "': " + e.what());
                    keys.emplace_back();
                    continue;
                }
            }
            keys.push_back(n.key);
            networks.push_back(std::move(n));
        }
        if (!networks.empty()) (void)m_harness.run(m_store, networks, m_events);
        std::vector<double> out;
        out.reserve(graphs.size());
        for (const auto& key : keys) {
            const auto* r = key.empty() ? nullptr : m_store.result(key);
            out.push_back(r && r->ok() && std::isfinite(r->latency_ms) && r->latency_ms >= 0 ? r->latency_ms
                                                                                             : std::nan(""));
            if (std::isnan(out.back())) ++m_failed;
        }
        return out;
    }

    /// Graph measurements that failed so far (the store has the runners' reasons).
    std::size_t failed() const { return m_failed; }
    /// Why graphs could not be written as models.
    const std::vector<std::string>& errors() const { return m_errors; }

private:
    measure::Harness& m_harness;
    measure::ResultsStore& m_store;
    std::filesystem::path m_dir;
    std::uint64_t m_seed;
    int m_opset;
    measure::HarnessEvents m_events;
    std::map<std::string, int> m_seen;
    std::size_t m_failed = 0;
    std::vector<std::string> m_errors;
};

/// What probe_fusion_rules needs: the runners and harness settings of `dnncost measure`, where to
/// keep the measurements, and the discovery's options.
struct FusionProbeSetup {
    std::vector<std::string> runners;    ///< runner commands (run with /bin/sh -c)
    std::string device;                  ///< the device's name, stored with the measurements and the rules
    std::filesystem::path store;         ///< results store of the probe (CSV; resumable)
    std::filesystem::path model_dir;     ///< model files; empty: "<store>.models" beside the store
    std::filesystem::path rules_out;     ///< when set: the rules' text form, written atomically
    std::filesystem::path evidence_out;  ///< when set: DiscoveryResult::to_json, written atomically
    measure::HarnessOptions harness{};
    measure::PoolOptions pool{};
    DiscoveryOptions discovery{};
    std::uint64_t seed = 0;           ///< of the weight values
    int opset = 13;                   ///< of the model files
    measure::HarnessEvents events{};  ///< progress, per-graph results
};

/// What probe_fusion_rules found, and which graphs could not be measured and why.
struct FusionProbeResult {
    DiscoveryResult discovery;
    std::size_t failed = 0;                 ///< graph measurements that failed (reasons in the store)
    std::vector<std::string> model_errors;  ///< graphs that could not be written as models
};

/// Discover the fusion rules of the device behind `setup.runners` for the operators of `graphs`,
/// e.g. the networks of data/onnx imported with io::import_onnx:
///
///     dnncost::device::FusionProbeSetup s;
///     s.runners = {"runners/onnxruntime/run --optimization all --threads 1"};
///     s.device = "ort-cpu-all-1t";
///     s.store = "fusion/ort-cpu-all-1t.csv";
///     s.rules_out = "fusion/ort-cpu-all-1t.rules";
///     s.evidence_out = "fusion/ort-cpu-all-1t.json";
///     const auto result = dnncost::device::probe_fusion_rules(graphs, s);  // result.discovery.rules
///
/// The device name goes into the rules; the store's sidecar records device, runners and settings
/// as `dnncost measure` does.
/// @throws config_error (bad options, a runner that cannot start, a store of another device),
/// io_error, parse_error (an existing file that is not a results store)
DNNCOST_FUNC FusionProbeResult probe_fusion_rules(const std::vector<graph::Graph>& graphs,
                                                  const FusionProbeSetup& setup);

}  // namespace dnncost::device

#if !defined(DNNCOST_COMPILED)
#include <dnncost/device/fusion_probe_impl.hpp>
#endif
