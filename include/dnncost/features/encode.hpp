#pragma once
/// @file encode.hpp
/// Node features of an operator graph for the GNN estimators: one-hot operator type, scaled
/// numeric attributes, random-walk positional encoding and, optionally, the graph-compiler view.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <Eigen/Core>

#include <dnncost/core/error.hpp>
#include <dnncost/cost/analytic.hpp>
#include <dnncost/features/op_kind.hpp>
#include <dnncost/graph/analysis.hpp>
#include <dnncost/graph/graph.hpp>
#include <dnncost/io/serialize.hpp>

namespace dnncost::features {

/// How graphs are turned into node features.
struct EncodeOptions {
    /// Fixed operator vocabulary; empty means "learn it from the training graphs in fit()".
    std::vector<std::string> vocabulary;
    int rw_steps = 8;                   ///< k of the random-walk encoding (0 disables it)
    bool self_loops_on_inputs = false;  ///< HiFi-SAGE: a self-loop on every node that reads a graph input
    bool drop_output_nodes = false;     ///< HiFi-SAGE: drop the nodes that write graph outputs
    bool compiler_view = false;         ///< append the graph-compiler flags and kept-node block
    /// One-hot over op_kind() (depthwise, grouped and pointwise convolutions apart) instead of
    /// the ONNX op type; off only for models saved before the split.
    bool split_convs = true;
};

/// One encoded graph: a row-major node-feature matrix and directed node-to-node edges.
struct EncodedGraph {
    int num_nodes = 0;
    int num_features = 0;
    std::vector<float> x;                    ///< num_nodes x num_features, row-major
    std::vector<std::pair<int, int>> edges;  ///< (src, dst); multi-edges and self-loops allowed
    std::vector<float> graph_x;              ///< graph-level features (the additive path's inputs); may be empty
    float at(int node, int feature) const { return x[static_cast<std::size_t>(node) * num_features + feature]; }
};

/// Names of the numeric attributes, in feature order.
inline constexpr std::array<const char*, 9> attribute_names{
    "kernel", "stride", "groups", "in_channels", "out_channels", "spatial", "macs", "params", "bytes"};

/// Raw (unscaled, log where noted) numeric attributes of every node of g, given its per-node
/// costs (cost::annotate(g)).
inline std::vector<std::array<double, 9>> raw_attributes(const graph::Graph& g,
                                                         const std::vector<cost::NodeCost>& costs) {
    if (costs.size() != g.num_nodes())
        raise<shape_error>("raw_attributes: ", costs.size(), " node costs for the ", g.num_nodes(), " nodes of graph '",
                           g.name(), "'");
    std::vector<std::array<double, 9>> out(g.num_nodes());
    for (std::size_t i = 0; i < g.num_nodes(); ++i) {
        const auto& n = g.nodes()[i];
        double kernel = 0;
        if (const auto ks = n.attr_ints("kernel_shape"); !ks.empty()) {
            kernel = 1;
            for (auto k : ks) kernel *= static_cast<double>(k);
        }
        double stride = 1;
        for (auto s : n.attr_ints("strides")) stride = std::max(stride, static_cast<double>(s));
        const double groups = static_cast<double>(n.attr_int("group", 1));
        double cin = 0, cout = 0, spatial = 0;
        if (!n.inputs.empty() && n.inputs[0] >= 0) {
            const auto& s = g.tensor(n.inputs[0]).shape;
            if (s.size() >= 2) cin = static_cast<double>(s[1]);
        }
        if (!n.outputs.empty()) {
            const auto& s = g.tensor(n.outputs[0]).shape;
            if (s.size() >= 2) cout = static_cast<double>(s[1]);
            spatial = 1;
            for (std::size_t d = 2; d < s.size(); ++d) spatial *= static_cast<double>(s[d]);
        }
        const auto& c = costs[i];
        out[i] = {std::log1p(kernel),
                  stride,
                  groups,
                  std::log1p(cin),
                  std::log1p(cout),
                  std::log1p(spatial),
                  std::log1p(static_cast<double>(c.macs)),
                  std::log1p(static_cast<double>(c.params)),
                  std::log1p(static_cast<double>(c.bytes()))};
    }
    return out;
}
inline std::vector<std::array<double, 9>> raw_attributes(const graph::Graph& g) {
    return raw_attributes(g, cost::annotate(g));
}

/// Diagonals of the first k powers of the random-walk matrix P = D^-1 A of an undirected graph
/// with n nodes (a self-loop counts twice in A and D, a multi-edge per copy); result is n x k
/// row-major, (P^s)_ii in column s - 1. Isolated nodes get zeros.
///
/// P is similar to the symmetric S = D^-1/2 A D^-1/2 and similar matrices share diagonals
/// of powers: (P^s)_ii = (S^s)_ii. With y_t = S^t e_i, (S^2t)_ii = y_t . y_t and
/// (S^2t+1)_ii = y_t . y_t+1, so a node's k return probabilities need only ceil(k / 2)
/// propagation steps, each over the nodes reached so far (sparse frontier): on NB201 graphs
/// about a quarter of the work of walking k steps from every node.
inline std::vector<float> random_walk_encoding(int n, const std::vector<std::pair<int, int>>& edges, int k) {
    std::vector<float> out(static_cast<std::size_t>(n) * static_cast<std::size_t>(std::max(k, 0)), 0.0f);
    if (k <= 0 || n == 0) return out;
    const auto un = static_cast<std::size_t>(n);
    std::vector<int> ptr(un + 1, 0), adj;
    for (auto [s, d] : edges) {
        ++ptr[static_cast<std::size_t>(s) + 1];
        ++ptr[static_cast<std::size_t>(d) + 1];
    }
    for (std::size_t v = 0; v < un; ++v) ptr[v + 1] += ptr[v];
    adj.resize(static_cast<std::size_t>(ptr[un]));
    std::vector<int> fill(ptr.begin(), ptr.end() - 1);
    for (auto [s, d] : edges) {
        adj[static_cast<std::size_t>(fill[static_cast<std::size_t>(s)]++)] = d;
        adj[static_cast<std::size_t>(fill[static_cast<std::size_t>(d)]++)] = s;
    }
    std::vector<double> inv_sqrt_deg(un, 0.0);
    for (std::size_t v = 0; v < un; ++v)
        if (ptr[v + 1] > ptr[v]) inv_sqrt_deg[v] = 1.0 / std::sqrt(static_cast<double>(ptr[v + 1] - ptr[v]));
    std::vector<double> cur(un, 0.0), next(un, 0.0);
    std::vector<int> cur_set, next_set;
    std::vector<char> in_next(un, 0);
    const int steps = (k + 1) / 2;
    for (int i = 0; i < n; ++i) {
        float* row = out.data() + static_cast<std::size_t>(i) * static_cast<std::size_t>(k);
        if (ptr[static_cast<std::size_t>(i) + 1] == ptr[static_cast<std::size_t>(i)]) continue;  // isolated
        cur_set.assign(1, i);
        cur[static_cast<std::size_t>(i)] = 1.0;
        for (int t = 0; t < steps; ++t) {  // y_t in cur -> y_t+1 in next
            next_set.clear();
            for (int u : cur_set) {
                const auto uu = static_cast<std::size_t>(u);
                const double w = cur[uu] * inv_sqrt_deg[uu];
                for (int e = ptr[uu]; e < ptr[uu + 1]; ++e) {
                    const auto v = static_cast<std::size_t>(adj[static_cast<std::size_t>(e)]);
                    if (!in_next[v]) {
                        in_next[v] = 1;
                        next_set.push_back(static_cast<int>(v));
                    }
                    next[v] += w;
                }
            }
            for (int v : next_set) next[static_cast<std::size_t>(v)] *= inv_sqrt_deg[static_cast<std::size_t>(v)];
            double odd = 0.0, even = 0.0;  // y_t . y_t+1 and y_t+1 . y_t+1
            for (int u : cur_set) odd += cur[static_cast<std::size_t>(u)] * next[static_cast<std::size_t>(u)];
            for (int v : next_set) even += next[static_cast<std::size_t>(v)] * next[static_cast<std::size_t>(v)];
            row[2 * t] = static_cast<float>(odd);                          // (P^(2t+1))_ii
            if (2 * t + 1 < k) row[2 * t + 1] = static_cast<float>(even);  // (P^(2t+2))_ii
            for (int u : cur_set) cur[static_cast<std::size_t>(u)] = 0.0;
            std::swap(cur, next);
            std::swap(cur_set, next_set);
            for (int v : cur_set) in_next[static_cast<std::size_t>(v)] = 0;
        }
        for (int u : cur_set) cur[static_cast<std::size_t>(u)] = 0.0;
    }
    return out;
}

/// Learns the vocabulary and attribute scaling from training graphs, then encodes any graph.
///
/// Features of a node:
///   [ one-hot operator type (vocabulary + an `unknown` slot) | scaled numeric attributes |
///     random-walk positional encoding ]
/// Numeric attributes: kernel area, stride, groups, input channels, output channels, output
/// spatial size, MACs, parameters, bytes moved. Those that span orders of magnitude are
/// log1p-scaled; all are then standardised with the training set's mean and deviation.
/// Random-walk positional encoding (Dwivedi et al., 2022): the return probabilities
/// diag(P), diag(P^2), ..., diag(P^k) of the random walk P = D^-1 A on the undirected graph.
/// With `compiler_view`, the graph-compiler view of graph/analysis.hpp is appended:
///   [ constant | identity-like | dead | kept x (one-hot operator type, scaled attributes) ]
/// The last block repeats a node's type and attributes only when a graph compiler keeps the
/// node, so that a sum over nodes counts both what an eager runtime and what a compiled
/// runtime executes (a compiler folds zero branches and dead cells away).
class FeatureEncoder {
public:
    explicit FeatureEncoder(EncodeOptions options = {}) : m_options(std::move(options)) {
        if (m_options.rw_steps < 0 || m_options.rw_steps > 64)
            raise<config_error>("FeatureEncoder: rw_steps ", m_options.rw_steps, " outside [0, 64]");
        m_vocabulary = m_options.vocabulary;
        std::sort(m_vocabulary.begin(), m_vocabulary.end());
        m_vocabulary.erase(std::unique(m_vocabulary.begin(), m_vocabulary.end()), m_vocabulary.end());
    }

    /// Learn the vocabulary (unless fixed) and the attribute mean/deviation.
    void fit(std::span<const graph::Graph* const> graphs) {
        if (graphs.empty()) raise<config_error>("FeatureEncoder::fit: no training graphs");
        for (std::size_t i = 0; i < graphs.size(); ++i)
            if (!graphs[i]) raise<config_error>("FeatureEncoder::fit: training graph ", i, " is null");
        if (m_options.vocabulary.empty()) {
            std::map<std::string, int> seen;
            for (const auto* g : graphs)
                for (const auto& n : g->nodes()) seen[op_kind(*g, n, m_options.split_convs)] = 1;
            m_vocabulary.clear();
            for (const auto& [k, v] : seen) m_vocabulary.push_back(k);
        }
        std::array<double, 9> sum{}, sq{};
        double count = 0;
        for (const auto* g : graphs)
            for (const auto& a : raw_attributes(*g)) {
                for (std::size_t j = 0; j < 9; ++j) {
                    sum[j] += a[j];
                    sq[j] += a[j] * a[j];
                }
                count += 1;
            }
        if (count == 0) raise<config_error>("FeatureEncoder::fit: the training graphs have no nodes");
        for (std::size_t j = 0; j < 9; ++j) {
            m_mean[j] = sum[j] / count;
            const double var = std::max(0.0, sq[j] / count - m_mean[j] * m_mean[j]);
            m_scale[j] = var > 1e-12 ? 1.0 / std::sqrt(var) : 1.0;
        }
        m_fitted = true;
    }

    bool fitted() const { return m_fitted; }
    const std::vector<std::string>& vocabulary() const { return m_vocabulary; }
    const EncodeOptions& options() const { return m_options; }
    /// one-hot (vocabulary + unknown) + 9 attributes + rw_steps [+ 3 flags + kept one-hot + 9]
    int num_features() const {
        const int base = static_cast<int>(m_vocabulary.size()) + 1 + 9;
        return base + m_options.rw_steps + (m_options.compiler_view ? 3 + base : 0);
    }

    /// Encode one graph. Throws config_error before fit().
    EncodedGraph encode(const graph::Graph& g) const {
        return encode(g, cost::annotate(g),
                      m_options.compiler_view ? graph::analyse(g) : std::vector<graph::NodeAnalysis>{});
    }
    /// The same from g's per-node costs (cost::annotate(g)) and, with the compiler view, its
    /// analysis (graph::analyse(g)), when the caller needs them too and computed them once.
    EncodedGraph encode(const graph::Graph& g, const std::vector<cost::NodeCost>& costs,
                        const std::vector<graph::NodeAnalysis>& flags) const {
        if (!m_fitted) raise<config_error>("FeatureEncoder::encode: call fit() first (graph '", g.name(), "')");
        if (m_options.compiler_view && flags.size() != g.num_nodes())
            raise<shape_error>("FeatureEncoder::encode: ", flags.size(), " node analyses for the ", g.num_nodes(),
                               " nodes of graph '", g.name(), "'");
        const int n_all = static_cast<int>(g.num_nodes());
        std::vector<int> keep(static_cast<std::size_t>(n_all), 0);
        int n = 0;
        for (int i = 0; i < n_all; ++i) {
            bool drop = false;
            if (m_options.drop_output_nodes)
                for (int t : g.node(i).outputs)
                    if (g.tensor(t).is_output) drop = true;
            keep[static_cast<std::size_t>(i)] = drop ? -1 : n++;
        }
        EncodedGraph e;
        e.num_nodes = n;
        e.num_features = num_features();
        for (const auto& ed : g.edges()) {
            const int s = keep[static_cast<std::size_t>(ed.src)], d = keep[static_cast<std::size_t>(ed.dst)];
            if (s >= 0 && d >= 0) e.edges.emplace_back(s, d);
        }
        if (m_options.self_loops_on_inputs)
            for (int i = 0; i < n_all; ++i) {
                if (keep[static_cast<std::size_t>(i)] < 0) continue;
                for (int t : g.node(i).inputs)
                    if (t >= 0 && g.tensor(t).kind == graph::TensorKind::input) {
                        e.edges.emplace_back(keep[static_cast<std::size_t>(i)], keep[static_cast<std::size_t>(i)]);
                        break;
                    }
            }
        e.x.assign(static_cast<std::size_t>(n) * e.num_features, 0.0f);
        const auto raw = raw_attributes(g, costs);
        const auto rw = random_walk_encoding(n, e.edges, m_options.rw_steps);
        const int v = static_cast<int>(m_vocabulary.size());
        const int cv = v + 10 + m_options.rw_steps;  // first compiler-view column
        for (int i = 0; i < n_all; ++i) {
            const int r = keep[static_cast<std::size_t>(i)];
            if (r < 0) continue;
            float* row = e.x.data() + static_cast<std::size_t>(r) * e.num_features;
            const auto op = op_kind(g, g.node(i), m_options.split_convs);
            const auto it = std::lower_bound(m_vocabulary.begin(), m_vocabulary.end(), op);
            row[(it != m_vocabulary.end() && *it == op) ? static_cast<int>(it - m_vocabulary.begin()) : v] = 1.0f;
            for (std::size_t j = 0; j < 9; ++j)
                row[v + 1 + static_cast<int>(j)] =
                    static_cast<float>((raw[static_cast<std::size_t>(i)][j] - m_mean[j]) * m_scale[j]);
            for (int s = 0; s < m_options.rw_steps; ++s)
                row[v + 10 + s] = rw[static_cast<std::size_t>(r) * m_options.rw_steps + s];
            if (m_options.compiler_view) {
                const auto& a = flags[static_cast<std::size_t>(i)];
                row[cv] = a.constant ? 1.0f : 0.0f;
                row[cv + 1] = a.identity_like ? 1.0f : 0.0f;
                row[cv + 2] = a.live ? 0.0f : 1.0f;
                if (a.kept()) std::copy(row, row + v + 10, row + cv + 3);
            }
        }
        return e;
    }

    /// Everything needed to encode elsewhere.
    void save(io::BinaryWriter& w) const {
        w.put_string_vector(m_options.vocabulary);
        w.put_i32(m_options.rw_steps);
        w.put_bool(m_options.self_loops_on_inputs);
        w.put_bool(m_options.drop_output_nodes);
        w.put_bool(m_options.compiler_view);
        w.put_string_vector(m_vocabulary);
        w.put_f64_vector(m_mean);
        w.put_f64_vector(m_scale);
        w.put_bool(m_fitted);
    }
    /// Inverse of save(); `split_convs` is the model's op_kind() choice, which the caller stores.
    static FeatureEncoder load(io::BinaryReader& r, bool split_convs = false) {
        EncodeOptions o;
        o.split_convs = split_convs;
        o.vocabulary = r.get_string_vector("encoder vocabulary option");
        o.rw_steps = r.get_i32("encoder rw_steps");
        o.self_loops_on_inputs = r.get_bool("encoder self_loops_on_inputs");
        o.drop_output_nodes = r.get_bool("encoder drop_output_nodes");
        o.compiler_view = r.get_bool("encoder compiler_view");
        if (o.rw_steps < 0 || o.rw_steps > 64) r.fail("corrupt encoder: rw_steps ", o.rw_steps);
        FeatureEncoder f(o);
        f.m_vocabulary = r.get_string_vector("encoder vocabulary");
        const auto mean = r.get_finite_f64_vector("encoder attribute mean");
        const auto scale = r.get_finite_f64_vector("encoder attribute scale");
        if (mean.size() != 9 || scale.size() != 9) r.fail("corrupt encoder: ", mean.size(), " attribute means");
        std::copy(mean.begin(), mean.end(), f.m_mean.begin());
        std::copy(scale.begin(), scale.end(), f.m_scale.begin());
        f.m_fitted = r.get_bool("encoder fitted");
        return f;
    }

private:
    EncodeOptions m_options;
    std::vector<std::string> m_vocabulary;
    std::array<double, 9> m_mean{}, m_scale{1, 1, 1, 1, 1, 1, 1, 1, 1};
    bool m_fitted = false;
};

}  // namespace dnncost::features
