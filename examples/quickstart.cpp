// Quick-start: the three things dnncost does, end to end on bundled real data.
//   1. an ONNX model as an operator graph, with analytic cost and a roofline latency;
//   2. a HiFi-SAGE latency estimator trained on 100 measured NB201 networks (+100 validation);
//   3. NSGA-II over a two-objective problem.
// Run from the repository root or pass the data directory as the first argument.
#include <array>
#include <cstdio>
#include <string>
#include <vector>

#include <dnncost/dnncost.hpp>
#include <dnncost/io/onnx.hpp>

using namespace dnncost;

int main(int argc, char** argv) try {
    const std::string data = argc > 1 ? argv[1] : DNNCOST_DATA_DIR;

    // 1. Read a network and cost it without learning.
    graph::Graph g = io::import_onnx(data + "/onnx/resnet50.onnx");
    cost::NodeCost total = cost::total_cost(g);
    cost::DeviceSpec cpu{.name = "edge-cpu", .peak_flops = 200e9, .bandwidth = 20e9};
    std::printf("resnet50: %zu operators, %.2f GMACs, %.1f M params, roofline %.2f ms on %s\n", g.num_nodes(),
                static_cast<double>(total.macs) / 1e9, static_cast<double>(total.params) / 1e6,
                cost::roofline(g, cpu).total * 1e3, cpu.name.c_str());

    // 2. Learn a device's latency from 100 measurements (+100 for validation).
    train::Dataset ds = train::load_dataset(data + "/nb201/latency_ms.csv", {.space = "nb201"});
    const auto split = train::make_split(ds.size(), {.n_train = 100, .n_validation = 100, .n_test = 1000, .seed = 7});
    // graphs and measured latencies of each part (NB201 graphs are built here, on demand)
    const auto tr = ds.subset(split.train, "gold_6240"), va = ds.subset(split.validation, "gold_6240"),
               te = ds.subset(split.test, "gold_6240");
    estimators::HiFiSage model;  // a GnnEstimator configured at compile time
    const auto fit = model.fit(tr, va, {.seed = 1, .max_epochs = 60, .threads = 2});
    const auto predicted = model.predict_mean(te.graphs);  // one latency per graph, in ms
    const auto m = train::compute_metrics(predicted, te.targets);
    std::printf("HiFi-SAGE on gold_6240: %d epochs in %.1f s; test Spearman %.3f, within 10%% %.2f\n", fit.epochs,
                fit.seconds, m.spearman, m.within_10);

    // 3. Search: a two-objective problem with a known Pareto front (x in [0, 2]).
    struct Schaffer {
        using Genome = std::vector<double>;
        std::size_t num_objectives() const { return 2; }
        std::vector<search::Bounds> bounds() const { return {{-10.0, 10.0}}; }
        std::array<double, 2> evaluate(const Genome& x) const { return {x[0] * x[0], (x[0] - 2) * (x[0] - 2)}; }
    };
    Schaffer problem;
    search::Nsga2 nsga(problem, {.population = 50, .generations = 100}, /*seed=*/42);
    const auto result = nsga.run();
    std::printf("NSGA-II: %zu front points after %zu evaluations\n", result.front.size(),
                static_cast<std::size_t>(result.evaluations));
    return 0;
} catch (const std::exception& e) {
    std::fprintf(stderr, "quickstart: %s\n", e.what());
    return 1;
}
