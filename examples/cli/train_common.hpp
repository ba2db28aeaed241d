#pragma once
// What `dnncost train`, `eval`, `predict`, `adapt` and `export-header` share: data sets read with
// the command line's options, saved models loaded and checked against their use, metrics printed.
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
#include <string_view>
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
#include <dnncost/spaces/registry.hpp>
#include <dnncost/train/computed_targets.hpp>
#include <dnncost/train/dataset.hpp>
#include <dnncost/train/metrics.hpp>
#include <dnncost/train/split.hpp>

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

/// The data set of `path` with the command line's options, the rows it left out named on stderr
/// (file and line). `results_only`: the file must be a results store of `dnncost measure`.
inline train::Dataset load(const std::string& path, const std::string& space, const std::string& space_options,
                           std::vector<std::string> columns, bool strict, bool results_only = false) {
    train::DatasetOptions opt;
    opt.space = space;
    opt.space_options = spaces::space_options(space_options);
    if (const auto* s = spaces::find_space_or_null(space)) spaces::check_space_options(*s, opt.space_options);
    // computed targets (train/computed_targets.hpp) are not read from the file
    opt.columns = train::measured_columns(columns);
    opt.strict = strict;
    opt.loader = [](const std::filesystem::path& p) { return io::import_onnx(p); };
    // a results store of `dnncost measure` (known by its header): its ok rows, keyed by id, and
    // its damaged lines among the rows skipped
    const bool results = results_only || measure::is_results_file(path);
    auto ds = results ? measure::load_results_dataset(path, opt.columns, strict, opt.loader, opt.space_options)
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

/// One stderr line on the GEMM arithmetic an estimator runs with: always when `always`, else
/// only for emulated bf16 (slow); nothing for an estimator without GEMMs.
inline void note_precision(const estimators::Estimator& est, const char* what, bool always) {
    const auto p = estimators::precision_of(est);
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
    const auto trained_on = [&](const std::string& spaces) {  // one space, or a comma-separated list
        std::stringstream ss(spaces);
        for (std::string s; std::getline(ss, s, ',');)
            if (s == space) return true;
        return false;
    };
    if (const auto s = m.container.meta("space"); s && !trained_on(*s))
        std::cerr << "dnncost: warning: " << path << " was trained on " << *s << " graphs; these inputs are " << space
                  << " (operators it has not seen contribute nothing)\n";
    if (const auto t = m.container.meta("target"); t && !target.empty() && *t != target)
        std::cerr << "dnncost: note: " << path << " was trained on column '" << *t
                  << "'; comparing its predictions with '" << target << "'\n";
}

/// Comma-separated columns of option `option` ("latency_ms,peak_memory_bytes"), each once: a
/// column named twice would count twice.
inline std::vector<std::string> column_list(const std::string& spec, std::string_view option = "--target") {
    std::vector<std::string> out;
    std::stringstream ss(spec);
    for (std::string t; std::getline(ss, t, ',');) {
        if (t.empty()) raise<config_error>(option, " '", spec, "': empty column name");
        if (std::find(out.begin(), out.end(), t) != out.end())
            raise<config_error>(option, " '", spec, "': column '", t, "' named twice");
        out.push_back(t);
    }
    if (out.empty()) raise<config_error>(option, ": no column named");
    return out;
}

inline void warn_unknown(const estimators::UnknownOperators& u) {
    if (const auto w = u.warning(); !w.empty()) std::cerr << "dnncost: warning: " << w << '\n';
}
}  // namespace train_detail

}  // namespace dnncost::cli
