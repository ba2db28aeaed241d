#pragma once
/// @file edge_conv.hpp
/// EdgeConv (Wang et al., 2019) with a one-layer edge network and max aggregation:
///   y_v = max_{u in N(v)} act(x_v A + (x_u - x_v) B + b)      (0 for a node without neighbours)
/// x [A | B] is one GEMM per node; each edge then only adds rows, so the edge network costs
/// O(E x out) instead of a GEMM per edge.
#include <dnncost/nn/activations.hpp>
#include <dnncost/nn/gnn/aggregate.hpp>

namespace dnncost::nn {

template <class T, class P = act::Relu>
class EdgeConv final : public Module<T> {
public:
    EdgeConv(Index in, Index out, Rng& rng, features::Direction direction = features::Direction::both)
        : m_out(out),
          m_in(detail::widths_ok("EdgeConv", in, out)),
          m_dir(direction),
          m_w("weight", in, 2 * out),
          m_b("bias", 1, out) {
        if (in < 1 || out < 1) raise<config_error>("EdgeConv: widths must be positive, got ", in, " -> ", out);
        kaiming_uniform(m_w.value, rng);
    }
    const Mat<T>& forward(const Mat<T>& x, const Context<T>& ctx) override {
        detail::check_width<T>("EdgeConv", m_w.value.rows(), x.cols());
        const auto& nb = ctx.graphs("EdgeConv").neighbourhood(m_dir);
        m_x = &x;
        kernels::gemm<T>(m_pq, x, m_w.value, false, ctx.pool);  // [P | Q]
        const Index n = x.rows(), d = m_out;
        m_y.setZero(n, d);
        m_arg.assign(static_cast<std::size_t>(n * d), -1);
        m_pre.setZero(n, d);
        for (Index v = 0; v < n; ++v) {
            for (int k = nb.ptr[static_cast<std::size_t>(v)]; k < nb.ptr[static_cast<std::size_t>(v) + 1]; ++k) {
                const int u = nb.idx[static_cast<std::size_t>(k)];
                for (Index c = 0; c < d; ++c) {
                    const T pre = m_pq(v, c) - m_pq(v, d + c) + m_pq(u, d + c) + m_b.value(0, c);
                    const T val = P::f(pre);
                    int& a = m_arg[static_cast<std::size_t>(v * d + c)];
                    if (a < 0 || val > m_y(v, c)) {
                        a = u;
                        m_y(v, c) = val;
                        m_pre(v, c) = pre;
                    }
                }
            }
        }
        return m_y;
    }
    const Mat<T>& backward(const Mat<T>& dy, const Context<T>& ctx) override {
        const Index n = dy.rows(), d = m_out;
        m_dpq.setZero(n, 2 * d);
        for (Index v = 0; v < n; ++v)
            for (Index c = 0; c < d; ++c) {
                const int u = m_arg[static_cast<std::size_t>(v * d + c)];
                if (u < 0) continue;
                const T g = dy(v, c) * P::df(m_pre(v, c), m_y(v, c));
                m_dpq(v, c) += g;
                m_dpq(v, d + c) -= g;
                m_dpq(u, d + c) += g;
                m_b.grad(0, c) += g;
            }
        kernels::gemm_tn<T>(m_w.grad, *m_x, m_dpq, true, ctx.pool);
        kernels::gemm_nt<T>(m_dx, m_dpq, m_w.value, false, ctx.pool);
        return m_dx;
    }
    void collect_parameters(std::vector<Parameter<T>*>& out) override {
        out.push_back(&m_w);
        out.push_back(&m_b);
    }
    Index output_width(Index in) const override {
        detail::check_width<T>("EdgeConv", m_w.value.rows(), in);
        return m_out;
    }
    std::string kind() const override { return "EdgeConv"; }

private:
    Index m_out, m_in;
    features::Direction m_dir;
    Parameter<T> m_w, m_b;
    const Mat<T>* m_x = nullptr;
    Mat<T> m_pq, m_y, m_pre, m_dpq, m_dx;
    std::vector<int> m_arg;
};

}  // namespace dnncost::nn
