// Fusion rule discovery bound to the runner harness: a fake runner (tests/measure/fake_runner.sh)
// answers every request; the probe writes its model files, rules and evidence, keeps one store
// entry per repeat of a graph, and a second run with the same inputs measures nothing again.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <dnncost/device/fusion_probe.hpp>
#include <dnncost/io/file.hpp>

#include "measure/scratch.hpp"

#include "kernel_graph_fixtures.hpp"

using namespace dnncost;
using namespace kg_fixtures;
namespace fs = std::filesystem;

namespace {

using measure_tests::lines_of;

}  // namespace

TEST_CASE("fusion probe: discovery through the harness, resumable from its store") {
    const fs::path dir = fs::path(DNNCOST_BINARY_DIR) / "test_fusion_probe";
    fs::remove_all(dir);
    fs::create_directories(dir);
    Graph g("block");
    const int x = g.add_input("x", {1, 8, 8, 8});
    g.mark_output(same(g, "Relu", "relu", {batch_norm(g, "bn", conv(g, "conv", x, 8, 3))}));
    g.validate();

    device::FusionProbeSetup s;
    s.runners = {"bash '" + std::string(DNNCOST_TESTS_DIR) + "/measure/fake_runner.sh' good '" + dir.string() + "'"};
    s.device = "fake-device";
    s.store = dir / "probe.csv";
    s.rules_out = dir / "probe.rules";
    s.evidence_out = dir / "probe.json";
    s.harness.rounds = s.harness.max_rounds = 1;
    s.harness.warmup = 0;
    s.harness.repeats = 1;
    s.discovery.repeats = s.discovery.max_repeats = 2;
    s.discovery.candidate_blocks = {8};
    s.discovery.probe_channels = 16;
    s.discovery.probe_spatial = 4;
    s.discovery.probe_depth = 1;

    const auto probe = device::probe_fusion_rules({g}, s);
    const auto& first = probe.discovery;
    CHECK(probe.failed == 0);
    CHECK(probe.model_errors.empty());
    // every model answers 1 ms, the sinks too: nothing is saved by running operators together
    CHECK(first.rules.fusions.empty());
    CHECK(first.rules.device == "fake-device");
    CHECK(first.unmeasured == 0);
    CHECK(first.measurements > 0);
    for (const auto& e : first.evidence) CHECK_FALSE(e.fused);
    const auto requests = lines_of(dir / "requests.log");
    CHECK(requests == first.measurements);
    CHECK(device::FusionRules::parse(io::read_file(s.rules_out)) == first.rules);
    const auto evidence = io::read_file(s.evidence_out);
    CHECK(evidence.front() == '{');
    CHECK(evidence.find("\"evidence\"") != std::string::npos);
    // one store entry per graph and repeat
    measure::ResultsStore store(s.store);
    bool repeat2 = false;
    for (const auto& r : store.records()) repeat2 = repeat2 || r.key.find("/r2") != std::string::npos;
    CHECK(repeat2);
    CHECK(fs::exists(s.store.string() + ".models"));

    const auto second = device::probe_fusion_rules({g}, s).discovery;
    CHECK(lines_of(dir / "requests.log") == requests);  // all from the store
    CHECK(second.rules == first.rules);

    auto other = s;  // a store of another device is refused
    other.device = "another";
    CHECK_THROWS_WITH_AS(device::probe_fusion_rules({g}, other), doctest::Contains("holds measurements of device"),
                         config_error);
}
