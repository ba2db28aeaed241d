#pragma once
// `dnncost probe`: the hardware descriptor of this device (operator micro-kernels, performance
// counters). `dnncost export-header`: a trained estimator as one self-contained C++ header.
#include <cstdio>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>

#include "cmd_train.hpp"
#include "common.hpp"
#include "export_gnn_header.hpp"

#include <dnncost/estimators/additive.hpp>
#include <dnncost/measure/probe.hpp>

namespace dnncost::cli {

namespace export_detail {

inline std::string number(double v) {
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    return buf;
}
template <class V, class F>
std::string array_of(const char* type, const std::string& name, const V& values, F&& format) {
    std::string s =
        "inline constexpr std::array<" + std::string(type) + ", " + std::to_string(values.size()) + "> " + name + "{";
    for (std::size_t i = 0; i < values.size(); ++i) s += (i ? ", " : "") + format(values[i]);
    return s + "};\n";
}

/// The header of an additive model: its features and weights as constants, predict(graph) as
/// the same sums in the same order as AdditiveEstimator::predict.
inline std::string additive_header(const estimators::AdditiveEstimator& m, const std::string& name,
                                   const std::string& source) {
    const auto& f = m.features();
    if (!std::is_sorted(f.vocabulary.begin(), f.vocabulary.end()))
        raise<parse_error>(source, ": the model's operator vocabulary is not sorted");
    std::ostringstream h;
    h << "#pragma once\n"
      << "// " << name << ": the additive cost model " << source << ", written by `dnncost export-header`.\n"
      << "// predict(graph) needs only dnncost's core, graph, analytic-cost and operator-kind headers: no\n"
      << "// file I/O, no exception of its own, and it compiles with -fno-exceptions.\n"
      << "#include <algorithm>\n#include <array>\n#include <cstddef>\n#include <cstdint>\n#include <string>\n"
      << "#include <string_view>\n"
      << "#include <vector>\n\n"
      << "#include <dnncost/cost/analytic.hpp>\n#include <dnncost/graph/analysis.hpp>\n"
      << "#include <dnncost/features/op_kind.hpp>\n#include <dnncost/graph/graph.hpp>\n\n"
      << "namespace " << name << " {\n\n"
      << "inline constexpr std::string_view preset = \"additive\";\n"
      << "inline constexpr std::string_view config = \"" << estimators::AdditiveEstimator::config << "\";\n"
      << "inline constexpr int per_type = " << features::OpAggregates::per_type << ";  // count, MACs, bytes\n"
      << "inline constexpr bool compiled_view = " << (f.compiled ? "true" : "false") << ";\n"
      << "// operator types are features::op_kind()s: depthwise, grouped and pointwise convolutions apart\n"
      << "inline constexpr bool split_convs = " << (f.split_convs ? "true" : "false") << ";\n";
    h << array_of("std::string_view", "vocabulary", f.vocabulary, [](const std::string& s) { return "\"" + s + "\""; });
    h << array_of("std::int64_t", "keep", f.keep, [](std::int64_t v) { return std::to_string(v); });
    h << array_of("double", "mean", f.mean, number) << array_of("double", "scale", f.scale, number)
      << array_of("double", "weights", m.weights(), number);
    h << "inline constexpr double intercept = " << number(m.intercept()) << ";\n"
      << "inline constexpr double target_scale = " << number(m.target_scale()) << ";\n\n"
      << "/// The predicted cost of g, in the unit of the column the model was trained on.\n"
      << "inline double predict(const dnncost::graph::Graph& g) {\n"
      << "    const auto costs = dnncost::cost::annotate(g);\n"
      << "    std::vector<dnncost::graph::NodeAnalysis> an;\n"
      << "    if constexpr (compiled_view) an = dnncost::graph::analyse(g);\n"
      << "    const std::size_t half = vocabulary.size() * per_type;\n"
      << "    std::vector<double> f(compiled_view ? 2 * half : half, 0.0);\n"
      << "    for (std::size_t v = 0; v < g.num_nodes(); ++v) {\n"
      << "        const std::string kind = dnncost::features::op_kind(g, g.nodes()[v], split_convs);\n"
      << "        const std::string_view op = kind;\n"
      << "        const auto it = std::lower_bound(vocabulary.begin(), vocabulary.end(), op);\n"
      << "        if (it == vocabulary.end() || *it != op) continue;\n"
      << "        const auto t = static_cast<std::size_t>(it - vocabulary.begin()) * per_type;\n"
      << "        const double macs = static_cast<double>(costs[v].macs), bytes = "
         "static_cast<double>(costs[v].bytes());\n"
      << "        f[t] += 1.0;\n        f[t + 1] += macs;\n        f[t + 2] += bytes;\n"
      << "        if (compiled_view && an[v].kept() && !an[v].constant) {\n"
      << "            f[half + t] += 1.0;\n            f[half + t + 1] += macs;\n            f[half + t + 2] += "
         "bytes;\n"
      << "        }\n    }\n"
      << "    double value = intercept;\n"
      << "    for (std::size_t k = 0; k < keep.size(); ++k)\n"
      << "        value += weights[k] * ((f[static_cast<std::size_t>(keep[k])] - mean[k]) / scale[k]);\n"
      << "    return value * target_scale;\n}\n\n"
      << "}  // namespace " << name << "\n";
    return h.str();
}

inline bool is_identifier(const std::string& s) {
    if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
    for (char c : s)
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
    return true;
}

}  // namespace export_detail

inline void add_export_commands(CLI::App& app, Context& ctx) {
    // ------------------------------------------------------------------ probe
    auto probe_out = std::make_shared<std::string>();
    auto* probe = app.add_subcommand(
        "probe", "Hardware descriptor of this device: operator micro-kernels timed with performance counters");
    probe->add_option("--out", *probe_out, "Where to write the descriptor (JSON)")->required();
    probe->callback([probe_out, &ctx] {
        io::check_writable(*probe_out);
        const auto d = probe::run();
        if (!d.missing.empty()) {
            std::cerr << "dnncost: probe: " << d.missing.size() << " of " << probe::counters().size()
                      << " performance counters are missing; the descriptor keeps the kernel latencies"
                      << (d.missing.size() == probe::counters().size() ? " alone" : " and the others") << ":\n";
            for (const auto& m : d.missing) std::cerr << "dnncost: probe:   " << m << '\n';
        }
        io::write_file_atomic(*probe_out, probe::to_json(d));
        std::cout << "descriptor of " << d.kernels.size() << " kernels written to " << *probe_out << '\n';
        ctx.exit_code = 0;
    });

    // ------------------------------------------------------------------ export-header
    struct ExportArgs {
        std::string model, out, name;
    };
    auto a = std::make_shared<ExportArgs>();
    auto* ex = app.add_subcommand("export-header", "Write a trained estimator as one self-contained C++ header");
    ex->add_option("--model", a->model, "Saved model (.dnnc)")->required();
    ex->add_option("--out", a->out, "Header to write")->required();
    ex->add_option("--name", a->name, "C++ namespace of the model in the header")->required();
    ex->callback([a, &ctx] {
        if (!export_detail::is_identifier(a->name))
            raise<config_error>("--name '", a->name, "' is not a C++ identifier");
        io::check_writable(a->out);
        const auto model = train_detail::load_model(a->model);
        std::string header;
        if (const auto* additive = dynamic_cast<const estimators::AdditiveEstimator*>(model.est.get()))
            header = export_detail::additive_header(*additive, a->name, a->model);
        else if (auto* h = dynamic_cast<estimators::HiFiSage*>(model.est.get()))
            header = export_detail::gnn_header(*h, model.container, "HiFiSage", a->name, a->model);
        else if (auto* b = dynamic_cast<estimators::BrpNas*>(model.est.get()))
            header = export_detail::gnn_header(*b, model.container, "BrpNas", a->name, a->model);
        else
            raise<config_error>(a->model,
                                ": export-header supports the additive, hifisage and brpnas presets; this "
                                "model is '",
                                model.est->preset(), "'");
        io::write_file_atomic(a->out, header);
        std::cout << "header written to " << a->out << " (namespace " << a->name << ")\n";
        ctx.exit_code = 0;
    });
}

}  // namespace dnncost::cli
