#pragma once
/// @file pooling.hpp
/// Permutation-invariant graph readouts: sum, mean and max over each graph's nodes, any
/// subset of them concatenated (in the order sum | mean | max), and a readout that
/// concatenates the outputs of several readouts.
#include <vector>

#include <dnncost/nn/module.hpp>

namespace dnncost::nn {

/// Bit flags selecting pooling functions.
enum Pool : unsigned { pool_sum = 1u, pool_mean = 2u, pool_max = 4u };

template <class T>
class Pooling final : public Module<T> {
public:
    /// @param modes a non-empty combination of pool_sum, pool_mean, pool_max
    /// @param sum_scale multiplies the sum readout (e.g. 1 / mean graph size, so that a sum over
    ///        hundreds of nodes starts at the scale of one node while staying additive)
    explicit Pooling(unsigned modes, double sum_scale = 1.0) : m_modes(modes), m_sum_scale(static_cast<T>(sum_scale)) {
        if (!(sum_scale > 0)) raise<config_error>("Pooling: sum_scale must be positive, got ", sum_scale);
        if (modes == 0 || modes > 7) raise<config_error>("Pooling: modes must combine sum/mean/max, got ", modes);
    }
    const Mat<T>& forward(const Mat<T>& x, const Context<T>& ctx) override {
        const auto& b = ctx.graphs("Pooling");
        if (x.rows() != b.num_nodes())
            raise<shape_error>("Pooling: input has ", x.rows(), " rows, batch has ", b.num_nodes(), " nodes");
        const Index d = x.cols(), g = b.num_graphs();
        m_y.resize(g, d * count());
        if (m_modes & pool_max) m_arg.assign(static_cast<std::size_t>(g * d), 0);
        for (Index i = 0; i < g; ++i) {
            const int o = b.offset(static_cast<int>(i)), n = b.graph_size(static_cast<int>(i));
            const auto blk = x.middleRows(o, n);
            Index col = 0;
            if (m_modes & pool_sum) {
                m_y.row(i).segment(col, d) = m_sum_scale * blk.colwise().sum();
                col += d;
            }
            if (m_modes & pool_mean) {
                m_y.row(i).segment(col, d) = blk.colwise().sum() / static_cast<T>(n);
                col += d;
            }
            if (m_modes & pool_max) {
                for (Index c = 0; c < d; ++c) {
                    Index r;
                    m_y(i, col + c) = blk.col(c).maxCoeff(&r);
                    m_arg[static_cast<std::size_t>(i * d + c)] = o + static_cast<int>(r);
                }
            }
        }
        m_rows = x.rows();
        return m_y;
    }
    const Mat<T>& backward(const Mat<T>& dy, const Context<T>& ctx) override {
        const auto& b = ctx.graphs("Pooling");
        const Index d = dy.cols() / count();
        m_dx.setZero(m_rows, d);
        for (Index i = 0; i < b.num_graphs(); ++i) {
            const int o = b.offset(static_cast<int>(i)), n = b.graph_size(static_cast<int>(i));
            Index col = 0;
            if (m_modes & pool_sum) {
                m_dx.middleRows(o, n).rowwise() += m_sum_scale * dy.row(i).segment(col, d);
                col += d;
            }
            if (m_modes & pool_mean) {
                m_dx.middleRows(o, n).rowwise() += dy.row(i).segment(col, d) / static_cast<T>(n);
                col += d;
            }
            if (m_modes & pool_max)
                for (Index c = 0; c < d; ++c) m_dx(m_arg[static_cast<std::size_t>(i * d + c)], c) += dy(i, col + c);
        }
        return m_dx;
    }
    Index output_width(Index in) const override { return in * count(); }
    std::string kind() const override { return "Pooling"; }

private:
    Index count() const { return ((m_modes & 1u) ? 1 : 0) + ((m_modes & 2u) ? 1 : 0) + ((m_modes & 4u) ? 1 : 0); }
    unsigned m_modes;
    T m_sum_scale;
    std::vector<int> m_arg;
    Index m_rows = 0;
    Mat<T> m_y, m_dx;
};

/// Runs several readouts on the same node features and concatenates their graph vectors.
template <class T>
class ConcatReadout final : public Module<T> {
public:
    void add(ModulePtr<T> m) { m_parts.push_back(std::move(m)); }
    const Mat<T>& forward(const Mat<T>& x, const Context<T>& ctx) override {
        if (m_parts.empty()) raise<config_error>("ConcatReadout: no readouts");
        m_widths.clear();
        std::vector<const Mat<T>*> outs;
        Index total = 0;
        for (auto& p : m_parts) {
            outs.push_back(&p->forward(x, ctx));
            m_widths.push_back(outs.back()->cols());
            total += outs.back()->cols();
        }
        m_y.resize(outs[0]->rows(), total);
        Index col = 0;
        for (const auto* o : outs) {
            m_y.middleCols(col, o->cols()) = *o;
            col += o->cols();
        }
        return m_y;
    }
    const Mat<T>& backward(const Mat<T>& dy, const Context<T>& ctx) override {
        Index col = 0;
        for (std::size_t i = 0; i < m_parts.size(); ++i) {
            m_slice = dy.middleCols(col, m_widths[i]);
            col += m_widths[i];
            const Mat<T>& dx = m_parts[i]->backward(m_slice, ctx);
            if (i == 0)
                m_dx = dx;
            else
                m_dx += dx;
        }
        return m_dx;
    }
    void collect_parameters(std::vector<Parameter<T>*>& out) override {
        for (auto& p : m_parts) p->collect_parameters(out);
    }
    Index output_width(Index in) const override {
        Index w = 0;
        for (const auto& p : m_parts) w += p->output_width(in);
        return w;
    }
    std::string kind() const override { return "ConcatReadout"; }

private:
    std::vector<ModulePtr<T>> m_parts;
    std::vector<Index> m_widths;
    Mat<T> m_y, m_slice, m_dx;
};

}  // namespace dnncost::nn
