#pragma once
/// @file lcm.hpp
/// Learnable commutative monoid readout (Ong & Velickovic, 2022). Each graph's node vectors
/// are reduced by a balanced binary tree: at every level neighbours are combined in pairs
/// (an odd last element is carried up unchanged) until one vector per graph is left. The
/// combiner is a GRU cell symmetrised over the pair order,
///   c(a, b) = (GRU(x = a, h = b) + GRU(x = b, h = a)) / 2,
/// so c(a, b) == c(b, a) exactly. All pairs of one level, over all graphs of the batch, go
/// through the cell together (two GEMMs per level), so the cost is about 2N GRU rows.
/// An optional linear projection first maps the node width to the monoid width.
#include <algorithm>
#include <deque>
#include <vector>

#include <dnncost/nn/gru_cell.hpp>
#include <dnncost/nn/linear.hpp>

namespace dnncost::nn {

template <class T>
class LcmReadout final : public Module<T> {
public:
    /// @param in node feature width
    /// @param width monoid width; a projection in -> width is added when project is true
    ///        (width must equal in otherwise)
    LcmReadout(Index in, Index width, Rng& rng, bool project = true)
        : m_in(detail::widths_ok("LcmReadout", in, width)), m_d(width), m_cell(width, width, rng) {
        if (in < 1 || width < 1) raise<config_error>("LcmReadout: widths must be positive, got ", in, ", ", width);
        if (project)
            m_proj = std::make_unique<Linear<T>>(in, width, rng, Init::xavier);
        else if (in != width)
            raise<config_error>("LcmReadout: without a projection the width (", width, ") must equal the input width (",
                                in, ")");
    }
    const Mat<T>& forward(const Mat<T>& x, const Context<T>& ctx) override {
        detail::check_width<T>("LcmReadout", m_in, x.cols());
        const auto& b = ctx.graphs("LcmReadout");
        if (x.rows() != b.num_nodes())
            raise<shape_error>("LcmReadout: input has ", x.rows(), " rows, batch has ", b.num_nodes(), " nodes");
        m_rows = x.rows();
        const Mat<T>* cur = m_proj ? &m_proj->forward(x, ctx) : &x;
        const int g = b.num_graphs();
        std::vector<int> counts(static_cast<std::size_t>(g));
        for (int i = 0; i < g; ++i) counts[static_cast<std::size_t>(i)] = b.graph_size(i);
        m_used = 0;
        while (*std::max_element(counts.begin(), counts.end()) > 1) {
            if (m_levels.size() == m_used) m_levels.emplace_back();
            Level& L = m_levels[m_used++];
            L.left.clear();
            L.right.clear();
            L.pair_dst.clear();
            L.carry_src.clear();
            L.carry_dst.clear();
            int src = 0, dst = 0;
            for (auto& c : counts) {
                for (int k = 0; k + 1 < c; k += 2) {
                    L.left.push_back(src + k);
                    L.right.push_back(src + k + 1);
                    L.pair_dst.push_back(dst++);
                }
                if (c % 2) {
                    L.carry_src.push_back(src + c - 1);
                    L.carry_dst.push_back(dst++);
                }
                src += c;
                c = (c + 1) / 2;
            }
            const Index p = static_cast<Index>(L.left.size());
            L.x.resize(2 * p, m_d);
            L.h.resize(2 * p, m_d);
            for (Index k = 0; k < p; ++k) {
                L.x.row(k) = cur->row(L.left[static_cast<std::size_t>(k)]);
                L.x.row(p + k) = cur->row(L.right[static_cast<std::size_t>(k)]);
            }
            L.h.topRows(p) = L.x.bottomRows(p);
            L.h.bottomRows(p) = L.x.topRows(p);
            m_cell.forward(L.x, L.h, L.out2, L.cache, ctx.pool);
            L.prev_rows = cur->rows();
            L.next.resize(dst, m_d);
            for (Index k = 0; k < p; ++k)
                L.next.row(L.pair_dst[static_cast<std::size_t>(k)]) = T(0.5) * (L.out2.row(k) + L.out2.row(p + k));
            for (std::size_t k = 0; k < L.carry_src.size(); ++k) L.next.row(L.carry_dst[k]) = cur->row(L.carry_src[k]);
            cur = &L.next;
        }
        m_y = *cur;
        return m_y;
    }
    const Mat<T>& backward(const Mat<T>& dy, const Context<T>& ctx) override {
        m_dcur = dy;
        for (std::size_t l = m_used; l-- > 0;) {
            Level& L = m_levels[l];
            const Index p = static_cast<Index>(L.left.size());
            m_dout2.resize(2 * p, m_d);
            for (Index k = 0; k < p; ++k) {
                m_dout2.row(k) = T(0.5) * m_dcur.row(L.pair_dst[static_cast<std::size_t>(k)]);
                m_dout2.row(p + k) = m_dout2.row(k);
            }
            m_cell.backward(m_dout2, L.cache, m_dx2, m_dh2, ctx.pool);
            m_dprev.setZero(L.prev_rows, m_d);
            for (Index k = 0; k < p; ++k) {
                m_dprev.row(L.left[static_cast<std::size_t>(k)]) += m_dx2.row(k) + m_dh2.row(p + k);
                m_dprev.row(L.right[static_cast<std::size_t>(k)]) += m_dx2.row(p + k) + m_dh2.row(k);
            }
            for (std::size_t k = 0; k < L.carry_src.size(); ++k)
                m_dprev.row(L.carry_src[k]) += m_dcur.row(L.carry_dst[k]);
            m_dcur.swap(m_dprev);
        }
        if (m_proj) return m_proj->backward(m_dcur, ctx);
        return m_dcur;
    }
    void collect_parameters(std::vector<Parameter<T>*>& out) override {
        if (m_proj) m_proj->collect_parameters(out);
        m_cell.collect_parameters(out);
    }
    Index output_width(Index in) const override {
        detail::check_width<T>("LcmReadout", m_in, in);
        return m_d;
    }
    std::string kind() const override { return "LcmReadout"; }

private:
    struct Level {
        std::vector<int> left, right, pair_dst, carry_src, carry_dst;
        Mat<T> x, h, out2, next;
        typename GruCell<T>::Cache cache;
        Index prev_rows = 0;
    };
    Index m_in, m_d;
    GruCell<T> m_cell;
    std::unique_ptr<Linear<T>> m_proj;
    std::deque<Level> m_levels;  // deque: growing it must not move the levels the GRU caches point into
    std::size_t m_used = 0;
    Index m_rows = 0;
    Mat<T> m_y, m_dcur, m_dprev, m_dout2, m_dx2, m_dh2;
};

}  // namespace dnncost::nn
