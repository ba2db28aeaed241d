#pragma once
/// @file typed_input.hpp
/// Categorical input transform (PerfSAGE): a node of operator type t gets
///   z_v = [x_v | e_t] W_t + b_t
/// with a weight W_t and bias b_t of its own type and a trainable type embedding e_t. The
/// operator type thus selects the whole first transform, not only a one-hot column of a shared
/// one. Types are given per node (set_types) before forward; type id `types()` (one past the
/// last) is an operator never seen in training, which uses the mean of every type's weight,
/// bias and embedding (its gradient spreads over them evenly).
#include <span>
#include <string>
#include <vector>

#include <dnncost/core/error.hpp>
#include <dnncost/nn/module.hpp>

namespace dnncost::nn {

template <class T>
class TypedInput final : public Module<T> {
public:
    /// @param in node features, @param types operator types, @param embedding width of e_t,
    /// @param out output width. @throws config_error on a non-positive width or type count
    TypedInput(Index in, int types, Index embedding, Index out, Rng& rng)
        : m_in(detail::widths_ok("TypedInput", in, out)), m_emb_width(embedding), m_out(out) {
        if (types < 1 || embedding < 1)
            raise<config_error>("TypedInput: needs >= 1 type and a positive embedding width, got ", types, " and ",
                                embedding);
        m_emb = Parameter<T>("type_embedding", types, embedding);
        for (Index i = 0; i < m_emb.value.size(); ++i) m_emb.value.data()[i] = static_cast<T>(rng.normal());
        for (int t = 0; t < types; ++t) {
            m_w.emplace_back("type" + std::to_string(t) + ".weight", in + embedding, out);
            kaiming_uniform(m_w.back().value, rng);
            m_b.emplace_back("type" + std::to_string(t) + ".bias", 1, out);
        }
    }
    int types() const { return static_cast<int>(m_w.size()); }
    /// The operator type of every node of the next forward, in [0, types()] (types(): unknown).
    void set_types(std::span<const int> types) {
        for (int t : types)
            if (t < 0 || t > this->types())
                raise<config_error>("TypedInput: operator type id ", t, " outside [0, ", this->types(), "]");
        m_types.assign(types.begin(), types.end());
    }

    const Mat<T>& forward(const Mat<T>& x, const Context<T>& /*ctx*/) override {
        detail::check_width<T>("TypedInput", m_in, x.cols());
        if (static_cast<Index>(m_types.size()) != x.rows())
            raise<shape_error>("TypedInput: ", m_types.size(), " node types for ", x.rows(), " nodes");
        m_x = &x;
        group_rows();
        m_y.resize(x.rows(), m_out);
        for (int t = 0; t <= types(); ++t) {
            const auto& rows = m_rows[static_cast<std::size_t>(t)];
            if (rows.empty()) continue;
            gather(t, x);
            const Mat<T>& w = t < types() ? m_w[static_cast<std::size_t>(t)].value : mean_weight();
            const Mat<T> b = t < types() ? m_b[static_cast<std::size_t>(t)].value : mean_bias();
            m_part.noalias() = m_cat * w;
            for (std::size_t k = 0; k < rows.size(); ++k) m_y.row(rows[k]) = m_part.row(static_cast<Index>(k)) + b;
        }
        return m_y;
    }
    const Mat<T>& backward(const Mat<T>& dy, const Context<T>& /*ctx*/) override {
        m_dx.setZero(m_x->rows(), m_in);
        const T k = T(1) / static_cast<T>(types());
        for (int t = 0; t <= types(); ++t) {
            const auto& rows = m_rows[static_cast<std::size_t>(t)];
            if (rows.empty()) continue;
            gather(t, *m_x);
            m_dpart.resize(static_cast<Index>(rows.size()), m_out);
            for (std::size_t r = 0; r < rows.size(); ++r) m_dpart.row(static_cast<Index>(r)) = dy.row(rows[r]);
            const Mat<T> dw = m_cat.transpose() * m_dpart;
            const Mat<T> db = m_dpart.colwise().sum();
            const Mat<T>& w = t < types() ? m_w[static_cast<std::size_t>(t)].value : mean_weight();
            const Mat<T> dcat = m_dpart * w.transpose();
            const Mat<T> demb = dcat.rightCols(m_emb_width).colwise().sum();
            if (t < types()) {
                m_w[static_cast<std::size_t>(t)].grad += dw;
                m_b[static_cast<std::size_t>(t)].grad += db;
                m_emb.grad.row(t) += demb;
            } else {  // the mean of every type's parameters
                for (int u = 0; u < types(); ++u) {
                    m_w[static_cast<std::size_t>(u)].grad += k * dw;
                    m_b[static_cast<std::size_t>(u)].grad += k * db;
                    m_emb.grad.row(u) += k * demb;
                }
            }
            for (std::size_t r = 0; r < rows.size(); ++r)
                m_dx.row(rows[r]) = dcat.row(static_cast<Index>(r)).leftCols(m_in);
        }
        return m_dx;
    }
    void collect_parameters(std::vector<Parameter<T>*>& out) override {
        out.push_back(&m_emb);
        for (std::size_t t = 0; t < m_w.size(); ++t) {
            out.push_back(&m_w[t]);
            out.push_back(&m_b[t]);
        }
    }
    Index output_width(Index input_width) const override {
        detail::check_width<T>("TypedInput", m_in, input_width);
        return m_out;
    }
    std::string kind() const override { return "TypedInput"; }

private:
    void group_rows() {
        m_rows.assign(static_cast<std::size_t>(types()) + 1, {});
        for (std::size_t v = 0; v < m_types.size(); ++v)
            m_rows[static_cast<std::size_t>(m_types[v])].push_back(static_cast<Index>(v));
    }
    /// m_cat = [x_v | e_t] for the nodes of type t
    void gather(int t, const Mat<T>& x) {
        const auto& rows = m_rows[static_cast<std::size_t>(t)];
        m_cat.resize(static_cast<Index>(rows.size()), m_in + m_emb_width);
        const Mat<T> e = t < types() ? Mat<T>(m_emb.value.row(t)) : Mat<T>(m_emb.value.colwise().mean());
        for (std::size_t r = 0; r < rows.size(); ++r) {
            m_cat.row(static_cast<Index>(r)).leftCols(m_in) = x.row(rows[r]);
            m_cat.row(static_cast<Index>(r)).rightCols(m_emb_width) = e;
        }
    }
    const Mat<T>& mean_weight() {
        m_wmean.setZero(m_in + m_emb_width, m_out);
        for (const auto& w : m_w) m_wmean += w.value;
        m_wmean /= static_cast<T>(types());
        return m_wmean;
    }
    Mat<T> mean_bias() const {
        Mat<T> b = Mat<T>::Zero(1, m_out);
        for (const auto& p : m_b) b += p.value;
        return b / static_cast<T>(types());
    }

    Index m_in, m_emb_width, m_out;
    Parameter<T> m_emb;
    std::vector<Parameter<T>> m_w, m_b;
    std::vector<int> m_types;
    std::vector<std::vector<Index>> m_rows;
    const Mat<T>* m_x = nullptr;
    Mat<T> m_y, m_dx, m_cat, m_part, m_dpart, m_wmean;
};

}  // namespace dnncost::nn
