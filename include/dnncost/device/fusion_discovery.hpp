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
///
/// The larger functions are defined in fusion_discovery_impl.hpp: compiled into dnncost::compiled in
/// compiled mode (core/config.hpp), included at the end of this header otherwise.
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

#include <dnncost/core/config.hpp>
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

/// Discover the fusion rules of the device behind `measure` from the operators of `graphs`.
/// @throws config_error for invalid options or a measurement that breaks its contract; shape_error
/// for an invalid graph
DNNCOST_FUNC DiscoveryResult discover_fusion_rules(const std::vector<graph::Graph>& graphs, const MeasureBatch& measure,
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

#if !defined(DNNCOST_COMPILED)
#include <dnncost/device/fusion_discovery_impl.hpp>
#endif
