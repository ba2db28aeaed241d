// `dnncost inspect FILE.onnx` and `dnncost nb201 ARCH`: what a network costs, operator by operator.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <iomanip>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "commands.hpp"
#include "common.hpp"

#include <dnncost/core/rng.hpp>
#include <dnncost/cost/analytic.hpp>
#include <dnncost/cost/memory.hpp>
#include <dnncost/io/onnx.hpp>
#include <dnncost/spaces/nb201.hpp>
#include <dnncost/spaces/registry.hpp>
#include <dnncost/spaces/sample.hpp>

namespace dnncost::cli {

namespace inspect_detail {

/// Roofline flags shared by both commands; both must be given for a latency estimate.
struct RooflineFlags {
    double peak_gflops = 0.0;
    double bandwidth_gbs = 0.0;
    double overhead_us = 0.0;

    void add_to(Command& cmd) {
        auto* p =
            cmd.add_option("--peak-gflops", peak_gflops, "Device peak compute, GFLOP/s (enables roofline latency)")
                ->check(check::finite(check::Sign::positive))
                ->check(check::in_range(1e-6, 1e9, "GFLOP/s"));
        auto* b = cmd.add_option("--bandwidth-gbs", bandwidth_gbs, "Device memory bandwidth, GB/s")
                      ->check(check::finite(check::Sign::positive))
                      ->check(check::in_range(1e-6, 1e9, "GB/s"));
        p->needs(b);
        b->needs(p);
        cmd.add_option("--overhead-us", overhead_us, "Fixed per-operator overhead, microseconds (default 0)")
            ->check(check::finite(check::Sign::non_negative))
            ->check(check::in_range(0, 1e9, "microseconds"));
    }
    std::optional<cost::DeviceSpec> device() const {
        if (peak_gflops <= 0.0 || bandwidth_gbs <= 0.0) return std::nullopt;
        cost::DeviceSpec d;
        d.name = "cli";
        d.peak_flops = peak_gflops * 1e9;
        d.bandwidth = bandwidth_gbs * 1e9;
        d.per_op_overhead_s = overhead_us * 1e-6;
        return d;
    }
};

/// "4.089 G", "25.53 M", "812 ".
inline std::string si(double v) {
    const char* units[] = {"", "k", "M", "G", "T", "P"};
    int u = 0;
    while (std::abs(v) >= 1000.0 && u < 5) {
        v /= 1000.0;
        ++u;
    }
    std::ostringstream os;
    if (u == 0)
        os << static_cast<long long>(v) << ' ';
    else
        os << std::fixed << std::setprecision(v >= 100 ? 1 : v >= 10 ? 2 : 3) << v << ' ' << units[u];
    return os.str();
}
inline std::string ms(double seconds) {
    std::ostringstream os;
    os << std::fixed << std::setprecision(seconds < 1e-3 ? 4 : 3) << seconds * 1e3 << " ms";
    return os.str();
}

/// Write everything in one go: a reader such as `head` that stops early then cannot cut the
/// report in the middle of a write.
inline void emit(const std::string& text) {
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
}

/// What both reports show: per-node and total analytic cost, peak memory, operator counts and,
/// with a device, the roofline latency.
struct NetworkCost {
    std::vector<cost::NodeCost> per_node;
    cost::NodeCost total;
    cost::PeakMemory memory;
    std::map<std::string, int> ops;
    std::optional<cost::RooflineResult> roofline;

    NetworkCost(const graph::Graph& g, const std::optional<cost::DeviceSpec>& device)
        : per_node(cost::annotate(g)), total(cost::total_cost(g)), memory(cost::peak_memory(g)) {
        for (const auto& n : g.nodes()) ++ops[n.op_type];
        if (device) roofline = cost::roofline(g, *device);
    }
};

/// The JSON report of one network: totals, peak memory, operator counts, inputs, per node.
inline json report_json(const graph::Graph& g, const std::string& title,
                        const std::optional<cost::DeviceSpec>& device) {
    const NetworkCost c(g, device);
    const auto& [per_node, total, memory, ops, roof] = c;
    json j;
    j["model"] = title;
    j["nodes"] = g.num_nodes();
    j["edges"] = g.num_edges();
    j["tensors"] = g.num_tensors();
    j["macs"] = total.macs;
    j["flops"] = total.flops;
    j["params"] = total.params;
    j["bytes"] = total.bytes();
    j["peak_memory"] = {{"weight_bytes", memory.weight_bytes},
                        {"peak_activation_bytes", memory.peak_activation_bytes},
                        {"total_bytes", memory.total_bytes()}};
    j["ops"] = ops;
    json inputs = json::array();
    for (int t : g.inputs()) inputs.push_back({{"name", g.tensor(t).name}, {"shape", g.tensor(t).shape}});
    j["inputs"] = inputs;
    if (roof) {
        j["latency_s"] = roof->total;
        j["device"] = {{"peak_flops", device->peak_flops},
                       {"bandwidth", device->bandwidth},
                       {"per_op_overhead_s", device->per_op_overhead_s}};
    }
    json nodes = json::array();
    for (std::size_t i = 0; i < g.num_nodes(); ++i) {
        const auto& n = g.nodes()[i];
        json o = {{"name", n.name},
                  {"op", n.op_type},
                  {"output_shape", n.outputs.empty() ? graph::Shape{} : g.tensor(n.outputs[0]).shape},
                  {"macs", per_node[i].macs},
                  {"flops", per_node[i].flops},
                  {"params", per_node[i].params},
                  {"bytes", per_node[i].bytes()}};
        if (roof) o["latency_s"] = roof->per_node[i];
        nodes.push_back(std::move(o));
    }
    j["per_node"] = std::move(nodes);
    return j;
}

/// The per-node table of the text report.
inline void node_table(std::ostringstream& os, const graph::Graph& g, const std::vector<cost::NodeCost>& per_node,
                       const std::vector<double>& latency) {
    auto out_shape = [&](const graph::Node& n) {
        std::string s;
        for (std::size_t k = 0; k < n.outputs.size(); ++k) {
            if (k) s += ' ';
            s += graph::to_string(g.tensor(n.outputs[k]).shape);
        }
        return s;
    };
    std::size_t wname = 4, wop = 2, wshape = 12;
    for (const auto& n : g.nodes()) {
        wname = std::max(wname, std::min<std::size_t>(printable(n.name).size(), 48));
        wop = std::max(wop, printable(n.op_type).size());
        wshape = std::max(wshape, out_shape(n).size());
    }
    auto cut = [&](const std::string& s) { return s.size() <= wname ? s : "..." + s.substr(s.size() - (wname - 3)); };
    os << std::left << std::setw(5) << "#" << std::setw(static_cast<int>(wname) + 2) << "name"
       << std::setw(static_cast<int>(wop) + 2) << "op" << std::setw(static_cast<int>(wshape) + 2) << "output"
       << std::right << std::setw(11) << "MACs" << std::setw(11) << "params" << std::setw(11) << "bytes";
    if (!latency.empty()) os << std::setw(12) << "latency";
    os << '\n';
    for (std::size_t i = 0; i < g.num_nodes(); ++i) {
        const auto& n = g.nodes()[i];
        os << std::left << std::setw(5) << i << std::setw(static_cast<int>(wname) + 2) << cut(printable(n.name))
           << std::setw(static_cast<int>(wop) + 2) << printable(n.op_type) << std::setw(static_cast<int>(wshape) + 2)
           << out_shape(n) << std::right << std::setw(11) << si(static_cast<double>(per_node[i].macs)) << std::setw(11)
           << si(static_cast<double>(per_node[i].params)) << std::setw(11)
           << si(static_cast<double>(per_node[i].bytes()));
        if (!latency.empty()) os << std::setw(12) << ms(latency[i]);
        os << '\n';
    }
}

/// The text report of one network: totals, then one row per node.
inline std::string report_text(const graph::Graph& g, const std::string& title,
                               const std::optional<cost::DeviceSpec>& device) {
    const NetworkCost c(g, device);
    const auto& [per_node, total, memory, ops, roof] = c;
    const std::vector<double> latency = roof ? roof->per_node : std::vector<double>{};
    const double latency_total = roof ? roof->total : 0.0;
    std::ostringstream os;
    std::vector<std::pair<std::string, int>> hist(ops.begin(), ops.end());
    std::stable_sort(hist.begin(), hist.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
    os << "model     " << printable(title) << '\n';
    os << "graph     " << g.num_nodes() << " nodes, " << g.num_edges() << " edges, " << g.num_tensors() << " tensors\n";
    for (int t : g.inputs())
        os << "input     " << printable(g.tensor(t).name) << ' ' << graph::to_string(g.tensor(t).shape) << '\n';
    os << "MACs      " << si(static_cast<double>(total.macs)) << "\n";
    os << "FLOPs     " << si(static_cast<double>(total.flops)) << "\n";
    os << "params    " << si(static_cast<double>(total.params)) << "\n";
    os << "bytes     " << si(static_cast<double>(total.bytes())) << "B (activations in+out, weights)\n";
    os << "memory    " << si(static_cast<double>(memory.total_bytes())) << "B peak: weights "
       << si(static_cast<double>(memory.weight_bytes)) << "B + activations "
       << si(static_cast<double>(memory.peak_activation_bytes)) << "B (sequential schedule)\n";
    if (device)
        os << "roofline  " << ms(latency_total) << " at " << device->peak_flops / 1e9 << " GFLOP/s, "
           << device->bandwidth / 1e9 << " GB/s\n";
    os << "operators ";
    for (std::size_t k = 0; k < hist.size(); ++k)
        os << (k ? ", " : "") << printable(hist[k].first) << " " << hist[k].second;
    os << "\n\n";
    node_table(os, g, per_node, latency);
    return os.str();
}

inline std::string dump(const json& j) { return json_text(j) + "\n"; }

inline void report(const graph::Graph& g, const std::string& title, bool as_json,
                   const std::optional<cost::DeviceSpec>& device) {
    emit(as_json ? dump(report_json(g, title, device)) : report_text(g, title, device));
}

/// `--onnx OUT --weights none|random --weight-seed S`, shared by `nb201` and `space`.
struct OnnxExportFlags {
    std::string out;
    std::string weights = "none";
    std::uint64_t weight_seed = 0;

    void add_to(Command& cmd, const std::string& what) {
        auto* onnx_option = cmd.add_option("--onnx", out, what)->check(check::output_path());
        cmd.add_option("--weights", weights,
                       "With --onnx: none (shapes only) or random (every weight an initializer with seeded values "
                       "of a trained network's scale, so a runtime folds and fuses constants)")
            ->check(check::member({"none", "random"}))
            ->capture_default_str()
            ->needs(onnx_option);
        cmd.add_option("--weight-seed", weight_seed, "Seed of the random weights")
            ->transform(check::seed())
            ->needs(onnx_option);
    }
    bool wanted() const { return !out.empty(); }
    void write(const graph::Graph& g, int opset) const {
        io::OnnxExportOptions export_options;
        if (opset > 0) export_options.opset = opset;
        export_options.weights = weights == "random" ? io::WeightData::random : io::WeightData::none;
        export_options.seed = weight_seed;
        io::export_onnx(g, out, export_options);
        std::fprintf(stderr, "dnncost: wrote %s\n", printable(out).c_str());
    }
};

/// An NB201 architecture given as its string or as dnncost's canonical index.
inline nb201::Arch parse_arch(const std::string& text) {
    if (!text.empty() && std::all_of(text.begin(), text.end(), [](char ch) { return ch >= '0' && ch <= '9'; })) {
        if (text.size() > 6) raise<config_error>("nb201: index '", text, "' out of range [0, 15625)");
        return nb201::from_index(std::stoll(text));
    }
    return nb201::parse(text);
}

}  // namespace inspect_detail

inline void add_inspect_command(Command& app) {
    struct Opts {
        std::string file;
        bool json = false;
        std::int64_t batch = 1;
        inspect_detail::RooflineFlags roof;
    };
    auto opts = std::make_shared<Opts>();
    auto* cmd = app.add_subcommand("inspect", "Operator graph and analytic cost of an ONNX network");
    cmd->add_option("FILE", opts->file, "ONNX network (.onnx)")->required();
    add_json_flag(*cmd, opts->json, "Print one JSON document instead of tables");
    cmd->add_option("--batch", opts->batch, "Batch size for a symbolic leading input dimension (default 1)")
        ->transform(check::integer(1, std::int64_t{1} << 20, "a batch size in [1, 2^20]"));
    opts->roof.add_to(*cmd);
    cmd->callback([opts] {
        io::OnnxImportOptions io_opt;
        io_opt.batch_size = opts->batch;
        const auto g = io::import_onnx(opts->file, io_opt);
        inspect_detail::report(g, opts->file, opts->json, opts->roof.device());
    });
}

inline void add_nb201_command(Command& app) {
    struct Opts {
        std::string arch;
        inspect_detail::OnnxExportFlags onnx;
        bool json = false;
        bool prune = false;
        std::int64_t batch = 1;
        inspect_detail::RooflineFlags roof;
    };
    auto opts = std::make_shared<Opts>();
    auto* cmd = app.add_subcommand("nb201", "Operator graph and analytic cost of a NAS-Bench-201 architecture");
    cmd->add_option("ARCH", opts->arch, "Architecture string (|op~0|+|op~0|op~1|+|op~0|op~1|op~2|) or index 0-15624")
        ->required();
    opts->onnx.add_to(*cmd, "Also write the network as an ONNX file");
    add_json_flag(*cmd, opts->json, "Print one JSON document instead of tables");
    cmd->add_flag("--prune", opts->prune, "Graph-compiler view: drop zero and dead operators");
    cmd->add_option("--batch", opts->batch, "Batch size (default 1)")
        ->transform(check::integer(1, std::int64_t{1} << 20, "a batch size in [1, 2^20]"));
    opts->roof.add_to(*cmd);
    cmd->callback([opts] {
        const auto arch = inspect_detail::parse_arch(opts->arch);
        nb201::Nb201Options o;
        o.prune = opts->prune;
        o.batch = opts->batch;
        if (opts->onnx.wanted()) io::check_writable(opts->onnx.out);
        const auto g = nb201::build_graph(arch, o);
        if (opts->onnx.wanted()) opts->onnx.write(g, 0);
        inspect_detail::report(g, nb201::to_string(arch) + (opts->prune ? " (pruned)" : ""), opts->json,
                               opts->roof.device());
    });
}

namespace inspect_detail {
struct SpaceOpts {
    std::string space, space_options;
    std::vector<std::string> archs;
    std::size_t sample = 0;
    std::uint64_t seed = 0;
    OnnxExportFlags onnx;
    bool json = false;
    RooflineFlags roof;
};

/// `space NAME --sample N`: the strings, one per line or one JSON array.
inline void print_sample(const spaces::SpaceInfo& space, const SpaceOpts& o) {
    Rng rng(o.seed);
    const auto drawn = spaces::sample_distinct(space, o.sample, rng);
    if (o.json) return emit(json_text(json(drawn), -1) + "\n");
    std::string out;
    for (const auto& a : drawn) out += a + "\n";
    emit(out);
}

/// `space NAME`: its summary and size.
inline void print_summary(const spaces::SpaceInfo& space, bool as_json) {
    const auto size = space.size();
    if (as_json)
        emit(json_text(json{{"space", space.name}, {"summary", space.summary}, {"size", size.to_string()}}) + "\n");
    else
        emit(std::string(space.name) + ": " + std::string(space.summary) + "\n" + "size: " + size.to_string() +
             " architectures\n");
}

/// `space NAME ARCH...`: each network's report; with --json one document (an array for several).
inline void print_archs(const spaces::SpaceInfo& space, const spaces::SpaceOptions& options, const SpaceOpts& o) {
    json reports = json::array();
    for (const auto& given : o.archs) {
        // `SPACE:ARCH`, as data sets, stores and `predict` write them, names its space
        std::string_view arch = given;
        if (const auto q = spaces::split_qualified(given); q && q->space && given.find(':') != std::string::npos) {
            if (q->space->name != space.name)
                raise<config_error>("'", given, "' is an architecture of space '", q->space->name, "', not of '",
                                    space.name, "'");
            arch = q->arch;
        }
        const auto canonical = space.canonical(arch);
        const auto g = space.build_graph(canonical, options);
        if (o.onnx.wanted()) o.onnx.write(g, space.onnx_opset);
        const auto title = spaces::qualified_arch(space.name, canonical);
        if (o.json)
            reports.push_back(report_json(g, title, o.roof.device()));
        else
            emit(report_text(g, title, o.roof.device()));
    }
    if (o.json) emit(dump(reports.size() == 1 ? reports[0] : reports));
}
}  // namespace inspect_detail

inline void add_space_command(Command& app) {
    auto opts = std::make_shared<inspect_detail::SpaceOpts>();
    auto* cmd = app.add_subcommand(
        "space", "A search space: its size, sampled architecture strings, or the operator graph of one");
    cmd->add_option("NAME", opts->space, "The search space: " + joined(space_names()))
        ->required()
        ->check(check::member(space_names()));
    cmd->add_option("ARCH", opts->archs, "Architecture strings to report (operator graph, MACs, memory)");
    auto* sample_option = add_sample_options(*cmd, opts->sample, opts->seed);
    add_space_options_option(*cmd, opts->space_options);
    opts->onnx.add_to(*cmd, "With one ARCH: also write it as an ONNX file");
    add_json_flag(*cmd, opts->json,
                  "Print one JSON document instead of tables (several ARCH: an array of reports; --sample: an "
                  "array of strings)");
    opts->roof.add_to(*cmd);
    cmd->callback([opts, sample_option] {
        const auto& o = *opts;
        const auto& space = spaces::find_space(o.space);
        const auto options = spaces::space_options(o.space_options);
        spaces::check_space_options(space, options);
        if (sample_option->count() > 0 && !o.archs.empty())
            raise<config_error>("give architecture strings or --sample N, not both");
        if (o.onnx.wanted() && o.archs.size() != 1)
            raise<config_error>("--onnx writes one network: give exactly one ARCH");
        if (o.onnx.wanted()) io::check_writable(o.onnx.out);
        if (sample_option->count() > 0) return inspect_detail::print_sample(space, o);
        if (o.archs.empty()) return inspect_detail::print_summary(space, o.json);
        inspect_detail::print_archs(space, options, o);
    });
}

/// Register `inspect`, `nb201` and `space`.
void add_inspect_commands(Command& app, Context& ctx) {
    (void)ctx;
    add_inspect_command(app);
    add_nb201_command(app);
    add_space_command(app);
}

}  // namespace dnncost::cli
