#pragma once
/// @file losses.hpp
/// Regression losses on a prediction matrix against targets of the same shape, the pairwise
/// BCE ranking loss on logits, and weighted sums. Each returns the loss value and writes
/// dLoss/dPrediction into `grad` (overwriting it). Means run over all elements.
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include <dnncost/nn/tensor.hpp>

namespace dnncost::nn {

enum class LossKind : int { mse, l1, huber, mape, mape_rmse };

namespace detail {
template <class T>
void check_pair(const char* who, const Mat<T>& p, const Mat<T>& y) {
    if (p.rows() != y.rows() || p.cols() != y.cols())
        raise<shape_error>(who, ": prediction is ", p.rows(), "x", p.cols(), ", target ", y.rows(), "x", y.cols());
    if (p.size() == 0) raise<shape_error>(who, ": empty prediction");
    if (!y.allFinite()) raise<config_error>(who, ": target contains NaN or infinity");
}
}  // namespace detail

/// Mean squared error.
template <class T>
T mse_loss(const Mat<T>& p, const Mat<T>& y, Mat<T>& grad) {
    detail::check_pair("mse_loss", p, y);
    const T n = static_cast<T>(p.size());
    grad = (T(2) / n) * (p - y);
    return (p - y).squaredNorm() / n;
}
/// Mean absolute error (subgradient 0 at a tie).
template <class T>
T l1_loss(const Mat<T>& p, const Mat<T>& y, Mat<T>& grad) {
    detail::check_pair("l1_loss", p, y);
    const T n = static_cast<T>(p.size());
    grad = (p - y).unaryExpr([n](T d) { return d > 0 ? T(1) / n : (d < 0 ? T(-1) / n : T(0)); });
    return (p - y).cwiseAbs().sum() / n;
}
/// Huber loss with threshold delta: quadratic within delta, linear beyond.
template <class T>
T huber_loss(const Mat<T>& p, const Mat<T>& y, Mat<T>& grad, T delta = T(1)) {
    detail::check_pair("huber_loss", p, y);
    if (!(delta > 0)) raise<config_error>("huber_loss: delta must be positive, got ", delta);
    const T n = static_cast<T>(p.size());
    grad.resize(p.rows(), p.cols());
    T sum = 0;
    for (Index i = 0; i < p.size(); ++i) {
        const T d = p.data()[i] - y.data()[i];
        if (std::abs(d) <= delta) {
            sum += T(0.5) * d * d;
            grad.data()[i] = d / n;
        } else {
            sum += delta * (std::abs(d) - T(0.5) * delta);
            grad.data()[i] = (d > 0 ? delta : -delta) / n;
        }
    }
    return sum / n;
}
/// Mean absolute percentage error (as a fraction). Targets must be non-zero.
template <class T>
T mape_loss(const Mat<T>& p, const Mat<T>& y, Mat<T>& grad) {
    detail::check_pair("mape_loss", p, y);
    const T n = static_cast<T>(p.size());
    grad.resize(p.rows(), p.cols());
    T sum = 0;
    for (Index i = 0; i < p.size(); ++i) {
        const T t = y.data()[i];
        if (t == T(0)) raise<config_error>("mape_loss: target ", i, " is zero");
        const T d = p.data()[i] - t;
        sum += std::abs(d / t);
        grad.data()[i] = (d > 0 ? T(1) : (d < 0 ? T(-1) : T(0))) / (std::abs(t) * n);
    }
    return sum / n;
}
/// Root mean squared error (gradient 0 at a perfect fit).
template <class T>
T rmse_loss(const Mat<T>& p, const Mat<T>& y, Mat<T>& grad) {
    detail::check_pair("rmse_loss", p, y);
    const T n = static_cast<T>(p.size());
    const T r = std::sqrt((p - y).squaredNorm() / n);
    if (r > T(0))
        grad = (p - y) / (n * r);
    else
        grad.setZero(p.rows(), p.cols());
    return r;
}
/// PerfSAGE's hybrid loss MAPE + alpha * RMSE.
template <class T>
T mape_rmse_loss(const Mat<T>& p, const Mat<T>& y, Mat<T>& grad, T alpha) {
    Mat<T> g2;
    const T a = mape_loss(p, y, grad);
    const T b = rmse_loss(p, y, g2);
    grad += alpha * g2;
    return a + alpha * b;
}

/// Pairwise ranking loss: binary cross-entropy between sigmoid(logits) and labels in [0, 1]
/// (1: the first graph of the pair costs more), computed stably from the logits.
template <class T>
T pairwise_bce_loss(const Mat<T>& logits, const Mat<T>& labels, Mat<T>& grad) {
    detail::check_pair("pairwise_bce_loss", logits, labels);
    const T n = static_cast<T>(logits.size());
    grad.resize(logits.rows(), logits.cols());
    T sum = 0;
    for (Index i = 0; i < logits.size(); ++i) {
        const T z = logits.data()[i], t = labels.data()[i];
        // log(1 + e^z) - t z, written to avoid overflow
        sum += std::max(z, T(0)) - t * z + std::log1p(std::exp(-std::abs(z)));
        grad.data()[i] = (T(1) / (T(1) + std::exp(-z)) - t) / n;
    }
    return sum / n;
}
/// Labels of the ranking head for targets y and the head's pairs: 1 if y_i > y_j, 0.5 on a tie.
template <class T>
Mat<T> pairwise_labels(const Mat<T>& y, const std::vector<std::pair<int, int>>& pairs) {
    Mat<T> l(static_cast<Index>(pairs.size()), 1);
    for (std::size_t k = 0; k < pairs.size(); ++k) {
        const T a = y(pairs[k].first, 0), b = y(pairs[k].second, 0);
        l(static_cast<Index>(k), 0) = a > b ? T(1) : (a < b ? T(0) : T(0.5));
    }
    return l;
}

/// One term of a weighted loss.
struct LossTerm {
    LossKind kind = LossKind::mse;
    double weight = 1.0;
    double param = 1.0;  ///< huber: delta; mape_rmse: alpha
};

/// Any weighted sum of regression losses on the same prediction.
template <class T>
T weighted_loss(const std::vector<LossTerm>& terms, const Mat<T>& p, const Mat<T>& y, Mat<T>& grad) {
    if (terms.empty()) raise<config_error>("weighted_loss: no terms");
    Mat<T> g;
    T total = 0;
    grad.setZero(p.rows(), p.cols());
    for (const auto& t : terms) {
        T v = 0;
        switch (t.kind) {
            case LossKind::mse:
                v = mse_loss(p, y, g);
                break;
            case LossKind::l1:
                v = l1_loss(p, y, g);
                break;
            case LossKind::huber:
                v = huber_loss(p, y, g, static_cast<T>(t.param));
                break;
            case LossKind::mape:
                v = mape_loss(p, y, g);
                break;
            case LossKind::mape_rmse:
                v = mape_rmse_loss(p, y, g, static_cast<T>(t.param));
                break;
        }
        total += static_cast<T>(t.weight) * v;
        grad += static_cast<T>(t.weight) * g;
    }
    return total;
}

}  // namespace dnncost::nn
