#pragma once
/// @file layer_norm.hpp
/// Layer normalisation over the features of each row, with a learnable gain and shift.
#include <cmath>

#include <dnncost/nn/module.hpp>

namespace dnncost::nn {

template <class T>
class LayerNorm final : public Module<T> {
public:
    explicit LayerNorm(Index width, double eps = 1e-5)
        : m_gamma("gamma", 1, detail::widths_ok("LayerNorm", width, width)),
          m_beta("beta", 1, width),
          m_eps(static_cast<T>(eps)) {
        if (width < 1) raise<config_error>("LayerNorm: width must be positive, got ", width);
        if (!(eps > 0)) raise<config_error>("LayerNorm: eps must be positive, got ", eps);
        m_gamma.value.setOnes();
    }
    const Mat<T>& forward(const Mat<T>& x, const Context<T>&) override {
        detail::check_width<T>("LayerNorm", m_gamma.value.cols(), x.cols());
        const Index n = x.rows(), d = x.cols();
        m_xhat.resize(n, d);
        m_inv_std.resize(n);
        m_y.resize(n, d);
        for (Index i = 0; i < n; ++i) {
            const T mean = x.row(i).mean();
            const T var = (x.row(i).array() - mean).square().mean();
            const T inv = T(1) / std::sqrt(var + m_eps);
            m_inv_std[static_cast<std::size_t>(i)] = inv;
            m_xhat.row(i) = (x.row(i).array() - mean) * inv;
            m_y.row(i) = m_xhat.row(i).cwiseProduct(m_gamma.value.row(0)) + m_beta.value.row(0);
        }
        return m_y;
    }
    const Mat<T>& backward(const Mat<T>& dy, const Context<T>&) override {
        const Index n = dy.rows(), d = dy.cols();
        m_gamma.grad.row(0) += (dy.array() * m_xhat.array()).colwise().sum().matrix();
        m_beta.grad.row(0) += dy.colwise().sum();
        m_dx.resize(n, d);
        for (Index i = 0; i < n; ++i) {
            const auto g = (dy.row(i).array() * m_gamma.value.row(0).array()).eval();
            const T mg = g.mean();
            const T mgx = (g * m_xhat.row(i).array()).mean();
            m_dx.row(i) = (g - mg - m_xhat.row(i).array() * mgx) * m_inv_std[static_cast<std::size_t>(i)];
        }
        return m_dx;
    }
    void collect_parameters(std::vector<Parameter<T>*>& out) override {
        out.push_back(&m_gamma);
        out.push_back(&m_beta);
    }
    Index output_width(Index in) const override {
        detail::check_width<T>("LayerNorm", m_gamma.value.cols(), in);
        return in;
    }
    std::string kind() const override { return "LayerNorm"; }

private:
    Parameter<T> m_gamma, m_beta;
    T m_eps;
    Mat<T> m_xhat, m_y, m_dx;
    std::vector<T> m_inv_std;
};

}  // namespace dnncost::nn
