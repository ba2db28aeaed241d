#pragma once
/// @file sage_block.hpp
/// The residual GraphSAGE block of HiFi-SAGE as one module:
///   y = x + dropout(relu([x | agg_{u in N(v)} x_u] W + b))
/// computing exactly what Residual(Sequential(SageConv, ReLU, Dropout)) computes (same
/// parameters in the same order, same initialisation, same dropout draws), but with the
/// element-wise work fused around the two GEMMs: forward is one pass building [x | agg], the
/// GEMM, and one pass for bias + ReLU + dropout + skip; backward is one pass for the mask and
/// the bias gradient, the two GEMMs, and one pass for the skip + root + scattered aggregate
/// gradients. The unfused chain makes about seven passes over the activations each way.
#include <cstdint>
#include <type_traits>

#include <dnncost/nn/dropout.hpp>
#include <dnncost/nn/gnn/aggregate.hpp>
#include <dnncost/nn/module.hpp>

namespace dnncost::nn {

template <class T>
class SageResidualBlock final : public Module<T> {
public:
    /// @param width input = output width
    /// @param aggr mean or sum (max aggregation uses the unfused layers)
    /// @throws config_error on a non-positive width, max aggregation or a bad dropout rate
    SageResidualBlock(Index width, Rng& rng, Aggr aggr, features::Direction direction, double dropout)
        : m_d(detail::widths_ok("SageResidualBlock", width, width)),
          m_aggr(aggr),
          m_dir(direction),
          m_w("weight", 2 * width, width),
          m_b("bias", 1, width),
          m_p(dropout) {
        if (aggr == Aggr::max) raise<config_error>("SageResidualBlock: max aggregation is not fused");
        if (!(dropout >= 0.0 && dropout < 1.0))
            raise<config_error>("SageResidualBlock: dropout ", dropout, " outside [0, 1)");
        m_threshold = static_cast<std::uint32_t>(dropout * 65536.0);  // as Dropout resolves it
        kaiming_uniform(m_w.value, rng);
    }

    const Mat<T>& forward(const Mat<T>& x, const Context<T>& ctx) override {
        detail::check_width<T>("SageResidualBlock", m_d, x.cols());
        const auto& nb = ctx.graphs("SageResidualBlock").neighbourhood(m_dir);
        const Index n = x.rows(), d = m_d;
        if constexpr (std::is_same_v<T, float>)
            if (ctx.no_grad && !(ctx.training && m_p > 0) && kernels::use_bf16_unit<T>(n, d, 2 * d))
                return forward_bf16_inference(x, nb, ctx.pool);
        build_cat(x, nb);
        kernels::gemm<T>(m_y, m_cat, m_w.value, false, ctx.pool);
        const bool drop = ctx.training && m_p > 0;
        if (drop && !ctx.rng)
            raise<config_error>("SageResidualBlock: training with dropout needs an Rng in the Context");
        const std::uint32_t key = drop ? detail::dropout_key(*ctx.rng) : 0u;
        const std::uint32_t threshold = drop ? m_threshold : 0u;
        const T scale = drop ? T(1) / static_cast<T>(1.0 - static_cast<double>(m_threshold) / 65536.0) : T(1);
        if (ctx.no_grad && !drop) {  // inference: y = x + relu(y + b), no mask for a backward pass
            m_y = x + (m_y.rowwise() + m_b.value.row(0)).cwiseMax(T(0));
            return m_y;
        }
        // the mask is kept in eval mode too: backward may follow any forward (as for the unfused chain)
        m_mask.resize(n, d);
        const T* b = m_b.value.data();
        for (Index i = 0; i < n; ++i) {
            T* y = m_y.data() + i * d;
            T* mk = m_mask.data() + i * d;
            const T* xi = x.data() + i * d;
            const auto base = static_cast<std::uint32_t>(i * d);
            for (Index j = 0; j < d; ++j) {
                const T a = y[j] + b[j];
                const bool keep = !drop || detail::dropout_bits(base + static_cast<std::uint32_t>(j), key) >= threshold;
                const T m = (a > T(0) && keep) ? scale : T(0);  // d relu(a) * dropout mask
                mk[j] = m;
                y[j] = xi[j] + (m != T(0) ? a * m : T(0));
            }
        }
        return m_y;
    }

    const Mat<T>& backward(const Mat<T>& dy, const Context<T>& ctx) override {
        const auto& nb = ctx.graphs("SageResidualBlock").neighbourhood(m_dir);
        const Index n = dy.rows(), d = m_d;
        m_g.resize(n, d);
        m_gb.setZero(d);
        for (Index i = 0; i < n; ++i) {
            const T* g0 = dy.data() + i * d;
            const T* mk = m_mask.data() + i * d;
            T* g = m_g.data() + i * d;
            T* gb = m_gb.data();
            for (Index j = 0; j < d; ++j) {
                g[j] = g0[j] * mk[j];
                gb[j] += g[j];
            }
        }
        m_b.grad.row(0) += m_gb;
        kernels::gemm_tn<T>(m_w.grad, m_cat, m_g, true, ctx.pool);
        kernels::gemm_nt<T>(m_dcat, m_g, m_w.value, false, ctx.pool);
        // dx_u = dy_u (skip) + d(root half)_u + sum over receivers v reading u of w * d(agg half)_v
        const T* w = m_aggr == Aggr::mean ? nb.mean_w.data() : nullptr;
        m_dx.resize(n, d);
        for (Index u = 0; u < n; ++u) {
            auto row = m_dx.row(u);
            row = dy.row(u) + m_dcat.row(u).head(d);
            for (int k = nb.tptr[static_cast<std::size_t>(u)]; k < nb.tptr[static_cast<std::size_t>(u) + 1]; ++k) {
                const int e = nb.tentry[static_cast<std::size_t>(k)];
                row += (w ? w[e] : T(1)) * m_dcat.row(nb.tidx[static_cast<std::size_t>(k)]).tail(d);
            }
        }
        return m_dx;
    }
    void collect_parameters(std::vector<Parameter<T>*>& out) override {
        out.push_back(&m_w);
        out.push_back(&m_b);
    }
    Index output_width(Index in) const override {
        detail::check_width<T>("SageResidualBlock", m_d, in);
        return m_d;
    }
    std::string kind() const override { return "Residual(SageConv -> ReLU -> Dropout, fused)"; }

private:
    /// m_cat = [x | agg_{u in N(v)} x_u].
    void build_cat(const Mat<T>& x, const features::Neighbourhood<T>& nb) {
        m_cat.resize(x.rows(), 2 * m_d);
        m_cat.leftCols(m_d) = x;
        aggregate::weighted_sum<T>(nb, m_aggr == Aggr::mean ? nb.mean_w.data() : nullptr, x, m_cat.rightCols(m_d),
                                   false);
    }

    /// Inference in bf16: where the width allows, [x | agg] is summed in registers and written
    /// straight into the bf16 units' packed operand (no fp32 copy to build and then convert);
    /// then y = x + relu([x | agg] W + b).
    const Mat<float>& forward_bf16_inference(const Mat<float>& x, const features::Neighbourhood<float>& nb,
                                             ThreadPool* pool) {
        const Index n = x.rows(), d = m_d;
        if (!kernels::pack_sage_rows(m_packed, x.data(), n, d, nb.ptr.data(), nb.idx.data(),
                                     m_aggr == Aggr::mean ? nb.mean_w.data() : nullptr)) {
            build_cat(x, nb);
            kernels::pack_a(m_packed, m_cat);
        }
        kernels::count_flops(n, d, 2 * d);
        kernels::gemm_bf16_packed_a(m_y, m_packed, n, m_w.value, false, pool);
        m_y = x + (m_y.rowwise() + m_b.value.row(0)).cwiseMax(0.0f);
        return m_y;
    }

    Index m_d;
    Aggr m_aggr;
    features::Direction m_dir;
    Parameter<T> m_w, m_b;
    double m_p;
    std::uint32_t m_threshold = 0;
    Mat<T> m_cat, m_y, m_mask, m_g, m_dcat, m_dx;
    Vec<T> m_gb;
    kernels::Bf16Workspace m_packed;
};

}  // namespace dnncost::nn
