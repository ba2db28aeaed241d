#pragma once
/// @file op_table_build.hpp
/// Building an operator table (cost/op_table.hpp) by measurement: every distinct operator
/// configuration of some networks is written as single-operator ONNX models (with weights, so the
/// runtime treats them as in a deployed model) over a grid of channel counts, measured through
/// the runner harness into a results store (so an interrupted build resumes without measuring
/// again), and the results become the table's points. Needs the `dnncost::onnx` target.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <dnncost/core/config.hpp>
#include <dnncost/core/error.hpp>
#include <dnncost/cost/op_config.hpp>
#include <dnncost/cost/op_table.hpp>
#include <dnncost/graph/graph.hpp>
#include <dnncost/io/csv.hpp>
#include <dnncost/measure/harness.hpp>
#include <dnncost/measure/model_file.hpp>
#include <dnncost/measure/store.hpp>

namespace dnncost::measure {

/// The channel counts measured along one axis, up to the network's own count `max`.
struct GridSpec {
    enum class Kind { uniform, proportional };
    Kind kind = Kind::uniform;
    /// uniform: the spacing in channels (8: 8, 16, 24, ..., max); proportional: the fraction of
    /// max (0.1: 10 %, 20 %, ..., 100 % of max, rounded).
    double step = 8;

    /// "uniform:8" | "proportional:0.1". @throws config_error
    static GridSpec parse(std::string_view s) {
        GridSpec g;
        const auto colon = s.find(':');
        const auto kind = s.substr(0, colon);
        if (kind == "uniform")
            g.kind = Kind::uniform;
        else if (kind == "proportional")
            g.kind = Kind::proportional;
        else
            raise<config_error>("grid '", s, "': expected uniform:STEP or proportional:FRACTION");
        const auto v = colon == std::string_view::npos ? io::ParsedNumber{} : io::parse_number(s.substr(colon + 1));
        if (v.status != io::NumberStatus::ok) raise<config_error>("grid '", s, "': the step is not a number");
        g.step = v.value;
        if (g.kind == Kind::uniform && !(g.step >= 1 && g.step == std::floor(g.step) && g.step <= 1e6))
            raise<config_error>("grid '", s, "': a uniform step is a whole number of channels >= 1");
        if (g.kind == Kind::proportional && !(g.step > 0 && g.step <= 1))
            raise<config_error>("grid '", s, "': a proportional step is a fraction in (0, 1]");
        return g;
    }

    /// Sorted, distinct counts in [1, max], each a multiple of `multiple` (grouped convolutions),
    /// always including max itself.
    std::vector<std::int64_t> points(std::int64_t max, std::int64_t multiple = 1) const {
        if (max < 1) raise<config_error>("GridSpec::points: max must be >= 1, got ", max);
        multiple = std::max<std::int64_t>(1, multiple);
        std::set<std::int64_t> out;
        const auto snap = [&](double v) {
            auto n = static_cast<std::int64_t>(std::llround(v / static_cast<double>(multiple))) * multiple;
            n = std::clamp<std::int64_t>(n, multiple, max);
            out.insert(n);
        };
        if (kind == Kind::uniform) {
            for (double v = step; v < static_cast<double>(max); v += step) snap(v);
        } else if (static_cast<double>(max) * step <= static_cast<double>(multiple)) {
            // levels no further apart than `multiple`: every multiple is one (without a loop
            // over 1/step levels, a billion for proportional:1e-9)
            for (std::int64_t v = multiple; v < max; v += multiple) out.insert(v);
        } else {
            const auto n = std::llround(1.0 / step);
            for (long long i = 1; i < n; ++i) snap(static_cast<double>(max) * step * static_cast<double>(i));
        }
        out.insert(max);
        return {out.begin(), out.end()};
    }
};

/// The most single-operator models one table build makes: a finer grid (uniform:1 on a network
/// of 2048 channels: eleven million) would exhaust memory before measuring anything.
inline constexpr std::size_t max_table_models = 500000;

/// One single-operator model of a table build: the operator followed by the sink (see
/// cost::single_op_graph), and the sink alone on the operator's output, whose latency is
/// subtracted.
struct TableModel {
    cost::OpKey key;
    std::int64_t c = 0, k = 0;
    graph::Graph graph;
    std::string store_key;  ///< network_key(graph)
    graph::Graph sink;      ///< empty (no nodes) when built without a sink
    std::string sink_key;
};

/// The distinct configurations of `graphs` (each with the first node that has it, whose graph
/// serves as the template) and, per key, the grid: per axis the union over networks of
/// grid.points(network's count). Nodes without a configuration are skipped (the table prices
/// free operators at zero and reports the others).
/// @throws config_error when the grid makes more than max_table_models models
DNNCOST_FUNC std::vector<TableModel> table_models(const std::vector<graph::Graph>& graphs, const GridSpec& grid,
                                            bool sink = true);

/// The table of the models the store has a result for (operator with sink minus sink alone,
/// at least 0); the others are listed in `missing` ("key c=.. k=..: status").
DNNCOST_FUNC cost::OpTable table_from_store(const std::vector<TableModel>& models, const ResultsStore& store,
                                      std::vector<std::string>* missing = nullptr);

/// The harness's networks for `models`, model files written into `dir` (only for those the
/// store lacks, unless `force`), ids "op_table:KEY c=.. k=..".
DNNCOST_FUNC std::vector<Network> table_networks(const std::vector<TableModel>& models, const ResultsStore& store,
                                           const std::filesystem::path& dir, std::uint64_t seed, bool force);

}  // namespace dnncost::measure

#if !defined(DNNCOST_COMPILED)
#include <dnncost/measure/op_table_build_impl.hpp>
#endif
