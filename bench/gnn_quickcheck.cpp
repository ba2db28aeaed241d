// Quick real-data check of the GNN presets on NAS-Bench-201 latencies: for each device,
// train on 100 random architectures, validate on 100 others, test on 2,000 more; prints
// Spearman rho, the fraction within +-10 % and the training time.
// Usage: gnn_quickcheck [preset=hifisage] [devices=gold_6240,pixel3,1080ti_1] [seeds=1] [test=2000]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

#include <dnncost/estimators/presets.hpp>
#include <dnncost/io/csv.hpp>
#include <dnncost/spaces/nb201.hpp>

using namespace dnncost;

namespace {
std::vector<std::string> split(const std::string& s, char sep) {
    std::vector<std::string> out;
    std::stringstream ss(s);
    for (std::string x; std::getline(ss, x, sep);) out.push_back(x);
    return out;
}
template <class E>
void run(const std::vector<std::string>& devices, int seeds, int n_test) {
    // the project's CSV reader: CRLF line ends, field counts and numbers checked with file and line
    const auto table = io::read_csv(std::string(DNNCOST_DATA_DIR) + "/nb201/latency_ms.csv");
    const auto& header = table.header;
    std::vector<std::string> archs;
    std::vector<std::vector<double>> lat;
    for (std::size_t row = 0; row < table.size(); ++row) {
        archs.push_back(table.rows[row][0]);
        std::vector<double> v;
        for (std::size_t i = 1; i < header.size(); ++i) v.push_back(io::require_number(table, row, i));
        lat.push_back(v);
    }
    // 100 training and 100 validation networks, then the test networks
    if (n_test < 1 || 200 + static_cast<std::size_t>(n_test) > archs.size())
        raise<config_error>("the test set must hold 1 to ", archs.size() > 200 ? archs.size() - 200 : 0,
                            " networks, got ", n_test);
    for (const auto& dev : devices) {
        // column 0 holds the architectures, not a device (read_csv refuses a file without a header)
        const auto it = std::find(header.begin() + 1, header.end(), dev);
        if (it == header.end()) {
            std::cerr << "unknown device " << dev << "\n";
            continue;
        }
        const auto col = static_cast<std::size_t>(it - header.begin()) - 1;
        for (int seed = 0; seed < seeds; ++seed) {
            Rng rng(static_cast<std::uint64_t>(1000 + seed));
            std::vector<std::size_t> idx(archs.size());
            std::iota(idx.begin(), idx.end(), 0);
            rng.shuffle(idx.begin(), idx.end());
            std::vector<graph::Graph> graphs;
            const std::size_t total = 200 + static_cast<std::size_t>(n_test);
            for (std::size_t i = 0; i < total; ++i) graphs.push_back(nb201::build_graph(archs[idx[i]]));
            train::TrainData tr, va, te;
            for (std::size_t i = 0; i < total; ++i) {
                auto& d = i < 100 ? tr : (i < 200 ? va : te);
                d.graphs.push_back(&graphs[i]);
                d.targets.push_back(lat[idx[i]][col]);
            }
            E est;
            estimators::FitOptions o;
            o.seed = static_cast<std::uint64_t>(seed);
            o.threads = 1;
            if (const char* e = std::getenv("QC_EPOCHS")) o.max_epochs = std::atoi(e);
            if (std::getenv("QC_VERBOSE"))
                o.on_epoch = [](const std::string& line) {
                    std::cerr << line << "\n";
                    return false;
                };
            const auto r = est.fit(tr, va, o);
            const auto p = est.predict_mean(te.graphs, 2);
            int within = 0;
            for (std::size_t i = 0; i < p.size(); ++i) within += std::abs(p[i] - te.targets[i]) <= 0.1 * te.targets[i];
            std::cout << dev << " seed " << seed << ": spearman " << train::spearman(p, te.targets) << "  acc10 "
                      << static_cast<double>(within) / static_cast<double>(p.size()) << "  epochs " << r.epochs
                      << "  fit " << r.seconds << " s" << std::endl;
        }
    }
}
}  // namespace

// Variants for a quick ablation (same recipe, one change each).
constexpr nn::GnnConfig v_lcm = [] {
    auto c = estimators::hifi_sage;
    c.readout = nn::Readout::lcm;
    return c;
}();
constexpr nn::GnnConfig v_sum = [] {
    auto c = estimators::hifi_sage;
    c.readout = nn::Readout::sum;
    return c;
}();
constexpr nn::GnnConfig v_mean = [] {
    auto c = estimators::hifi_sage;
    c.readout = nn::Readout::sum_mean_max;
    return c;
}();
constexpr nn::GnnConfig v_small = [] {
    auto c = estimators::hifi_sage;
    c.depth = 3;
    c.dropout = 0.0f;
    c.readout = nn::Readout::sum;
    return c;
}();

int main(int argc, char** argv) try {
    const std::string preset = argc > 1 ? argv[1] : "hifisage";
    const auto devices = split(argc > 2 ? argv[2] : "gold_6240,pixel3,1080ti_1", ',');
    const int seeds = argc > 3 ? std::stoi(argv[3]) : 1;
    const int n_test = argc > 4 ? std::stoi(argv[4]) : 2000;
    if (preset == "brpnas")
        run<estimators::BrpNas>(devices, seeds, n_test);
    else if (preset == "lcm")
        run<estimators::GnnEstimator<v_lcm>>(devices, seeds, n_test);
    else if (preset == "sum")
        run<estimators::GnnEstimator<v_sum>>(devices, seeds, n_test);
    else if (preset == "smm")
        run<estimators::GnnEstimator<v_mean>>(devices, seeds, n_test);
    else if (preset == "small")
        run<estimators::GnnEstimator<v_small>>(devices, seeds, n_test);
    else
        run<estimators::HiFiSage>(devices, seeds, n_test);
    return 0;
} catch (const std::exception& e) {
    std::cerr << "gnn_quickcheck: error: " << e.what() << '\n';
    return 1;
}
