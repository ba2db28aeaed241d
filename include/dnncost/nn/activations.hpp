#pragma once
/// @file activations.hpp
/// The layer that applies an activation function (activation_functions.hpp) elementwise.
#include <cmath>
#include <string>
#include <type_traits>

#include <dnncost/nn/activation_functions.hpp>
#include <dnncost/nn/module.hpp>

namespace dnncost::nn {

/// Elementwise activation layer with policy P.
template <class T, class P>
class Activation final : public Module<T> {
public:
    const Mat<T>& forward(const Mat<T>& x, const Context<T>&) override {
        m_x = &x;
        apply_activation<P>(x, m_y);
        return m_y;
    }
    const Mat<T>& backward(const Mat<T>& dy, const Context<T>&) override {
        m_dx.resize(dy.rows(), dy.cols());
        const T* x = m_x->data();
        const T* y = m_y.data();
        const T* g = dy.data();
        T* d = m_dx.data();
        for (Index i = 0; i < dy.size(); ++i) d[i] = g[i] * P::df(x[i], y[i]);
        return m_dx;
    }
    Index output_width(Index in) const override { return in; }
    std::string kind() const override { return P::name; }

private:
    const Mat<T>* m_x = nullptr;
    Mat<T> m_y, m_dx;
};

/// A module for a run-time activation choice.
template <class T>
ModulePtr<T> make_activation(Act a) {
    return with_activation(a, []<class P>() -> ModulePtr<T> { return std::make_unique<Activation<T, P>>(); });
}

}  // namespace dnncost::nn
