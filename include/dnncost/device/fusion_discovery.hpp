#pragma once
/// @file fusion_discovery.hpp
/// Finding a device's fusion rules (device/fusion_rules.hpp) by measuring small graphs, generic
/// over the measurement: a callback that returns the latency (ms) of each graph it is given.
///
/// The criterion (nn-Meter's): operators A and B run as one kernel when
///     T(A) + T(B) - T(A -> B) > threshold * min(T(A), T(B)),   threshold = 0.5,
/// i.e. the pair costs clearly less than its parts; for a group of n operators,
///     sum T(part) - T(group) > threshold * (sum T(part) - max T(part)),
/// which is the same test for n = 2. Each graph is measured `repeats` times (the median is used),
/// and, unless disabled, every graph ends in a sink (cost::add_sink: a reduction to a scalar, so
/// no large output is handed back to the host) whose own latency, measured on a graph of the sink
/// alone, is subtracted: the per-run overhead and the sink cancel, leaving the operators.
///
/// The procedure, within a budget of measurements (graphs x repeats):
/// 1. The layout probe: a short chain of 3x3 convolutions at channel counts aligned to each
///    candidate block and to none; the block is the largest candidate whose loss of alignment
///    slows the time per multiply-accumulate by more than `layout_gain`.
/// 2. Candidate patterns found in the graphs: the group against its operators alone.
/// 3. Every adjacent pair (producer kind, consumer kind, the consumer's other operands) found in
///    the graphs, most frequent first, on the shapes of its first occurrence: A, B and A -> B.
///    A fused pair whose consumer only applies constants (BatchNorm, a bias) behind a
///    convolution is recorded as folded.
/// 4. Chains, in rounds: the kernel pass under the rules found so far is run on the graphs; where
///    a multi-operator kernel K feeds an operator C of its own, K, C and K -> C are measured, and
///    a fused C gives a rule conditioned on the kernel's first operator (Add -> Relu after Conv).
/// Candidates the budget cannot pay for, or whose graphs failed (NaN), are reported unmeasured.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <dnncost/core/error.hpp>
#include <dnncost/core/json_string.hpp>
#include <dnncost/core/robust_statistics.hpp>
#include <dnncost/cost/analytic.hpp>
#include <dnncost/cost/op_config.hpp>
#include <dnncost/device/fusion_match.hpp>
#include <dnncost/device/fusion_rules.hpp>
#include <dnncost/device/kernel_graph.hpp>
#include <dnncost/device/kind_spec.hpp>
#include <dnncost/graph/graph.hpp>
#include <dnncost/graph/hash.hpp>

namespace dnncost::device {

/// Latencies (ms) of `graphs`, in order; NaN for a graph that could not be measured.
using MeasureBatch = std::function<std::vector<double>(const std::vector<graph::Graph>&)>;
/// Latency (ms) of one graph; NaN when it could not be measured.
using MeasureOne = std::function<double(const graph::Graph&)>;

struct DiscoveryOptions {
    std::string device;  ///< stored in the rule set
    int repeats = 3;     ///< measurements per graph (the median is used)
    /// A candidate whose saving is within `confidence` standard errors of what the criterion
    /// needs gets `repeats` more measurements of its graphs, up to this many in all.
    int max_repeats = 9;
    double confidence = 2.0;
    std::size_t max_measurements = 3000;  ///< budget: graphs x repeats, the sinks included
    double threshold = 0.5;               ///< of the criterion above
    bool sink = true;                     ///< end graphs in a sink and subtract its latency
    int chain_rounds = 3;                 ///< rounds of step 4 (0: pairs only)
    std::vector<PatternRule> candidate_patterns;
    /// Fused pairs recorded as folds: a constant-operand consumer of these kinds behind a
    /// producer of these kinds (its constants merge into the producer's weights at load).
    std::vector<std::string> fold_producers{"Conv", "ConvTranspose"};
    std::vector<std::string> fold_consumers{"BatchNormalization", "Add", "Sub", "Mul", "Div"};
    // the layout probe
    std::vector<std::int64_t> candidate_blocks{16, 8};  ///< empty: no probe, no blocked layout
    std::int64_t probe_channels = 64;                   ///< aligned count, a multiple of every candidate
    std::int64_t probe_spatial = 28;
    int probe_depth = 2;
    double layout_gain = 0.15;
    /// Operators the blocked layout applies to once its block is found (measured: the block only).
    std::vector<std::string> layout_anchors{"Conv"};
    std::vector<std::string> layout_followers{"MaxPool",
                                              "AveragePool",
                                              "GlobalAveragePool",
                                              "GlobalMaxPool",
                                              "Add",
                                              "Sum",
                                              "Relu",
                                              "Clip",
                                              "Sigmoid",
                                              "HardSigmoid",
                                              "Tanh",
                                              "LeakyRelu",
                                              "BatchNormalization",
                                              "Concat",
                                              "Resize",
                                              "Upsample"};

    /// @throws config_error naming the bad value
    void check() const {
        if (repeats < 1 || repeats > 1000)
            raise<config_error>("fusion discovery: repeats must be in [1, 1000], got ", repeats);
        if (max_repeats < repeats || max_repeats > 1000)
            raise<config_error>("fusion discovery: max_repeats must be in [repeats, 1000], got ", max_repeats);
        if (!(confidence >= 0) || !std::isfinite(confidence))
            raise<config_error>("fusion discovery: the confidence must be a finite number >= 0, got ", confidence);
        if (!(threshold > 0 && threshold < 1))
            raise<config_error>("fusion discovery: the threshold must be in (0, 1), got ", threshold);
        if (chain_rounds < 0 || chain_rounds > 100)
            raise<config_error>("fusion discovery: chain rounds must be in [0, 100], got ", chain_rounds);
        if (!(layout_gain > 0) || !std::isfinite(layout_gain))
            raise<config_error>("fusion discovery: the layout gain must be a positive number, got ", layout_gain);
        if (probe_spatial < 1 || probe_spatial > 4096 || probe_depth < 1 || probe_depth > 16)
            raise<config_error>("fusion discovery: probe spatial size in [1, 4096] and depth in [1, 16], got ",
                                probe_spatial, " and ", probe_depth);
        for (auto b : candidate_blocks)
            if (b < 2 || b > 1024 || probe_channels % b != 0)
                raise<config_error>("fusion discovery: candidate block ", b,
                                    " must be in [2, 1024] and divide the probe's channel count ", probe_channels);
        if (!candidate_blocks.empty() && probe_channels > 4096)
            raise<config_error>("fusion discovery: probe channel count ", probe_channels, " is above 4096");
    }
};

/// What one candidate's measurements showed.
struct FusionEvidence {
    std::string what;                ///< "pair", "chain" or "pattern"
    std::vector<std::string> kinds;  ///< producer and consumer; chain: anchor, producer, consumer; pattern: name, ops
    Operands operands = Operands::none;
    std::string where;  ///< the occurrence measured: "graph 'g': 'conv' -> 'relu'"
    std::size_t occurrences = 0;
    std::vector<double> parts_ms;    ///< net latency of each part alone
    double whole_ms = std::nan("");  ///< net latency of the parts together
    double uncertainty_ms = 0;       ///< standard error of the saving, from the spread of the repeats
    int repeats = 0;                 ///< measurements of its least measured graph
    bool measured = false;
    bool fused = false;
    bool confident = false;  ///< the saving is `confidence` standard errors from the threshold
    std::string note;        ///< why it was not measured
    /// sum(parts) - whole, and what the criterion needs it to exceed
    double saving_ms() const {
        double s = -whole_ms;
        for (double p : parts_ms) s += p;
        return s;
    }
    double needed_ms(double threshold) const {
        if (parts_ms.empty()) return std::nan("");
        double s = 0, m = parts_ms[0];
        for (double p : parts_ms) s += p, m = std::max(m, p);
        return threshold * (s - m);
    }
};

/// The layout probe: channel counts, their net latencies and time per MAC, the block chosen.
struct LayoutEvidence {
    std::vector<std::int64_t> aligned_to;  ///< per probe: the candidate block it is aligned to, 0 for none
    std::vector<std::int64_t> channels;
    std::vector<double> ms;
    std::vector<double> ns_per_mac;
    std::int64_t block = 0;
    bool measured = false;
};

struct DiscoveryResult {
    FusionRules rules;
    std::vector<FusionEvidence> evidence;
    LayoutEvidence layout;
    std::size_t measurements = 0;  ///< calls of the measurement per graph, repeats included
    std::size_t unmeasured = 0;    ///< candidates left without a decision

    /// One JSON object: the rules (in their JSON form), the text form, and the evidence.
    std::string to_json(double threshold = 0.5) const;
};

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

/// Discover the fusion rules of the device behind `measure` from the operators of `graphs`.
/// @throws config_error for invalid options or a measurement that breaks its contract; shape_error
/// for an invalid graph
inline DiscoveryResult discover_fusion_rules(const std::vector<graph::Graph>& graphs, const MeasureBatch& measure,
                                             const DiscoveryOptions& options = {});

/// The same with a measurement of one graph at a time.
inline DiscoveryResult discover_fusion_rules(const std::vector<graph::Graph>& graphs, const MeasureOne& measure,
                                             const DiscoveryOptions& options = {}) {
    const MeasureBatch batch = [&](const std::vector<graph::Graph>& gs) {
        std::vector<double> out;
        out.reserve(gs.size());
        for (const auto& g : gs) out.push_back(measure(g));
        return out;
    };
    return discover_fusion_rules(graphs, batch, options);
}

}  // namespace dnncost::device

#include <dnncost/device/fusion_discovery_impl.hpp>
