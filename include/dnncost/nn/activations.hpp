#pragma once
/// @file activations.hpp
/// Activation functions as static policies (f and its derivative from input x and output y)
/// and a module that applies one elementwise.
#include <cmath>
#include <string>
#include <type_traits>

#include <dnncost/nn/module.hpp>

namespace dnncost::nn {

/// Run-time name of an activation (configurations); each maps to a policy below.
enum class Act : int { identity, relu, leaky_relu, elu, sigmoid, tanh };

namespace act {
struct Identity {
    static constexpr const char* name = "Identity";
    template <class T>
    static T f(T x) {
        return x;
    }
    template <class T>
    static T df(T, T) {
        return T(1);
    }
};
struct Relu {
    static constexpr const char* name = "ReLU";
    template <class T>
    static T f(T x) {
        return x > T(0) ? x : T(0);
    }
    template <class T>
    static T df(T x, T) {
        return x > T(0) ? T(1) : T(0);
    }
};
struct LeakyRelu {
    static constexpr const char* name = "LeakyReLU";
    static constexpr double slope = 0.01;
    template <class T>
    static T f(T x) {
        return x > T(0) ? x : T(slope) * x;
    }
    template <class T>
    static T df(T x, T) {
        return x > T(0) ? T(1) : T(slope);
    }
};
struct Elu {
    static constexpr const char* name = "ELU";
    template <class T>
    static T f(T x) {
        return x > T(0) ? x : std::expm1(x);
    }
    template <class T>
    static T df(T x, T y) {
        return x > T(0) ? T(1) : y + T(1);
    }
};
struct Sigmoid {
    static constexpr const char* name = "Sigmoid";
    template <class T>
    static T f(T x) {
        return T(1) / (T(1) + std::exp(-x));
    }
    template <class T>
    static T df(T, T y) {
        return y * (T(1) - y);
    }
};
struct Tanh {
    static constexpr const char* name = "Tanh";
    template <class T>
    static T f(T x) {
        return std::tanh(x);
    }
    template <class T>
    static T df(T, T y) {
        return T(1) - y * y;
    }
};
}  // namespace act

/// Elementwise activation layer with policy P.
template <class T, class P>
class Activation final : public Module<T> {
public:
    const Mat<T>& forward(const Mat<T>& x, const Context<T>&) override {
        m_x = &x;
        if constexpr (std::is_same_v<P, act::Relu>)
            m_y = x.cwiseMax(T(0));  // vectorised
        else
            m_y = x.unaryExpr([](T v) { return P::f(v); });
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

/// Call f.template operator()<Policy>() for the policy named by a.
template <class F>
decltype(auto) with_activation(Act a, F&& f) {
    switch (a) {
        case Act::identity:
            return f.template operator()<act::Identity>();
        case Act::relu:
            return f.template operator()<act::Relu>();
        case Act::leaky_relu:
            return f.template operator()<act::LeakyRelu>();
        case Act::elu:
            return f.template operator()<act::Elu>();
        case Act::sigmoid:
            return f.template operator()<act::Sigmoid>();
        case Act::tanh:
            return f.template operator()<act::Tanh>();
    }
    raise<config_error>("unknown activation ", static_cast<int>(a));
}

/// A module for a run-time activation choice.
template <class T>
ModulePtr<T> make_activation(Act a) {
    return with_activation(a, []<class P>() -> ModulePtr<T> { return std::make_unique<Activation<T, P>>(); });
}

}  // namespace dnncost::nn
