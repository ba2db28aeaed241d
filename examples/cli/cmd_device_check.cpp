// `dnncost device check`: the kernel pass of a device model against the kernels a runtime
// executed, from the runner's profile (docs/device_model.md, "Checking the kernel pass").
#include <algorithm>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "commands.hpp"
#include "common.hpp"
#include "measure_options.hpp"

#include <dnncost/core/robust_statistics.hpp>
#include <dnncost/device/device_model.hpp>
#include <dnncost/device/kernel_check.hpp>
#include <dnncost/device/kernel_graph.hpp>
#include <dnncost/device/kind_spec.hpp>
#include <dnncost/io/file.hpp>
#include <dnncost/measure/candidates.hpp>
#include <dnncost/measure/model_file.hpp>
#include <dnncost/measure/runner.hpp>
#include <dnncost/measure/scratch_dir.hpp>
#include <dnncost/spaces/registry.hpp>

namespace dnncost::cli {

namespace device_check_detail {
namespace fs = std::filesystem;

struct CheckArgs {
    std::string model, rules, runner, space, space_options, kernels_out, write_rules;
    std::vector<std::string> files;
    std::size_t sample = 0;
    std::uint64_t seed = 1;
    int warmup = 2, repeats = 5;
    double timeout = 300;
    bool json_out = false;
};

/// `rules` with the rule changes `device check` points at applied (KernelCheck::suggestions, each
/// a rule line, or "drop " and one, read with the rule parser): a dropped pair loses its fuse and
/// fold rules, a new fuse or fold rule goes before the others (the first rule that matches wins),
/// an operator joins the executed ones, duplicates merge, and a kind takes the rewrite most of its
/// kernels ran as (the lowest rank seen with the reshapes). Where the networks point both ways on
/// one pair, the change that accounts for more kernels wins; a drop also needs more kernels than
/// the runtime ran fused as the pass does (`confirmed`, KernelCheck::confirmed).
inline device::FusionRules rules_with(device::FusionRules rules, const std::map<std::string, std::size_t>& changes,
                                      const std::map<std::string, std::size_t>& confirmed) {
    using Pair = std::pair<std::string, std::string>;
    std::map<Pair, std::pair<device::FusionRule, std::size_t>> joins;  // the rule most kernels point at
    std::map<Pair, std::size_t> drops;
    // per kind, the kernels each sequence it ran as accounts for
    std::map<std::string, std::map<std::vector<std::string>, std::pair<device::RewriteRule, std::size_t>>> rewrites;
    for (const auto& [change, n] : changes) {
        const bool drop = change.starts_with("drop ");
        const auto read = device::FusionRules::parse("dnncost-fusion-rules 1\n" + change.substr(drop ? 5 : 0) + "\n",
                                                     "suggested rule change");
        for (const auto& op : read.executed)
            if (!rules.is_executed(op)) rules.executed.push_back(op);
        rules.merge_duplicates = rules.merge_duplicates || read.merge_duplicates;
        for (const auto& r : read.rewrites) {
            auto& [rule, kernels] = rewrites[r.kind][r.as];
            if (kernels == 0) rule = r;
            // a rank seen without the reshapes stays below it
            if (r.reshape_rank > 0 && (rule.reshape_rank == 0 || r.reshape_rank < rule.reshape_rank))
                rule.reshape_rank = r.reshape_rank;
            kernels += n;
        }
        for (const auto& f : read.fusions) {
            const Pair pair{f.producer, f.consumer};
            if (drop) {
                drops[pair] += n;
            } else if (auto& j = joins[pair]; n > j.second) {
                j = {f, n};
            }
        }
    }
    const auto dropped = [&](const Pair& pair) {
        const auto d = drops.find(pair);
        const auto j = joins.find(pair);
        const auto kept = confirmed.find(pair.first + " " + pair.second);
        return d != drops.end() && (j == joins.end() || d->second >= j->second.second) &&
               (kept == confirmed.end() || d->second > kept->second);
    };
    std::erase_if(rules.fusions, [&](const device::FusionRule& f) { return dropped({f.producer, f.consumer}); });
    std::vector<device::FusionRule> added;
    for (const auto& [pair, j] : joins) {
        const bool present = std::any_of(rules.fusions.begin(), rules.fusions.end(), [&](const device::FusionRule& f) {
            return f.producer == pair.first && f.consumer == pair.second;
        });
        if (!dropped(pair) && !present) added.push_back(j.first);
    }
    rules.fusions.insert(rules.fusions.begin(), added.begin(), added.end());
    for (const auto& [kind, ways] : rewrites) {
        const auto most = std::max_element(
            ways.begin(), ways.end(), [](const auto& a, const auto& b) { return a.second.second < b.second.second; });
        const auto& rule = most->second.first;
        const auto it = std::find_if(rules.rewrites.begin(), rules.rewrites.end(),
                                     [&](const device::RewriteRule& r) { return r.kind == kind; });
        if (it == rules.rewrites.end())
            rules.rewrites.push_back(rule);
        else
            *it = rule;
    }
    return rules;
}

inline json mismatches(const std::vector<device::KernelMismatch>& v, bool with_ms) {
    json a = json::array();
    for (const auto& m : v) {
        json e{{"kernel", m.kernel}, {"name", m.name}, {"why", m.why}};
        if (with_ms) e["ms"] = m.ms;
        a.push_back(std::move(e));
    }
    return a;
}

/// The model's prices of the kernels the runtime ran against their profiled times, by kernel
/// family: where the model misprices this machine, and by how much.
struct FamilyPrices {
    std::size_t kernels = 0;
    double priced_ms = 0, profiled_ms = 0;
    std::vector<double> ratios;  ///< per kernel, profiled / priced
};

/// Adds network `g`'s matched kernels to `families` and returns them one by one (kind, first
/// node, FLOPs and bytes moved, price, profiled time): each pass kernel of `kg` the runtime ran
/// (KernelCheck::runtime_of) at the sum of the runtime kernels that ran it.
inline json add_prices(const device::DevicePrice& price, const graph::Graph& g, const device::KernelGraph& kg,
                       const device::KernelCheck& c, const std::vector<measure::RuntimeKernel>& profiled,
                       std::map<std::string, FamilyPrices>& families) {
    json out = json::array();
    for (std::size_t k = 0; k < price.kernels.size() && k < c.runtime_of.size(); ++k) {
        if (c.runtime_of[k].empty()) continue;
        const auto& pk = price.kernels[k];
        double ms = 0;
        for (const auto r : c.runtime_of[k]) ms += profiled[r].ms;
        auto& f = families[std::string(device::KindSpec::anchor_of(pk.kind))];
        ++f.kernels;
        f.priced_ms += pk.ms;
        f.profiled_ms += ms;
        if (pk.ms > 0) f.ratios.push_back(ms / pk.ms);
        out.push_back({{"kind", pk.kind},
                       {"node", pk.nodes.empty() ? std::string() : g.node(pk.nodes.front()).name},
                       {"flops", kg.kernels[k].cost.flops},
                       {"bytes", kg.kernels[k].cost.bytes()},
                       {"priced_ms", pk.ms},
                       {"profiled_ms", ms}});
    }
    return out;
}

/// "why" without the node names it mentions: the same disagreement across networks.
inline std::string pattern_of(const device::KernelMismatch& m) {
    auto why = m.why;
    if (const auto p = why.find(" ("); p != std::string::npos) why.erase(p);
    return m.kernel + ": " + why;
}

/// @return whether every network was profiled and compared
inline bool run_check(const CheckArgs& a) {
    // before the networks are profiled, which may take minutes, not after
    if (!a.kernels_out.empty()) io::check_writable(a.kernels_out);
    if (!a.write_rules.empty()) io::check_writable(a.write_rules);
    const auto model = device::DeviceModel::deserialize(io::read_file(a.model), a.model);
    const auto rules = a.rules.empty() ? model->rules() : device::FusionRules::parse(io::read_file(a.rules), a.rules);
    std::vector<measure::Candidate> nets;
    if (a.sample > 0)
        nets = measure::sample_candidates(spaces::find_space(a.space), a.sample, a.seed,
                                          spaces::space_options(a.space_options));
    if (!a.files.empty()) {
        auto more = measure::onnx_candidates(a.files, fs::current_path());
        for (auto& c : more) nets.push_back(std::move(c));
    }
    if (nets.empty()) raise<config_error>("device check: name networks: ONNX files, or --space NAME --sample N");
    const measure::ScratchDir scratch("dnncost-check");
    measure::Runner runner(a.runner);
    const auto timeout = measure::Millis(static_cast<std::int64_t>(a.timeout * 1000));
    json per_network = json::array();
    device::KernelCheck total;
    std::map<std::string, std::size_t> missing_by, extra_by;
    std::map<std::string, double> extra_ms;
    std::size_t failed = 0, without_profile = 0;
    // the model prices its own kernel pass: under other rules the kernels compared are not its own
    const bool priced = a.rules.empty();
    std::map<std::string, FamilyPrices> families;
    std::string kernel_lines;  // --kernels: one JSON line per profiled network
    for (std::size_t i = 0; i < nets.size(); ++i) {
        const auto& net = nets[i];
        const auto file = scratch.path() / ("net" + std::to_string(i) + ".onnx");
        measure::write_model_for_runner(net.graph, file, a.seed, net.opset);
        measure::Request req{i + 1, file.string(), a.warmup, a.repeats};
        req.profile = true;
        const auto o = runner.measure(req, timeout);
        json entry{{"network", net.id}};
        if (!o.ok()) {
            ++failed;
            entry["failure"] = std::string(measure::to_string(o.failure)) + ": " + o.detail;
            std::cerr << "dnncost: " << net.id << ": " << entry["failure"].get<std::string>() << '\n';
            per_network.push_back(std::move(entry));
            continue;
        }
        if (o.answer.kernels.empty()) {
            ++without_profile;
            entry["failure"] = "the runner answered without kernels (it does not profile)";
            per_network.push_back(std::move(entry));
            continue;
        }
        std::vector<measure::RuntimeNode> nodes;
        if (!o.answer.optimized_model.empty()) {
            try {
                nodes = device::read_runtime_nodes(o.answer.optimized_model);
            } catch (const error& e) {
                ++failed;
                entry["failure"] = std::string("the runner's optimised model: ") + e.what();
                std::cerr << "dnncost: " << net.id << ": " << entry["failure"].get<std::string>() << '\n';
                per_network.push_back(std::move(entry));
                continue;
            }
        }
        if (!a.kernels_out.empty()) {
            json ks = json::array();
            for (const auto& k : o.answer.kernels) ks.push_back({{"name", k.name}, {"op", k.op}, {"ms", k.ms}});
            json line{{"network", net.id}, {"latency_ms", o.answer.latency_ms}, {"kernels", ks}};
            if (!nodes.empty()) {
                json outs = json::object();
                for (const auto& n : nodes) outs[n.name] = n.outputs;
                line["outputs"] = outs;
            }
            kernel_lines += json_text(line, -1) + "\n";
        }
        const auto kg = device::kernel_graph(net.graph, rules);
        const auto c = device::check_kernels(net.graph, kg, o.answer.kernels, nodes, &rules);
        std::error_code ec;
        if (!o.answer.optimized_model.empty()) fs::remove(o.answer.optimized_model, ec);
        fs::remove(file, ec);
        entry.update({{"pass_kernels", c.pass_kernels},
                      {"runtime_kernels", c.runtime_kernels},
                      {"matched", c.matched},
                      {"agreement", c.agreement()},
                      {"pass_reorders", c.pass_reorders},
                      {"runtime_reorders", c.runtime_reorders},
                      {"matched_reorders", c.matched_reorders},
                      {"runtime_ms", c.runtime_ms},
                      {"matched_ms", c.matched_ms},
                      {"profiled_latency_ms", dnncost::median_high(o.answer.latency_ms)},
                      {"missing_fusions", mismatches(c.missing, false)},
                      {"extra", mismatches(c.extra, true)},
                      {"pairs", c.pairs},
                      {"suggested_rules", c.suggestions}});
        std::string price_note;
        if (priced) try {
                const graph::Graph* one[] = {&net.graph};
                const auto price = model->price_networks(one).front();
                // the model's pass is the one checked (its own rules): the same kernels, in order
                if (price.kernels.size() != kg.kernels.size())
                    raise<error>("the model priced ", price.kernels.size(), " kernels, its pass has ",
                                 kg.kernels.size());
                entry["priced_ms"] = price.total_ms;
                entry["kernel_prices"] = add_prices(price, net.graph, kg, c, o.answer.kernels, families);
                std::ostringstream note;
                note << "; priced " << price.total_ms << " ms, profiled " << dnncost::median_high(o.answer.latency_ms)
                     << " ms";
                price_note = note.str();
            } catch (const error& e) {
                entry["price_failure"] = e.what();
                std::cerr << "dnncost: " << net.id << ": not priced: " << e.what() << '\n';
            }
        per_network.push_back(std::move(entry));
        total.pass_kernels += c.pass_kernels;
        total.runtime_kernels += c.runtime_kernels;
        total.matched += c.matched;
        total.pass_reorders += c.pass_reorders;
        total.runtime_reorders += c.runtime_reorders;
        total.matched_reorders += c.matched_reorders;
        total.runtime_ms += c.runtime_ms;
        total.matched_ms += c.matched_ms;
        for (const auto& m : c.missing) ++missing_by[pattern_of(m)];
        for (const auto& m : c.extra) {
            ++extra_by[pattern_of(m)];
            extra_ms[pattern_of(m)] += m.ms;
        }
        for (const auto& [k, n] : c.pairs) total.pairs[k] += n;
        for (const auto& [k, n] : c.suggestions) total.suggestions[k] += n;
        for (const auto& [k, n] : c.confirmed) total.confirmed[k] += n;
        if (!a.json_out)
            std::cerr << "dnncost: " << net.id << ": " << c.matched << " of " << c.pass_kernels << " pass / "
                      << c.runtime_kernels << " runtime kernels matched" << price_note << '\n';
    }
    // no network compared: no file, as `measure --profile` writes no kernel file without kernels
    // (an empty one, or rules unchanged for want of evidence, would read as this run's findings)
    const bool none_compared = failed + without_profile == nets.size();
    for (const auto* out : {&a.kernels_out, &a.write_rules}) {
        if (!none_compared || out->empty()) continue;
        std::error_code ec;
        std::cerr << "dnncost: device check: no network was profiled and compared: " << *out << " not written"
                  << (fs::exists(*out, ec) ? " (the file there is from before)" : "") << '\n';
    }
    if (!a.kernels_out.empty() && !none_compared) io::write_file_atomic(a.kernels_out, kernel_lines);
    if (!a.write_rules.empty() && !none_compared) {
        const auto fixed = rules_with(rules, total.suggestions, total.confirmed);
        fixed.check();
        io::write_file_atomic(a.write_rules, fixed.to_text());
        if (!a.json_out) std::cerr << "dnncost: wrote " << a.write_rules << '\n';
    }
    const auto sorted = [](const std::map<std::string, std::size_t>& m) {
        std::vector<std::pair<std::string, std::size_t>> v(m.begin(), m.end());
        std::stable_sort(v.begin(), v.end(), [](const auto& x, const auto& y) { return x.second > y.second; });
        return v;
    };
    const auto median_ratio = [](const FamilyPrices& f) {
        return f.ratios.empty() ? json(nullptr) : json(median(f.ratios));
    };
    // no kernel on either side: every network failed or had no profile, and there is no agreement to tell
    const bool compared = total.pass_kernels + total.runtime_kernels > 0;
    if (a.json_out) {
        json prices = nullptr;
        if (priced) {
            prices = json::object();
            for (const auto& [family, f] : families)
                prices[family] = {
                    {"kernels", f.kernels},
                    {"priced_ms", f.priced_ms},
                    {"profiled_ms", f.profiled_ms},
                    {"profiled_over_priced", f.priced_ms > 0 ? json(f.profiled_ms / f.priced_ms) : json(nullptr)},
                    {"median_ratio", median_ratio(f)}};
        }
        json miss = json::array(), extra = json::array(), suggested = json::array();
        for (const auto& [k, n] : sorted(total.suggestions)) suggested.push_back({{"rule", k}, {"kernels", n}});
        for (const auto& [k, n] : sorted(missing_by)) miss.push_back({{"what", k}, {"count", n}});
        for (const auto& [k, n] : sorted(extra_by)) extra.push_back({{"what", k}, {"count", n}, {"ms", extra_ms[k]}});
        print_json({{"model", a.model},
                    {"device", model->rules().device},
                    {"rules", a.rules.empty() ? std::string("the model's") : a.rules},
                    {"runner", a.runner},
                    {"runner_device", parse_json(runner.device().empty() ? "null" : runner.device(), false)},
                    {"networks", nets.size()},
                    {"failed", failed},
                    {"without_profile", without_profile},
                    {"pass_kernels", total.pass_kernels},
                    {"runtime_kernels", total.runtime_kernels},
                    {"matched", total.matched},
                    {"agreement", compared ? json(total.agreement()) : json(nullptr)},
                    {"pass_reorders", total.pass_reorders},
                    {"runtime_reorders", total.runtime_reorders},
                    {"matched_reorders", total.matched_reorders},
                    {"runtime_ms", total.runtime_ms},
                    {"matched_ms", total.matched_ms},
                    {"missing_fusions", miss},
                    {"extra", extra},
                    {"pairs", total.pairs},
                    {"suggested_rules", suggested},
                    {"prices_by_family", prices},
                    {"per_network", per_network}});
        return failed == 0 && without_profile == 0;
    }
    std::cout << "networks " << nets.size() << " (" << failed << " failed, " << without_profile
              << " without a profile)\n"
              << "kernels: pass " << total.pass_kernels << ", runtime " << total.runtime_kernels << ", matched "
              << total.matched << "; agreement "
              << (compared ? percent(total.agreement()) : std::string("- (no network compared)"))
              << "; runtime time in matched kernels "
              << (total.runtime_ms > 0 ? percent(total.matched_ms / total.runtime_ms) : std::string("-")) << '\n'
              << "reorders: pass " << total.pass_reorders << ", runtime " << total.runtime_reorders << ", matched "
              << total.matched_reorders << '\n';
    if (!families.empty()) {
        std::cout << "the model's prices against the profiled times of the kernels matched, by family:\n"
                  << std::setw(16) << "family" << std::setw(9) << "kernels" << std::setw(13) << "priced ms"
                  << std::setw(13) << "profiled ms" << std::setw(12) << "ratio" << std::setw(12) << "median" << '\n';
        for (const auto& [family, f] : families) {
            std::cout << std::setw(16) << family << std::setw(9) << f.kernels << std::setw(13) << f.priced_ms
                      << std::setw(13) << f.profiled_ms << std::setw(12);
            if (f.priced_ms > 0)
                std::cout << f.profiled_ms / f.priced_ms;
            else
                std::cout << "-";
            std::cout << std::setw(12);
            if (f.ratios.empty())
                std::cout << "-";
            else
                std::cout << median(f.ratios);
            std::cout << '\n';
        }
        std::cout << "(ratio: profiled over priced time of the family; median: of its kernels' ratios; a profiler "
                     "adds its own few microseconds to every kernel)\n";
    }
    if (!missing_by.empty()) std::cout << "missing fusions (pass kernels the runtime fused into others):\n";
    for (const auto& [k, n] : sorted(missing_by)) std::cout << std::setw(6) << n << "  " << k << '\n';
    if (!extra_by.empty()) std::cout << "extra runtime kernels:\n";
    for (const auto& [k, n] : sorted(extra_by))
        std::cout << std::setw(6) << n << "  " << k << "  (" << extra_ms[k] << " ms in all)\n";
    if (!total.suggestions.empty())
        std::cout << "rule changes they point at (kernels; check a rule file with them again, --rules):\n";
    for (const auto& [k, n] : sorted(total.suggestions)) std::cout << std::setw(6) << n << "  " << k << '\n';
    return failed == 0 && without_profile == 0;
}

}  // namespace device_check_detail

void add_device_check_command(Command& device, Context& ctx) {
    namespace dc = device_check_detail;
    auto a = std::make_shared<dc::CheckArgs>();
    auto* cmd = device.add_subcommand(
        "check", "Compare a device model's kernel pass with the kernels a runtime executes (its profile)");
    cmd->add_option("--model", a->model, "Device model (.dnnc)")->required();
    cmd->add_option("--rules", a->rules, "Fusion rules file to check instead of the model's");
    add_runner_option(*cmd, a->runner, false)->required();
    cmd->add_option("files", a->files, "ONNX networks");
    add_search_space_options(*cmd, a->space, a->space_options, "Search space of --sample");
    add_sample_options(*cmd, a->sample, a->seed, "Seed of --sample and of the model weights");
    // checked here, as the measuring commands check theirs: a runner would be sent them as given
    cmd->add_option("--warmup", a->warmup, "Untimed runs before the profiled ones")
        ->transform(check::integer(0, 1000000, "a run count in [0, 10^6]"))
        ->capture_default_str();
    cmd->add_option("--repeats", a->repeats, "Profiled runs (each kernel's time is its fastest run)")
        ->transform(check::integer(1, 1000000, "a run count in [1, 10^6]"))
        ->capture_default_str();
    cmd->add_option("--timeout", a->timeout, "Seconds a network may take")
        ->check(check::in_range(1e-3, 1e6, "seconds"))
        ->capture_default_str();
    cmd->add_option("--write-rules", a->write_rules,
                    "Write the rules checked with the rule changes the disagreements point at applied (check "
                    "them again with --rules)")
        ->check(check::output_path());
    cmd->add_option("--kernels", a->kernels_out,
                    "Write the runtime's kernels of every network here, one JSON line each (with the outputs of "
                    "its optimised graph's nodes)")
        ->check(check::output_path());
    add_json_flag(*cmd, a->json_out);
    cmd->callback([a, &ctx] {
        if (a->sample > 0 && a->space.empty()) raise<config_error>("device check: --sample needs --space NAME");
        ctx.exit_code = dc::run_check(*a) ? 0 : 3;
    });
}

}  // namespace dnncost::cli
