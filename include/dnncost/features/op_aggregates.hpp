#pragma once
/// @file op_aggregates.hpp
/// Graph-level features for additive cost models: per operator type, how often it occurs, how
/// many MACs it performs and how many bytes it moves, standardised on the training graphs.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <Eigen/Dense>

#include <dnncost/core/error.hpp>
#include <dnncost/cost/analytic.hpp>
#include <dnncost/features/op_kind.hpp>
#include <dnncost/graph/analysis.hpp>
#include <dnncost/graph/graph.hpp>
#include <dnncost/io/serialize.hpp>

namespace dnncost::features {

/// Per-operator-type aggregates of a graph (occurrence count, MACs, bytes moved, summed over
/// the nodes of each type), standardised with training-set statistics. The vocabulary is the
/// sorted set of op types of the training graphs (unseen types contribute nothing); features
/// that are constant in training are dropped. Shared by the additive baseline and the additive
/// path of the GNN presets, so that both start from the same lookup-table view of cost.
/// With `compiled`, the same three aggregates follow over only the operators a graph compiler
/// keeps (graph/analysis.hpp: live, not constant, not identity-like): the cost a compiled
/// runtime that prunes dead branches pays.
struct OpAggregates {
    static constexpr int per_type = 3;  ///< count, MACs, bytes
    bool compiled = false;
    /// Types are op_kind()s (depthwise, grouped and pointwise convolutions apart); off only for
    /// models saved before the split (not part of save(): the caller stores it).
    bool split_convs = true;
    /// Scale every count, MACs or bytes feature by the spread of the graph's total count, MACs
    /// or bytes (over all types) instead of by its own spread. A ridge penalty then weighs each
    /// type's cost per operator, per MAC and per byte on one physical scale, so a type that barely
    /// varies in training (one small Concat per network) cannot get a weight that multiplies a
    /// network with many large ones into nonsense. Used at fit() time only: the scales are saved.
    bool family_scaling = false;
    std::vector<std::string> vocabulary;
    std::vector<std::int64_t> keep;  ///< indices into raw() of the kept features
    std::vector<std::string> names;
    std::vector<double> mean, scale;

    std::size_t size() const { return keep.size(); }

    /// Raw (unscaled) aggregates, per_type per vocabulary entry (then as many again over the
    /// kept operators when `with_compiled`).
    static std::vector<double> raw(const graph::Graph& g, const std::vector<std::string>& vocabulary,
                                   bool with_compiled = false, bool split_convs = true) {
        return raw(g, vocabulary, with_compiled, cost::annotate(g),
                   with_compiled ? graph::analyse(g) : std::vector<graph::NodeAnalysis>{}, split_convs);
    }
    /// The same from g's per-node costs (cost::annotate) and analysis (graph::analyse; used
    /// only with_compiled) computed by the caller.
    static std::vector<double> raw(const graph::Graph& g, const std::vector<std::string>& vocabulary,
                                   bool with_compiled, const std::vector<cost::NodeCost>& costs,
                                   const std::vector<graph::NodeAnalysis>& an, bool split_convs = true) {
        if (costs.size() != g.num_nodes() || (with_compiled && an.size() != g.num_nodes()))
            raise<shape_error>("OpAggregates: node costs/analyses do not match the ", g.num_nodes(),
                               " nodes of graph '", g.name(), "'");
        const std::size_t half = vocabulary.size() * per_type;
        std::vector<double> f(with_compiled ? 2 * half : half, 0.0);
        for (std::size_t v = 0; v < g.num_nodes(); ++v) {
            const auto op = op_kind(g, g.nodes()[v], split_convs);
            const auto it = std::lower_bound(vocabulary.begin(), vocabulary.end(), op);
            if (it == vocabulary.end() || *it != op) continue;
            const auto t = static_cast<std::size_t>(it - vocabulary.begin()) * per_type;
            const double macs = static_cast<double>(costs[v].macs), bytes = static_cast<double>(costs[v].bytes());
            f[t] += 1.0;
            f[t + 1] += macs;
            f[t + 2] += bytes;
            if (with_compiled && an[v].kept() && !an[v].constant) {
                f[half + t] += 1.0;
                f[half + t + 1] += macs;
                f[half + t + 2] += bytes;
            }
        }
        return f;
    }
    /// Whether raw feature j is an aggregate over the kept operators only.
    bool is_compiled_feature(std::int64_t j) const {
        return j >= static_cast<std::int64_t>(vocabulary.size()) * per_type;
    }
    Eigen::MatrixXd raw_matrix(std::span<const graph::Graph* const> graphs) const {
        const auto width = static_cast<Eigen::Index>(vocabulary.size() * per_type * (compiled ? 2 : 1));
        Eigen::MatrixXd m(static_cast<Eigen::Index>(graphs.size()), width);
        for (std::size_t i = 0; i < graphs.size(); ++i) {
            const auto f = raw(*graphs[i], vocabulary, compiled, split_convs);
            for (std::size_t j = 0; j < f.size(); ++j)
                m(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(j)) = f[j];
        }
        return m;
    }

    /// Vocabulary and standardisation from training graphs; returns their raw matrix.
    Eigen::MatrixXd fit(std::span<const graph::Graph* const> graphs) {
        vocabulary.clear();
        for (const auto* g : graphs)
            for (const auto& n : g->nodes()) vocabulary.push_back(op_kind(*g, n, split_convs));
        std::sort(vocabulary.begin(), vocabulary.end());
        vocabulary.erase(std::unique(vocabulary.begin(), vocabulary.end()), vocabulary.end());
        Eigen::MatrixXd raw_train = raw_matrix(graphs);
        keep.clear();
        names.clear();
        mean.clear();
        scale.clear();
        // spread of the per-graph totals of each family (count, MACs, bytes; all and kept operators)
        const Eigen::Index families = per_type * (compiled ? 2 : 1);
        const auto types = static_cast<Eigen::Index>(vocabulary.size());
        std::vector<double> family_sd(static_cast<std::size_t>(families), 0.0);
        if (family_scaling) {
            for (Eigen::Index fam = 0; fam < families; ++fam) {
                Eigen::VectorXd total = Eigen::VectorXd::Zero(raw_train.rows());
                const Eigen::Index half = fam / per_type, k = fam % per_type;
                for (Eigen::Index t = 0; t < types; ++t) total += raw_train.col((half * types + t) * per_type + k);
                family_sd[static_cast<std::size_t>(fam)] =
                    std::sqrt((total.array() - total.mean()).square().mean());
            }
        }
        for (Eigen::Index j = 0; j < raw_train.cols(); ++j) {
            const double mu = raw_train.col(j).mean();
            const double var = (raw_train.col(j).array() - mu).square().mean();
            if (!(var > 1e-12 * std::max(1.0, mu * mu))) continue;
            const Eigen::Index fam = (j / (types * per_type)) * per_type + j % per_type;
            const double fsd = family_sd[static_cast<std::size_t>(fam)];
            keep.push_back(j);
            mean.push_back(mu);
            scale.push_back(family_scaling && fsd > 0 ? fsd : std::sqrt(var));
            const auto t = static_cast<std::size_t>(j / per_type) % vocabulary.size();
            names.push_back(vocabulary[t] + ":" + (is_compiled_feature(j) ? "kept_" : "") +
                            suffix(static_cast<int>(j % per_type)));
        }
        return raw_train;
    }
    /// Standardised features of a raw matrix (rows = graphs), with a leading column of ones
    /// when `intercept`.
    Eigen::MatrixXd standardise(const Eigen::MatrixXd& raw_m, bool intercept) const {
        const Eigen::Index o = intercept ? 1 : 0;
        Eigen::MatrixXd x(raw_m.rows(), static_cast<Eigen::Index>(keep.size()) + o);
        if (intercept) x.col(0).setOnes();
        for (std::size_t k = 0; k < keep.size(); ++k)
            x.col(static_cast<Eigen::Index>(k) + o) = (raw_m.col(keep[k]).array() - mean[k]) / scale[k];
        return x;
    }
    Eigen::MatrixXd transform(std::span<const graph::Graph* const> graphs, bool intercept) const {
        return standardise(raw_matrix(graphs), intercept);
    }
    /// Standardised features of one graph (no intercept).
    std::vector<double> transform(const graph::Graph& g) const {
        return scaled(raw(g, vocabulary, compiled, split_convs));
    }
    /// The same from g's per-node costs and analysis computed by the caller (see raw()).
    std::vector<double> transform(const graph::Graph& g, const std::vector<cost::NodeCost>& costs,
                                  const std::vector<graph::NodeAnalysis>& an) const {
        return scaled(raw(g, vocabulary, compiled, costs, an, split_convs));
    }
    std::vector<double> scaled(const std::vector<double>& f) const {
        std::vector<double> out(keep.size());
        for (std::size_t k = 0; k < keep.size(); ++k)
            out[k] = (f[static_cast<std::size_t>(keep[k])] - mean[k]) / scale[k];
        return out;
    }

    void save(io::BinaryWriter& w) const {
        w.put_bool(compiled);
        w.put_string_vector(vocabulary);
        w.put_i64_vector(keep);
        w.put_string_vector(names);
        w.put_f64_vector(mean);
        w.put_f64_vector(scale);
    }
    /// Inverse of save(); `split_convs` is the model's op_kind() choice, which the caller stores.
    static OpAggregates load(io::BinaryReader& r, bool split_convs = false) {
        OpAggregates a;
        a.split_convs = split_convs;
        a.compiled = r.get_bool("compiled-view flag");
        a.vocabulary = r.get_string_vector("vocabulary");
        a.keep = r.get_i64_vector("feature indices");
        a.names = r.get_string_vector("feature names");
        a.mean = r.get_finite_f64_vector("feature means");
        a.scale = r.get_finite_f64_vector("feature scales");
        const auto k = a.keep.size();
        if (a.mean.size() != k || a.scale.size() != k || a.names.size() != k)
            r.fail("inconsistent additive features: ", k, " indices, ", a.mean.size(), " means, ", a.scale.size(),
                   " scales");
        const auto limit = static_cast<std::int64_t>(a.vocabulary.size()) * per_type * (a.compiled ? 2 : 1);
        for (auto j : a.keep)
            if (j < 0 || j >= limit)
                r.fail("feature index ", j, " out of range of a vocabulary of ", a.vocabulary.size());
        for (double s : a.scale)
            if (!(s > 0) || !std::isfinite(s)) r.fail("non-positive feature scale");
        for (double m : a.mean)
            if (!std::isfinite(m)) r.fail("non-finite feature mean");
        return a;
    }
    static std::string suffix(int k) { return k == 0 ? "count" : k == 1 ? "macs" : "bytes"; }
};

}  // namespace dnncost::features
