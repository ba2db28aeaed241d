// dnncost_reproduce: every preset on every device of a data set, the same splits for all presets,
// several seeds; writes a markdown table of mean ± std of each metric and the training time.
//
//   dnncost_reproduce [--data CSV] [--presets additive,hifisage,brpnas] [--devices gold_6240,...]
//                     [--seeds 10] [--first-seed 0] [--train 100] [--val 100] [--test 0]
//                     [--sampling random|uniform] [--ensemble K] [--epochs N] [--threads T]
//                     [--precision auto|bf16|fp32] [--keep auto|trained|untrained] [--out results.md]
// The table is rewritten (atomically) after every device, so a long run can be followed and an
// interrupted one keeps what it finished.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <dnncost/cost/analytic.hpp>
#include <dnncost/estimators/ensemble.hpp>
#include <dnncost/estimators/registry.hpp>
#include <dnncost/io/file.hpp>
#include <dnncost/train/dataset.hpp>
#include <dnncost/train/metrics.hpp>
#include <dnncost/train/split.hpp>

using namespace dnncost;

namespace {
std::vector<std::string> split_list(const std::string& s) {
    std::vector<std::string> out;
    std::stringstream ss(s);
    for (std::string item; std::getline(ss, item, ',');)
        if (!item.empty()) out.push_back(item);
    return out;
}

struct Stat {
    std::vector<double> v;
    std::string format(int precision, double scale = 1.0) const {
        double mean = 0, squares = 0;
        for (double x : v) mean += x;
        mean /= static_cast<double>(v.size());
        for (double x : v) squares += (x - mean) * (x - mean);
        const double sd = v.size() > 1 ? std::sqrt(squares / static_cast<double>(v.size() - 1)) : 0.0;
        std::ostringstream os;
        os << std::fixed << std::setprecision(precision) << mean * scale << " ± " << sd * scale;
        return os.str();
    }
};

const std::vector<std::pair<std::string, int>> columns_shown{{"spearman", 3}, {"kendall", 3},  {"mape", 2},
                                                             {"within_1", 3}, {"within_5", 3}, {"within_10", 3}};
}  // namespace

int main(int argc, char** argv) try {
    std::map<std::string, std::string> arg{{"--data", DNNCOST_DATA_DIR "/nb201/latency_ms.csv"},
                                           {"--presets", "additive,hifisage,brpnas"},
                                           {"--devices", ""},
                                           {"--seeds", "10"},
                                           {"--first-seed", "0"},
                                           {"--train", "100"},
                                           {"--val", "100"},
                                           {"--test", "0"},
                                           {"--sampling", "random"},
                                           {"--ensemble", "0"},
                                           {"--epochs", "-1"},
                                           {"--threads", "0"},
                                           {"--precision", "auto"},
                                           {"--keep", "auto"},
                                           {"--out", "reproduce.md"}};
    for (int i = 1; i < argc; ++i) {
        const std::string key = argv[i];
        if (key == "--help" || key == "-h") {
            std::cout << "usage: dnncost_reproduce";
            for (const auto& [k, v] : arg) std::cout << " [" << k << " " << (v.empty() ? "all" : v) << "]";
            std::cout << '\n';
            return 0;
        }
        if (!arg.count(key) || i + 1 >= argc) raise<config_error>("unknown option or missing value: ", key);
        arg[key] = argv[++i];
    }
    const auto presets = split_list(arg["--presets"]);
    const std::size_t n_train = std::stoul(arg["--train"]), n_val = std::stoul(arg["--val"]),
                      n_test = std::stoul(arg["--test"]);
    const int seeds = std::stoi(arg["--seeds"]), first_seed = std::stoi(arg["--first-seed"]);
    const int ensemble = std::stoi(arg["--ensemble"]);
    const std::string& prec = arg["--precision"];
    const auto chosen = nn::precision_from_string(prec);
    if (!chosen && prec != "auto") raise<config_error>("--precision takes auto, bf16 or fp32, got '", prec, "'");
    const nn::Precision precision = chosen.value_or(nn::kernels::default_precision());
    const bool bf16 = precision == nn::Precision::bf16;
    const auto keep_choice = estimators::keep_from_string(arg["--keep"]);
    if (!keep_choice) raise<config_error>("--keep takes auto, trained or untrained, got '", arg["--keep"], "'");
    const estimators::Keep keep = *keep_choice;
    const auto sampling = train::parse_sampling(arg["--sampling"]);
    for (const auto& p : presets) (void)estimators::make_estimator(p);  // fail early on a typo

    train::DatasetOptions dopt;
    dopt.columns = split_list(arg["--devices"]);
    dopt.threads = static_cast<unsigned>(std::stoul(arg["--threads"]));
    std::cerr << "loading " << arg["--data"] << " ...\n";
    const auto ds = train::load_dataset(arg["--data"], dopt);
    std::cerr << ds.size() << " rows, " << ds.skipped().size() << " skipped\n";
    std::vector<double> macs;
    if (sampling == train::Sampling::uniform)
        macs = ds.map_graphs([](const graph::Graph& g) { return cost::total_cost(g).macs; });

    // results[device][preset][metric]
    std::map<std::string, std::map<std::string, std::map<std::string, Stat>>> results;
    const auto write_table = [&] {
        std::ostringstream md;
        md << "# dnncost: estimator accuracy on " << arg["--data"] << "\n\n"
           << n_train << " training, " << n_val << " validation samples (" << train::to_string(sampling)
           << " sampling); test on " << (n_test ? std::to_string(n_test) : std::string("all remaining")) << " rows; "
           << seeds << " seeds (" << first_seed << ".." << first_seed + seeds - 1
           << "), the same splits for every preset"
           << (ensemble >= 2 ? "; ensembles of " + std::to_string(ensemble) : "") << "; GNN GEMMs in "
           << nn::to_string(precision)
           << (bf16 ? (nn::kernels::bf16_in_hardware()
                           ? std::string(" on ") + nn::kernels::to_string(nn::kernels::bf16_unit())
                           : std::string(" (emulated, no bf16 unit)"))
                    : std::string())
           << " (--precision " << prec << ")"
           << (keep != estimators::Keep::automatic ? "; GNN model selection forced: --keep " + arg["--keep"]
                                                   : std::string())
           << ". Mean ± sample std over seeds. MAPE in %, ±b = fraction of test items within b % of the truth. "
           << "'nd' = excluding items whose truth is below 5 % of the median (degenerate NB201 cells).\n\n"
           << "| device | preset | Spearman | Kendall | MAPE % | ±1% | ±5% | ±10% | nd Spearman | nd MAPE % | nd ±10% |"
           << (ensemble >= 2 ? " cover ±2σ |" : "") << " epochs | train s | GNN kept |\n"
           << "|---|---|---|---|---|---|---|---|---|---|---|" << (ensemble >= 2 ? "---|" : "") << "---|---|---|\n";
        for (const auto& [device, per_preset] : results)
            for (const auto& preset : presets) {
                auto r = per_preset.at(preset);
                md << "| " << device << " | " << preset;
                for (const auto& [name, precision] : columns_shown)
                    md << " | " << r[name].format(precision, name == "mape" ? 100.0 : 1.0);
                md << " | " << r["nd_spearman"].format(3) << " | " << r["nd_mape"].format(2, 100.0) << " | "
                   << r["nd_within_10"].format(3);
                if (ensemble >= 2) md << " | " << r["coverage_2sigma"].format(3);
                md << " | " << r["epochs"].format(0) << " | " << r["train_seconds"].format(3) << " | "
                   << (r["trained_kept"].v.empty() ? std::string("–") : r["trained_kept"].format(2)) << " |\n";
            }
        md << "\n'GNN kept' = fraction of seeds (of seeds and members, for ensembles) in which the fit ended with "
              "the trained network rather than the untrained "
              "one (--keep auto: the trained one beat it out of bag; for GNN presets with an additive path the "
              "untrained "
              "network is the additive baseline; see estimators/model_selection.hpp).\n";
        io::write_file_atomic(arg["--out"], md.str());
        return md.str();
    };
    for (const auto& device : ds.columns()) {
        for (int seed = first_seed; seed < first_seed + seeds; ++seed) {
            const auto split = train::make_split(
                ds.size(), {n_train, n_val, n_test, sampling, static_cast<std::uint64_t>(seed)}, macs);
            const auto truth = ds.values(split.test, device);
            for (const auto& preset : presets) {
                std::unique_ptr<estimators::Estimator> est;
                // the GEMM arithmetic and the model selection, for the presets that have them
                estimators::PresetSettings settings;
                const auto options = estimators::preset_options();  // a map by value: held for the loop
                for (const auto& o : options.at(preset)) {
                    if (o.name == "precision") settings["precision"] = std::string(nn::to_string(precision));
                    if (o.name == "keep") settings["keep"] = std::string(estimators::to_string(keep));
                }
                if (ensemble >= 2)
                    est = estimators::make_ensemble(preset, ensemble, estimators::EnsembleEstimator::Resample::bootstrap,
                                                    settings);
                else
                    est = estimators::make_estimator(preset, settings);
                estimators::FitOptions fo;
                fo.seed = static_cast<std::uint64_t>(seed);
                fo.max_epochs = std::stoi(arg["--epochs"]);
                fo.threads = dopt.threads;
                const auto fit = est->fit(ds.subset(split.train, device), ds.subset(split.validation, device), fo);
                const auto pred = est->predict(ds.graphs(split.test));
                std::vector<double> mean;
                for (const auto& p : pred) mean.push_back(p.mean);
                const auto ev = train::evaluate(mean, truth);
                auto& r = results[device][preset];
                for (const auto& [name, value] : ev.all.fields()) r[name].v.push_back(value);
                for (const auto& [name, value] : ev.non_degenerate.fields()) r["nd_" + name].v.push_back(value);
                r["train_seconds"].v.push_back(fit.seconds);
                r["epochs"].v.push_back(fit.epochs);
                if (fit.trained_kept)  // GNN presets with validation data report their model selection
                    r["trained_kept"].v.push_back(*fit.trained_kept);
                if (ensemble >= 2) r["coverage_2sigma"].v.push_back(estimators::coverage_2sigma(pred, truth));
                std::cerr << device << " seed " << seed << " " << preset << ": spearman " << ev.all.spearman
                          << ", ±10% " << ev.all.within_10 << ", mape " << ev.all.mape << ", " << fit.epochs
                          << " epochs, " << fit.seconds << " s" << (fit.summary.empty() ? "" : "; " + fit.summary)
                          << "\n";
            }
        }
        write_table();
    }

    std::cout << write_table();
    return 0;
} catch (const std::exception& e) {
    std::cerr << "dnncost_reproduce: error: " << e.what() << '\n';
    return 1;
}
