#pragma once
/// @file fusion_discovery_impl.hpp
/// The definitions of fusion_discovery.hpp: the procedure and its measuring bench. Compiled once
/// into dnncost::compiled in compiled mode (core/config.hpp), included by fusion_discovery.hpp in
/// header-only mode.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <dnncost/core/config.hpp>
#include <dnncost/core/error.hpp>
#include <dnncost/core/json_string.hpp>
#include <dnncost/core/robust_statistics.hpp>
#include <dnncost/cost/analytic.hpp>
#include <dnncost/cost/op_config.hpp>
#include <dnncost/device/fusion_discovery.hpp>
#include <dnncost/device/fusion_match.hpp>
#include <dnncost/device/fusion_rules.hpp>
#include <dnncost/device/kernel_graph.hpp>
#include <dnncost/device/kind_spec.hpp>
#include <dnncost/graph/graph.hpp>
#include <dnncost/graph/hash.hpp>

namespace dnncost::device {

namespace detail {

inline std::string json_string(const std::string& s) { return json_quote(s); }
inline std::string json_number(double x) {
    if (!std::isfinite(x)) return "null";
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.6g", x);
    return buf;
}

/// The graph of nodes `nodes` of `g` alone: values read from outside become graph inputs,
/// constants stay constants (with their known values), and every value no node of the set reads
/// ends in a sink (or is a graph output). `sinks` receives the sink inputs' shapes and types.
inline graph::Graph subgraph(const graph::Graph& g, const std::vector<NodeRole>& roles, std::vector<int> nodes,
                             bool sink, std::vector<std::pair<graph::Shape, graph::DataType>>& sinks,
                             const std::string& name) {
    const auto pos = topological_positions(g);
    std::sort(nodes.begin(), nodes.end(),
              [&](int a, int b) { return pos[static_cast<std::size_t>(a)] < pos[static_cast<std::size_t>(b)]; });
    std::vector<char> in_set(g.num_nodes(), 0);
    for (int v : nodes) in_set[static_cast<std::size_t>(v)] = 1;
    graph::Graph s(name);
    std::map<int, int> mapped;
    const auto value = [&](int t) {
        if (auto it = mapped.find(t); it != mapped.end()) return it->second;
        const auto& ten = g.tensor(t);
        int id = 0;
        if (is_constant_tensor(g, roles, t)) {
            id = s.add_weight(ten.name, ten.shape, ten.dtype);
            if (!ten.data.empty()) s.set_data(id, ten.data);
        } else {
            id = s.add_input(ten.name, ten.shape, ten.dtype);
        }
        mapped.emplace(t, id);
        return id;
    };
    for (int v : nodes) {
        const auto& n = g.node(v);
        std::vector<int> in, out;
        for (int t : n.inputs) {
            if (t < 0) {
                in.push_back(-1);
                continue;
            }
            const int p = g.tensor(t).producer;
            in.push_back(p >= 0 && in_set[static_cast<std::size_t>(p)] ? mapped.at(t) : value(t));
        }
        for (int t : n.outputs) {
            const auto& ten = g.tensor(t);
            const int id = s.add_tensor(ten.name, ten.shape, ten.dtype);
            mapped.emplace(t, id);
            out.push_back(id);
        }
        s.add_node(n.op_type, n.name, in, out, n.attributes);
    }
    int k = 0;
    for (int v : nodes)
        for (int t : g.node(v).outputs) {
            bool read = false;
            for (int c : g.tensor(t).consumers) read = read || in_set[static_cast<std::size_t>(c)];
            if (read) continue;
            const int id = mapped.at(t);
            if (!sink) {
                s.mark_output(id);
                continue;
            }
            const auto& ten = s.tensor(id);
            sinks.emplace_back(ten.shape, ten.dtype);
            s.mark_output(s.add_op(cost::sink_operator, "sink" + std::to_string(k++), {id}, {},
                                   {{"keepdims", std::int64_t{0}}}, ten.dtype));
        }
    s.validate();
    return s;
}

/// Measurements with a cache (by canonical hash), a budget, repeats, medians and their
/// standard errors.
class Bench {
public:
    Bench(const MeasureBatch& measure, const DiscoveryOptions& o) : m_measure(measure), m_options(o) {}

    /// A graph to measure, with the sinks to subtract; returns its index.
    std::size_t add(graph::Graph g, const std::vector<std::pair<graph::Shape, graph::DataType>>& sinks) {
        Entry e;
        e.keys.push_back(graph::canonical_hash(g).hex());
        m_graphs.emplace(e.keys[0], std::move(g));
        for (const auto& [shape, dtype] : sinks) {
            auto sg = cost::sink_graph(shape, dtype);
            e.keys.push_back(graph::canonical_hash(sg).hex());
            m_graphs.emplace(e.keys.back(), std::move(sg));
        }
        m_entries.push_back(std::move(e));
        return m_entries.size() - 1;
    }
    /// The distinct graphs of `entries`; with `fresh`, only those never measured nor reserved.
    std::set<std::string> keys_of(const std::vector<std::size_t>& entries, bool fresh) const {
        std::set<std::string> out;
        for (auto i : entries)
            for (const auto& k : m_entries[i].keys)
                if (!fresh || (!m_values.count(k) && !m_pending.count(k))) out.insert(k);
        return out;
    }
    std::size_t cost_of(const std::vector<std::size_t>& entries, bool fresh = true) const {
        return keys_of(entries, fresh).size() * static_cast<std::size_t>(m_options.repeats);
    }
    std::size_t remaining() const { return m_options.max_measurements - std::min(m_options.max_measurements, m_spent); }
    /// Reserve the graphs of `entries` for the next run: the new ones, or with `again` all of
    /// them for `repeats` more measurements. False (nothing reserved) when over the budget.
    bool reserve(const std::vector<std::size_t>& entries, bool again = false) {
        const auto keys = keys_of(entries, !again);
        const auto cost = keys.size() * static_cast<std::size_t>(m_options.repeats);
        if (cost > remaining()) return false;
        m_spent += cost;
        m_pending.insert(keys.begin(), keys.end());
        return true;
    }
    /// Measure every reserved graph `repeats` times, one batch per repeat.
    /// @throws config_error when the callback returns the wrong count or a negative or infinite latency
    void run() {
        std::vector<std::string> keys(m_pending.begin(), m_pending.end());
        m_pending.clear();
        if (keys.empty()) return;
        std::vector<graph::Graph> batch;
        for (const auto& k : keys) batch.push_back(m_graphs.at(k));
        for (int r = 0; r < m_options.repeats; ++r) {
            const auto ms = m_measure(batch);
            m_calls += batch.size();
            if (ms.size() != batch.size())
                raise<config_error>("fusion discovery: the measurement returned ", ms.size(), " latencies for ",
                                    batch.size(), " graphs");
            for (std::size_t i = 0; i < ms.size(); ++i) {
                auto& v = m_values[keys[i]];
                if (std::isnan(ms[i])) continue;
                if (!std::isfinite(ms[i]) || ms[i] < 0)
                    raise<config_error>("fusion discovery: the measurement of graph '", batch[i].name(), "' returned ",
                                        ms[i], " ms (a latency is finite and non-negative)");
                v.push_back(ms[i]);
            }
        }
    }
    /// The latency of entry `i` less its sinks' (at least 0), NaN when unmeasured or failed;
    /// `se` receives its standard error and `count` the fewest measurements of its graphs.
    double net(std::size_t i, double* se = nullptr, int* count = nullptr) const {
        const auto& e = m_entries[i];
        double t = 0, var = 0;
        int fewest = -1;
        for (std::size_t k = 0; k < e.keys.size(); ++k) {
            const auto it = m_values.find(e.keys[k]);
            if (it == m_values.end() || it->second.empty()) return std::nan("");
            const auto [median, err] = median_and_se(it->second);
            t += k == 0 ? median : -median;
            var += err * err;
            const int n = static_cast<int>(it->second.size());
            fewest = fewest < 0 ? n : std::min(fewest, n);
        }
        if (se) *se = std::sqrt(var);
        if (count) *count = fewest;
        return std::max(0.0, t);
    }
    std::size_t calls() const { return m_calls; }

private:
    /// The median and its standard error (1.2533 sigma / sqrt(n), sigma from the MAD; 0 for one value).
    static std::pair<double, double> median_and_se(const std::vector<double>& v) {
        const double m = median(v);
        if (v.size() < 2) return {m, 0.0};
        return {m, 1.2533 * mad_sigma(v, m) / std::sqrt(static_cast<double>(v.size()))};
    }
    struct Entry {
        std::vector<std::string> keys;  ///< the graph, then its sinks
    };
    const MeasureBatch& m_measure;
    const DiscoveryOptions& m_options;
    std::vector<Entry> m_entries;
    std::map<std::string, graph::Graph> m_graphs;
    std::map<std::string, std::vector<double>> m_values;
    std::set<std::string> m_pending;
    std::size_t m_spent = 0, m_calls = 0;
};

/// A candidate being measured: its evidence and the bench entries of its parts and whole.
struct Trial {
    FusionEvidence evidence;
    std::vector<std::size_t> parts;
    std::size_t whole = 0;
    FusionRule rule;  ///< the rule a fused outcome gives
};

/// Reserve the trials the budget can pay for, in order; the others are marked unmeasured.
inline void plan_trials(Bench& bench, std::vector<Trial>& trials) {
    for (auto& t : trials) {
        auto entries = t.parts;
        entries.push_back(t.whole);
        if (!bench.reserve(entries)) {
            t.evidence.note = "over the measurement budget";
            continue;
        }
        t.evidence.measured = true;  // provisionally: failed graphs are found after the run
    }
}

/// Decide the reserved trials after the run.
inline void decide_trials(const Bench& bench, std::vector<Trial>& trials, const DiscoveryOptions& o) {
    for (auto& t : trials) {
        auto& e = t.evidence;
        if (!e.measured) continue;
        e.parts_ms.clear();
        double var = 0, se = 0;
        int fewest = 0;
        for (auto p : t.parts) {
            e.parts_ms.push_back(bench.net(p, &se, &fewest));
            var += se * se;
        }
        e.whole_ms = bench.net(t.whole, &se, &e.repeats);
        var += se * se;
        e.repeats = std::min(e.repeats, fewest);
        bool ok = std::isfinite(e.whole_ms);
        for (double p : e.parts_ms) ok = ok && std::isfinite(p);
        if (!ok) {
            e.measured = false;
            e.note = "a graph could not be measured";
            continue;
        }
        e.uncertainty_ms = std::sqrt(var);
        const double margin = e.saving_ms() - e.needed_ms(o.threshold);
        e.fused = margin > 0;
        e.confident = std::abs(margin) >= o.confidence * e.uncertainty_ms;
    }
}

/// Measure the trials, then give the undecided ones more repeats while the budget and
/// max_repeats allow, and decide.
inline void measure_trials(Bench& bench, std::vector<Trial>& trials, const DiscoveryOptions& o) {
    plan_trials(bench, trials);
    bench.run();
    decide_trials(bench, trials, o);
    for (int done = o.repeats; done + o.repeats <= o.max_repeats; done += o.repeats) {
        bool more = false;
        for (const auto& t : trials) {
            if (!t.evidence.measured || t.evidence.confident) continue;
            auto entries = t.parts;
            entries.push_back(t.whole);
            more = bench.reserve(entries, true) || more;
        }
        if (!more) break;
        bench.run();
        decide_trials(bench, trials, o);
    }
}

/// The layout probe's graph: `depth` 3x3 convolutions at `c` channels on a [1, c, s, s] input
/// (its output to a sink when `sink`).
inline graph::Graph probe_graph(std::int64_t c, std::int64_t s, int depth, bool sink) {
    graph::Graph g("layout probe c" + std::to_string(c));
    int x = g.add_input("x", {1, c, s, s});
    for (int i = 0; i < depth; ++i) {
        const std::string n = "conv" + std::to_string(i);
        const int w = g.add_weight(n + ".w", {c, c, 3, 3});
        x = g.add_op(
            "Conv", n, {x, w}, {1, c, s, s},
            {{"kernel_shape", std::vector<std::int64_t>{3, 3}}, {"pads", std::vector<std::int64_t>{1, 1, 1, 1}}});
    }
    if (sink)
        cost::add_sink(g, x);
    else
        g.mark_output(x);
    g.validate();
    return g;
}

}  // namespace detail

namespace detail {

inline bool listed(const std::vector<std::string>& v, const std::string& s) {
    return std::find(v.begin(), v.end(), s) != v.end();
}

/// The probe's channel counts: per candidate block (largest first) the largest count up to
/// `aligned` that is a multiple of it and of no larger candidate, then one aligned to none.
inline std::vector<std::pair<std::int64_t, std::int64_t>> probe_levels(std::vector<std::int64_t> blocks,
                                                                       std::int64_t aligned) {
    std::sort(blocks.begin(), blocks.end(), std::greater<>());
    blocks.erase(std::unique(blocks.begin(), blocks.end()), blocks.end());
    std::vector<std::pair<std::int64_t, std::int64_t>> out;  // (block, channels)
    for (std::size_t i = 0; i < blocks.size(); ++i) {
        std::int64_t c = aligned;
        const auto fits = [&](std::int64_t x) {
            if (x % blocks[i] != 0) return false;
            for (std::size_t j = 0; j < i; ++j)
                if (x % blocks[j] == 0) return false;
            return true;
        };
        while (c >= 1 && !fits(c)) --c;
        if (c < 1) raise<config_error>("fusion discovery: no channel count up to ", aligned, " fits block ", blocks[i]);
        out.emplace_back(blocks[i], c);
    }
    if (!blocks.empty()) {
        const auto b = blocks.back();
        std::int64_t c = aligned;
        while (c >= 1 && c % b != b / 2) --c;
        out.emplace_back(0, c);
    }
    return out;
}

/// True when a kernel kind ("A+B+C") has a unit named after one of `patterns`.
inline bool has_pattern_unit(const std::string& kind, const std::vector<PatternRule>& patterns) {
    const auto units = KindSpec::parse(kind);
    for (const auto& p : patterns)
        if (units.has_unit(p.name)) return true;
    return false;
}

/// A rough latency of node `v` (ms) to compare occurrences with: 5 us, 50 GFLOP/s, 20 GB/s.
inline double rough_ms(const graph::Graph& g, int v) {
    const auto c = cost::node_cost(g, v);
    return 5e-3 + 2e-8 * static_cast<double>(c.flops) + 5e-8 * static_cast<double>(c.bytes());
}

inline std::string occurrence(const graph::Graph& g, const std::vector<int>& nodes) {
    std::string s = "graph '" + g.name() + "': ";
    for (std::size_t i = 0; i < nodes.size(); ++i) s += (i ? " -> '" : "'") + g.node(nodes[i]).name + "'";
    return s;
}

}  // namespace detail

DNNCOST_FUNC DiscoveryResult discover_fusion_rules(const std::vector<graph::Graph>& graphs, const MeasureBatch& measure,
                                                   const DiscoveryOptions& options) {
    options.check();
    if (!measure) raise<config_error>("fusion discovery: no measurement callback");
    std::vector<std::vector<NodeRole>> roles;
    for (const auto& g : graphs) {
        g.validate();
        roles.push_back(node_roles(g));
    }
    DiscoveryResult res;
    res.rules.device = options.device;
    detail::Bench bench(measure, options);
    using Sinks = std::vector<std::pair<graph::Shape, graph::DataType>>;
    const auto entry = [&](std::size_t gi, const std::vector<int>& nodes, const std::string& name) {
        Sinks sinks;
        auto s = detail::subgraph(graphs[gi], roles[gi], nodes, options.sink, sinks, name);
        return bench.add(std::move(s), sinks);
    };

    // 1. the layout probe
    const auto levels = detail::probe_levels(options.candidate_blocks, options.probe_channels);
    std::vector<std::size_t> probe;
    for (const auto& [block, c] : levels) {
        auto g = detail::probe_graph(c, options.probe_spatial, options.probe_depth, options.sink);
        const Sinks sinks =
            options.sink ? Sinks{{{1, c, options.probe_spatial, options.probe_spatial}, graph::DataType::float32}}
                         : Sinks{};
        probe.push_back(bench.add(std::move(g), sinks));
        res.layout.aligned_to.push_back(block);
        res.layout.channels.push_back(c);
    }
    if (!probe.empty() && bench.reserve(probe)) res.layout.measured = true;

    // 2. candidate patterns, 3. pairs: trials in order of priority
    std::vector<detail::Trial> trials;
    std::vector<std::size_t> pattern_of_trial;
    for (std::size_t p = 0; p < options.candidate_patterns.size(); ++p) {
        const auto& pat = options.candidate_patterns[p];
        detail::Trial t;
        t.evidence.what = "pattern";
        t.evidence.kinds.push_back(pat.name);
        t.evidence.kinds.insert(t.evidence.kinds.end(), pat.ops.begin(), pat.ops.end());
        for (std::size_t gi = 0; gi < graphs.size(); ++gi) {
            const auto matches = match_patterns(graphs[gi], roles[gi], {pat});
            if (matches.empty()) continue;
            if (t.evidence.occurrences == 0) {
                const auto& nodes = matches[0].nodes;
                for (int v : nodes) t.parts.push_back(entry(gi, {v}, pat.name + " part " + graphs[gi].node(v).name));
                t.whole = entry(gi, nodes, "pattern " + pat.name);
                t.evidence.where = detail::occurrence(graphs[gi], nodes);
            }
            t.evidence.occurrences += matches.size();
        }
        if (t.evidence.occurrences == 0) continue;
        pattern_of_trial.push_back(trials.size());
        trials.push_back(std::move(t));
    }
    const std::size_t first_pair = trials.size();
    {
        struct Seen {
            std::size_t count = 0, order = 0, graph = 0;
            int u = -1, v = -1;
            double imbalance = 0;
        };
        std::map<std::tuple<std::string, std::string, Operands>, Seen> pairs;
        for (std::size_t gi = 0; gi < graphs.size(); ++gi) {
            const auto& g = graphs[gi];
            std::set<std::pair<int, int>> here;
            for (const auto& e : g.edges()) {
                if (roles[gi][static_cast<std::size_t>(e.src)] != NodeRole::compute ||
                    roles[gi][static_cast<std::size_t>(e.dst)] != NodeRole::compute ||
                    !here.insert({e.src, e.dst}).second)
                    continue;
                const auto key = std::make_tuple(g.node(e.src).op_type, g.node(e.dst).op_type,
                                                 operand_class(g, roles[gi], e.dst, e.tensor));
                // of the occurrences, the one whose two operators take the most similar time: a
                // small operator's saving is not lost in a large one's noise
                const double imbalance =
                    std::abs(std::log(detail::rough_ms(g, e.src)) - std::log(detail::rough_ms(g, e.dst)));
                auto [it, fresh] = pairs.try_emplace(key);
                if (fresh) it->second = {0, pairs.size(), gi, e.src, e.dst, imbalance};
                if (imbalance < it->second.imbalance) {
                    it->second.graph = gi;
                    it->second.u = e.src;
                    it->second.v = e.dst;
                    it->second.imbalance = imbalance;
                }
                ++it->second.count;
            }
        }
        std::vector<std::pair<std::tuple<std::string, std::string, Operands>, Seen>> ordered(pairs.begin(),
                                                                                             pairs.end());
        std::sort(ordered.begin(), ordered.end(), [](const auto& a, const auto& b) {
            return a.second.count != b.second.count ? a.second.count > b.second.count : a.second.order < b.second.order;
        });
        for (const auto& [key, seen] : ordered) {
            const auto& [pk, ck, operands] = key;
            detail::Trial t;
            t.evidence.what = "pair";
            t.evidence.kinds = {pk, ck};
            t.evidence.operands = operands;
            t.evidence.occurrences = seen.count;
            t.evidence.where = detail::occurrence(graphs[seen.graph], {seen.u, seen.v});
            t.parts = {entry(seen.graph, {seen.u}, pk), entry(seen.graph, {seen.v}, ck)};
            t.whole = entry(seen.graph, {seen.u, seen.v}, pk + " -> " + ck);
            const bool fold = operands == Operands::constant && detail::listed(options.fold_producers, pk) &&
                              detail::listed(options.fold_consumers, ck);
            t.rule = FusionRule{pk, ck, operands, true, fold, {}};
            trials.push_back(std::move(t));
        }
    }
    detail::measure_trials(bench, trials, options);

    if (res.layout.measured) {
        for (std::size_t i = 0; i < probe.size(); ++i) {
            const double ms = bench.net(probe[i]);
            const double c = static_cast<double>(res.layout.channels[i]);
            const double macs = options.probe_depth * c * c * 9.0 * static_cast<double>(options.probe_spatial) *
                                static_cast<double>(options.probe_spatial);
            res.layout.ms.push_back(ms);
            res.layout.ns_per_mac.push_back(ms * 1e6 / macs);
            if (!std::isfinite(ms)) res.layout.measured = false;
        }
        if (res.layout.measured)
            for (std::size_t i = 0; i + 1 < probe.size(); ++i)
                if (res.layout.ns_per_mac[i + 1] > (1 + options.layout_gain) * res.layout.ns_per_mac[i]) {
                    res.layout.block = res.layout.aligned_to[i];
                    break;
                }
    }
    if (res.layout.block > 0) {
        res.rules.layout.block = res.layout.block;
        res.rules.layout.anchors = options.layout_anchors;
        res.rules.layout.followers = options.layout_followers;
    }
    for (std::size_t i = 0; i < trials.size(); ++i) {
        if (!trials[i].evidence.fused) continue;
        if (i < first_pair)
            res.rules.patterns.push_back(options.candidate_patterns[static_cast<std::size_t>(
                std::find(pattern_of_trial.begin(), pattern_of_trial.end(), i) - pattern_of_trial.begin())]);
        else
            res.rules.fusions.push_back(trials[i].rule);
    }
    for (auto& t : trials) res.evidence.push_back(std::move(t.evidence));

    // 4. chains behind the kernels found so far
    std::set<std::tuple<std::string, std::string, Operands, std::string>> tried;
    for (int round = 0; round < options.chain_rounds; ++round) {
        std::vector<detail::Trial> chains;
        std::map<std::tuple<std::string, std::string, Operands, std::string>, std::size_t> index;
        for (std::size_t gi = 0; gi < graphs.size(); ++gi) {
            const auto& g = graphs[gi];
            auto fusion_only = res.rules;  // reorders between kernels would hide the pairs
            fusion_only.layout = LayoutRule{};
            const auto kg = kernel_graph(g, fusion_only);
            for (const auto& e : kg.edges) {
                const auto& k = kg.kernels[static_cast<std::size_t>(e.src)];
                const auto& l = kg.kernels[static_cast<std::size_t>(e.dst)];
                if (k.is_reorder() || l.is_reorder() || k.nodes.size() + k.folded.size() < 2 || l.nodes.size() != 1 ||
                    !l.folded.empty())
                    continue;
                const int w = l.nodes[0];
                const auto& w_in = g.node(w).inputs;
                if (std::find(w_in.begin(), w_in.end(), e.tensor) == w_in.end()) continue;  // through a free operator
                if (detail::has_pattern_unit(k.kind, res.rules.patterns)) continue;  // kinds are not op types there
                // the producer as the kernel sees it: a folded node stands for what it folded into
                int v = g.tensor(e.tensor).producer;
                while (std::find(k.folded.begin(), k.folded.end(), v) != k.folded.end()) {
                    int next = -1;
                    for (int t : g.node(v).inputs)
                        if (t >= 0 && !is_constant_tensor(g, roles[gi], t)) {
                            next = g.tensor(t).producer;
                            break;
                        }
                    if (next < 0) break;
                    v = next;
                }
                const std::string producer = g.node(v).op_type, consumer = g.node(w).op_type;
                const std::string anchor(KindSpec::anchor_of(k.kind));
                const auto operands = operand_class(g, roles[gi], w, e.tensor);
                if (res.rules.find(producer, consumer, operands, anchor)) continue;
                const auto key = std::make_tuple(producer, consumer, operands, anchor);
                if (auto it = index.find(key); it != index.end()) {
                    ++chains[it->second].evidence.occurrences;
                    continue;
                }
                if (tried.count(key)) continue;
                tried.insert(key);
                detail::Trial t;
                t.evidence.what = "chain";
                t.evidence.kinds = {anchor, producer, consumer};
                t.evidence.operands = operands;
                t.evidence.occurrences = 1;
                std::vector<int> kernel_nodes(k.nodes);
                kernel_nodes.insert(kernel_nodes.end(), k.folded.begin(), k.folded.end());
                auto all = kernel_nodes;
                all.push_back(w);
                t.evidence.where = detail::occurrence(g, {v, w}) + " behind a " + k.kind + " kernel";
                t.parts = {entry(gi, kernel_nodes, k.kind), entry(gi, {w}, consumer)};
                t.whole = entry(gi, all, k.kind + " -> " + consumer);
                const bool fold = operands == Operands::constant && producer == anchor &&
                                  detail::listed(options.fold_producers, producer) &&
                                  detail::listed(options.fold_consumers, consumer);
                t.rule = FusionRule{
                    producer, consumer,
                    operands, true,
                    fold,     producer == anchor ? std::vector<std::string>{} : std::vector<std::string>{anchor}};
                index.emplace(key, chains.size());
                chains.push_back(std::move(t));
            }
        }
        if (chains.empty()) break;
        detail::measure_trials(bench, chains, options);
        bool added = false;
        for (auto& t : chains) {
            if (t.evidence.fused) {
                res.rules.fusions.push_back(t.rule);
                added = true;
            }
            res.evidence.push_back(std::move(t.evidence));
        }
        if (!added) break;
    }
    res.measurements = bench.calls();
    for (const auto& e : res.evidence) res.unmeasured += !e.measured;
    if (!probe.empty() && !res.layout.measured) ++res.unmeasured;
    res.rules.check();
    return res;
}

DNNCOST_FUNC std::string DiscoveryResult::to_json(double threshold) const {
    using detail::json_number;
    using detail::json_string;
    std::string o = "{\"rules\": " + rules.to_json() + ", \"rules_text\": " + json_string(rules.to_text()) +
                    ", \"measurements\": " + std::to_string(measurements) +
                    ", \"unmeasured\": " + std::to_string(unmeasured) +
                    ", \"layout\": {\"measured\": " + (layout.measured ? "true" : "false") +
                    ", \"block\": " + std::to_string(layout.block) + ", \"probes\": [";
    for (std::size_t i = 0; i < layout.channels.size(); ++i)
        o += std::string(i ? ", " : "") + "{\"channels\": " + std::to_string(layout.channels[i]) +
             ", \"aligned_to\": " + std::to_string(layout.aligned_to[i]) +
             ", \"ms\": " + json_number(i < layout.ms.size() ? layout.ms[i] : std::nan("")) +
             ", \"ns_per_mac\": " + json_number(i < layout.ns_per_mac.size() ? layout.ns_per_mac[i] : std::nan("")) +
             "}";
    o += "]}, \"evidence\": [";
    for (std::size_t i = 0; i < evidence.size(); ++i) {
        const auto& e = evidence[i];
        o += std::string(i ? ", " : "") + "{\"what\": " + json_string(e.what) + ", \"kinds\": [";
        for (std::size_t k = 0; k < e.kinds.size(); ++k) o += (k ? ", " : "") + json_string(e.kinds[k]);
        o += "], \"operands\": " + json_string(std::string(to_string(e.operands))) +
             ", \"where\": " + json_string(e.where) + ", \"occurrences\": " + std::to_string(e.occurrences) +
             ", \"measured\": " + (e.measured ? "true" : "false") + ", \"fused\": " + (e.fused ? "true" : "false") +
             ", \"confident\": " + (e.confident ? "true" : "false") + ", \"repeats\": " + std::to_string(e.repeats) +
             ", \"uncertainty_ms\": " + json_number(e.measured ? e.uncertainty_ms : std::nan("")) + ", \"parts_ms\": [";
        for (std::size_t k = 0; k < e.parts_ms.size(); ++k) o += (k ? ", " : "") + json_number(e.parts_ms[k]);
        o += "], \"whole_ms\": " + json_number(e.whole_ms) +
             ", \"saving_ms\": " + json_number(e.measured ? e.saving_ms() : std::nan("")) +
             ", \"needed_ms\": " + json_number(e.measured ? e.needed_ms(threshold) : std::nan("")) +
             ", \"note\": " + json_string(e.note) + "}";
    }
    return o + "]}";
}

}  // namespace dnncost::device
