// dnncost_reproduce_spaces: estimator accuracy on the search spaces beyond NB201 (FBNet, OFA
// latency tables; the networks measured here with ONNX Runtime), with the same splits for every
// preset and several seeds. Markdown table of mean ± std per setting, target and preset.
//
//   dnncost_reproduce_spaces --data CSV|STORE [--space S] [--columns a,b] [--spaces fbnet,kws,...]
//       [--mode specialised|generalised|multi|onnx] [--targets latency_ms,peak_memory_bytes]
//       [--presets additive,brpnas,hifisage,perfsage] [--seeds 10] [--first-seed 0] [--train 100]
//       [--val 100] [--test 1000] [--epochs -1] [--threads 2] [--coefficients either|nonnegative|free]
//       [--out FILE.md]
// --coefficients: signs of the additive preset's per-operator costs (estimators/ridge.hpp).
// Modes:
//   specialised  one model per space (or per column of a wide CSV) and target
//   generalised  one model on the training items of every space in --spaces together (each space
//                upsampled to >= 10 %), tested on each space's own test items (the specialised
//                splits of the same seed)
//   multi        --targets learnt by one perfsage model; the one-target presets learn each alone
//   onnx         trained on every space in --spaces together (upsampled), tested on the store's
//                ONNX model files (ids that are paths); per-model predictions go to stderr
// The table is rewritten (atomically) after every seed, so an interrupted run keeps what it did.
#include <algorithm>
#include <cmath>
#include <iomanip>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <dnncost/estimators/additive.hpp>
#include <dnncost/estimators/registry.hpp>
#include <dnncost/io/file.hpp>
#include <dnncost/io/onnx.hpp>
#include <dnncost/measure/store.hpp>
#include <dnncost/spaces/registry.hpp>
#include <dnncost/train/computed_targets.hpp>
#include <dnncost/train/dataset.hpp>
#include <dnncost/train/metrics.hpp>
#include <dnncost/train/split.hpp>
#include <dnncost/train/upsample.hpp>

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
        if (v.empty()) return "–";
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
/// The space a key names: its own (SPACE:ARCH, NB201 strings), else `fallback` (the --space of a
/// wide CSV, "onnx" for a results store's model paths).
std::string space_of(const std::string& key, const std::string& fallback) {
    if (const auto q = spaces::split_qualified(key)) return std::string(q->space->name);
    return fallback;
}
/// One fit: training and validation items, test groups, the targets.
struct Task {
    std::string setting;
    std::vector<std::size_t> train, validation;
    std::vector<std::pair<std::string, std::vector<std::size_t>>> tests;  // row label, items
};
}  // namespace

int main(int argc, char** argv) try {
    std::map<std::string, std::string> arg{{"--data", ""},
                                           {"--space", "nb201"},
                                           {"--columns", ""},
                                           {"--spaces", ""},
                                           {"--mode", "specialised"},
                                           {"--targets", ""},
                                           {"--presets", "additive,brpnas,hifisage,perfsage"},
                                           {"--seeds", "10"},
                                           {"--first-seed", "0"},
                                           {"--train", "100"},
                                           {"--val", "100"},
                                           {"--test", "1000"},
                                           {"--epochs", "-1"},
                                           {"--threads", "2"},
                                           {"--coefficients", "either"},
                                           {"--out", "reproduce_spaces.md"},
                                           {"--space-options", ""}};
    for (int i = 1; i < argc; ++i) {
        const std::string key = argv[i];
        if (key == "--help" || key == "-h") {
            std::cout << "usage: dnncost_reproduce_spaces";
            for (const auto& [k, v] : arg) std::cout << " [" << k << " " << v << "]";
            std::cout << '\n';
            return 0;
        }
        if (!arg.count(key) || i + 1 >= argc) raise<config_error>("unknown option or missing value: ", key);
        arg[key] = argv[++i];
    }
    const auto presets = split_list(arg["--presets"]);
    for (const auto& p : presets) (void)estimators::make_estimator(p);
    (void)estimators::RidgeFit::parse_signs(arg["--coefficients"]);  // fail early on a typo
    const std::string mode = arg["--mode"];
    if (mode != "specialised" && mode != "generalised" && mode != "multi" && mode != "onnx")
        raise<config_error>("--mode takes specialised, generalised, multi or onnx, got '", mode, "'");
    const std::size_t n_train = std::stoul(arg["--train"]), n_val = std::stoul(arg["--val"]),
                      n_test = std::stoul(arg["--test"]);
    const int seeds = std::stoi(arg["--seeds"]), first_seed = std::stoi(arg["--first-seed"]);
    const unsigned threads = static_cast<unsigned>(std::stoul(arg["--threads"]));
    const auto loader = [](const std::filesystem::path& p) { return io::import_onnx(p); };
    const bool store = measure::is_results_file(arg["--data"]);
    auto columns = split_list(arg["--columns"]);
    auto targets = split_list(arg["--targets"]);
    if (targets.empty()) targets = store ? std::vector<std::string>{"latency_ms"} : columns;
    std::cerr << "loading " << arg["--data"] << " ...\n";
    train::Dataset ds = [&] {
        if (store)
            return measure::load_results_dataset(arg["--data"], train::measured_columns(targets), false, loader,
                                                 spaces::space_options(arg["--space-options"]));
        train::DatasetOptions o;
        o.space = arg["--space"];
        o.columns = train::measured_columns(columns);
        o.threads = threads;
        o.space_options = spaces::space_options(arg["--space-options"]);
        return train::load_dataset(arg["--data"], o);
    }();
    train::add_computed_targets(ds, targets);
    if (targets.empty()) targets = ds.columns();
    const std::string fallback = store ? std::string("onnx") : arg["--space"];
    std::map<std::string, std::vector<std::size_t>> by_space;
    for (std::size_t i = 0; i < ds.size(); ++i) by_space[space_of(ds.key(i), fallback)].push_back(i);
    std::ostringstream counts;
    for (const auto& [s, items] : by_space) counts << (counts.tellp() > 0 ? ", " : "") << s << " " << items.size();
    std::cerr << ds.size() << " rows (" << counts.str() << "), " << ds.skipped().size() << " skipped\n";
    auto wanted = split_list(arg["--spaces"]);
    if (wanted.empty())
        for (const auto& [s, items] : by_space)
            if (s != "onnx") wanted.push_back(s);
    for (const auto& s : wanted)
        if (!by_space.count(s)) raise<config_error>("no rows of space '", s, "' in ", arg["--data"]);

    // results[setting][target][preset][metric]
    std::map<std::string, std::map<std::string, std::map<std::string, std::map<std::string, Stat>>>> results;
    int seeds_done = 0;
    const auto write_table = [&] {
        std::ostringstream md;
        md << "# dnncost: estimator accuracy, " << mode << ", on " << arg["--data"] << "\n\n"
           << "Rows per space: " << counts.str() << ". " << n_train << " training + " << n_val
           << " validation networks per space, tested on "
           << (n_test ? "at most " + std::to_string(n_test) + " other" : std::string("all other"))
           << " networks of the space (all of them where it has fewer); " << seeds_done
           << " seed(s) from " << first_seed << ", the same splits for every preset; epochs " << arg["--epochs"]
           << " (-1: preset default). "
           << "Mean ± sample std over seeds. MAPE in %, ±10% = fraction within 10 % of the truth.\n\n"
           << "| setting | target | preset | Spearman | MAPE % | ±10% | ±5% | epochs | train s |\n"
           << "|---|---|---|---|---|---|---|---|---|\n";
        for (auto& [setting, per_target] : results)
            for (auto& [target, per_preset] : per_target)
                for (const auto& preset : presets) {
                    if (!per_preset.count(preset)) continue;
                    auto& r = per_preset[preset];
                    md << "| " << setting << " | " << target << " | " << preset << " | " << r["spearman"].format(3)
                       << " | " << r["mape"].format(2, 100.0) << " | " << r["within_10"].format(3) << " | "
                       << r["within_5"].format(3) << " | " << r["epochs"].format(0) << " | "
                       << r["train_seconds"].format(1) << " |\n";
                }
        io::write_file_atomic(arg["--out"], md.str());
        return md.str();
    };

    const auto split_of = [&](const std::vector<std::size_t>& items, int seed) {
        const std::size_t rest = items.size() - std::min(items.size(), n_train + n_val);
        const auto sp = train::make_split(items.size(), {n_train, n_val, std::min(n_test, rest),
                                                         train::Sampling::random, static_cast<std::uint64_t>(seed)});
        train::Split out;
        for (auto i : sp.train) out.train.push_back(items[i]);
        for (auto i : sp.validation) out.validation.push_back(items[i]);
        for (auto i : sp.test) out.test.push_back(items[i]);
        return out;
    };
    const auto upsampled = [&](const std::vector<std::size_t>& items, int seed) {
        std::vector<std::string> group;
        for (auto i : items) group.push_back(space_of(ds.key(i), fallback));
        std::vector<std::size_t> out;
        for (auto k : train::upsample(group, 0.10, static_cast<std::uint64_t>(seed))) out.push_back(items[k]);
        return out;
    };
    const auto multi = [&](const std::vector<std::size_t>& items, const std::vector<std::string>& ts) {
        return ds.subset(items, ts);
    };

    for (int seed = first_seed; seed < first_seed + seeds; ++seed) {
        std::vector<Task> tasks;
        if (mode == "specialised" || mode == "multi") {
            for (const auto& s : wanted) {
                const auto sp = split_of(by_space[s], seed);
                tasks.push_back({s, sp.train, sp.validation, {{s, sp.test}}});
            }
        } else {
            Task t{"generalised", {}, {}, {}};
            for (const auto& s : wanted) {
                const auto sp = split_of(by_space[s], seed);
                t.train.insert(t.train.end(), sp.train.begin(), sp.train.end());
                t.validation.insert(t.validation.end(), sp.validation.begin(), sp.validation.end());
                if (mode == "generalised") t.tests.push_back({s + " (generalised)", sp.test});
            }
            t.train = upsampled(t.train, seed);
            if (mode == "onnx") {
                if (!by_space.count("onnx")) raise<config_error>("no ONNX model rows in ", arg["--data"]);
                t.tests.push_back({"real models (onnx)", by_space["onnx"]});
            }
            tasks.push_back(std::move(t));
        }
        for (const auto& task : tasks) {
            for (const auto& preset : presets) {
                estimators::FitOptions fo;
                fo.seed = static_cast<std::uint64_t>(seed);
                fo.max_epochs = std::stoi(arg["--epochs"]);
                fo.threads = threads;  // GEMM precision: the default (bf16 where the CPU has a bf16 unit)
                // per target alone, or (multi mode, a multi-target preset) all at once
                std::vector<std::vector<std::string>> fits;
                if (mode == "multi" &&
                    estimators::max_targets(*estimators::make_estimator(preset)) >= static_cast<int>(targets.size()))
                    fits.push_back(targets);
                else
                    for (const auto& t : targets) fits.push_back({t});
                for (const auto& ts : fits) {
                    auto est = estimators::make_estimator(
                        preset, preset == "additive" ? estimators::PresetSettings{{"coefficients", arg["--coefficients"]}}
                                                     : estimators::PresetSettings{});
                    const auto fit =
                        estimators::fit_targets(*est, multi(task.train, ts), multi(task.validation, ts), fo);
                    for (const auto& [label, items] : task.tests) {
                        const auto graphs = ds.graphs(items);
                        const auto pred = estimators::predict_targets(*est, graphs);
                        for (std::size_t k = 0; k < ts.size(); ++k) {
                            const auto truth = ds.values(items, ts[k]);
                            const auto ev = train::evaluate(pred[k], truth);
                            const std::string tname = ts[k] + (ts.size() > 1 ? " (joint)" : "");
                            auto& r = results[label][tname][preset];
                            for (const auto& [name, value] : ev.all.fields()) r[name].v.push_back(value);
                            r["epochs"].v.push_back(fit.epochs);
                            r["train_seconds"].v.push_back(fit.seconds);
                            std::cerr << label << " seed " << seed << " " << preset << " " << tname << ": spearman "
                                      << ev.all.spearman << ", ±10% " << ev.all.within_10 << ", mape " << ev.all.mape
                                      << ", " << fit.epochs << " epochs, " << fit.seconds << " s; " << fit.summary
                                      << "\n";
                            if (mode == "onnx")
                                for (std::size_t i = 0; i < items.size(); ++i)
                                    std::cerr << "  " << ds.key(items[i]) << " " << ts[k] << " measured " << truth[i]
                                              << " predicted " << pred[k][i] << "\n";
                        }
                    }
                }
            }
        }
        ++seeds_done;
        write_table();
    }
    std::cout << write_table();
    return 0;
} catch (const std::exception& e) {
    std::cerr << "dnncost_reproduce_spaces: error: " << e.what() << '\n';
    return 1;
}
