// `dnncost adapt`: adapt to a new device from a few of its measurements and a pool of measured
// devices (MAPLE-Edge), and evaluate on the rest of the new device's measurements
// (device/device_adaptation.hpp does the work).
#include <iomanip>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "train_common.hpp"
#include "commands.hpp"
#include "common.hpp"
#include "estimator_options.hpp"

#include <dnncost/device/device_adaptation.hpp>

namespace dnncost::cli {

namespace adapt_detail {

struct AdaptArgs {
    std::string pool, pool_targets, target, data, space = "nb201", space_options, sampling = "uniform", proxy,
                                                  encoder = "nb201", model, baseline = "none", method = "prior";
    std::size_t shots = 10, pool_networks = 2000;
    int clones = 7, epochs = 60, finetune = 0;
    bool calibrate = false, no_stack = false, json_out = false;
    std::uint64_t seed = 0;
    ReportFile report;
};

inline void add_adapt_options(Command& cmd, AdaptArgs& a) {
    cmd.add_option("--pool", a.pool, "CSV of the pool devices: a key column + one latency column per device")
        ->required();
    cmd.add_option("--pool-targets", a.pool_targets, "Pool device columns, comma-separated (A,B,C)")->required();
    cmd.add_option("--target", a.target,
                   "Column of the new device: in --data if given (default latency_ms for a results file of "
                   "`dnncost measure`), else in --pool");
    cmd.add_option("--data", a.data,
                   "Measurements of the new device: a CSV or a results file of `dnncost measure` (default: --pool)");
    add_space_options(cmd, a.space, a.space_options);
    cmd.add_option("--method", a.method,
                   "prior: a linear cost model fitted on the shots, pulled towards the pool device the shots look "
                   "most like | maple: the MAPLE-Edge regressor over [encoding | hardware descriptor]")
        ->check(check::member({"prior", "maple"}));
    cmd.add_option("--shots", a.shots, "Measurements of the new device used for adaptation")
        ->transform(check::integer(2, 100000));
    cmd.add_option("--seed", a.seed, "Seed of the shots and of training")->transform(check::seed());
    cmd.add_option("--sampling", a.sampling,
                   "How the shots are chosen: uniform (MAPLE-Edge targeted) | random | doptimal (a greedy D-optimal "
                   "design over the linear cost features: NB201 op counts with --encoder nb201, else the "
                   "per-operator-type aggregates)")
        ->check(check::member({"random", "uniform", "doptimal"}));
    cmd.add_option("--proxy", a.proxy,
                   "Ranking of uniform sampling: a pool column (default: the first pool target) | macs");
    cmd.add_option("--clones", a.clones, "K: each shot enters the training set K times")
        ->transform(check::integer(1, 1000));
    cmd.add_option("--pool-networks", a.pool_networks, "Networks drawn per pool device (0: all)")
        ->transform(check::integer(0, 100000000));
    cmd.add_option("--epochs", a.epochs, "Training epochs of the regressor")->transform(check::integer(1, 100000));
    cmd.add_option("--finetune", a.finetune, "Epochs on the cloned shots alone after the joint training")
        ->transform(check::integer(0, 100000));
    cmd.add_flag("--no-stack", a.no_stack,
                 "Predict with the regressor alone, without the ridge over its pool-device predictions fitted on "
                 "the shots");
    cmd.add_flag("--calibrate", a.calibrate, "Shift the predictions by the mean log residual on the shots");
    cmd.add_option("--encoder", a.encoder,
                   "Architecture encoding: nb201 (one-hot + op counts) | aggregates (per-operator-type count, MACs, "
                   "bytes; any network) | model (the graph embedding of the trained hifisage or brpnas --model)");
    cmd.add_option("--model", a.model, "Saved estimator whose graph embedding --encoder model uses (.dnnc)");
    cmd.add_option("--baseline", a.baseline,
                   "Also report a baseline on the same shots: none | ridge (a ridge fitted on the shots alone: the "
                   "five NB201 op counts with --encoder nb201, else the per-operator-type aggregates)")
        ->check(check::member({"none", "ridge"}));
    cmd.add_flag("--json", a.json_out, "Print the report (test metrics, shots) as one JSON document");
    a.report.add(cmd);
}

inline json adapt_json(const AdaptArgs& a, const device::AdaptRequest& req, const device::AdaptReport& r) {
    json j = train_detail::evaluation_json(r.test);
    if (r.baseline) j["baseline"] = train_detail::evaluation_json(*r.baseline);
    j["preset"] = req.prior ? "pool-prior" : "maple-edge";
    j["method"] = a.method;
    if (r.prior_device) j["prior_device"] = *r.prior_device;
    j["target"] = req.target;
    j["data"] = a.data.empty() ? a.pool : a.data;
    j["pool"] = a.pool;
    j["pool_targets"] = req.pool_targets;
    j["encoder"] = a.encoder;
    j["seed"] = a.seed;
    j["sampling"] = a.sampling;
    j["proxy"] = r.proxy;
    j["clones"] = a.clones;
    j["n_train"] = r.shot_keys.size();
    j["n_val"] = 0;
    j["n_test"] = r.n_test;
    j["epochs"] = a.epochs;
    j["train_seconds"] = r.seconds;
    j["shots"] = r.shot_keys;
    return j;
}

inline void print_adapt(const AdaptArgs& a, const device::AdaptRequest& req, const device::AdaptReport& r) {
    std::cout << "adapt: target " << req.target << ", pool " << a.pool_targets << ", " << a.shots << " shots ("
              << a.sampling << ", seed " << a.seed << "), method " << a.method;
    if (r.prior_device)
        std::cout << " (prior: " << *r.prior_device << ")";
    else
        std::cout << ", " << a.clones << " clones";
    std::cout << ", encoder " << a.encoder << ", " << std::setprecision(3) << r.seconds << " s\n";
    train_detail::print_metrics(std::cout, "test", r.test.all);
    train_detail::print_metrics(std::cout, "test, non-degenerate", r.test.non_degenerate);
    if (r.baseline) train_detail::print_metrics(std::cout, r.baseline_name, r.baseline->all);
}

inline void run_adapt(AdaptArgs& a) {
    namespace td = train_detail;
    a.report.prepare();
    device::AdaptRequest req;
    req.pool_targets = train_detail::column_list(a.pool_targets, "--pool-targets");
    const bool results = !a.data.empty() && measure::is_results_file(a.data);
    req.target = a.target;
    if (req.target.empty()) {
        if (!results) raise<config_error>("--target is required unless --data is a results file of dnncost measure");
        req.target = "latency_ms";
    }
    std::unique_ptr<estimators::Estimator> model;
    if (a.encoder == "nb201" || a.encoder == "aggregates") {
        req.encoding = a.encoder == "nb201" ? device::AdaptEncoding::nb201 : device::AdaptEncoding::aggregates;
    } else {
        if (a.encoder != "model") {  // the old spelling: --encoder MODEL.dnnc
            warn_deprecated("--encoder MODEL.dnnc", "--encoder model --model MODEL.dnnc");
            a.model = a.encoder;
            a.encoder = "model";
        }
        if (a.model.empty()) raise<config_error>("--encoder model needs --model (a saved hifisage or brpnas model)");
        model = td::load_model(a.model).est;
        req.encoding = device::AdaptEncoding::embedding;
        req.embedding_model = model.get();
    }
    req.space = a.space;
    req.prior = a.method == "prior";
    req.shots = a.shots;
    req.sampling = a.sampling;
    req.proxy = a.proxy;
    req.maple = {.clones = a.clones,
                 .pool_networks = a.pool_networks,
                 .epochs = a.epochs,
                 .finetune_epochs = a.finetune,
                 .calibrate = a.calibrate,
                 .stack = !a.no_stack,
                 .seed = a.seed};
    req.baseline = a.baseline == "ridge";
    // NaN or missing values are errors here, not skipped rows: a pool or target column with
    // holes is a data problem the user must see (file and line).
    auto pool_columns = req.pool_targets;
    if (a.data.empty()) pool_columns.push_back(req.target);
    const auto pool = td::load(a.pool, a.space, a.space_options, pool_columns, true);
    std::optional<train::Dataset> own;
    if (!a.data.empty()) own.emplace(td::load(a.data, a.space, a.space_options, {req.target}, true));

    const auto r = device::adapt_to_device(pool, own ? &*own : nullptr, req);
    std::cerr << "dnncost: " << r.candidates << " of the target's " << (own ? own->size() : pool.size())
              << " networks are in the pool (shot candidates)\n";
    const json report = adapt_json(a, req, r);
    a.report.write(report);
    if (a.json_out)
        print_json(report);
    else
        print_adapt(a, req, r);
}

}  // namespace adapt_detail

void add_adapt_commands(Command& app, Context& ctx) {
    auto a = std::make_shared<adapt_detail::AdaptArgs>();
    auto* cmd = app.add_subcommand(
        "adapt", "Adapt to a new device from a few of its measurements and a pool of measured devices (MAPLE-Edge)");
    adapt_detail::add_adapt_options(*cmd, *a);
    cmd->callback([a, &ctx] {
        adapt_detail::run_adapt(*a);
        ctx.exit_code = 0;
    });
}

}  // namespace dnncost::cli
