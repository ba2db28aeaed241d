// `dnncost train`, `dnncost eval`, `dnncost predict`: learn a cost estimator from measurements,
// evaluate a saved one, predict with it. Each callback parses, calls one library function of
// estimators/training.hpp and prints what it returns (text, or one JSON document with --json).
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
#include "estimator_options.hpp"

#include <dnncost/cost/analytic.hpp>
#include <dnncost/estimators/capabilities.hpp>
#include <dnncost/estimators/estimator_cost.hpp>
#include <dnncost/estimators/registry.hpp>
#include <dnncost/estimators/training.hpp>
#include <dnncost/io/file.hpp>
#include <dnncost/io/onnx.hpp>
#include <dnncost/io/serialize.hpp>
#include <dnncost/measure/store.hpp>
#include <dnncost/nn/kernels/cpu_features.hpp>
#include <dnncost/spaces/network_name.hpp>
#include <dnncost/spaces/registry.hpp>
#include <dnncost/train/computed_targets.hpp>
#include <dnncost/train/dataset.hpp>
#include <dnncost/train/metrics.hpp>
#include <dnncost/train/split.hpp>

#include "commands.hpp"
#include "train_common.hpp"

namespace dnncost::cli {

namespace train_detail {

// ------------------------------------------------------------------ train

struct TrainArgs {
    std::string data, space = "nb201", space_options, target, preset, sampling = "random", proxy = "macs", out;
    std::size_t n_train = 100, n_val = 100, n_test = 0;
    std::uint64_t seed = 0;
    int ensemble = 0, epochs = -1, patience = -1;
    unsigned threads = 0;
    bool strict = false, json_out = false;
    ReportFile report;
    Option* proxy_opt = nullptr;
    std::shared_ptr<PresetOptionValues> preset_options;
};

inline void add_train_options(Command& cmd, TrainArgs& a) {
    cmd.add_option("--data", a.data, "CSV: a key column (arch string or ONNX path) + measured columns")->required();
    add_space_options(cmd, a.space, a.space_options);
    cmd.add_option("--target", a.target,
                   "Column to learn (e.g. pixel3), or several, comma-separated, learnt by one model of a "
                   "multi-target preset (perfsage: e.g. latency_ms,peak_memory_bytes); ir_peak_memory_bytes is "
                   "computed from each graph (weights + exact sequential peak of activations), no column needed")
        ->required();
    cmd.add_option("--train", a.n_train, "Number of training samples")->transform(check::integer(1, 100000000));
    cmd.add_option("--val", a.n_val, "Number of validation samples (early stopping / model selection)")
        ->transform(check::integer(0, 100000000));
    cmd.add_option("--test", a.n_test, "Number of test samples (0: all remaining rows)")
        ->transform(check::integer(0, 100000000));
    cmd.add_option("--seed", a.seed, "Seed of the split and of training")->transform(check::seed());
    cmd.add_option("--preset", a.preset, "Estimator preset: " + preset_list())
        ->required()
        ->check(check::member(estimators::estimator_names()));
    cmd.add_option("--ensemble", a.ensemble, "Train an ensemble of K members (K >= 2) and report sigma")
        ->transform(check::integer(0, 64, "an ensemble size in [0, 64] (0 or 1: a single model)"));
    cmd.add_option("--sampling", a.sampling, "Training-set sampling: random | uniform (MAPLE-Edge targeted)")
        ->check(check::member({"random", "uniform"}));
    a.proxy_opt =
        cmd.add_option("--proxy", a.proxy, "Proxy ranking the candidates for uniform sampling: macs | a column");
    const auto minus_one_or_positive = Validator(
        [](std::string& s) -> std::string {
            const auto v = check::whole<std::int64_t>(s);
            if (!v || !(*v == -1 || (*v >= 1 && *v <= 1000000)))
                return "'" + s + "' is not -1 or an integer in [1, 10^6]";
            s = std::to_string(*v);  // decimal, as for check::integer
            return {};
        },
        "-1 | INT in [1, 10^6]");
    cmd.add_option("--epochs", a.epochs, "Maximum epochs (-1: the preset's default)")->transform(minus_one_or_positive);
    cmd.add_option("--patience", a.patience, "Early-stopping patience (-1: the preset's default)")
        ->transform(minus_one_or_positive);
    cmd.add_option("--threads", a.threads, "Threads (0: all cores)")
        ->transform(check::integer(0, 1024, "a thread count in [0, 1024]"));
    a.preset_options = add_preset_options(cmd);
    cmd.add_flag("--strict", a.strict, "Reject the data set at the first bad row instead of skipping it");
    cmd.add_option("--out", a.out, "Where to save the model (.dnnc)")->required()->check(check::output_path());
    cmd.add_flag("--json", a.json_out, "Print the report (test metrics, split, fit) as one JSON document");
    a.report.add(cmd);
}

/// The report of a training run: the test metrics (flat for one target, by target for several)
/// and how the model was made.
inline json train_json(const TrainArgs& a, const estimators::TrainReport& r) {
    json j;
    if (r.test.size() == 1)
        j = evaluation_json(r.test[0].accuracy);
    else
        for (const auto& t : r.test) j["targets"][t.target] = evaluation_json(t.accuracy);
    if (r.coverage_2sigma) {
        j["coverage_2sigma"] = *r.coverage_2sigma;
        j["ensemble"] = a.ensemble;
    }
    j["preset"] = r.model->preset();
    j["target"] = a.target;
    j["data"] = a.data;
    j["seed"] = a.seed;
    j["sampling"] = a.sampling;
    j["n_train"] = r.split.train.size();
    j["n_val"] = r.split.validation.size();
    j["n_test"] = r.split.test.size();
    j["epochs"] = r.fit.epochs;
    j["train_seconds"] = r.fit.seconds;
    j["validation_metric"] = r.fit.validation_metric;
    j["best_validation"] = r.fit.best_validation;
    j["selection"] = r.fit.summary;
    if (const auto p = estimators::precision_of(*r.model)) j["precision"] = nn::to_string(*p);
    return j;
}

inline void print_train(const TrainArgs& a, const estimators::TrainReport& r) {
    std::cout << "preset " << r.model->preset()
              << (a.ensemble >= 2 ? " x" + std::to_string(a.ensemble) + " ensemble" : "") << ", target " << a.target
              << ", " << r.fit.epochs << " epochs, " << std::setprecision(3) << r.fit.seconds << " s\n";
    for (const auto& t : r.test) {
        const std::string label = r.test.size() > 1 ? "test " + t.target : std::string("test");
        print_metrics(std::cout, label, t.accuracy.all);
        print_metrics(std::cout, label + ", non-degenerate", t.accuracy.non_degenerate);
    }
    if (r.coverage_2sigma) std::cout << "coverage of ±2 sigma: " << *r.coverage_2sigma << '\n';
}

inline void run_train(TrainArgs& a) {
    cap_threads(a.threads);
    const auto sampling = train::parse_sampling(a.sampling);
    if (a.proxy_opt->count() > 0 && sampling != train::Sampling::uniform)
        raise<config_error>("--proxy ranks candidates for --sampling uniform only (sampling is '", a.sampling, "')");
    // fail before loading and training, not after
    io::check_distinct_outputs({{"--data", a.data}, {"--out", a.out}, {"--report", a.report.path}});
    io::check_writable(a.out);
    a.report.prepare();
    estimators::TrainRequest req;
    req.targets = column_list(a.target);
    req.preset = a.preset;
    req.settings = a.preset_options->settings();
    (void)estimators::make_estimator(a.preset, req.settings);  // an option the preset lacks fails now
    req.ensemble = a.ensemble;
    req.split = {a.n_train, a.n_val, a.n_test, sampling, a.seed};
    req.default_space = a.space;
    req.fit = {.seed = a.seed,
               .max_epochs = a.epochs,
               .patience = a.patience,
               .threads = a.threads,
               .on_epoch = [](const std::string& line) {
                   std::cerr << line << '\n';
                   return false;
               }};
    req.on_note = [](const std::string& line) { std::cerr << "dnncost: " << line << '\n'; };
    std::vector<std::string> columns = req.targets;
    const bool proxy_is_column = sampling == train::Sampling::uniform && a.proxy != "macs";
    if (proxy_is_column && std::find(columns.begin(), columns.end(), a.proxy) == columns.end())
        columns.push_back(a.proxy);
    const auto ds = load(a.data, a.space, a.space_options, columns, a.strict);
    if (sampling == train::Sampling::uniform)
        req.proxy = proxy_is_column ? ds.column(a.proxy)
                                    : ds.map_graphs([](const graph::Graph& g) { return cost::total_cost(g).macs; });

    // the spaces the training rows came from: a results store mixes them (and model files)
    std::set<std::string> data_spaces;
    for (std::size_t i = 0; i < ds.size(); ++i) {
        const auto key = ds.key(i);
        const auto n = spaces::parse_network_name(key);
        if (n && n->space)
            data_spaces.insert(std::string(n->space->name));
        else  // a synthesised network is a whole graph, as a model file is
            data_spaces.insert(n || key.ends_with(".onnx") ? std::string(train::onnx_keys) : a.space);
    }
    std::string trained_spaces;
    for (const auto& s : data_spaces) trained_spaces += (trained_spaces.empty() ? "" : ",") + s;
    const auto r = estimators::train_estimator(ds, req);
    if (!r.fit.summary.empty()) std::cerr << r.fit.summary << '\n';
    note_precision(*r.model, "trained", true);
    warn_unknown(r.unknown);
    if (!a.json_out) print_train(a, r);
    io::write_file_atomic(a.out, io::with_metadata(r.model->serialize(),
                                                   {{"target", a.target},
                                                    {"space", trained_spaces},
                                                    {"space_options", a.space_options},
                                                    {"data", a.data},
                                                    {"seed", std::to_string(a.seed)},
                                                    {"sampling", a.sampling},
                                                    {"n_train", std::to_string(r.split.train.size())},
                                                    {"n_val", std::to_string(r.split.validation.size())}},
                                                   a.out));
    const json report = train_json(a, r);
    a.report.write(report);
    if (a.json_out)
        print_json(report);
    else
        std::cout << "model saved to " << a.out << '\n';
}

// ------------------------------------------------------------------ eval

struct EvalArgs {
    std::string model, data, space = "nb201", space_options, target;
    std::string precision = "model";
    bool json_out = false, strict = false;
};

/// A loaded model's GEMM arithmetic set from --precision (model: as saved).
inline void apply_precision(estimators::Estimator& est, const std::string& precision) {
    if (const auto p = nn::precision_from_string(precision)) estimators::set_precision(est, *p);
    note_precision(est, "predicting", false);
}

inline void run_eval(const EvalArgs& a) {
    const auto model = load_model(a.model);
    auto& est = *model.est;
    check_model_use(model, a.model, a.space, a.target);
    apply_precision(est, a.precision);
    const auto targets = column_list(a.target);
    const auto ds = load(a.data, a.space, a.space_options, targets, a.strict);
    const auto r = estimators::evaluate_estimator(est, ds, targets, a.model);
    warn_unknown(r.unknown);
    if (r.targets.size() > 1) {
        json j;
        for (std::size_t k = 0; k < r.targets.size(); ++k) {
            const auto& t = r.targets[k];
            if (a.json_out) {
                j["targets"][t.target] = evaluation_json(t.accuracy);
                j["targets"][t.target]["model_target"] = r.model_targets[k];
            } else {
                print_metrics(std::cout, "all rows, " + t.target + " (model: " + r.model_targets[k] + ")",
                              t.accuracy.all);
            }
        }
        j["preset"] = est.preset();
        if (a.json_out) print_json(j);
        return;
    }
    const auto& ev = r.targets[0].accuracy;
    if (a.json_out) {
        json j = evaluation_json(ev);
        j["preset"] = est.preset();
        j["target"] = a.target;
        if (const auto t = model.container.meta("target")) j["model_target"] = *t;
        if (const auto p = estimators::precision_of(est)) j["precision"] = nn::to_string(*p);
        if (r.coverage_2sigma) j["coverage_2sigma"] = *r.coverage_2sigma;
        print_json(j);
    } else {
        print_metrics(std::cout, "all rows", ev.all);
        print_metrics(std::cout, "non-degenerate", ev.non_degenerate);
        if (r.coverage_2sigma) std::cout << "coverage of ±2 sigma: " << *r.coverage_2sigma << '\n';
    }
}

// ------------------------------------------------------------------ predict

struct PredictArgs {
    std::string model, space, space_options;
    std::vector<std::string> inputs;
    std::string precision = "model";
    bool json_out = false, per_kernel = false;
};

/// Each network's kernels (or nodes) with their latencies, from a model that prices graphs in
/// detail; warnings for kernels priced as another kind.
inline json breakdown_json(const estimators::Estimator& est, const std::vector<graph::Graph>& graphs,
                           const std::vector<std::string>& inputs, bool print_text) {
    const estimators::EstimatorCost source(std::shared_ptr<const estimators::Estimator>(&est, [](const auto*) {}));
    json out = json::array();
    for (std::size_t i = 0; i < graphs.size(); ++i) {
        const auto c = source.cost(graphs[i]);
        const auto kernels = c.by_kernel(graphs[i]);
        if (kernels.empty())
            raise<config_error>("--per-kernel: ", est.name(), " prices whole networks only (no kernel breakdown)");
        // names escaped in the text lines: a newline or tab in a file or node name would forge a line or field
        const auto input = printable(inputs[i]);
        for (const auto& w : c.fallbacks) std::cerr << "dnncost: warning: " << input << ": " << printable(w) << '\n';
        for (const auto& b : c.beyond_samples)
            std::cerr << "dnncost: note: " << input << ": priced beyond the samples: " << printable(b) << '\n';
        json ks = json::array();
        for (const auto& k : kernels) {
            json nodes = json::array();
            for (int n : k.nodes) nodes.push_back(graphs[i].node(n).name);
            ks.push_back({{"kernel", k.name}, {"ms", k.ms}, {"nodes", nodes}});
            if (print_text)
                std::cout << input << '\t' << printable(k.name) << '\t' << std::setprecision(6) << k.ms << '\t'
                          << printable(graphs[i].node(k.nodes.front()).name) << (k.nodes.size() > 1 ? " ..." : "")
                          << '\n';
        }
        if (print_text && c.run_overhead_ms > 0)
            std::cout << input << "\trun overhead\t" << c.run_overhead_ms << "\t-\n";
        out.push_back({{"input", inputs[i]},
                       {"total_ms", c.total_ms},
                       {"run_overhead_ms", c.run_overhead_ms},
                       {"kernels", ks},
                       {"fallbacks", c.fallbacks},
                       {"beyond_samples", c.beyond_samples}});
    }
    return out;
}

inline void run_predict(const PredictArgs& a) {
    const auto model = load_model(a.model);
    auto& est = *model.est;
    const std::string space = a.space.empty() ? std::string(train::onnx_keys) : a.space;
    check_model_use(model, a.model, space);
    apply_precision(est, a.precision);
    std::vector<graph::Graph> graphs;
    graphs.reserve(a.inputs.size());
    const auto options = spaces::space_options(a.space_options);
    for (const auto& in : a.inputs) {
        if (const auto n = spaces::parse_network_name(in))
            graphs.push_back(n->build(options));
        else if (space != train::onnx_keys)
            graphs.push_back(spaces::find_space(space).build_graph(in, options));
        else
            graphs.push_back(io::import_onnx(in));
    }
    std::vector<const graph::Graph*> ptrs;
    for (const auto& g : graphs) ptrs.push_back(&g);
    const auto r = estimators::predict_networks(est, ptrs, a.inputs);
    warn_unknown(r.unknown);
    if (a.per_kernel && !a.json_out) breakdown_json(est, graphs, a.inputs, true);
    if (a.json_out) {
        json j;
        if (a.per_kernel) j["breakdown"] = breakdown_json(est, graphs, a.inputs, false);
        j["model"] = a.model;
        j["preset"] = est.preset();
        j["columns"] = r.columns;
        j["predictions"] = json::array();
        for (std::size_t i = 0; i < a.inputs.size(); ++i) {
            json row{{"input", a.inputs[i]}};
            for (std::size_t k = 0; k < r.columns.size(); ++k) row[r.columns[k]] = r.values[i][k];
            if (!r.sigma.empty()) row["sigma"] = r.sigma[i];
            j["predictions"].push_back(row);
        }
        print_json(j);
        return;
    }
    if (r.columns.size() > 1) {  // one column per target, named on a header line
        std::cout << "input";
        for (const auto& n : r.columns) std::cout << '\t' << n;
        std::cout << '\n';
    }
    for (std::size_t i = 0; i < a.inputs.size(); ++i) {
        std::cout << printable(a.inputs[i]);
        for (double v : r.values[i]) std::cout << '\t' << std::setprecision(6) << v;
        if (!r.sigma.empty()) std::cout << "\tsigma " << r.sigma[i];
        std::cout << '\n';
    }
}

}  // namespace train_detail

void add_train_commands(Command& app, Context& ctx) {
    namespace td = train_detail;
    auto targs = std::make_shared<td::TrainArgs>();
    auto* train =
        app.add_subcommand("train", "Train a cost estimator on measured data, evaluate it on a held-out test split");
    td::add_train_options(*train, *targs);
    train->callback([targs, &ctx] {
        td::run_train(*targs);
        ctx.exit_code = 0;
    });

    auto eargs = std::make_shared<td::EvalArgs>();
    auto* eval = app.add_subcommand("eval", "Evaluate a saved estimator on every row of a data set");
    eval->add_option("--model", eargs->model, "Saved estimator (.dnnc)")->required();
    eval->add_option("--data", eargs->data, "CSV data set")->required();
    add_space_options(*eval, eargs->space, eargs->space_options);
    eval->add_option("--target", eargs->target,
                     "Measured column to compare with; several, comma-separated, for a multi-target model (one per "
                     "target it learnt, in its order)")
        ->required();
    eval->add_flag("--strict", eargs->strict, "Reject the data set at the first bad row");
    eval->add_flag("--json", eargs->json_out, "Print the metrics as one JSON document");
    eval->add_option("--precision", eargs->precision,
                     "GEMM arithmetic: model (as trained, saved in the model) | bf16 | fp32")
        ->check(check::member({"model", "bf16", "fp32"}));
    eval->callback([eargs, &ctx] {
        td::run_eval(*eargs);
        ctx.exit_code = 0;
    });

    auto pargs = std::make_shared<td::PredictArgs>();
    auto* predict = app.add_subcommand("predict", "Predict with a saved estimator: architecture strings or ONNX files");
    predict->add_option("--model", pargs->model, "Saved estimator (.dnnc)")->required();
    add_space_options(*predict, pargs->space, pargs->space_options,
                      "What the inputs are: a search space's architecture strings or onnx (files; the default); "
                      "an input SPACE:ARCH names its own space (and SPACE:ARCH@KEY=VALUE its own options), "
                      "cnn:... or transformer:... a synthesised network");
    predict->add_option("inputs", pargs->inputs, "Architecture strings or ONNX files")->required();
    predict
        ->add_option("--precision", pargs->precision,
                     "GEMM arithmetic: model (as trained, saved in the model) | bf16 | fp32")
        ->check(check::member({"model", "bf16", "fp32"}));
    predict->add_flag("--json", pargs->json_out, "Print the predictions as one JSON document");
    predict->add_flag("--per-kernel", pargs->per_kernel,
                      "Also show each network's kernels and their latencies (INPUT<TAB>KERNEL<TAB>ms<TAB>first node "
                      "lines before the totals), for a model that prices kernels (a device model)");
    predict->callback([pargs, &ctx] {
        td::run_predict(*pargs);
        ctx.exit_code = 0;
    });
}

}  // namespace dnncost::cli
