#pragma once
/// @file mr_conv.hpp
/// Max-relative graph convolution (Li et al., DeepGCNs, 2019):
///   y_v = [x_v | max_{u in N(v)} (x_u - x_v)] W + b      (the max part is 0 without neighbours)
#include <dnncost/nn/gnn/aggregate.hpp>
#include <dnncost/nn/module.hpp>

namespace dnncost::nn {

template <class T>
class MrConv final : public Module<T> {
public:
    MrConv(Index in, Index out, Rng& rng, features::Direction direction = features::Direction::both)
        : m_in(detail::widths_ok("MrConv", in, out)),
          m_dir(direction),
          m_w("weight", 2 * in, out),
          m_b("bias", 1, out) {
        if (in < 1 || out < 1) raise<config_error>("MrConv: widths must be positive, got ", in, " -> ", out);
        kaiming_uniform(m_w.value, rng);
    }
    const Mat<T>& forward(const Mat<T>& x, const Context<T>& ctx) override {
        detail::check_width<T>("MrConv", m_in, x.cols());
        const auto& nb = ctx.graphs("MrConv").neighbourhood(m_dir);
        m_cat.resize(x.rows(), 2 * m_in);
        m_cat.leftCols(m_in) = x;
        aggregate::max<T>(nb, x, m_cat.rightCols(m_in), m_argmax, true);
        kernels::gemm<T>(m_y, m_cat, m_w.value, false, ctx.pool);
        m_y.rowwise() += m_b.value.row(0);
        return m_y;
    }
    const Mat<T>& backward(const Mat<T>& dy, const Context<T>& ctx) override {
        kernels::gemm_tn<T>(m_w.grad, m_cat, dy, true, ctx.pool);
        m_b.grad.row(0) += dy.colwise().sum();
        kernels::gemm_nt<T>(m_dcat, dy, m_w.value, false, ctx.pool);
        m_dx = m_dcat.leftCols(m_in);
        aggregate::max_t<T>(m_argmax, m_dcat.rightCols(m_in), m_dx, true);
        return m_dx;
    }
    void collect_parameters(std::vector<Parameter<T>*>& out) override {
        out.push_back(&m_w);
        out.push_back(&m_b);
    }
    Index output_width(Index in) const override {
        detail::check_width<T>("MrConv", m_in, in);
        return m_w.value.cols();
    }
    std::string kind() const override { return "MrConv"; }

private:
    Index m_in;
    features::Direction m_dir;
    Parameter<T> m_w, m_b;
    Mat<T> m_cat, m_y, m_dcat, m_dx;
    std::vector<int> m_argmax;
};

}  // namespace dnncost::nn
