#pragma once
/// @file additive_header.hpp
/// The header `dnncost export-header` writes for an additive model: the fitted features and
/// weights as constants and predict(graph) as the same sums in the same order, needing only
/// dnncost's core, graph, analytic-cost and operator-kind headers.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <dnncost/core/error.hpp>
#include <dnncost/features/op_aggregates.hpp>

namespace dnncost::estimators {

namespace header_detail {
/// A double as text that reads back to the same double.
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

}  // namespace header_detail

/// The header of an additive model: its features and weights as constants, predict(graph) as
/// the same sums in the same order as AdditiveEstimator's predictions.
/// @param config  AdditiveEstimator::config, written into the header
/// @throws parse_error for a vocabulary that is not sorted
inline std::string additive_header(const features::OpAggregates& f, const std::vector<double>& weights,
                                   double intercept, double target_scale, std::string_view config,
                                   const std::string& name, const std::string& source) {
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
      << "inline constexpr std::string_view config = \"" << config << "\";\n"
      << "inline constexpr int per_type = " << features::OpAggregates::per_type << ";  // count, MACs, bytes\n"
      << "inline constexpr bool compiled_view = " << (f.compiled ? "true" : "false") << ";\n"
      << "// operator types are features::op_kind()s: depthwise, grouped and pointwise convolutions apart\n"
      << "inline constexpr bool split_convs = " << (f.split_convs ? "true" : "false") << ";\n";
    h << header_detail::array_of("std::string_view", "vocabulary", f.vocabulary,
                                 [](const std::string& s) { return "\"" + s + "\""; });
    h << header_detail::array_of("std::int64_t", "keep", f.keep, [](std::int64_t v) { return std::to_string(v); });
    h << header_detail::array_of("double", "mean", f.mean, header_detail::number)
      << header_detail::array_of("double", "scale", f.scale, header_detail::number)
      << header_detail::array_of("double", "weights", weights, header_detail::number);
    h << "inline constexpr double intercept = " << header_detail::number(intercept) << ";\n"
      << "inline constexpr double target_scale = " << header_detail::number(target_scale) << ";\n\n"
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

}  // namespace dnncost::estimators
