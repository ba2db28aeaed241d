#pragma once
/// @file adaptation.hpp
/// Few-shot adaptation to an unseen device (MAPLE-Edge): one regressor over
/// [architecture encoding ‖ hardware descriptor], trained on the measurements of a pool of
/// devices plus a few measurements of the new device, cloned so that they weigh in the fit.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <numeric>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <Eigen/Dense>

#include <dnncost/core/config.hpp>
#include <dnncost/core/error.hpp>
#include <dnncost/core/rng.hpp>
#include <dnncost/estimators/gnn_estimator.hpp>
#include <dnncost/estimators/ridge.hpp>
#include <dnncost/features/batch.hpp>
#include <dnncost/features/op_aggregates.hpp>
#include <dnncost/nn/loss/losses.hpp>
#include <dnncost/nn/mlp.hpp>
#include <dnncost/optim/optimizer.hpp>
#include <dnncost/spaces/nb201.hpp>
#include <dnncost/train/metrics.hpp>
#include <dnncost/train/split.hpp>

namespace dnncost::estimators {

// ------------------------------------------------------------------ architecture encoders

/// Width of nb201_encoding().
inline constexpr int nb201_encoding_width =
    dnncost::nb201::num_edges * dnncost::nb201::num_ops + dnncost::nb201::num_ops;

/// NB201 cell encoding: the one-hot operation of each of the six edges, then the cell's count of
/// each operation (the counts are what an additive cost model needs; the one-hot keeps where an
/// operation sits, which decides whether a branch is dead).
/// @throws parse_error for a malformed architecture string
DNNCOST_FUNC std::vector<double> nb201_encoding(std::string_view arch);

/// Encoding of any network: per-operator-type count, MACs and bytes (features::OpAggregates),
/// vocabulary and scaling fitted on `graphs`, as log(1 + value) so that MACs spanning decades
/// stay comparable. One row per graph.
DNNCOST_FUNC Eigen::MatrixXd aggregate_encoding(std::span<const graph::Graph* const> graphs);

// ------------------------------------------------------------------ hardware descriptor

/// Hardware descriptor (a): the latencies of a fixed set of reference networks on a device,
/// normalised. Element 0 is the log of their geometric mean (the device's overall speed), the
/// others each network's log latency minus it (the device's shape: which networks it favours).
/// @throws config_error for an empty set or a non-positive latency
DNNCOST_FUNC std::vector<double> latency_descriptor(std::span<const double> reference_ms);

// ------------------------------------------------------------------ shots

/// @throws config_error when `candidates` rows cannot give `shots` shots and one network to test
inline void check_shot_candidates(std::size_t candidates, std::size_t shots) {
    if (shots == 0) raise<config_error>("choose_shots: needs at least one shot");
    if (candidates <= shots)
        raise<config_error>("only ", candidates, " measured rows on the target device for ", shots,
                            " shots (at least one more is needed to evaluate)");
}

/// The `shots` measurements to take on the new device, among `candidates` (row indices):
/// targeted uniform sampling ranks them by `proxy` (one value per row: a pool device's latency
/// or MACs), cuts the ranking into `shots` bins and draws one per bin; random draws a uniform
/// subset. Sorted row indices.
/// @throws config_error when there are fewer candidates than shots + 1 (one is kept for testing)
DNNCOST_FUNC std::vector<std::size_t> choose_shots(std::span<const std::size_t> candidates, std::span<const double> proxy,
                                             std::size_t shots, train::Sampling sampling, std::uint64_t seed);

// ------------------------------------------------------------------ the regressor

struct AdaptationOptions {
    int clones = 7;                    ///< K: each shot enters the training set K times (itself and K - 1 clones)
    std::size_t pool_networks = 2000;  ///< networks drawn per pool device (0: all)
    std::vector<int> hidden{128, 128};
    int epochs = 60;
    int batch_size = 128;
    double lr = 1e-3;
    /// Epochs on the cloned shots alone after the joint training (0: none), at lr / 10.
    int finetune_epochs = 0;
    /// Shift the log predictions by the mean log residual on the shots (a per-device bias).
    bool calibrate = false;
    /// Stack: the final prediction is a ridge regression, fitted on the shots, over the
    /// regressor's predictions for the new device and for every pool device (the pool devices'
    /// descriptors), so that the shots decide how much of each pool device the new one is like.
    bool stack = true;
    std::uint64_t seed = 0;
};

/// The MAPLE-Edge regressor: an MLP from [architecture encoding ‖ hardware descriptor] to log
/// latency. The descriptor of every device is latency_descriptor() over the same reference
/// networks, the shots: the new device was measured on them, and the pool devices' tables hold
/// them too, so that no measurement beyond the shots is needed. Log latency makes the squared
/// error a relative one, which is what the ±10 % accuracy and the ranking care about.
class MapleEdge {
public:
    /// @param encoding one row per network (all candidates)
    /// @param pool latencies in ms, one row per network and one column per pool device (all known)
    /// @param shots rows measured on the new device, with their latencies `shot_ms`
    /// @throws config_error on mismatched sizes, non-positive latencies or bad options
    void fit(const Eigen::MatrixXd& encoding, const Eigen::MatrixXd& pool, std::span<const std::size_t> shots,
             std::span<const double> shot_ms, const AdaptationOptions& o) {
        const Index n = encoding.rows();
        if (pool.rows() != n || pool.cols() < 1)
            raise<config_error>("MapleEdge: ", pool.rows(), " pool rows x ", pool.cols(), " devices for ", n,
                                " encoded networks");
        if (shots.empty() || shots.size() != shot_ms.size())
            raise<config_error>("MapleEdge: ", shots.size(), " shots with ", shot_ms.size(), " latencies");
        if (o.clones < 1 || o.epochs < 1 || o.batch_size < 1 || !(o.lr > 0) || o.hidden.empty())
            raise<config_error>("MapleEdge: bad options (clones, epochs, batch size >= 1, lr > 0, a hidden layer)");
        for (auto s : shots)
            if (static_cast<Index>(s) >= n) raise<config_error>("MapleEdge: shot row ", s, " out of range");
        if (!(pool.array() > 0).all() || !pool.allFinite())
            raise<config_error>("MapleEdge: pool latencies must be positive and finite");

        m_reference.assign(shots.begin(), shots.end());
        m_target_descriptor = latency_descriptor(shot_ms);
        std::vector<std::vector<double>> pool_descriptor;
        for (Index d = 0; d < pool.cols(); ++d) pool_descriptor.push_back(descriptor_of(pool.col(d)));

        Rng rng(o.seed);
        // the pool rows: pool_networks random networks per device, plus the shots on every device
        std::vector<std::pair<std::size_t, Index>> rows;  // (network, device; -1 the new device)
        std::vector<double> y;
        for (Index d = 0; d < pool.cols(); ++d) {
            std::vector<std::size_t> order(static_cast<std::size_t>(n));
            std::iota(order.begin(), order.end(), std::size_t{0});
            rng.shuffle(order.begin(), order.end());
            const std::size_t take = o.pool_networks == 0 ? order.size() : std::min(order.size(), o.pool_networks);
            for (std::size_t k = 0; k < take; ++k) {
                rows.emplace_back(order[k], d);
                y.push_back(std::log(pool(static_cast<Index>(order[k]), d)));
            }
        }
        for (int c = 0; c < o.clones; ++c)
            for (std::size_t s = 0; s < shots.size(); ++s) {
                if (!(shot_ms[s] > 0) || !std::isfinite(shot_ms[s]))
                    raise<config_error>("MapleEdge: shot latency ", shot_ms[s], " is not positive and finite");
                rows.emplace_back(shots[s], -1);
                y.push_back(std::log(shot_ms[s]));
            }

        const Index width = encoding.cols() + static_cast<Index>(m_target_descriptor.size());
        Eigen::MatrixXd x(static_cast<Index>(rows.size()), width);
        for (std::size_t r = 0; r < rows.size(); ++r) {
            const auto& h =
                rows[r].second < 0 ? m_target_descriptor : pool_descriptor[static_cast<std::size_t>(rows[r].second)];
            x.row(static_cast<Index>(r)) << encoding.row(static_cast<Index>(rows[r].first)),
                Eigen::Map<const Eigen::RowVectorXd>(h.data(), static_cast<Index>(h.size()));
        }
        m_mean = x.colwise().mean();
        m_scale = ((x.rowwise() - m_mean).array().square().colwise().mean()).sqrt();
        for (Index j = 0; j < m_scale.size(); ++j)
            if (!(m_scale(j) > 1e-12)) m_scale(j) = 1.0;
        const Eigen::Map<const Eigen::VectorXd> yv(y.data(), static_cast<Index>(y.size()));
        m_y_mean = yv.mean();
        m_y_scale = std::sqrt((yv.array() - m_y_mean).square().mean());
        if (!(m_y_scale > 1e-12)) m_y_scale = 1.0;

        Mat<double> xs = ((x.rowwise() - m_mean).array().rowwise() / m_scale.array()).matrix();
        Mat<double> ys = ((yv.array() - m_y_mean) / m_y_scale).matrix();
        std::vector<Index> dims{width};
        for (int h : o.hidden) dims.push_back(h);
        dims.push_back(1);
        m_net = nn::make_mlp<double>(dims, nn::Act::relu, 0.0, rng);
        std::vector<nn::Parameter<double>*> params;
        m_net->collect_parameters(params);
        optim::Adam<double> adam(params, {.lr = o.lr});

        std::vector<Index> order(static_cast<std::size_t>(xs.rows()));
        std::iota(order.begin(), order.end(), Index{0});
        Mat<double> xb, yb, grad;
        const nn::Context<double> ctx{nullptr, true, &rng, nullptr, false};
        for (int epoch = 0; epoch < o.epochs; ++epoch) {
            // cosine decay: the last epochs settle instead of jumping around the minimum
            adam.set_learning_rate(o.lr * 0.5 * (1 + std::cos(3.141592653589793 * epoch / o.epochs)) + 1e-6);
            rng.shuffle(order.begin(), order.end());
            for (std::size_t s = 0; s < order.size(); s += static_cast<std::size_t>(o.batch_size)) {
                const auto e = std::min(order.size(), s + static_cast<std::size_t>(o.batch_size));
                xb.resize(static_cast<Index>(e - s), xs.cols());
                yb.resize(static_cast<Index>(e - s), 1);
                for (std::size_t k = s; k < e; ++k) {
                    xb.row(static_cast<Index>(k - s)) = xs.row(order[k]);
                    yb(static_cast<Index>(k - s), 0) = ys(order[k], 0);
                }
                adam.zero_grad();
                const auto& p = m_net->forward(xb, ctx);
                (void)nn::mse_loss(p, yb, grad);
                m_net->backward(grad, ctx);
                adam.step();
            }
        }
        const auto shot_begin = static_cast<Index>(rows.size() - shots.size() * static_cast<std::size_t>(o.clones));
        if (o.finetune_epochs > 0) {
            const Mat<double> xf = xs.bottomRows(xs.rows() - shot_begin), yf = ys.bottomRows(ys.rows() - shot_begin);
            adam.set_learning_rate(o.lr * 0.1);
            for (int epoch = 0; epoch < o.finetune_epochs; ++epoch) {
                adam.zero_grad();
                const auto& p = m_net->forward(xf, ctx);
                (void)nn::mse_loss(p, yf, grad);
                m_net->backward(grad, ctx);
                adam.step();
            }
        }
        m_shift = 0.0;
        m_pool_descriptors = pool_descriptor;
        m_stack.resize(0);
        if (o.stack) {
            Eigen::MatrixXd shot_encoding(static_cast<Index>(shots.size()), encoding.cols());
            for (std::size_t s = 0; s < shots.size(); ++s)
                shot_encoding.row(static_cast<Index>(s)) = encoding.row(static_cast<Index>(shots[s]));
            const Eigen::MatrixXd f = stack_features(shot_encoding);
            const Eigen::Map<const Eigen::VectorXd> y_ms(shot_ms.data(), static_cast<Index>(shot_ms.size()));
            const double scale = y_ms.mean();
            const auto fit = RidgeFit::select(f / scale, y_ms / scale, nullptr, nullptr,
                                              train::degenerate_threshold(shot_ms) / scale);
            m_stack = fit.beta;
            m_stack(0) *= scale;  // the intercept column is 1, not 1 / scale
        }
        if (o.calibrate) {
            const nn::Context<double> infer{nullptr, false, nullptr, nullptr, true};
            const Mat<double> xf = xs.bottomRows(static_cast<Index>(shots.size()));
            const auto& p = m_net->forward(xf, infer);
            for (Index i = 0; i < p.rows(); ++i)
                m_shift += (ys(ys.rows() - p.rows() + i, 0) - p(i, 0)) * m_y_scale / static_cast<double>(p.rows());
        }
    }

    /// Latencies in ms on the new device of the networks with these encodings (one row each).
    std::vector<double> predict(const Eigen::MatrixXd& encoding) const {
        if (m_stack.size() == 0) return predict_with(encoding, m_target_descriptor);
        const Eigen::VectorXd p = stack_features(encoding) * m_stack;
        return {p.data(), p.data() + p.size()};
    }
    /// Latencies on a device with the given latencies of the reference networks (reference()).
    std::vector<double> predict_for(const Eigen::MatrixXd& encoding, std::span<const double> reference_ms) const {
        return predict_with(encoding, latency_descriptor(reference_ms));
    }
    /// The reference networks of the descriptor: the rows of the shots.
    const std::vector<std::size_t>& reference() const { return m_reference; }
    const std::vector<double>& target_descriptor() const { return m_target_descriptor; }

private:
    /// [1 | regressor for the new device | regressor for each pool device], latencies in ms.
    Eigen::MatrixXd stack_features(const Eigen::MatrixXd& encoding) const {
        Eigen::MatrixXd f(encoding.rows(), 2 + static_cast<Index>(m_pool_descriptors.size()));
        f.col(0).setOnes();
        const auto put = [&](Index c, const std::vector<double>& h) {
            const auto p = predict_with(encoding, h);
            for (Index i = 0; i < f.rows(); ++i) f(i, c) = p[static_cast<std::size_t>(i)];
        };
        put(1, m_target_descriptor);
        for (std::size_t d = 0; d < m_pool_descriptors.size(); ++d)
            put(2 + static_cast<Index>(d), m_pool_descriptors[d]);
        return f;
    }
    std::vector<double> descriptor_of(const Eigen::VectorXd& column) const {
        std::vector<double> ref;
        for (auto r : m_reference) ref.push_back(column(static_cast<Index>(r)));
        return latency_descriptor(ref);
    }
    std::vector<double> predict_with(const Eigen::MatrixXd& encoding, const std::vector<double>& h) const {
        if (!m_net) raise<config_error>("MapleEdge: predict called before fit");
        const Index width = encoding.cols() + static_cast<Index>(h.size());
        if (width != m_mean.size())
            raise<shape_error>("MapleEdge: ", encoding.cols(), " encoding features, the model was fitted on ",
                               m_mean.size() - static_cast<Index>(h.size()));
        Mat<double> x(encoding.rows(), width);
        const Eigen::Map<const Eigen::RowVectorXd> hv(h.data(), static_cast<Index>(h.size()));
        for (Index i = 0; i < encoding.rows(); ++i) x.row(i) << encoding.row(i), hv;
        x = ((x.rowwise() - m_mean).array().rowwise() / m_scale.array()).matrix();
        const nn::Context<double> ctx{nullptr, false, nullptr, nullptr, true};
        const auto& p = m_net->forward(x, ctx);
        std::vector<double> out(static_cast<std::size_t>(p.rows()));
        for (Index i = 0; i < p.rows(); ++i)
            out[static_cast<std::size_t>(i)] = std::exp(p(i, 0) * m_y_scale + m_y_mean + m_shift);
        return out;
    }

    std::vector<std::size_t> m_reference;
    std::vector<double> m_target_descriptor;
    std::vector<std::vector<double>> m_pool_descriptors;
    Eigen::VectorXd m_stack;  ///< stacking coefficients, intercept first; empty without stacking
    Eigen::RowVectorXd m_mean, m_scale;
    double m_y_mean = 0.0, m_y_scale = 1.0, m_shift = 0.0;
    std::unique_ptr<nn::Sequential<double>> m_net;
};

/// The floor of few-shot adaptation: a ridge regression over the five NB201 per-cell operation
/// counts fitted on the shots alone (penalty by exact leave-one-out). Latencies in ms for the
/// given architecture strings.
/// @throws parse_error for a malformed architecture string, config_error for fewer than 2 shots
DNNCOST_FUNC std::vector<double> shots_only_ridge(std::span<const std::string> shot_archs, std::span<const double> shot_ms,
                                            std::span<const std::string> archs);

/// The floor for any network: a ridge regression over linear cost features (one row per
/// network, e.g. per-operator-type count, MACs, bytes) fitted on the shots alone, features scaled
/// by their root mean square over the shots, intercept unpenalised, penalty by exact leave-one-out.
/// @throws config_error for fewer than 2 shots or mismatched widths
DNNCOST_FUNC std::vector<double> shots_only_linear_ridge(const Eigen::MatrixXd& shot_features,
                                                   std::span<const double> shot_ms, const Eigen::MatrixXd& features);

}  // namespace dnncost::estimators

#if !defined(DNNCOST_COMPILED)
#include <dnncost/estimators/adaptation_impl.hpp>
#endif
