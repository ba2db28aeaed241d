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
#include <limits>
#include <map>
#include <memory>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <Eigen/Dense>

#include <dnncost/core/error.hpp>
#include <dnncost/cost/analytic.hpp>
#include <dnncost/estimators/estimator.hpp>
#include <dnncost/io/serialize.hpp>

namespace dnncost::estimators {

class AdditiveEstimator final : public CostEstimator {
public:
    /// The fitted error: squared relative error (degenerate items ignored) or plain squared error.
    enum class Loss : std::uint8_t { relative = 0, absolute = 1 };
    static std::string loss_name(Loss l) { return l == Loss::relative ? "relative" : "absolute"; }
    static constexpr std::string_view kind = "additive";
    /// Per operator type: occurrence count, MACs, bytes moved.
    static constexpr int features_per_type = 3;
    static constexpr std::string_view config = "additive/v1;features=count,macs,bytes;loss=relative|absolute;grid=1e-8..1e2x0.5dec";

    std::string preset() const override { return std::string(kind); }

    /// Raw (unscaled) features of one graph for a given vocabulary, features_per_type per type.
    static std::vector<double> raw_features(const graph::Graph& g, const std::vector<std::string>& vocabulary) {
        std::vector<double> f(vocabulary.size() * features_per_type, 0.0);
        const auto costs = cost::annotate(g);
        for (std::size_t v = 0; v < g.num_nodes(); ++v) {
            const auto& op = g.nodes()[v].op_type;
            const auto it = std::lower_bound(vocabulary.begin(), vocabulary.end(), op);
            if (it == vocabulary.end() || *it != op) continue;
            const auto t = static_cast<std::size_t>(it - vocabulary.begin()) * features_per_type;
            f[t] += 1.0;
            f[t + 1] += static_cast<double>(costs[v].macs);
            f[t + 2] += static_cast<double>(costs[v].bytes());
        }
        return f;
    }

    FitResult fit(const TrainData& train, const TrainData& validation, const FitOptions& options) override {
        const auto start = std::chrono::steady_clock::now();
        check_data(train, "training");
        check_data(validation, "validation");
        if (train.size() < 2) raise<config_error>("additive: needs at least 2 training samples, got ", train.size());

        // Vocabulary: sorted distinct op types of the training graphs.
        std::vector<std::string> vocab;
        for (const auto* g : train.graphs)
            for (const auto& n : g->nodes()) vocab.push_back(n.op_type);
        std::sort(vocab.begin(), vocab.end());
        vocab.erase(std::unique(vocab.begin(), vocab.end()), vocab.end());

        const auto raw_train = feature_matrix(train.graphs, vocab);
        const Eigen::Index n = raw_train.rows(), p_all = raw_train.cols();
        // Keep features that vary in training; standardise them.
        std::vector<std::string> names;
        std::vector<Eigen::Index> keep;
        std::vector<double> mean, scale;
        for (Eigen::Index j = 0; j < p_all; ++j) {
            const double mu = raw_train.col(j).mean();
            const double var = (raw_train.col(j).array() - mu).square().mean();
            if (!(var > 1e-12 * std::max(1.0, mu * mu))) continue;
            keep.push_back(j);
            mean.push_back(mu);
            scale.push_back(std::sqrt(var));
            names.push_back(vocab[static_cast<std::size_t>(j / features_per_type)] + ":" +
                            feature_suffix(static_cast<int>(j % features_per_type)));
        }
        double y_scale = 0.0;
        for (double y : train.targets) y_scale += y;
        y_scale /= static_cast<double>(train.size());

        auto standardise = [&](const Eigen::MatrixXd& raw) {
            Eigen::MatrixXd x(raw.rows(), static_cast<Eigen::Index>(keep.size()) + 1);
            x.col(0).setOnes();
            for (std::size_t k = 0; k < keep.size(); ++k)
                x.col(static_cast<Eigen::Index>(k) + 1) = (raw.col(keep[k]).array() - mean[k]) / scale[k];
            return x;
        };
        const Eigen::MatrixXd x = standardise(raw_train);
        Eigen::VectorXd y(n);
        for (Eigen::Index i = 0; i < n; ++i) y(i) = train.targets[static_cast<std::size_t>(i)] / y_scale;
        // Items below this (scaled) value are "degenerate" (see train/metrics.hpp): they neither
        // drive the relative loss nor count in the selection score.
        const double degenerate = 0.05 * median_of(train.targets) / y_scale;

        Eigen::MatrixXd x_val;
        Eigen::VectorXd y_val;
        if (validation.size() > 0) {
            x_val = standardise(feature_matrix(validation.graphs, vocab));
            y_val = Eigen::Map<const Eigen::VectorXd>(validation.targets.data(), static_cast<Eigen::Index>(validation.size())) / y_scale;
        }
        // Selection score: mean absolute relative error (MAPE) over the non-degenerate items;
        // absolute rather than squared so that a few poorly modelled items do not decide.
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

        double best_lambda = 0.0, best_score = std::numeric_limits<double>::infinity();
        Loss best_loss = Loss::relative;
        Eigen::VectorXd best_beta;
        for (Loss loss : {Loss::relative, Loss::absolute}) {
            Eigen::VectorXd w(n);
            for (Eigen::Index i = 0; i < n; ++i)
                w(i) = loss == Loss::absolute ? 1.0 : (y(i) < degenerate ? 0.0 : 1.0 / (y(i) * y(i)));
            const double w_mean = w.mean();
            if (!(w_mean > 0)) continue;
            w /= w_mean;  // so that one lambda grid fits both losses
            const Eigen::MatrixXd xtwx = x.transpose() * w.asDiagonal() * x / static_cast<double>(n);
            const Eigen::VectorXd xtwy = x.transpose() * (w.asDiagonal() * y) / static_cast<double>(n);
            for (int e = -16; e <= 4; ++e) {
                const double lambda = std::pow(10.0, 0.5 * e);
                Eigen::MatrixXd a = xtwx;
                for (Eigen::Index j = 1; j < a.rows(); ++j) a(j, j) += lambda;
                a(0, 0) += 1e-12;  // keeps the system definite when every weight but few is zero
                const Eigen::LDLT<Eigen::MatrixXd> ldlt(a);
                const Eigen::VectorXd beta = ldlt.solve(xtwy);
                double score;
                if (validation.size() > 0) {
                    score = relative_score(y_val, x_val * beta - y_val);
                } else {
                    // Exact leave-one-out residuals of weighted ridge: r_i / (1 - h_ii),
                    // h_ii = w_i x_i' A^-1 x_i / n.
                    Eigen::VectorXd loo = y - x * beta;
                    for (Eigen::Index i = 0; i < n; ++i) {
                        const Eigen::VectorXd xi = x.row(i).transpose();
                        const double h = w(i) * xi.dot(ldlt.solve(xi)) / static_cast<double>(n);
                        loo(i) /= std::max(1e-12, 1.0 - h);
                    }
                    score = relative_score(y, loo);
                }
                if (std::isfinite(score) && score < best_score) {
                    best_score = score;
                    best_lambda = lambda;
                    best_loss = loss;
                    best_beta = beta;
                }
            }
        }
        if (best_beta.size() == 0) raise<error>("additive: ridge regression failed for every lambda (non-finite data?)");

        m_vocabulary = std::move(vocab);
        m_keep.assign(keep.begin(), keep.end());
        m_feature_names = std::move(names);
        m_mean = std::move(mean);
        m_scale = std::move(scale);
        m_intercept = best_beta(0);
        m_weights.assign(best_beta.data() + 1, best_beta.data() + best_beta.size());
        m_target_scale = y_scale;
        m_lambda = best_lambda;
        m_loss = best_loss;

        FitResult result;
        result.epochs = 1;
        result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        result.best_validation = best_score;
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
            const auto f = raw_features(*g, m_vocabulary);
            double s = m_intercept;
            for (std::size_t k = 0; k < m_keep.size(); ++k)
                s += m_weights[k] * (f[static_cast<std::size_t>(m_keep[k])] - m_mean[k]) / m_scale[k];
            out.push_back({s * m_target_scale, 0.0});
        }
        return out;
    }

    std::string serialize() const override {
        io::BinaryWriter w;
        w.put_string_vector(m_vocabulary);
        w.put_i64_vector(m_keep);
        w.put_string_vector(m_feature_names);
        w.put_f64_vector(m_mean);
        w.put_f64_vector(m_scale);
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
        m->m_vocabulary = r.get_string_vector("vocabulary");
        m->m_keep = r.get_i64_vector("feature indices");
        m->m_feature_names = r.get_string_vector("feature names");
        m->m_mean = r.get_f64_vector("feature means");
        m->m_scale = r.get_f64_vector("feature scales");
        m->m_weights = r.get_f64_vector("weights");
        m->m_intercept = r.get_f64("intercept");
        m->m_target_scale = r.get_f64("target scale");
        m->m_lambda = r.get_f64("lambda");
        const auto loss = r.get_u8("loss");
        if (loss > 1) r.fail("unknown loss code ", int(loss));
        m->m_loss = static_cast<Loss>(loss);
        r.expect_end("additive model");
        const auto k = m->m_keep.size();
        if (m->m_mean.size() != k || m->m_scale.size() != k || m->m_weights.size() != k || m->m_feature_names.size() != k)
            r.fail("inconsistent additive model: ", k, " features but ", m->m_weights.size(), " weights");
        const auto limit = static_cast<std::int64_t>(m->m_vocabulary.size()) * features_per_type;
        for (auto j : m->m_keep)
            if (j < 0 || j >= limit) r.fail("feature index ", j, " out of range of a vocabulary of ", m->m_vocabulary.size());
        for (double s : m->m_scale)
            if (!(s > 0)) r.fail("non-positive feature scale");
        if (!(m->m_target_scale > 0)) r.fail("non-positive target scale");
        return m;
    }

    /// Inspection: the chosen ridge strength, feature names and their standardised weights.
    double lambda() const { return m_lambda; }
    Loss loss() const { return m_loss; }
    const std::vector<std::string>& vocabulary() const { return m_vocabulary; }
    const std::vector<std::string>& feature_names() const { return m_feature_names; }
    const std::vector<double>& weights() const { return m_weights; }

private:
    static double median_of(std::vector<double> v) {
        const auto mid = v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2);
        std::nth_element(v.begin(), mid, v.end());
        return *mid;
    }
    static std::string feature_suffix(int k) { return k == 0 ? "count" : k == 1 ? "macs" : "bytes"; }
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
    static Eigen::MatrixXd feature_matrix(const std::vector<const graph::Graph*>& graphs, const std::vector<std::string>& vocab) {
        Eigen::MatrixXd m(static_cast<Eigen::Index>(graphs.size()), static_cast<Eigen::Index>(vocab.size() * features_per_type));
        for (std::size_t i = 0; i < graphs.size(); ++i) {
            const auto f = raw_features(*graphs[i], vocab);
            for (std::size_t j = 0; j < f.size(); ++j) m(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(j)) = f[j];
        }
        return m;
    }

    std::vector<std::string> m_vocabulary;
    std::vector<std::int64_t> m_keep;  ///< indices into raw_features of the kept features
    std::vector<std::string> m_feature_names;
    std::vector<double> m_mean, m_scale, m_weights;
    double m_intercept = 0.0, m_target_scale = 0.0, m_lambda = 0.0;
    Loss m_loss = Loss::relative;
};

}  // namespace dnncost::estimators
