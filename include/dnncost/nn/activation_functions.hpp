#pragma once
/// @file activation_functions.hpp
/// Activation functions as static policies (f and its derivative from input x and output y), and
/// the run-time choice among them; the layer that applies one is in activations.hpp. Kept apart
/// so that a network evaluated without the layer machinery (device/mlp_regressor.hpp) includes
/// only this.
#include <cmath>
#include <type_traits>

#include <dnncost/core/error.hpp>
#include <dnncost/core/matrix.hpp>

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

/// y = f(x) entry by entry, for policy P.
template <class P, class T>
void apply_activation(const Mat<T>& x, Mat<T>& y) {
    if constexpr (std::is_same_v<P, act::Relu>)
        y = x.cwiseMax(T(0));  // vectorised
    else
        y = x.unaryExpr([](T v) { return P::f(v); });
}

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

}  // namespace dnncost::nn
