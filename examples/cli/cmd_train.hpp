#pragma once
// `dnncost train`, `dnncost eval`, `dnncost predict`: learn a cost estimator from measurements,
// evaluate a saved one, predict with it.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iomanip>
#include <iostream>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "common.hpp"

#include <dnncost/cost/analytic.hpp>
#include <dnncost/estimators/additive.hpp>
#include <dnncost/estimators/registry.hpp>
#include <dnncost/io/file.hpp>
#include <dnncost/io/onnx.hpp>
#include <dnncost/io/serialize.hpp>
#include <dnncost/measure/store.hpp>
#include <dnncost/spaces/registry.hpp>
#include <dnncost/train/computed_targets.hpp>
#include <dnncost/train/dataset.hpp>
#include <dnncost/train/metrics.hpp>
#include <dnncost/train/split.hpp>
#include <dnncost/train/upsample.hpp>

namespace dnncost::cli {

namespace train_detail {

inline json metrics_json(const train::Metrics& m) {
    json j;
    for (const auto& [name, value] : m.fields()) {
        if (name == "n")
            j[name] = m.n;
        else if (std::isfinite(value))
            j[name] = value;
        else
            j[name] = nullptr;
    }
    return j;
}

/// Flat report: the metrics on all items at top level, the non-degenerate ones under a key.
inline json evaluation_json(const train::AccuracyReport& e) {
    json j = metrics_json(e.all);
    j["non_degenerate"] = metrics_json(e.non_degenerate);
    j["n_degenerate"] = e.n_degenerate;
    j["degenerate_threshold"] = e.degenerate_threshold;
    return j;
}

inline void print_metrics(std::ostream& os, const std::string& label, const train::Metrics& m) {
    os << std::fixed << std::setprecision(4) << label << " (n=" << m.n << "): spearman " << m.spearman << "  kendall "
       << m.kendall << "  mape " << std::setprecision(2) << 100 * m.mape << "%  rmse " << std::setprecision(4) << m.rmse
       << "  within ±1% " << std::setprecision(3) << m.within_1 << "  ±5% " << m.within_5 << "  ±10% " << m.within_10
       << '\n';
    os.unsetf(std::ios::floatfield);
}

inline train::Dataset load(const std::string& path, const std::string& space, const std::string& space_options,
                           std::vector<std::string> columns, bool strict) {
    train::DatasetOptions opt;
    opt.space = space;
    opt.space_options = spaces::space_options(space_options);
    if (const auto* s = spaces::find_space_or_null(space)) spaces::check_space_options(*s, opt.space_options);
    // computed targets (train/computed_targets.hpp) are not read from the file
    opt.columns = train::measured_columns(columns);
    opt.strict = strict;
    opt.loader = [](const std::filesystem::path& p) { return io::import_onnx(p); };
    // a results store of `dnncost measure` (known by its header): its ok rows, keyed by id
    auto ds = measure::is_results_file(path)
                  ? measure::load_results_dataset(path, opt.columns, strict, opt.loader, opt.space_options)
                  : train::load_dataset(path, opt);
    train::add_computed_targets(ds, columns);
    const auto& skipped = ds.skipped();
    for (std::size_t i = 0; i < skipped.size() && i < 10; ++i)
        std::cerr << "dnncost: skipped " << printable(ds.source()) << ":" << skipped[i].line << ": "
                  << printable(skipped[i].reason) << '\n';
    if (skipped.size() > 10) std::cerr << "dnncost: ... and " << skipped.size() - 10 << " more skipped rows\n";
    std::cerr << "dnncost: " << ds.size() << " rows (" << ds.distinct_graphs() << " distinct graphs) from "
              << ds.source() << (skipped.empty() ? "" : ", " + std::to_string(skipped.size()) + " skipped") << '\n';
    return ds;
}

/// Operator types a model never saw in training, over many inputs; warn() says it once.
struct UnknownOperators {
    std::set<std::string> types;
    std::size_t inputs = 0, total = 0;
    template <class Graphs>
    void add(const estimators::Estimator& est, const Graphs& graphs) {
        for (const graph::Graph* g : graphs) {
            const auto u = estimators::unknown_operators(est, *g);
            inputs += !u.empty();
            types.insert(u.begin(), u.end());
            ++total;
        }
    }
    void warn() const {
        if (types.empty()) return;
        std::string list;
        for (const auto& t : types) list += (list.empty() ? "" : ", ") + t;
        std::cerr << "dnncost: warning: " << inputs << " of " << total
                  << " input(s) contain operator types the model never saw in training (" << list
                  << "): their predictions are extrapolations\n";
    }
};

/// Predictions for the given items, in chunks, so that a whole NB201 data set (4 GB of graphs)
/// is never built at once.
inline std::vector<estimators::Prediction> predict_items(const estimators::Estimator& est, const train::Dataset& ds,
                                                         const std::vector<std::size_t>& items) {
    constexpr std::size_t chunk = 2048;
    std::vector<estimators::Prediction> out;
    out.reserve(items.size());
    UnknownOperators unknown;
    for (std::size_t s = 0; s < items.size(); s += chunk) {
        const auto part = std::span(items).subspan(s, std::min(chunk, items.size() - s));
        const auto graphs = ds.graphs(part);
        unknown.add(est, graphs);
        const auto p = est.predict(graphs);
        out.insert(out.end(), p.begin(), p.end());
    }
    unknown.warn();
    return out;
}

/// A non-finite prediction (a corrupted or diverged model) is an error naming the input; a
/// negative one is reported once on stderr (a linear head extrapolating past its data).
template <class Name>
void check_predictions(const std::vector<estimators::Prediction>& p, Name&& name) {
    std::size_t negative = 0, first = 0;
    for (std::size_t i = 0; i < p.size(); ++i) {
        if (!std::isfinite(p[i].mean) || !std::isfinite(p[i].sigma))
            raise<error>("the model predicts a non-finite value (", p[i].mean, ") for '", name(i),
                         "': the model file is corrupt or the input lies far outside its training data");
        if (p[i].mean < 0 && negative++ == 0) first = i;
    }
    if (negative > 0)
        std::cerr << "dnncost: warning: " << negative << " negative prediction(s), first for '" << name(first)
                  << "': the estimator extrapolates outside its training data\n";
}

inline std::vector<double> means(const std::vector<estimators::Prediction>& p) {
    std::vector<double> m;
    m.reserve(p.size());
    for (const auto& x : p) m.push_back(x.mean);
    return m;
}

/// One stderr line on the GEMM arithmetic an estimator runs with: always when `always`, else
/// only for emulated bf16 (slow); nothing for an estimator without GEMMs.
inline void note_precision(const estimators::Estimator& est, const char* what, bool always) {
    const auto p = est.precision();
    if (!p || !(always || (*p == nn::Precision::bf16 && !nn::kernels::bf16_in_hardware()))) return;
    std::cerr << "dnncost: " << what << " in " << nn::to_string(*p);
    if (*p == nn::Precision::bf16) {
        const auto unit = nn::kernels::bf16_unit();
        if (unit == nn::kernels::Bf16Unit::emulated)
            std::cerr << " emulated (no bf16 unit, AMX or AVX512-BF16, in use here: same numbers as on one up to float "
                         "rounding, slower than fp32)";
        else
            std::cerr << " on " << nn::kernels::to_string(unit);
    }
    std::cerr << '\n';
}

/// A saved model and the metadata `dnncost train` wrote with it (empty for other writers).
struct LoadedModel {
    std::unique_ptr<estimators::Estimator> est;
    io::Container container;
};
inline LoadedModel load_model(const std::string& path) {
    const auto bytes = io::read_file(path);
    LoadedModel m;
    m.container = io::read_container(bytes, std::nullopt, path);
    m.est = estimators::load_estimator(bytes, path);
    return m;
}
/// Warn on stderr when a model is used on another search space than it was trained on, or (eval)
/// compared with another measured column. Not an error: transfer across devices is a use.
inline void check_model_use(const LoadedModel& m, const std::string& path, const std::string& space,
                            const std::string& target = {}) {
    if (const auto s = m.container.meta("space"); s && *s != space)
        std::cerr << "dnncost: warning: " << path << " was trained on " << *s << " graphs; these inputs are " << space
                  << " (operators it has not seen contribute nothing)\n";
    if (const auto t = m.container.meta("target"); t && !target.empty() && *t != target)
        std::cerr << "dnncost: note: " << path << " was trained on column '" << *t
                  << "'; comparing its predictions with '" << target << "'\n";
}

/// Comma-separated target columns ("latency_ms,peak_memory_bytes"), each once.
inline std::vector<std::string> target_list(const std::string& spec) {
    std::vector<std::string> out;
    std::stringstream ss(spec);
    for (std::string t; std::getline(ss, t, ',');) {
        if (t.empty()) raise<config_error>("--target '", spec, "': empty column name");
        if (std::find(out.begin(), out.end(), t) != out.end())
            raise<config_error>("--target '", spec, "': column '", t, "' named twice");
        out.push_back(t);
    }
    if (out.empty()) raise<config_error>("--target: no column named");
    return out;
}

/// The search space a data-set key names ("onnx" for a model path).
inline std::string space_of_key(const std::string& key, const std::string& default_space) {
    if (const auto q = spaces::split_qualified(key)) return std::string(q->space->name);
    return default_space;
}

/// Predictions of every target for the given items, in chunks: [target][item].
inline std::vector<std::vector<double>> predict_targets_items(const estimators::Estimator& est,
                                                              const train::Dataset& ds,
                                                              const std::vector<std::size_t>& items) {
    constexpr std::size_t chunk = 2048;
    std::vector<std::vector<double>> out;
    UnknownOperators unknown;
    for (std::size_t s = 0; s < items.size(); s += chunk) {
        const auto part = std::span(items).subspan(s, std::min(chunk, items.size() - s));
        const auto graphs = ds.graphs(part);
        unknown.add(est, graphs);
        const auto p = est.predict_targets(graphs);
        if (out.empty()) out.resize(p.size());
        for (std::size_t k = 0; k < p.size(); ++k) out[k].insert(out[k].end(), p[k].begin(), p[k].end());
    }
    unknown.warn();
    return out;
}

inline std::vector<estimators::Prediction> as_predictions(const std::vector<double>& v) {
    std::vector<estimators::Prediction> p;
    for (double x : v) p.push_back({x, 0.0});
    return p;
}

}  // namespace train_detail

inline void add_train_commands(CLI::App& app, Context& ctx) {
    namespace td = train_detail;
    // ------------------------------------------------------------------ train
    struct TrainArgs {
        std::string data, space = "nb201", space_options, target, preset, sampling = "random", proxy = "macs", out,
                          report;
        std::size_t n_train = 100, n_val = 100, n_test = 0;
        std::uint64_t seed = 0;
        int ensemble = 0, epochs = -1, patience = -1;
        unsigned threads = 0;
        std::string precision = "auto";
        std::string keep = "auto";
        std::string coefficients = "either";
        bool strict = false;
    };
    auto targs = std::make_shared<TrainArgs>();
    auto* train =
        app.add_subcommand("train", "Train a cost estimator on measured data, evaluate it on a held-out test split");
    train->add_option("--data", targs->data, "CSV: a key column (arch string or ONNX path) + measured columns")
        ->required();
    add_space_options(*train, targs->space, targs->space_options);
    train
        ->add_option("--target", targs->target,
                     "Column to learn (e.g. pixel3), or several, comma-separated, learnt by one model of a "
                     "multi-target preset (perfsage: e.g. latency_ms,peak_memory_bytes); ir_peak_memory_bytes is "
                     "computed from each graph (weights + exact sequential peak of activations), no column needed")
        ->required();
    train->add_option("--train", targs->n_train, "Number of training samples")->transform(check::integer(1, 100000000));
    train->add_option("--val", targs->n_val, "Number of validation samples (early stopping / model selection)")
        ->transform(check::integer(0, 100000000));
    train->add_option("--test", targs->n_test, "Number of test samples (0: all remaining rows)")
        ->transform(check::integer(0, 100000000));
    train->add_option("--seed", targs->seed, "Seed of the split and of training")->transform(check::seed());
    train
        ->add_option(
            "--preset", targs->preset,
            "Estimator preset: " +
                [] {
                    std::string s;
                    for (const auto& n : estimators::estimator_names()) s += (s.empty() ? "" : " | ") + n;
                    return s;
                }())
        ->required()
        ->check(CLI::IsMember(estimators::estimator_names()));
    train->add_option("--ensemble", targs->ensemble, "Train an ensemble of K members (K >= 2) and report sigma")
        ->transform(check::integer(0, 64, "an ensemble size in [0, 64] (0 or 1: a single model)"));
    train->add_option("--sampling", targs->sampling, "Training-set sampling: random | uniform (MAPLE-Edge targeted)")
        ->check(CLI::IsMember({"random", "uniform"}));
    auto* proxy_opt = train->add_option("--proxy", targs->proxy,
                                        "Proxy ranking the candidates for uniform sampling: macs | a column");
    const auto minus_one_or_positive = CLI::Validator(
        [](std::string& s) -> std::string {
            const auto v = check::whole<std::int64_t>(s);
            if (!v || !(*v == -1 || (*v >= 1 && *v <= 1000000)))
                return "'" + s + "' is not -1 or an integer in [1, 10^6]";
            s = std::to_string(*v);  // decimal, as for check::integer
            return {};
        },
        "-1 | INT in [1, 10^6]");
    train->add_option("--epochs", targs->epochs, "Maximum epochs (-1: the preset's default)")
        ->transform(minus_one_or_positive);
    train->add_option("--patience", targs->patience, "Early-stopping patience (-1: the preset's default)")
        ->transform(minus_one_or_positive);
    train->add_option("--threads", targs->threads, "Threads (0: all cores)")
        ->transform(check::integer(0, 1024, "a thread count in [0, 1024]"));
    train
        ->add_option("--precision", targs->precision,
                     "GEMM arithmetic, saved with the model: auto (bf16 where the CPU has AMX or AVX512-BF16, else "
                     "fp32) | bf16 (inputs rounded to bfloat16, fp32 accumulation; emulated without either) | fp32")
        ->check(CLI::IsMember({"auto", "bf16", "fp32"}));
    train
        ->add_option(
            "--keep", targs->keep,
            "Model selection of GNN presets: auto (the trained network only if it beats the untrained one out of bag) "
            "| trained (the best validation epoch) | untrained (the initial network: its additive path, if any)")
        ->check(CLI::IsMember({"auto", "trained", "untrained"}));
    auto* coefficients_opt =
        train->add_option("--coefficients", targs->coefficients,
                     "Signs of the additive preset's per-operator costs: either (free or non-negative, whichever "
                     "validates better) | nonnegative (every operator costs time; safer for networks unlike the "
                     "training ones) | free")
        ->check(CLI::IsMember({"either", "nonnegative", "free"}));
    train->add_flag("--strict", targs->strict, "Reject the data set at the first bad row instead of skipping it");
    train->add_option("--out", targs->out, "Where to save the model (.dnnc)")->required()->check(check::output_path());
    train->add_option("--report", targs->report, "Write a JSON report of the test metrics")
        ->check(check::output_path());
    train->callback([targs, proxy_opt, coefficients_opt, &ctx] {
        cap_threads(targs->threads);
        const auto& a = *targs;
        const auto sampling = train::parse_sampling(a.sampling);
        if (proxy_opt->count() > 0 && sampling != train::Sampling::uniform)
            raise<config_error>("--proxy ranks candidates for --sampling uniform only (sampling is '", a.sampling,
                                "')");
        // fail before loading and training, not after
        io::check_distinct_outputs({{"--data", a.data}, {"--out", a.out}, {"--report", a.report}});
        io::check_writable(a.out);
        if (!a.report.empty()) io::check_writable(a.report);
        const auto targets = td::target_list(a.target);
        std::vector<std::string> columns = targets;
        const bool proxy_is_column = sampling == train::Sampling::uniform && a.proxy != "macs";
        if (proxy_is_column && std::find(columns.begin(), columns.end(), a.proxy) == columns.end())
            columns.push_back(a.proxy);
        auto ds = td::load(a.data, a.space, a.space_options, columns, a.strict);

        std::vector<double> proxy;
        if (sampling == train::Sampling::uniform) {
            if (proxy_is_column) {
                proxy = ds.column(a.proxy);
            } else {
                proxy = ds.map_graphs([](const graph::Graph& g) { return cost::total_cost(g).macs; });
            }
        }
        const auto split = train::make_split(ds.size(), {a.n_train, a.n_val, a.n_test, sampling, a.seed}, proxy);
        std::cerr << "dnncost: split (seed " << a.seed << ", " << train::to_string(sampling)
                  << "): " << split.train.size() << " train, " << split.validation.size() << " validation, "
                  << split.test.size() << " test\n";

        std::unique_ptr<estimators::Estimator> est;
        if (a.ensemble >= 2)
            est = estimators::make_ensemble(a.preset, a.ensemble);
        else if (a.ensemble == 0 || a.ensemble == 1)
            est = estimators::make_estimator(a.preset);
        else
            raise<config_error>("--ensemble must be >= 2 (or 0 for a single model), got ", a.ensemble);
        if (coefficients_opt->count() > 0) {
            auto* additive = dynamic_cast<estimators::AdditiveEstimator*>(est.get());
            if (!additive)
                raise<config_error>("--coefficients applies to a single additive model, not to preset '", a.preset,
                                    a.ensemble >= 2 ? "' ensembles" : "'");
            additive->set_signs(estimators::RidgeFit::parse_signs(a.coefficients));
        }
        if (targets.size() > 1 && (a.ensemble >= 2 || static_cast<int>(targets.size()) > est->max_targets()))
            raise<config_error>("--target names ", targets.size(), " columns; preset '", a.preset,
                                a.ensemble >= 2 ? "' ensembles" : "'", " learn one (perfsage learns several)");

        // Several search spaces: every space makes up at least 10 % of the training examples.
        auto train_items = split.train;
        {
            std::vector<std::string> group;
            for (auto i : split.train) group.push_back(td::space_of_key(ds.key(i), a.space));
            std::vector<std::string> distinct = group;
            std::sort(distinct.begin(), distinct.end());
            distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
            if (distinct.size() >= 2 && distinct.size() < 10) {
                std::vector<std::size_t> up;
                for (auto k : train::upsample(group, 0.10, a.seed)) up.push_back(split.train[k]);
                train_items = std::move(up);
                std::cerr << "dnncost: " << distinct.size() << " search spaces in the training split; upsampled to "
                          << train_items.size() << " training examples (each space >= 10 %)\n";
            }
        }

        estimators::FitOptions fo;
        fo.seed = a.seed;
        fo.max_epochs = a.epochs;
        fo.patience = a.patience;
        fo.threads = a.threads;
        fo.precision = nn::precision_from_string(a.precision);
        fo.keep = estimators::keep_from_string(a.keep).value_or(estimators::Keep::automatic);
        fo.on_epoch = [](const std::string& line) {
            std::cerr << line << '\n';
            return false;
        };
        const auto multi = [&](const std::vector<std::size_t>& items) { return ds.subset(items, targets); };
        const auto fit = targets.size() > 1
                             ? est->fit_targets(multi(train_items), multi(split.validation), fo)
                             : est->fit(ds.subset(train_items, a.target), ds.subset(split.validation, a.target), fo);
        if (!fit.summary.empty()) std::cerr << fit.summary << '\n';
        td::note_precision(*est, "trained", true);

        std::vector<std::vector<estimators::Prediction>> preds;
        if (targets.size() > 1) {
            for (const auto& p : td::predict_targets_items(*est, ds, split.test))
                preds.push_back(td::as_predictions(p));
        } else {
            preds.push_back(td::predict_items(*est, ds, split.test));
        }
        for (const auto& pred : preds)
            td::check_predictions(pred, [&](std::size_t i) { return ds.key(split.test[i]); });

        std::cout << "preset " << est->preset()
                  << (a.ensemble >= 2 ? " x" + std::to_string(a.ensemble) + " ensemble" : "") << ", target " << a.target
                  << ", " << fit.epochs << " epochs, " << std::setprecision(3) << fit.seconds << " s\n";
        json report;
        for (std::size_t k = 0; k < targets.size(); ++k) {
            const auto ev = train::evaluate(td::means(preds[k]), ds.values(split.test, targets[k]));
            const std::string label = targets.size() > 1 ? "test " + targets[k] : std::string("test");
            td::print_metrics(std::cout, label, ev.all);
            td::print_metrics(std::cout, label + ", non-degenerate", ev.non_degenerate);
            if (targets.size() > 1)
                report["targets"][targets[k]] = td::evaluation_json(ev);
            else
                report = td::evaluation_json(ev);
        }
        const auto& pred = preds[0];
        const auto truth = ds.values(split.test, targets[0]);
        if (a.ensemble >= 2) {
            const double cov = estimators::coverage_2sigma(pred, truth);
            std::cout << "coverage of ±2 sigma: " << cov << '\n';
            report["coverage_2sigma"] = cov;
            report["ensemble"] = a.ensemble;
        }
        io::write_file_atomic(a.out, io::with_metadata(est->serialize(),
                                                       {{"target", a.target},
                                                        {"space", a.space},
                                                        {"space_options", a.space_options},
                                                        {"data", a.data},
                                                        {"seed", std::to_string(a.seed)},
                                                        {"sampling", a.sampling},
                                                        {"n_train", std::to_string(split.train.size())},
                                                        {"n_val", std::to_string(split.validation.size())}},
                                                       a.out));
        if (!a.report.empty()) {
            report["preset"] = est->preset();
            report["target"] = a.target;
            report["data"] = a.data;
            report["seed"] = a.seed;
            report["sampling"] = a.sampling;
            report["n_train"] = split.train.size();
            report["n_val"] = split.validation.size();
            report["n_test"] = split.test.size();
            report["epochs"] = fit.epochs;
            report["train_seconds"] = fit.seconds;
            report["validation_metric"] = fit.validation_metric;
            report["best_validation"] = fit.best_validation;
            report["selection"] = fit.summary;
            if (const auto p = est->precision()) report["precision"] = nn::to_string(*p);
            io::write_file_atomic(a.report, report.dump(2, ' ', false, json::error_handler_t::replace) + "\n");
        }
        std::cout << "model saved to " << a.out << '\n';
        ctx.exit_code = 0;
    });

    // ------------------------------------------------------------------ eval
    struct EvalArgs {
        std::string model, data, space = "nb201", space_options, target;
        std::string precision = "model";
        bool json_out = false, strict = false;
    };
    auto eargs = std::make_shared<EvalArgs>();
    auto* eval = app.add_subcommand("eval", "Evaluate a saved estimator on every row of a data set");
    eval->add_option("--model", eargs->model, "Saved model (.dnnc)")->required();
    eval->add_option("--data", eargs->data, "CSV data set")->required();
    add_space_options(*eval, eargs->space, eargs->space_options);
    eval->add_option("--target", eargs->target,
                     "Measured column to compare with; several, comma-separated, for a multi-target model (one per "
                     "target it learnt, in its order)")
        ->required();
    eval->add_flag("--strict", eargs->strict, "Reject the data set at the first bad row");
    eval->add_flag("--json", eargs->json_out, "Print the metrics as JSON");
    eval->add_option("--precision", eargs->precision,
                     "GEMM arithmetic: model (as trained, saved in the model) | bf16 | fp32")
        ->check(CLI::IsMember({"model", "bf16", "fp32"}));
    eval->callback([eargs, &ctx] {
        const auto& a = *eargs;
        const auto model = td::load_model(a.model);
        const auto& est = model.est;
        td::check_model_use(model, a.model, a.space, a.target);
        if (const auto p = nn::precision_from_string(a.precision)) est->set_precision(*p);
        td::note_precision(*est, "predicting", false);
        const auto targets = td::target_list(a.target);
        auto ds = td::load(a.data, a.space, a.space_options, targets, a.strict);
        const auto items = ds.all_items();
        if (targets.size() > 1) {
            const auto names = est->target_names();
            if (names.size() != targets.size())
                raise<config_error>("--target names ", targets.size(), " columns; ", a.model, " predicts ",
                                    std::max<std::size_t>(1, names.size()));
            const auto p = td::predict_targets_items(*est, ds, items);
            json j;
            for (std::size_t k = 0; k < targets.size(); ++k) {
                const auto pk = td::as_predictions(p[k]);
                td::check_predictions(pk, [&](std::size_t i) { return ds.key(items[i]); });
                const auto ev = train::evaluate(p[k], ds.values(items, targets[k]));
                if (a.json_out) {
                    j["targets"][targets[k]] = td::evaluation_json(ev);
                    j["targets"][targets[k]]["model_target"] = names[k];
                } else {
                    td::print_metrics(std::cout, "all rows, " + targets[k] + " (model: " + names[k] + ")", ev.all);
                }
            }
            if (a.json_out) {
                j["preset"] = est->preset();
                print_json(j);
            }
            ctx.exit_code = 0;
            return;
        }
        const auto pred = td::predict_items(*est, ds, items);
        td::check_predictions(pred, [&](std::size_t i) { return ds.key(items[i]); });
        const auto truth = ds.values(items, a.target);
        const auto ev = train::evaluate(td::means(pred), truth);
        const bool has_sigma = std::any_of(pred.begin(), pred.end(), [](const auto& p) { return p.sigma > 0; });
        if (a.json_out) {
            json j = td::evaluation_json(ev);
            j["preset"] = est->preset();
            j["target"] = a.target;
            if (const auto t = model.container.meta("target")) j["model_target"] = *t;
            if (const auto p = est->precision()) j["precision"] = nn::to_string(*p);
            if (has_sigma) j["coverage_2sigma"] = estimators::coverage_2sigma(pred, truth);
            print_json(j);
        } else {
            td::print_metrics(std::cout, "all rows", ev.all);
            td::print_metrics(std::cout, "non-degenerate", ev.non_degenerate);
            if (has_sigma) std::cout << "coverage of ±2 sigma: " << estimators::coverage_2sigma(pred, truth) << '\n';
        }
        ctx.exit_code = 0;
    });

    // ------------------------------------------------------------------ predict
    struct PredictArgs {
        std::string model, space, space_options;
        std::vector<std::string> inputs;
        std::string precision = "model";
    };
    auto pargs = std::make_shared<PredictArgs>();
    auto* predict = app.add_subcommand("predict", "Predict with a saved estimator: architecture strings or ONNX files");
    predict->add_option("--model", pargs->model, "Saved model (.dnnc)")->required();
    add_space_options(*predict, pargs->space, pargs->space_options,
                      "What the inputs are: a search space's architecture strings or onnx (files; the default); "
                      "an input SPACE:ARCH names its own space");
    predict->add_option("inputs", pargs->inputs, "Architecture strings or ONNX files")->required();
    predict
        ->add_option("--precision", pargs->precision,
                     "GEMM arithmetic: model (as trained, saved in the model) | bf16 | fp32")
        ->check(CLI::IsMember({"model", "bf16", "fp32"}));
    predict->callback([pargs, &ctx] {
        const auto& a = *pargs;
        const auto model = td::load_model(a.model);
        const auto& est = model.est;
        const std::string space = a.space.empty() ? std::string(train::onnx_keys) : a.space;
        td::check_model_use(model, a.model, space);
        if (const auto p = nn::precision_from_string(a.precision)) est->set_precision(*p);
        td::note_precision(*est, "predicting", false);
        std::vector<graph::Graph> graphs;
        graphs.reserve(a.inputs.size());
        const auto options = spaces::space_options(a.space_options);
        for (const auto& in : a.inputs) {
            if (const auto q = spaces::split_qualified(in))
                graphs.push_back(q->space->build_graph(q->arch, options));
            else if (space != train::onnx_keys)
                graphs.push_back(spaces::find_space(space).build_graph(in, options));
            else
                graphs.push_back(io::import_onnx(in));
        }
        std::vector<const graph::Graph*> ptrs;
        for (const auto& g : graphs) ptrs.push_back(&g);
        td::UnknownOperators unknown;
        unknown.add(*est, ptrs);
        unknown.warn();
        if (const auto names = est->target_names(); names.size() > 1) {
            // one column per target, named on a header line
            const auto p = est->predict_targets(ptrs);
            for (const auto& pk : p)
                td::check_predictions(td::as_predictions(pk), [&](std::size_t i) { return a.inputs[i]; });
            std::cout << "input";
            for (const auto& n : names) std::cout << '\t' << n;
            std::cout << '\n';
            for (std::size_t i = 0; i < ptrs.size(); ++i) {
                std::cout << a.inputs[i];
                for (const auto& pk : p) std::cout << '\t' << std::setprecision(6) << pk[i];
                std::cout << '\n';
            }
            ctx.exit_code = 0;
            return;
        }
        const auto pred = est->predict(ptrs);
        td::check_predictions(pred, [&](std::size_t i) { return a.inputs[i]; });
        const bool ensemble = dynamic_cast<const estimators::EnsembleEstimator*>(est.get()) != nullptr;
        for (std::size_t i = 0; i < pred.size(); ++i) {
            std::cout << a.inputs[i] << '\t' << std::setprecision(6) << pred[i].mean;
            if (ensemble) std::cout << "\tsigma " << pred[i].sigma;
            std::cout << '\n';
        }
        ctx.exit_code = 0;
    });
}

}  // namespace dnncost::cli
