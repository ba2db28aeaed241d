#pragma once
/// @file gru_cell.hpp
/// Batched GRU cell (Cho et al., 2014; gate layout as in PyTorch):
///   r = sig(x Wr + h Ur + br),  z = sig(x Wz + h Uz + bz),
///   n = tanh(x Wn + bin + r * (h Un + bhn)),  h' = (1 - z) * n + z * h
/// The three gates share one GEMM for x and one for h. The caller owns a Cache per call so that
/// one cell can be applied at several tree levels before any backward pass.
#include <dnncost/nn/module.hpp>

namespace dnncost::nn {

template <class T>
class GruCell {
public:
    struct Cache {
        const Mat<T>* x = nullptr;
        const Mat<T>* h = nullptr;
        Mat<T> gx, gh;   // x W + b_i, h U + b_h (rows x 3d)
        Mat<T> r, z, n;  // gates
    };

    GruCell(Index in, Index hidden, Rng& rng)
        : m_d((detail::widths_ok("GruCell", in, hidden), hidden)),
          m_w("gru.w_ih", in, 3 * hidden),
          m_u("gru.w_hh", hidden, 3 * hidden),
          m_bi("gru.b_ih", 1, 3 * hidden),
          m_bh("gru.b_hh", 1, 3 * hidden) {
        if (in < 1 || hidden < 1) raise<config_error>("GruCell: widths must be positive, got ", in, ", ", hidden);
        xavier_uniform(m_w.value, rng);
        xavier_uniform(m_u.value, rng);
    }
    Index hidden() const { return m_d; }

    /// out = GRU(x, h); x, h must outlive backward.
    void forward(const Mat<T>& x, const Mat<T>& h, Mat<T>& out, Cache& c, ThreadPool* pool) {
        const Index d = m_d;
        c.x = &x;
        c.h = &h;
        kernels::gemm<T>(c.gx, x, m_w.value, false, pool);
        c.gx.rowwise() += m_bi.value.row(0);
        kernels::gemm<T>(c.gh, h, m_u.value, false, pool);
        c.gh.rowwise() += m_bh.value.row(0);
        // sigmoid(v) = (1 + tanh(v / 2)) / 2: Eigen vectorises tanh, not a scalar std::exp lambda
        c.r = (T(0.5) * ((T(0.5) * (c.gx.leftCols(d) + c.gh.leftCols(d)).array()).tanh() + T(1))).matrix();
        c.z = (T(0.5) * ((T(0.5) * (c.gx.middleCols(d, d) + c.gh.middleCols(d, d)).array()).tanh() + T(1))).matrix();
        c.n = (c.gx.rightCols(d).array() + c.r.array() * c.gh.rightCols(d).array()).tanh().matrix();
        out = ((T(1) - c.z.array()) * c.n.array() + c.z.array() * h.array()).matrix();
    }
    /// Given dL/dout, add parameter gradients and write dL/dx, dL/dh.
    void backward(const Mat<T>& dout, Cache& c, Mat<T>& dx, Mat<T>& dh, ThreadPool* pool) {
        const Index d = m_d, rows = dout.rows();
        m_dgx.resize(rows, 3 * d);
        m_dgh.resize(rows, 3 * d);
        const auto dn = (dout.array() * (T(1) - c.z.array())).eval();
        const auto dz = (dout.array() * (c.h->array() - c.n.array())).eval();
        const auto dan = (dn * (T(1) - c.n.array().square())).eval();
        const auto dr = (dan * c.gh.rightCols(d).array()).eval();
        m_dgx.leftCols(d) = (dr * c.r.array() * (T(1) - c.r.array())).matrix();
        m_dgx.middleCols(d, d) = (dz * c.z.array() * (T(1) - c.z.array())).matrix();
        m_dgx.rightCols(d) = dan.matrix();
        m_dgh.leftCols(2 * d) = m_dgx.leftCols(2 * d);
        m_dgh.rightCols(d) = (dan * c.r.array()).matrix();
        kernels::gemm_tn<T>(m_w.grad, *c.x, m_dgx, true, pool);
        kernels::gemm_tn<T>(m_u.grad, *c.h, m_dgh, true, pool);
        m_bi.grad.row(0) += m_dgx.colwise().sum();
        m_bh.grad.row(0) += m_dgh.colwise().sum();
        kernels::gemm_nt<T>(dx, m_dgx, m_w.value, false, pool);
        kernels::gemm_nt<T>(dh, m_dgh, m_u.value, false, pool);
        dh.array() += dout.array() * c.z.array();
    }
    void collect_parameters(std::vector<Parameter<T>*>& out) {
        out.push_back(&m_w);
        out.push_back(&m_u);
        out.push_back(&m_bi);
        out.push_back(&m_bh);
    }

private:
    Index m_d;
    Parameter<T> m_w, m_u, m_bi, m_bh;
    Mat<T> m_dgx, m_dgh;
};

}  // namespace dnncost::nn
