#pragma once
/// @file linear.hpp
/// Fully connected layer y = x W + b (W is in x out so that row-major activations multiply
/// without a transpose).
#include <dnncost/nn/module.hpp>

namespace dnncost::nn {

template <class T>
class Linear final : public Module<T> {
public:
    /// @throws config_error if a width is not positive
    Linear(Index in, Index out, Rng& rng, Init init = Init::kaiming, bool bias = true)
        : m_w("weight", detail::widths_ok("Linear", in, out), out), m_b("bias", 1, out), m_bias(bias) {
        if (in < 1 || out < 1) raise<config_error>("Linear: widths must be positive, got ", in, " -> ", out);
        initialise(m_w.value, init, rng);
    }
    const Mat<T>& forward(const Mat<T>& x, const Context<T>& ctx) override {
        detail::check_width<T>("Linear", m_w.value.rows(), x.cols());
        m_x = &x;
        kernels::gemm<T>(m_y, x, m_w.value, false, ctx.pool);
        if (m_bias) m_y.rowwise() += m_b.value.row(0);
        return m_y;
    }
    const Mat<T>& backward(const Mat<T>& dy, const Context<T>& ctx) override {
        kernels::gemm_tn<T>(m_w.grad, *m_x, dy, true, ctx.pool);
        if (m_bias) m_b.grad.row(0) += dy.colwise().sum();
        kernels::gemm_nt<T>(m_dx, dy, m_w.value, false, ctx.pool);
        return m_dx;
    }
    void collect_parameters(std::vector<Parameter<T>*>& out) override {
        out.push_back(&m_w);
        if (m_bias) out.push_back(&m_b);
    }
    Index output_width(Index in) const override {
        detail::check_width<T>("Linear", m_w.value.rows(), in);
        return m_w.value.cols();
    }
    std::string kind() const override { return "Linear"; }
    Parameter<T>& weight() { return m_w; }
    Parameter<T>& bias() { return m_b; }

private:
    Parameter<T> m_w, m_b;
    bool m_bias;
    const Mat<T>* m_x = nullptr;
    Mat<T> m_y, m_dx;
};

}  // namespace dnncost::nn
