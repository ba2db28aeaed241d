#pragma once
/// @file sage.hpp
/// GraphSAGE convolution (Hamilton et al., 2017):
///   y_v = [x_v | agg_{u in N(v)} x_u] W + b,   optionally y_v <- y_v / ||y_v||_2
/// with mean, sum or max aggregation over predecessors, successors or both. The root weight
/// (the x_v half) can be switched off. The input and the aggregate are laid side by side in
/// one buffer so that forward is one GEMM and the weight gradient another.
#include <cmath>

#include <dnncost/nn/gnn/aggregate.hpp>
#include <dnncost/nn/module.hpp>

namespace dnncost::nn {

template <class T>
class SageConv final : public Module<T> {
public:
    /// @throws config_error on a non-positive width
    SageConv(Index in, Index out, Rng& rng, Aggr aggr = Aggr::mean,
             features::Direction direction = features::Direction::predecessors, bool root_weight = true,
             bool normalize = false)
        : m_in(detail::widths_ok("SageConv", in, out)),
          m_aggr(aggr),
          m_dir(direction),
          m_root(root_weight),
          m_normalize(normalize),
          m_w("weight", (root_weight ? 2 : 1) * in, out),
          m_b("bias", 1, out) {
        if (in < 1 || out < 1) raise<config_error>("SageConv: widths must be positive, got ", in, " -> ", out);
        kaiming_uniform(m_w.value, rng);
    }
    const Mat<T>& forward(const Mat<T>& x, const Context<T>& ctx) override {
        detail::check_width<T>("SageConv", m_in, x.cols());
        const auto& nb = ctx.graphs("SageConv").neighbourhood(m_dir);
        const Index n = x.rows(), off = m_root ? m_in : 0;
        m_cat.resize(n, off + m_in);
        if (m_aggr == Aggr::max) {
            if (m_root) m_cat.leftCols(m_in) = x;
            aggregate::max<T>(nb, x, m_cat.middleCols(off, m_in), m_argmax, false);
        } else {
            // one pass over the rows: x_v and the (weighted) sum of its neighbours side by side
            const T* w = m_aggr == Aggr::mean ? nb.mean_w.data() : nullptr;
            for (Index v = 0; v < n; ++v) {
                auto row = m_cat.row(v);
                if (m_root) row.head(m_in) = x.row(v);
                auto agg = row.segment(off, m_in);
                agg.setZero();
                for (int k = nb.ptr[static_cast<std::size_t>(v)]; k < nb.ptr[static_cast<std::size_t>(v) + 1]; ++k)
                    agg += (w ? w[k] : T(1)) * x.row(nb.idx[static_cast<std::size_t>(k)]);
            }
        }
        kernels::gemm<T>(m_y, m_cat, m_w.value, false, ctx.pool);
        m_y.rowwise() += m_b.value.row(0);
        if (m_normalize) {
            m_norm.resize(n);
            for (Index i = 0; i < n; ++i) {
                const T nrm = std::max(m_y.row(i).norm(), T(1e-12));
                m_norm[static_cast<std::size_t>(i)] = nrm;
                m_y.row(i) /= nrm;
            }
        }
        return m_y;
    }
    const Mat<T>& backward(const Mat<T>& dy, const Context<T>& ctx) override {
        const auto& nb = ctx.graphs("SageConv").neighbourhood(m_dir);
        const Mat<T>* g = &dy;
        if (m_normalize) {
            m_dpre.resize(dy.rows(), dy.cols());
            for (Index i = 0; i < dy.rows(); ++i) {
                const T dot = m_y.row(i).dot(dy.row(i));
                m_dpre.row(i) = (dy.row(i) - m_y.row(i) * dot) / m_norm[static_cast<std::size_t>(i)];
            }
            g = &m_dpre;
        }
        kernels::gemm_tn<T>(m_w.grad, m_cat, *g, true, ctx.pool);
        m_b.grad.row(0) += g->colwise().sum();
        kernels::gemm_nt<T>(m_dcat, *g, m_w.value, false, ctx.pool);
        const Index off = m_root ? m_in : 0;
        if (m_aggr == Aggr::max) {
            if (m_root)
                m_dx = m_dcat.leftCols(m_in);
            else
                m_dx.setZero(dy.rows(), m_in);
            aggregate::max_t<T>(m_argmax, m_dcat.middleCols(off, m_in), m_dx, false);
            return m_dx;
        }
        // one pass: dx_u = d(root half)_u + sum over the receivers v reading u of w * d(agg half)_v
        const T* w = m_aggr == Aggr::mean ? nb.mean_w.data() : nullptr;
        m_dx.resize(dy.rows(), m_in);
        for (Index u = 0; u < dy.rows(); ++u) {
            auto row = m_dx.row(u);
            if (m_root)
                row = m_dcat.row(u).head(m_in);
            else
                row.setZero();
            for (int k = nb.tptr[static_cast<std::size_t>(u)]; k < nb.tptr[static_cast<std::size_t>(u) + 1]; ++k) {
                const int e = nb.tentry[static_cast<std::size_t>(k)];
                row += (w ? w[e] : T(1)) * m_dcat.row(nb.tidx[static_cast<std::size_t>(k)]).segment(off, m_in);
            }
        }
        return m_dx;
    }
    void collect_parameters(std::vector<Parameter<T>*>& out) override {
        out.push_back(&m_w);
        out.push_back(&m_b);
    }
    Index output_width(Index in) const override {
        detail::check_width<T>("SageConv", m_in, in);
        return m_w.value.cols();
    }
    std::string kind() const override { return "SageConv"; }

private:
    Index m_in;
    Aggr m_aggr;
    features::Direction m_dir;
    bool m_root, m_normalize;
    Parameter<T> m_w, m_b;
    Mat<T> m_cat, m_y, m_dpre, m_dcat, m_dx;
    std::vector<int> m_argmax;
    std::vector<T> m_norm;
};

}  // namespace dnncost::nn
