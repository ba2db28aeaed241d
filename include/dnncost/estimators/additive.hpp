#pragma once
/// @file additive.hpp
/// The additive baseline: the lookup-table view of cost, learned. A network's cost is modelled
/// as a sum over its operators, each operator type contributing in proportion to how often it
/// occurs, how many MACs it performs and how many bytes it moves:
///
///     cost(g) = b + sum over op types t of ( a_t * count_t(g) + m_t * macs_t(g) + c_t * bytes_t(g) )
///
/// The vocabulary of operator types is taken from the training graphs (types unseen in
/// training contribute nothing at prediction time). Features are standardised on the training
/// set; features that are constant there are dropped. The coefficients come from a closed-form
/// ridge regression that minimises the squared *relative* error
///
///     (1/n) sum_i ((y_i - f(g_i)) / y_i)^2 + lambda * |w|^2        (intercept not penalised)
///
/// because the metrics that matter (MAPE, error-bound accuracy) are relative: an absolute loss
/// would let the slowest networks dominate the fit. Items whose value is below 5 % of the
/// training median ("degenerate", see train/metrics.hpp) get no weight in that loss.
///
/// Model selection: the loss (relative, or plain squared error as a fallback for devices where
/// the relative fit chases a tail of cheap outliers, e.g. NB201 on pixel3, whose compiled
/// runtime prunes dead cell branches the eager graph still contains) and lambda on a log grid
/// (1e-8 ... 1e2) are chosen together by the MAPE over the non-degenerate validation items, or,
/// when the validation set is empty, over exact leave-one-out predictions of the training set.
/// The final model is fitted on the training set only, so that it sees exactly the samples the
/// other presets train on.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <numeric>
#include <optional>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <Eigen/Dense>

#include <dnncost/core/error.hpp>
#include <dnncost/cost/analytic.hpp>
#include <dnncost/estimators/estimator.hpp>
#include <dnncost/graph/analysis.hpp>
#include <dnncost/io/serialize.hpp>

namespace dnncost::estimators {

/// Per-operator-type aggregates of a graph (occurrence count, MACs, bytes moved, summed over
/// the nodes of each type), standardised with training-set statistics. The vocabulary is the
/// sorted set of op types of the training graphs (unseen types contribute nothing); features
/// that are constant in training are dropped. Shared by the additive baseline and the additive
/// path of the GNN presets, so that both start from the same lookup-table view of cost.
/// With `compiled`, the same three aggregates follow over only the operators a graph compiler
/// keeps (graph/analysis.hpp: live, not constant, not identity-like): the cost a compiled
/// runtime that prunes dead branches (TFLite) pays.
struct AdditiveFeatures {
    static constexpr int per_type = 3;  ///< count, MACs, bytes
    bool compiled = false;
    std::vector<std::string> vocabulary;
    std::vector<std::int64_t> keep;  ///< indices into raw() of the kept features
    std::vector<std::string> names;
    std::vector<double> mean, scale;

    std::size_t size() const { return keep.size(); }

    /// Raw (unscaled) aggregates, per_type per vocabulary entry (then as many again over the
    /// kept operators when `with_compiled`).
    static std::vector<double> raw(const graph::Graph& g, const std::vector<std::string>& vocabulary, bool with_compiled = false) {
        return raw(g, vocabulary, with_compiled, cost::annotate(g),
                   with_compiled ? graph::analyse(g) : std::vector<graph::NodeAnalysis>{});
    }
    /// The same from g's per-node costs (cost::annotate) and analysis (graph::analyse; used
    /// only with_compiled) computed by the caller.
    static std::vector<double> raw(const graph::Graph& g, const std::vector<std::string>& vocabulary, bool with_compiled,
                                   const std::vector<cost::NodeCost>& costs, const std::vector<graph::NodeAnalysis>& an) {
        if (costs.size() != g.num_nodes() || (with_compiled && an.size() != g.num_nodes()))
            raise<shape_error>("AdditiveFeatures: node costs/analyses do not match the ", g.num_nodes(), " nodes of graph '",
                               g.name(), "'");
        const std::size_t half = vocabulary.size() * per_type;
        std::vector<double> f(with_compiled ? 2 * half : half, 0.0);
        for (std::size_t v = 0; v < g.num_nodes(); ++v) {
            const auto& op = g.nodes()[v].op_type;
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
    bool is_compiled_feature(std::int64_t j) const { return j >= static_cast<std::int64_t>(vocabulary.size()) * per_type; }
    Eigen::MatrixXd raw_matrix(std::span<const graph::Graph* const> graphs) const {
        const auto width = static_cast<Eigen::Index>(vocabulary.size() * per_type * (compiled ? 2 : 1));
        Eigen::MatrixXd m(static_cast<Eigen::Index>(graphs.size()), width);
        for (std::size_t i = 0; i < graphs.size(); ++i) {
            const auto f = raw(*graphs[i], vocabulary, compiled);
            for (std::size_t j = 0; j < f.size(); ++j) m(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(j)) = f[j];
        }
        return m;
    }

    /// Vocabulary and standardisation from training graphs; returns their raw matrix.
    Eigen::MatrixXd fit(std::span<const graph::Graph* const> graphs) {
        vocabulary.clear();
        for (const auto* g : graphs)
            for (const auto& n : g->nodes()) vocabulary.push_back(n.op_type);
        std::sort(vocabulary.begin(), vocabulary.end());
        vocabulary.erase(std::unique(vocabulary.begin(), vocabulary.end()), vocabulary.end());
        Eigen::MatrixXd raw_train = raw_matrix(graphs);
        keep.clear();
        names.clear();
        mean.clear();
        scale.clear();
        for (Eigen::Index j = 0; j < raw_train.cols(); ++j) {
            const double mu = raw_train.col(j).mean();
            const double var = (raw_train.col(j).array() - mu).square().mean();
            if (!(var > 1e-12 * std::max(1.0, mu * mu))) continue;
            keep.push_back(j);
            mean.push_back(mu);
            scale.push_back(std::sqrt(var));
            const auto t = static_cast<std::size_t>(j / per_type) % vocabulary.size();
            names.push_back(vocabulary[t] + ":" + (is_compiled_feature(j) ? "kept_" : "") + suffix(static_cast<int>(j % per_type)));
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
    std::vector<double> transform(const graph::Graph& g) const { return scaled(raw(g, vocabulary, compiled)); }
    /// The same from g's per-node costs and analysis computed by the caller (see raw()).
    std::vector<double> transform(const graph::Graph& g, const std::vector<cost::NodeCost>& costs,
                                  const std::vector<graph::NodeAnalysis>& an) const {
        return scaled(raw(g, vocabulary, compiled, costs, an));
    }
    std::vector<double> scaled(const std::vector<double>& f) const {
        std::vector<double> out(keep.size());
        for (std::size_t k = 0; k < keep.size(); ++k) out[k] = (f[static_cast<std::size_t>(keep[k])] - mean[k]) / scale[k];
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
    static AdditiveFeatures load(io::BinaryReader& r) {
        AdditiveFeatures a;
        a.compiled = r.get_bool("compiled-view flag");
        a.vocabulary = r.get_string_vector("vocabulary");
        a.keep = r.get_i64_vector("feature indices");
        a.names = r.get_string_vector("feature names");
        a.mean = r.get_finite_f64_vector("feature means");
        a.scale = r.get_finite_f64_vector("feature scales");
        const auto k = a.keep.size();
        if (a.mean.size() != k || a.scale.size() != k || a.names.size() != k)
            r.fail("inconsistent additive features: ", k, " indices, ", a.mean.size(), " means, ", a.scale.size(), " scales");
        const auto limit = static_cast<std::int64_t>(a.vocabulary.size()) * per_type * (a.compiled ? 2 : 1);
        for (auto j : a.keep)
            if (j < 0 || j >= limit) r.fail("feature index ", j, " out of range of a vocabulary of ", a.vocabulary.size());
        for (double s : a.scale)
            if (!(s > 0) || !std::isfinite(s)) r.fail("non-positive feature scale");
        for (double m : a.mean)
            if (!std::isfinite(m)) r.fail("non-finite feature mean");
        return a;
    }
    static std::string suffix(int k) { return k == 0 ? "count" : k == 1 ? "macs" : "bytes"; }
};

/// The closed-form ridge regression of the additive baseline, shared with the GNN presets'
/// additive path. Minimises the weighted squared error
///     (1/n) sum_i w_i (y_i - x_i . beta)^2 + lambda |beta_{1..}|^2   (x_i0 = 1, not penalised)
/// with w_i = 1 / y_i^2 (relative error; items below `degenerate` get no weight) or w_i = 1
/// (absolute error), over a log grid of lambda (1e-8 ... 1e2, half decades). Loss and lambda
/// are chosen together by the mean absolute relative error over the non-degenerate validation
/// items or, without validation data, over exact leave-one-out predictions of the training set.
struct RidgeFit {
    enum class Loss : std::uint8_t { relative = 0, absolute = 1 };
    Eigen::VectorXd beta;  ///< intercept first
    double lambda = 0.0;
    double score = std::numeric_limits<double>::infinity();  ///< the selection MAPE
    Loss loss = Loss::relative;
    bool loo = false;  ///< score is leave-one-out (no validation data)

    /// The weighted normal equations of one loss, (1/n) X'WX and (1/n) X'Wy, with the weights
    /// normalised to mean 1 so that one lambda grid fits both losses.
    struct NormalEquations {
        Eigen::VectorXd w;
        Eigen::MatrixXd xtwx;
        Eigen::VectorXd xtwy;
        /// nullopt when no item has weight (a relative loss over only degenerate items)
        static std::optional<NormalEquations> of(const Eigen::MatrixXd& x, const Eigen::VectorXd& y, Loss loss, double degenerate) {
            const Eigen::Index n = x.rows();
            NormalEquations ne;
            ne.w.resize(n);
            for (Eigen::Index i = 0; i < n; ++i)
                ne.w(i) = loss == Loss::absolute ? 1.0 : (y(i) < degenerate ? 0.0 : 1.0 / (y(i) * y(i)));
            const double w_mean = n > 0 ? ne.w.mean() : 0.0;
            if (!(w_mean > 0)) return std::nullopt;
            ne.w /= w_mean;
            ne.xtwx = x.transpose() * ne.w.asDiagonal() * x / static_cast<double>(n);
            ne.xtwy = x.transpose() * (ne.w.asDiagonal() * y) / static_cast<double>(n);
            return ne;
        }
        Eigen::LDLT<Eigen::MatrixXd> factor(double lambda) const {
            Eigen::MatrixXd a = xtwx;
            for (Eigen::Index j = 1; j < a.rows(); ++j) a(j, j) += lambda;
            a(0, 0) += 1e-12;  // keeps the system definite when every weight but few is zero
            return Eigen::LDLT<Eigen::MatrixXd>(a);
        }
        /// The ridge coefficients for lambda (intercept first).
        Eigen::VectorXd beta(double lambda) const { return factor(lambda).solve(xtwy); }
    };

    /// Coefficients for a given loss and lambda (intercept first).
    /// @throws error when no item has weight under the loss
    static Eigen::VectorXd solve(const Eigen::MatrixXd& x, const Eigen::VectorXd& y, Loss loss, double lambda, double degenerate) {
        const auto ne = NormalEquations::of(x, y, loss, degenerate);
        if (!ne) raise<error>("additive: no training item has weight under the relative loss (all below the degenerate threshold)");
        return ne->beta(lambda);
    }

    /// Optional selection score of validation predictions (lower is better) replacing the MAPE.
    using Scorer = std::function<double(const Eigen::VectorXd& predicted, const Eigen::VectorXd& truth)>;

    /// @param x training design matrix with a leading column of ones
    /// @param x_val, y_val validation data (nullptr: leave-one-out)
    /// @param scorer selection score on the validation data (empty: the MAPE over non-degenerate items)
    /// @throws error when every candidate fails (non-finite data)
    static RidgeFit select(const Eigen::MatrixXd& x, const Eigen::VectorXd& y, const Eigen::MatrixXd* x_val,
                           const Eigen::VectorXd* y_val, double degenerate, const Scorer& scorer = {}) {
        const Eigen::Index n = x.rows();
        // absolute rather than squared relative error, so that a few poorly modelled items do not decide
        auto relative_score = [degenerate](const Eigen::VectorXd& truth, const Eigen::VectorXd& residual) {
            double s = 0.0;
            std::size_t k = 0;
            for (Eigen::Index i = 0; i < truth.size(); ++i) {
                if (truth(i) < degenerate) continue;
                s += std::abs(residual(i) / truth(i));
                ++k;
            }
            return k ? s / static_cast<double>(k) : std::numeric_limits<double>::infinity();
        };
        RidgeFit best;
        best.loo = x_val == nullptr;
        for (Loss loss : {Loss::relative, Loss::absolute}) {
            const auto ne = NormalEquations::of(x, y, loss, degenerate);
            if (!ne) continue;
            for (int e = -16; e <= 4; ++e) {
                const double lambda = std::pow(10.0, 0.5 * e);
                const auto ldlt = ne->factor(lambda);
                const Eigen::VectorXd beta = ldlt.solve(ne->xtwy);
                double score;
                if (x_val && scorer) {
                    score = scorer(*x_val * beta, *y_val);
                } else if (x_val) {
                    score = relative_score(*y_val, *x_val * beta - *y_val);
                } else {
                    // Exact leave-one-out residuals of weighted ridge: r_i / (1 - h_ii),
                    // h_ii = w_i x_i' A^-1 x_i / n.
                    Eigen::VectorXd loo = y - x * beta;
                    for (Eigen::Index i = 0; i < n; ++i) {
                        const Eigen::VectorXd xi = x.row(i).transpose();
                        const double h = ne->w(i) * xi.dot(ldlt.solve(xi)) / static_cast<double>(n);
                        loo(i) /= std::max(1e-12, 1.0 - h);
                    }
                    score = relative_score(y, loo);
                }
                if (std::isfinite(score) && score < best.score) {
                    best.score = score;
                    best.lambda = lambda;
                    best.loss = loss;
                    best.beta = beta;
                }
            }
        }
        if (best.beta.size() == 0) raise<error>("additive: ridge regression failed for every lambda (non-finite data?)");
        return best;
    }
};

class AdditiveEstimator final : public CostEstimator {
public:
    /// The fitted error: squared relative error (degenerate items ignored) or plain squared error.
    using Loss = RidgeFit::Loss;
    static std::string loss_name(Loss l) { return l == Loss::relative ? "relative" : "absolute"; }
    static constexpr std::string_view kind = "additive";
    /// Per operator type: occurrence count, MACs, bytes moved.
    static constexpr int features_per_type = AdditiveFeatures::per_type;
    static constexpr std::string_view config = "additive/v2;features=count,macs,bytes;loss=relative|absolute;grid=1e-8..1e2x0.5dec";

    std::string preset() const override { return std::string(kind); }

    /// Raw (unscaled) features of one graph for a given vocabulary, features_per_type per type.
    static std::vector<double> raw_features(const graph::Graph& g, const std::vector<std::string>& vocabulary) {
        return AdditiveFeatures::raw(g, vocabulary);
    }

    FitResult fit(const TrainData& train, const TrainData& validation, const FitOptions& options) override {
        const auto start = std::chrono::steady_clock::now();
        check_data(train, "training");
        check_data(validation, "validation");
        if (train.size() < 2) raise<config_error>("additive: needs at least 2 training samples, got ", train.size());

        AdditiveFeatures feats;
        const Eigen::MatrixXd x = feats.standardise(feats.fit(train.graphs), true);
        const double y_scale = std::accumulate(train.targets.begin(), train.targets.end(), 0.0) / static_cast<double>(train.size());
        const Eigen::VectorXd y = Eigen::Map<const Eigen::VectorXd>(train.targets.data(), static_cast<Eigen::Index>(train.size())) / y_scale;
        // Items below this (scaled) value are "degenerate" (see train/metrics.hpp): they neither
        // drive the relative loss nor count in the selection score.
        const double degenerate = 0.05 * median_of(train.targets) / y_scale;
        Eigen::MatrixXd x_val;
        Eigen::VectorXd y_val;
        if (validation.size() > 0) {
            x_val = feats.transform(validation.graphs, true);
            y_val = Eigen::Map<const Eigen::VectorXd>(validation.targets.data(), static_cast<Eigen::Index>(validation.size())) / y_scale;
        }
        const RidgeFit best = RidgeFit::select(x, y, validation.size() > 0 ? &x_val : nullptr,
                                               validation.size() > 0 ? &y_val : nullptr, degenerate);
        m_features = std::move(feats);
        m_intercept = best.beta(0);
        m_weights.assign(best.beta.data() + 1, best.beta.data() + best.beta.size());
        m_target_scale = y_scale;
        m_lambda = best.lambda;
        m_loss = best.loss;

        FitResult result;
        result.epochs = 1;
        result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        result.best_validation = best.score;
        result.validation_metric = validation.size() > 0 ? "validation MAPE" : "leave-one-out MAPE";
        if (options.on_epoch)
            options.on_epoch("additive: " + std::to_string(m_weights.size()) + " features, " + loss_name(m_loss) + " loss, lambda " +
                             fmt(m_lambda) + ", " +
                             result.validation_metric + " " + fmt(result.best_validation));
        return result;
    }

    std::vector<Prediction> predict(std::span<const graph::Graph* const> graphs) const override {
        if (m_target_scale <= 0) raise<config_error>("additive: predict called before fit or load");
        std::vector<Prediction> out;
        out.reserve(graphs.size());
        for (const auto* g : graphs) {
            if (!g) raise<config_error>("additive: null graph passed to predict");
            const auto f = m_features.transform(*g);
            double s = m_intercept;
            for (std::size_t k = 0; k < f.size(); ++k) s += m_weights[k] * f[k];
            out.push_back({s * m_target_scale, 0.0});
        }
        return out;
    }

    std::vector<std::string> vocabulary() const override {
        auto v = m_features.vocabulary;
        std::sort(v.begin(), v.end());
        return v;
    }
    std::string serialize() const override {
        io::BinaryWriter w;
        m_features.save(w);
        w.put_f64_vector(m_weights);
        w.put_f64(m_intercept);
        w.put_f64(m_target_scale);
        w.put_f64(m_lambda);
        w.put_u8(static_cast<std::uint8_t>(m_loss));
        return io::write_container(kind, io::fnv1a64(config), w.bytes());
    }

    /// Rebuild a model saved by serialize(). @throws parse_error naming `source`.
    static std::unique_ptr<AdditiveEstimator> deserialize(std::string_view bytes, std::string_view source = "<memory>") {
        const auto c = io::read_container(bytes, kind, source);
        if (c.config_hash != io::fnv1a64(config))
            raise<parse_error>(source, ": additive model written by an incompatible configuration (hash mismatch)");
        io::BinaryReader r(c.payload, std::string(source));
        auto m = std::make_unique<AdditiveEstimator>();
        m->m_features = AdditiveFeatures::load(r);
        m->m_weights = r.get_finite_f64_vector("weights");
        m->m_intercept = r.get_finite_f64("intercept");
        m->m_target_scale = r.get_finite_f64("target scale");
        m->m_lambda = r.get_finite_f64("lambda");
        const auto loss = r.get_u8("loss");
        if (loss > 1) r.fail("unknown loss code ", int(loss));
        m->m_loss = static_cast<Loss>(loss);
        r.expect_end("additive model");
        if (m->m_weights.size() != m->m_features.size())
            r.fail("inconsistent additive model: ", m->m_features.size(), " features but ", m->m_weights.size(), " weights");
        if (!(m->m_target_scale > 0)) r.fail("non-positive target scale");
        return m;
    }

    /// Inspection: the chosen ridge strength, feature names and their standardised weights.
    double lambda() const { return m_lambda; }
    Loss loss() const { return m_loss; }
    const std::vector<std::string>& feature_names() const { return m_features.names; }
    const std::vector<double>& weights() const { return m_weights; }

private:
    static double median_of(std::vector<double> v) {
        const auto mid = v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2);
        std::nth_element(v.begin(), mid, v.end());
        return *mid;
    }
    static std::string fmt(double v) {
        std::ostringstream os;
        os.precision(3);
        os << v;
        return os.str();
    }
    static void check_data(const TrainData& d, const char* what) {
        if (d.graphs.size() != d.targets.size())
            raise<shape_error>("additive: ", what, " data has ", d.graphs.size(), " graphs but ", d.targets.size(), " targets");
        for (std::size_t i = 0; i < d.size(); ++i) {
            if (!d.graphs[i]) raise<config_error>("additive: ", what, " graph ", i, " is null");
            if (!(d.targets[i] > 0) || !std::isfinite(d.targets[i]))
                raise<config_error>("additive: ", what, " target ", i, " is ", d.targets[i], " (must be positive and finite)");
        }
    }

    AdditiveFeatures m_features;
    std::vector<double> m_weights;
    double m_intercept = 0.0, m_target_scale = 0.0, m_lambda = 0.0;
    Loss m_loss = Loss::relative;
};

}  // namespace dnncost::estimators
