#pragma once
/// @file parameter.hpp
/// A trainable parameter (value + gradient of the same shape) and the standard initialisers.
#include <cmath>
#include <string>
#include <utility>

#include <dnncost/core/rng.hpp>
#include <dnncost/nn/tensor.hpp>

namespace dnncost::nn {

/// A trainable tensor and the gradient that backward passes add into.
template <class T>
struct Parameter {
    std::string name;
    Mat<T> value;
    Mat<T> grad;
    Parameter() = default;
    Parameter(std::string n, Index rows, Index cols)
        : name(std::move(n)), value(Mat<T>::Zero(rows, cols)), grad(Mat<T>::Zero(rows, cols)) {}
    void zero_grad() { grad.setZero(); }
    Index size() const { return value.size(); }
};

/// Xavier/Glorot uniform: U(-a, a), a = gain * sqrt(6 / (fan_in + fan_out)). Suits tanh/sigmoid.
template <class T>
void xavier_uniform(Mat<T>& w, Rng& rng, double gain = 1.0) {
    const double a = gain * std::sqrt(6.0 / static_cast<double>(w.rows() + w.cols()));
    for (Index i = 0; i < w.size(); ++i) w.data()[i] = static_cast<T>(rng.uniform(-a, a));
}
/// Kaiming/He uniform for ReLU layers: U(-a, a), a = sqrt(6 / fan_in) (weights are fan_in x fan_out).
template <class T>
void kaiming_uniform(Mat<T>& w, Rng& rng) {
    const double a = std::sqrt(6.0 / static_cast<double>(w.rows()));
    for (Index i = 0; i < w.size(); ++i) w.data()[i] = static_cast<T>(rng.uniform(-a, a));
}

/// Which initialiser a layer uses for its weights.
enum class Init { xavier, kaiming };

template <class T>
void initialise(Mat<T>& w, Init init, Rng& rng) {
    if (init == Init::xavier)
        xavier_uniform(w, rng);
    else
        kaiming_uniform(w, rng);
}

}  // namespace dnncost::nn
