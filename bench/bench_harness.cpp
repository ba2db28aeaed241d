// The measuring harness's cost per network against the pure timed runs it contains (Google
// Benchmark). The harness adds, per round of a network, a request and its answer through pipes,
// the runner's session set-up and warm-up runs, a round row appended and fsync'd to the store;
// per run the reference network and the store's compaction.
//
//   bench_harness [benchmark flags] [--store-dir DIR]
//       BM_HarnessInstant: a runner that answers at once (this program, started with
//       --instant-runner): everything measured is the harness's own cost. Counters: per_network
//       and per_request wall time.
//   bench_harness --runner 'CMD' [--networks N] [--no-reference] [--store-dir DIR] [benchmark flags]
//       BM_HarnessRunner: N NB201 networks (seed 1) measured with the default settings through
//       a real runner (bench/harness_cost.sh runs the bundled one). Counters: per_network wall
//       time, timed (the sum of the timed runs the runner reported, per network), and
//       overhead = wall / timed - 1 (the goal is at most 0.2); of it, warmup_share is what the
//       untimed warm-up runs take (estimated at each answer's mean latency), and
//       other_ms_per_request the rest per request (requests_per_network of them).
//       --no-reference leaves the reference network out, to tell its share of that rest;
//       --fresh-sessions and --interleave N change those two settings (--interleave 0
//       --fresh-sessions: every round a fresh session, round-robin over all networks).
//
// The stores go to --store-dir (default: a folder in the current directory, so that their
// fsyncs hit the disk a user's store would); they are removed afterwards.
#include <benchmark/benchmark.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

#include <dnncost/core/rng.hpp>
#include <dnncost/measure/harness.hpp>
#include <dnncost/measure/json.hpp>
#include <dnncost/measure/model_file.hpp>
#include <dnncost/measure/reference_model.hpp>
#include <dnncost/spaces/nb201.hpp>

namespace fs = std::filesystem;
using namespace dnncost;

namespace {
std::string g_self, g_runner;
fs::path g_store_dir = "bench_harness_stores";
int g_networks = 10;
bool g_reference = true;
measure::HarnessOptions g_options;  ///< the defaults, but for --fresh-sessions and --interleave

/// A runner that answers every request at once with 1 microsecond per timed run.
int instant_runner() {
    std::cout << R"({"device":{"name":"instant"}})" << std::endl;
    for (std::string line; std::getline(std::cin, line);) {
        const auto req = measure::json::parse(line);
        const auto id = req.find("id")->number;
        const auto repeats = static_cast<std::size_t>(req.find("repeats")->number);
        auto answer = measure::json::Value::object();
        answer.set("id", measure::json::Value::of(id));
        auto lat = measure::json::Value::array();
        for (std::size_t k = 0; k < repeats; ++k) lat.push(measure::json::Value::of(0.001));
        answer.set("latency_ms", std::move(lat));
        std::cout << measure::json::dump(answer) << std::endl;
    }
    return 0;
}

struct Workload {
    std::vector<measure::Network> networks;
    measure::ProvenanceOptions provenance;
};

/// `n` NB201 networks; exported for the runner when `export_models` (else dummy paths).
Workload workload(std::size_t n, bool export_models, const fs::path& dir) {
    Workload w;
    Rng rng(1);
    fs::create_directories(dir);
    if (g_reference) {
        w.provenance.reference_model = dir / "reference.onnx";
        w.provenance.reference_key = measure::network_key(measure::reference_graph());
        if (export_models) measure::write_reference_model(w.provenance.reference_model);
    }
    for (std::size_t i = 0; i < n; ++i) {
        const auto arch = nb201::to_string(nb201::from_index(static_cast<std::int64_t>(rng.below(15625))));
        const auto g = nb201::build_graph(arch);
        measure::Network net{measure::network_key(g) + "-" + std::to_string(i), arch,
                             dir / (std::to_string(i) + ".onnx")};
        if (export_models) measure::write_model_for_runner(g, net.model, 1);
        w.networks.push_back(std::move(net));
    }
    return w;
}

/// One run of the harness over the workload into a fresh store; returns the sum of the timed runs
/// (ms) and adds to `warmup_ms` an estimate of the untimed warm-up runs' time (W runs of each
/// answer at its mean timed latency).
double one_run(measure::RunnerPool& pool, const Workload& w, const fs::path& store_path, std::size_t& requests,
               double& warmup_ms) {
    fs::remove(store_path);
    measure::ResultsStore store(store_path);
    const measure::HarnessOptions& options = g_options;
    measure::Harness harness(pool, options, w.provenance);
    double timed_ms = 0;
    measure::HarnessEvents ev;
    ev.on_answer = [&](const measure::Network&, const measure::Answer& a) {
        double sum = 0;
        for (const double t : a.latency_ms) sum += t;
        timed_ms += sum;
        if (!a.latency_ms.empty()) warmup_ms += options.warmup * sum / static_cast<double>(a.latency_ms.size());
    };
    const auto summary = harness.run(store, w.networks, ev);
    requests += summary.requests;
    if (summary.measured != w.networks.size()) throw std::runtime_error("a network failed to measure");
    return timed_ms;
}

void BM_HarnessInstant(benchmark::State& state) {
    const auto n = static_cast<std::size_t>(state.range(0));
    const auto dir = g_store_dir / "instant";
    const auto w = workload(n, false, dir);
    measure::RunnerPool pool({"exec '" + g_self + "' --instant-runner"});
    std::size_t requests = 0, runs = 0;
    double warmup_ms = 0;
    for (auto _ : state) {
        one_run(pool, w, dir / "results.csv", requests, warmup_ms);
        ++runs;
    }
    const auto networks = static_cast<double>(n * runs);
    state.counters["per_network"] =
        benchmark::Counter(networks, benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
    state.counters["per_request"] =
        benchmark::Counter(static_cast<double>(requests), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
    fs::remove_all(dir);
}
BENCHMARK(BM_HarnessInstant)->Arg(10)->Arg(100)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_HarnessRunner(benchmark::State& state) {
    const auto n = static_cast<std::size_t>(state.range(0));
    const auto dir = g_store_dir / "runner";
    const auto w = workload(n, true, dir);
    measure::RunnerPool pool({g_runner});
    double timed_ms = 0, warmup_ms = 0;
    std::size_t requests = 0, runs = 0;
    const auto start = std::chrono::steady_clock::now();
    for (auto _ : state) {
        timed_ms += one_run(pool, w, dir / "results.csv", requests, warmup_ms);
        ++runs;
    }
    const double wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    const auto networks = static_cast<double>(n * runs);
    state.counters["per_network"] =
        benchmark::Counter(networks, benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
    state.counters["timed_ms_per_network"] = timed_ms / networks;
    state.counters["overhead"] = timed_ms > 0 ? wall_ms / timed_ms - 1 : 0;
    // where the overhead goes: the warm-up runs, and per request the rest (the runner's model
    // load and session, the answer, the store row; the reference network's runs included)
    state.counters["warmup_share"] = timed_ms > 0 ? warmup_ms / timed_ms : 0;
    state.counters["requests_per_network"] = static_cast<double>(requests) / networks;
    state.counters["other_ms_per_request"] = requests > 0 ? (wall_ms - timed_ms - warmup_ms) / static_cast<double>(requests) : 0;
    fs::remove_all(dir);
}
}  // namespace

int main(int argc, char** argv) {
    if (argc > 1 && std::string(argv[1]) == "--instant-runner") return instant_runner();
    std::error_code ec;
    g_self = fs::canonical("/proc/self/exe", ec).string();
    if (ec) g_self = fs::absolute(argv[0]).string();
    std::vector<char*> rest{argv[0]};
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        const bool has_value = i + 1 < argc;
        if (a == "--runner" && has_value)
            g_runner = argv[++i];
        else if (a == "--networks" && has_value)
            g_networks = std::max(1, std::atoi(argv[++i]));
        else if (a == "--no-reference")
            g_reference = false;
        else if (a == "--fresh-sessions")
            g_options.keep_sessions = false;
        else if (a == "--interleave" && has_value)
            g_options.interleave = std::max(0, std::atoi(argv[++i]));
        else if (a == "--store-dir" && has_value)
            g_store_dir = argv[++i];
        else
            rest.push_back(argv[i]);
    }
    g_store_dir = fs::absolute(g_store_dir) / ("bench_harness_" + std::to_string(::getpid()));
    if (!g_runner.empty())
        benchmark::RegisterBenchmark("BM_HarnessRunner", BM_HarnessRunner)
            ->Arg(g_networks)
            ->Iterations(1)
            ->Unit(benchmark::kSecond)
            ->UseRealTime();
    int n = static_cast<int>(rest.size());
    benchmark::Initialize(&n, rest.data());
    if (benchmark::ReportUnrecognizedArguments(n, rest.data())) return 1;
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    std::error_code rm;
    fs::remove_all(g_store_dir, rm);
    return 0;
}
