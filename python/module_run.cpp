// The Python module's measuring, training and search (docs/python.md): dnncost.measure,
// dnncost.train and dnncost.nsga2, each one library call made with the GIL released.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "module.hpp"

#include <dnncost/core/error.hpp>
#include <dnncost/device/calibration_json.hpp>
#include <dnncost/device/device_build.hpp>
#include <dnncost/device/device_model.hpp>
#include <dnncost/estimators/training.hpp>
#include <dnncost/io/file.hpp>
#include <dnncost/io/onnx.hpp>
#include <dnncost/measure/campaign.hpp>
#include <dnncost/measure/json.hpp>
#include <dnncost/measure/store.hpp>
#include <dnncost/search/function_problem.hpp>
#include <dnncost/spaces/network_name.hpp>
#include <dnncost/spaces/registry.hpp>
#include <dnncost/train/computed_targets.hpp>
#include <dnncost/train/dataset.hpp>

namespace py = pybind11;

namespace dnncost::python {
namespace {

// ------------------------------------------------------------------ measure

/// A JSON value of the library as the Python object json.loads would give.
py::object to_python(const measure::json::Value& v) {
    using Kind = measure::json::Value::Kind;
    switch (v.kind) {
        case Kind::null:
            return py::none();
        case Kind::boolean:
            return py::bool_(v.boolean);
        case Kind::number:
            if (std::isfinite(v.number) && v.number == std::floor(v.number) && std::abs(v.number) < 9e15)
                return py::int_(static_cast<long long>(v.number));
            return py::float_(v.number);
        case Kind::string:
            return py::str(v.string);
        case Kind::array: {
            py::list l;
            for (const auto& i : v.items) l.append(to_python(i));
            return l;
        }
        case Kind::object: {
            py::dict d;
            for (const auto& [k, m] : v.members) d[py::str(k)] = to_python(m);
            return d;
        }
    }
    return py::none();
}

/// The harness's and the campaign's options from keyword arguments, worded as the CLI's flags
/// (--round-ms: round_ms); an unknown one is a TypeError naming `function`.
void read_options(const py::dict& kw, measure::CampaignOptions& o, std::string& statistic, bool& fresh_sessions,
                  const std::string& function = "dnncost.measure") {
    auto& h = o.harness;
    for (auto [key, value] : kw) {
        const auto k = key.cast<std::string>();
        const std::string option = function + ": option '" + k + "'";
        if (k == "rounds") h.rounds = cast_arg<int>(value, option, "an integer");
        else if (k == "warmup") h.warmup = cast_arg<int>(value, option, "an integer");
        else if (k == "repeats") h.repeats = cast_arg<int>(value, option, "an integer");
        else if (k == "round_ms") h.round_ms = cast_arg<double>(value, option, "a number");
        else if (k == "max_repeats") h.max_repeats = cast_arg<int>(value, option, "an integer");
        else if (k == "max_rounds") h.max_rounds = cast_arg<int>(value, option, "an integer");
        else if (k == "remeasure_spread") h.remeasure_spread = cast_arg<double>(value, option, "a number");
        else if (k == "interleave") h.interleave = cast_arg<int>(value, option, "an integer");
        else if (k == "statistic") statistic = cast_arg<std::string>(value, option, "a string");
        else if (k == "fresh_sessions") fresh_sessions = cast_arg<bool>(value, option, "True or False");
        else if (k == "force") h.force = cast_arg<bool>(value, option, "True or False");
        else if (k == "timeout") o.timeout_seconds = cast_arg<double>(value, option, "a number");
        else if (k == "startup_timeout") o.startup_timeout_seconds = cast_arg<double>(value, option, "a number");
        else if (k == "retries") o.retries = cast_arg<int>(value, option, "an integer");
        else if (k == "noise_check") o.noise_check = cast_arg<std::size_t>(value, option, "a non-negative integer");
        else if (k == "cpu") o.cpu = cast_arg<int>(value, option, "an integer");
        else if (k == "realtime") o.realtime = cast_arg<bool>(value, option, "True or False");
        else if (k == "allow_other_host") o.allow_other_host = cast_arg<bool>(value, option, "True or False");
        else throw py::type_error(function + ": unknown option '" + k + "'");
    }
}

/// The options read by read_options() made whole and checked as the CLI checks its flags: the
/// statistic and kept sessions set, the caps raised to the rounds and repeats asked for, the time
/// limits in range. No GIL needed.
void finish_options(measure::CampaignOptions& o, const std::string& statistic, bool fresh_sessions,
                    const std::string& function) {
    auto& h = o.harness;
    h.statistic = measure::parse_statistic(statistic);
    h.keep_sessions = !fresh_sessions;
    h.max_rounds = std::max(h.max_rounds, h.rounds);
    h.max_repeats = std::max(h.max_repeats, h.repeats);
    h.check();
    if (!(o.timeout_seconds > 0) || o.timeout_seconds > 1e6)
        raise<config_error>(function, ": timeout ", o.timeout_seconds, " must be in (0, 10^6] seconds");
    if (!(o.startup_timeout_seconds >= 0) || o.startup_timeout_seconds > 3600)
        raise<config_error>(function, ": startup_timeout ", o.startup_timeout_seconds, " must be in [0, 3600] seconds");
}

/// Each network's line on stderr as `dnncost measure` writes it on a non-terminal.
measure::CampaignEvents progress_events() {
    measure::CampaignEvents ev;
    ev.harness.on_result = [](const measure::Network& n, const measure::Record& r) {
        if (r.ok())
            std::cerr << "ok      " << n.id << "  " << std::setprecision(4) << r.latency_ms << " ms  (" << r.rounds
                      << " rounds)\n";
        else
            std::cerr << "FAILED  " << n.id << "  " << to_string(r.status) << ": " << r.detail << '\n';
    };
    ev.on_warning = [](const std::string& m) { std::cerr << "dnncost: " << m << '\n'; };
    return ev;
}

py::object run_measure(py::object networks, py::object runner, const std::string& out, const std::string& device,
                       const std::string& space, std::size_t sample, std::uint64_t seed, const std::string& space_options,
                       bool progress, py::kwargs kw) {
    measure::CampaignOptions o;
    if (py::isinstance<py::str>(runner))
        o.runners = {runner.cast<std::string>()};
    else
        o.runners = cast_arg<std::vector<std::string>>(runner, "dnncost.measure: runner",
                                                       "a command string or a list of them");
    if (o.runners.empty()) throw py::value_error("dnncost.measure: no runner");
    o.device = device;
    o.out = out;
    o.seed = seed;
    std::string statistic = "min";
    bool fresh_sessions = false;
    read_options(kw, o, statistic, fresh_sessions);

    measure::NetworkSource source;
    source.space = space;
    source.sample = sample;
    source.space_options = spaces::space_options(space_options);
    if (!networks.is_none()) {
        if (sample > 0) throw py::value_error("dnncost.measure: name the networks one way: a list, or space= and sample=");
        std::vector<std::string> list;
        if (py::isinstance<py::str>(networks) || py::hasattr(networks, "__fspath__"))
            list.push_back(py::str(py::module_::import("os").attr("fspath")(networks)));
        else
            for (auto n : networks) list.push_back(py::str(py::module_::import("os").attr("fspath")(n)));
        if (list.empty()) throw py::value_error("dnncost.measure: no networks");
        // ONNX files, or network names and architecture strings (bare ones of `space`): not a mix
        std::size_t files = 0;
        const auto names_network = [](const std::string& n) {
            try {
                return spaces::parse_network_name(n).has_value();
            } catch (const parse_error&) {  // a name with bad options: measuring it says what is wrong
                return true;
            }
        };
        for (const auto& n : list) files += !names_network(n) && (space.empty() || n.ends_with(".onnx"));
        if (files != 0 && files != list.size())
            throw py::value_error("dnncost.measure: a list of ONNX files or of architecture strings, not a mix");
        if (files)
            source.onnx_files = std::move(list);
        else
            source.archs = std::move(list);
    } else if (sample == 0 || space.empty()) {
        throw py::value_error("dnncost.measure: give networks, or space= and sample=");
    }
    if (!space.empty()) spaces::check_space_options(spaces::find_space(space), source.space_options);

    measure::CampaignReport rep;
    {
        py::gil_scoped_release release;
        finish_options(o, statistic, fresh_sessions, "dnncost.measure");
        rep = measure::run_campaign(source, o, progress ? progress_events() : measure::CampaignEvents{});
    }
    return to_python(measure::report_json(rep, o));
}

// ------------------------------------------------------------------ calibrate

/// `x` as a file path (a str or an os.PathLike).
std::string path_arg(py::handle x, const std::string& what) {
    if (!py::isinstance<py::str>(x) && !py::hasattr(x, "__fspath__"))
        throw py::type_error(what + ": expected a path, got " + std::string(py::repr(x)));
    return py::str(py::module_::import("os").attr("fspath")(x));
}

Model run_calibrate(py::handle model, py::object runner, py::handle out, py::object shots, py::object work,
                    py::object data, bool global_only, bool intensity_slope, bool profile, bool progress,
                    py::kwargs kw) {
    const std::string fn = "dnncost.calibrate";
    const auto model_path = path_arg(model, fn + ": model");
    const auto out_path = path_arg(out, fn + ": out");
    std::vector<std::string> runners;
    if (py::isinstance<py::str>(runner))
        runners = {runner.cast<std::string>()};
    else if (!runner.is_none())
        runners = cast_arg<std::vector<std::string>>(runner, fn + ": runner", "a command string or a list of them");
    if (runner.is_none() == data.is_none())
        throw py::value_error(fn +
                              ": give runner= (measure the shots here) or data= (a results store of networks "
                              "measured here)");
    if (!runner.is_none() && runners.empty()) throw py::value_error(fn + ": no runner");
    // shots: a count of built-in networks (or of the store's networks), or the user's ONNX models:
    // files, or bytes in memory (a PyTorch export, say), each with the name messages give it
    std::optional<std::size_t> count;
    struct ShotModel {
        std::string name, bytes;
        bool in_memory = false;  ///< false: `name` is the file to read
    };
    std::vector<ShotModel> models;
    if (py::isinstance<py::int_>(shots) && !py::isinstance<py::bool_>(shots)) {
        const auto n = shots.cast<long long>();
        if (n < 1 || n > 100)
            throw py::value_error(fn + ": shots " + std::to_string(n) + " is not a count in [1, 100]");
        count = static_cast<std::size_t>(n);
    } else {
        if (py::isinstance<py::str>(shots) || py::hasattr(shots, "__fspath__") ||
            !py::isinstance<py::iterable>(shots) || py::isinstance<py::bytes>(shots) ||
            py::isinstance<py::bytearray>(shots))
            throw py::type_error(fn + ": shots: expected a count or a list of ONNX models (files or bytes), got " +
                                 std::string(py::repr(shots)));
        for (auto f : shots) {
            const auto at = "shots[" + std::to_string(models.size()) + "]";
            if (py::isinstance<py::bytes>(f) || py::isinstance<py::bytearray>(f) || py::isinstance<py::memoryview>(f))
                models.push_back({"<" + at + ">", py::bytes(py::module_::import("builtins").attr("bytes")(f)), true});
            else
                models.push_back({path_arg(f, fn + ": " + at), "", false});
        }
        if (models.empty()) throw py::value_error(fn + ": shots: an empty list");
        if (!data.is_none())
            throw py::value_error(fn + ": with data=, shots is a count (ONNX files are measured with runner=)");
    }
    measure::CampaignOptions o;
    std::string statistic = "min";
    bool fresh_sessions = false;
    read_options(kw, o, statistic, fresh_sessions, fn);
    for (const char* campaign_only : {"force", "startup_timeout", "noise_check", "cpu", "realtime", "allow_other_host"})
        if (kw.contains(campaign_only))
            throw py::type_error(fn + ": unknown option '" + std::string(campaign_only) + "'");
    const std::string data_path = data.is_none() ? "" : path_arg(data, fn + ": data");
    const std::string work_dir = work.is_none() ? out_path + ".work" : path_arg(work, fn + ": work");

    Model result;
    measure::json::Value report;
    {
        py::gil_scoped_release release;
        io::check_writable(out_path);
        auto m = device::DeviceModel::deserialize(io::read_file(model_path), model_path);
        m->set_source(model_path);
        device::DeviceCalibrationSetup s;
        s.runners = runners;
        s.work_dir = work_dir;
        finish_options(o, statistic, fresh_sessions, fn);
        s.harness = o.harness;
        s.pool.timeout = measure::Millis(static_cast<std::int64_t>(o.timeout_seconds * 1000));
        s.pool.retries = o.retries;
        s.profile = profile && !global_only;  // profiles serve the family and intensity factors alone
        if (progress) s.events.on_result = progress_events().harness.on_result;  // each shot's line on stderr
        device::CalibrationOptions options;
        options.per_family = !global_only;
        options.intensity_slope = !global_only && intensity_slope;
        std::optional<train::TrainData> measured;  // keeps the store's graphs alive
        std::vector<graph::Graph> networks;
        if (!data_path.empty()) {
            const auto ds = measure::load_results_dataset(
                data_path, {"latency_ms"}, false, [](const std::filesystem::path& p) { return io::import_onnx(p); });
            measured = ds.subset(ds.all_items(), "latency_ms");
        } else if (count) {
            networks = device::calibration_networks(*count);
        } else {
            for (const auto& shot : models) {
                const auto bytes = shot.in_memory ? shot.bytes : io::read_file(shot.name);
                networks.push_back(io::import_onnx_bytes(bytes, shot.name));
                s.opsets.push_back(io::onnx_opset(bytes, shot.name));  // written for the runner at its own opset
            }
        }
        const auto r = measured ? device::calibrate_device_model(*m, *measured, *count, options)
                                : device::calibrate_device_model(*m, networks, s, options);
        io::write_file_atomic(out_path, m->serialize());
        // warnings stay without progress lines, as dnncost.measure's do
        if (const auto disturbed = r.disturbance.summary(); !disturbed.empty())
            std::cerr << "dnncost: warning: the shots: " << disturbed << "; calibrate again on a quiet machine\n";
        for (const auto& why : r.profile_problems) std::cerr << "dnncost: warning: profiling the shots: " << why << '\n';
        report = device::calibration_json(r, model_path, out_path);
        result.est = std::shared_ptr<estimators::Estimator>(std::move(m));
        result.source = out_path;
    }
    result.report = to_python(report);
    return result;
}

// ------------------------------------------------------------------ train

py::dict metrics_dict(const train::Metrics& m) {
    py::dict d;
    for (const auto& [name, value] : m.fields()) {
        if (name == "n")
            d[py::str(name)] = m.n;
        else
            d[py::str(name)] = std::isfinite(value) ? py::object(py::float_(value)) : py::object(py::none());
    }
    return d;
}

Model run_train(const std::string& data, const std::string& target, const std::string& preset, const std::string& space,
                const std::string& space_options, std::size_t n_train, std::size_t n_val, std::size_t n_test,
                std::uint64_t seed, int epochs, int patience, unsigned threads, int ensemble, bool strict,
                bool verbose) {
    estimators::TrainRequest req;
    std::vector<std::string> targets;
    {
        std::stringstream ss(target);
        for (std::string t; std::getline(ss, t, ',');) targets.push_back(t);
    }
    estimators::TrainReport r;
    std::size_t rows = 0;
    {
        py::gil_scoped_release release;
        req.targets = targets;
        req.preset = preset;
        (void)estimators::make_estimator(preset, req.settings);  // an unknown preset fails before loading
        req.ensemble = ensemble;
        req.split = {n_train, n_val, n_test, train::Sampling::random, seed};
        req.default_space = space;
        req.fit = {.seed = seed, .max_epochs = epochs, .patience = patience, .threads = threads, .on_epoch = {}};
        if (verbose) {
            req.fit.on_epoch = [](const std::string& line) {
                std::cerr << line << '\n';
                return false;
            };
            req.on_note = [](const std::string& line) { std::cerr << "dnncost: " << line << '\n'; };
        }
        const auto opts = spaces::space_options(space_options);
        const auto columns = train::measured_columns(targets);
        const train::GraphLoader loader = [](const std::filesystem::path& p) { return io::import_onnx(p); };
        train::Dataset ds = [&] {
            if (measure::is_results_file(data)) return measure::load_results_dataset(data, columns, strict, loader, opts);
            train::DatasetOptions d;
            d.space = space;
            d.space_options = opts;
            d.columns = columns;
            d.strict = strict;
            d.loader = loader;
            return train::load_dataset(data, d);
        }();
        train::add_computed_targets(ds, targets);
        rows = ds.size();
        r = estimators::train_estimator(ds, req);
    }
    Model m;
    m.est = std::shared_ptr<estimators::Estimator>(std::move(r.model));
    m.meta = {{"target", target},
              {"data", data},
              {"space", space},
              {"space_options", space_options},
              {"seed", std::to_string(seed)},
              {"sampling", "random"},
              {"n_train", std::to_string(r.split.train.size())},
              {"n_val", std::to_string(r.split.validation.size())}};
    py::dict report;
    if (r.test.size() == 1) {
        report["test"] = metrics_dict(r.test[0].accuracy.all);
    } else {
        py::dict by_target;
        for (const auto& t : r.test) by_target[py::str(t.target)] = metrics_dict(t.accuracy.all);
        report["test"] = by_target;
    }
    report["rows"] = rows;
    report["n_train"] = r.split.train.size();
    report["n_val"] = r.split.validation.size();
    report["n_test"] = r.split.test.size();
    report["epochs"] = r.fit.epochs;
    report["train_seconds"] = r.fit.seconds;
    if (r.coverage_2sigma) report["coverage_2sigma"] = *r.coverage_2sigma;
    if (const auto w = r.unknown.warning(); !w.empty()) report["warning"] = w;
    m.report = report;
    return m;
}

// ------------------------------------------------------------------ nsga2

/// The Python objective behind a FunctionProblem. Called from the search's threads with the GIL
/// released: it takes the GIL for each call, and keeps the first Python exception to re-raise
/// once the search has stopped.
struct PythonObjective {
    PyObject* function;  // borrowed: the caller's reference outlives the search
    std::mutex mutex;
    std::optional<py::error_already_set> raised;

    std::vector<double> operator()(const std::vector<double>& x) {
        py::gil_scoped_acquire gil;
        try {
            py::list arg(x.size());
            for (std::size_t i = 0; i < x.size(); ++i) arg[i] = x[i];
            const py::object r = py::reinterpret_borrow<py::object>(function)(arg);
            if (py::isinstance<py::str>(r) || !py::isinstance<py::iterable>(r))
                raise<error>("dnncost.nsga2: the objective returned ", std::string(py::repr(r)),
                             ", not a sequence of numbers");
            std::vector<double> out;
            for (auto v : r) {
                if (!py::isinstance<py::float_>(v) && !py::isinstance<py::int_>(v) &&
                    !py::hasattr(v, "__float__"))
                    raise<error>("dnncost.nsga2: the objective returned ", std::string(py::repr(r)),
                                 ", not a sequence of numbers");
                out.push_back(v.cast<double>());
            }
            return out;
        } catch (py::error_already_set& e) {
            {
                const std::lock_guard lock(mutex);
                if (!raised) raised = e;
            }
            raise<error>("dnncost.nsga2: the objective raised ", e.what());
        }
    }
};

py::dict run_nsga2(py::function evaluate, const std::vector<std::pair<double, double>>& bounds,
                   std::size_t n_objectives, std::size_t pop, std::size_t gens, std::uint64_t seed,
                   std::size_t threads, std::size_t max_evaluations) {
    std::vector<search::Bounds> b;
    for (const auto& [lo, hi] : bounds) b.push_back({lo, hi});
    PythonObjective objective{evaluate.ptr(), {}, {}};
    search::Options opt;
    opt.population = pop;
    opt.generations = gens;
    opt.max_evaluations = max_evaluations;
    opt.threads = threads;
    std::optional<search::Result<std::vector<double>>> result;
    std::exception_ptr failure;
    {
        py::gil_scoped_release release;
        try {
            const search::FunctionProblem problem(b, n_objectives,
                                                  [&objective](const std::vector<double>& x) { return objective(x); });
            search::Nsga2<search::FunctionProblem> nsga(problem, opt, seed);
            result = nsga.run();
        } catch (...) {
            failure = std::current_exception();
        }
    }
    if (objective.raised) throw *objective.raised;  // the objective's own exception, as it raised it
    if (failure) std::rethrow_exception(failure);
    py::list x, f;
    for (const auto& ind : result->front) {
        x.append(py::cast(ind.genome));
        f.append(py::cast(ind.objectives));
    }
    py::dict d;
    d["x"] = x;
    d["f"] = f;
    d["generations"] = result->generations;
    d["evaluations"] = result->evaluations;
    d["seconds"] = result->seconds;
    return d;
}

}  // namespace

void bind_run(py::module_& m) {
    m.def("measure", &run_measure, py::arg("networks") = py::none(), py::kw_only(), py::arg("runner"), py::arg("out"),
          py::arg("device"), py::arg("space") = "", py::arg("sample") = 0, py::arg("seed") = 0,
          py::arg("space_options") = "", py::arg("progress") = true,
          "Measure networks through runners into a resumable results store; returns `dnncost measure --json`'s "
          "summary");
    m.def("calibrate", &run_calibrate, py::arg("model"), py::kw_only(), py::arg("runner") = py::none(), py::arg("out"),
          py::arg("shots") = 10, py::arg("work") = py::none(), py::arg("data") = py::none(),
          py::arg("global_only") = false, py::arg("intensity_slope") = true, py::arg("profile") = true,
          py::arg("progress") = true,
          "Calibrate a device model to this machine: measure shots (a count of built-in networks, or your ONNX "
          "models: files or bytes) through runners, or take networks a results store measured here (data=); writes the "
          "calibrated model to out and returns it, its .report `dnncost device calibrate --json`'s document");
    m.def("train", &run_train, py::arg("data"), py::kw_only(), py::arg("target") = "latency_ms",
          py::arg("preset") = "additive", py::arg("space") = "nb201", py::arg("space_options") = "",
          py::arg("n_train") = 100, py::arg("n_val") = 100, py::arg("n_test") = 0, py::arg("seed") = 0,
          py::arg("epochs") = -1, py::arg("patience") = -1, py::arg("threads") = 0, py::arg("ensemble") = 0,
          py::arg("strict") = false, py::arg("verbose") = false,
          "Train an estimator on a results store or CSV data set; its .report holds the test metrics");
    m.def("nsga2", &run_nsga2, py::arg("evaluate"), py::arg("bounds"), py::arg("n_objectives"), py::kw_only(),
          py::arg("pop") = 100, py::arg("gens") = 250, py::arg("seed") = 0, py::arg("threads") = 1,
          py::arg("max_evaluations") = 0,
          "NSGA-II over real genes within bounds, minimising evaluate(x) -> objectives; returns the final front");
}

}  // namespace dnncost::python
