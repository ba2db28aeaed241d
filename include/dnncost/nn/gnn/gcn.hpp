#pragma once
/// @file gcn.hpp
/// Graph convolution (Kipf & Welling, 2017) with symmetric normalisation and self-loops:
///   y_v = x_v W / (d_v + 1) + sum_{u in N(v)} x_u W / sqrt((d_v + 1)(d_u + 1)) + b
/// where d is the neighbour count in the chosen direction.
#include <dnncost/nn/gnn/aggregate.hpp>
#include <dnncost/nn/module.hpp>

namespace dnncost::nn {

template <class T>
class GcnConv final : public Module<T> {
public:
    GcnConv(Index in, Index out, Rng& rng, features::Direction direction = features::Direction::predecessors)
        : m_dir(direction), m_w("weight", detail::widths_ok("GcnConv", in, out), out), m_b("bias", 1, out) {
        if (in < 1 || out < 1) raise<config_error>("GcnConv: widths must be positive, got ", in, " -> ", out);
        xavier_uniform(m_w.value, rng);
    }
    const Mat<T>& forward(const Mat<T>& x, const Context<T>& ctx) override {
        detail::check_width<T>("GcnConv", m_w.value.rows(), x.cols());
        const auto& nb = ctx.graphs("GcnConv").neighbourhood(m_dir);
        m_x = &x;
        kernels::gemm<T>(m_xw, x, m_w.value, false, ctx.pool);
        m_y.resize(x.rows(), m_w.value.cols());
        for (Index v = 0; v < x.rows(); ++v)
            m_y.row(v) = nb.gcn_self[static_cast<std::size_t>(v)] * m_xw.row(v) + m_b.value.row(0);
        aggregate::weighted_sum<T>(nb, nb.gcn_w.data(), m_xw, m_y, true);
        return m_y;
    }
    const Mat<T>& backward(const Mat<T>& dy, const Context<T>& ctx) override {
        const auto& nb = ctx.graphs("GcnConv").neighbourhood(m_dir);
        m_b.grad.row(0) += dy.colwise().sum();
        m_dxw.resize(dy.rows(), dy.cols());
        for (Index v = 0; v < dy.rows(); ++v) m_dxw.row(v) = nb.gcn_self[static_cast<std::size_t>(v)] * dy.row(v);
        aggregate::weighted_sum_t<T>(nb, nb.gcn_w.data(), dy, m_dxw, true);
        kernels::gemm_tn<T>(m_w.grad, *m_x, m_dxw, true, ctx.pool);
        kernels::gemm_nt<T>(m_dx, m_dxw, m_w.value, false, ctx.pool);
        return m_dx;
    }
    void collect_parameters(std::vector<Parameter<T>*>& out) override {
        out.push_back(&m_w);
        out.push_back(&m_b);
    }
    Index output_width(Index in) const override {
        detail::check_width<T>("GcnConv", m_w.value.rows(), in);
        return m_w.value.cols();
    }
    std::string kind() const override { return "GcnConv"; }

private:
    features::Direction m_dir;
    Parameter<T> m_w, m_b;
    const Mat<T>* m_x = nullptr;
    Mat<T> m_xw, m_y, m_dxw, m_dx;
};

}  // namespace dnncost::nn
