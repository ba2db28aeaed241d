#pragma once
/// @file heads.hpp
/// Output heads on graph embeddings: a regression MLP (any number of targets) and the
/// pairwise ranking head. The ranking head takes every ordered pair (i, j), i < j, of the
/// batch's graphs, concatenates their embeddings and returns the logit of
/// P(cost_i > cost_j) from a small MLP; sigmoid(logit) is the probability.
#include <utility>
#include <vector>

#include <dnncost/nn/mlp.hpp>

namespace dnncost::nn {

/// Regression head: MLP in -> width x (layers - 1) -> targets.
template <class T>
std::unique_ptr<Sequential<T>> make_regression_head(Index in, int layers, Index width, Index targets, Act act,
                                                    double dropout, Rng& rng) {
    if (layers < 1) raise<config_error>("regression head: layers must be >= 1, got ", layers);
    std::vector<Index> dims{in};
    for (int i = 1; i < layers; ++i) dims.push_back(width);
    dims.push_back(targets);
    return make_mlp<T>(dims, act, dropout, rng);
}

template <class T>
class PairwiseRankingHead final : public Module<T> {
public:
    /// @param layers MLP depth (>= 1) on the 2 x in concatenation
    PairwiseRankingHead(Index in, int layers, Index width, double dropout, Rng& rng, Act act = Act::relu) : m_in(in) {
        if (layers < 1) raise<config_error>("PairwiseRankingHead: layers must be >= 1, got ", layers);
        std::vector<Index> dims{2 * in};
        for (int i = 1; i < layers; ++i) dims.push_back(width);
        dims.push_back(1);
        m_mlp = make_mlp<T>(dims, act, dropout, rng);
    }
    /// Pairs (i, j), i < j, in row-major order over a batch of g graphs.
    static std::vector<std::pair<int, int>> pairs(Index g) {
        std::vector<std::pair<int, int>> p;
        for (int i = 0; i < g; ++i)
            for (int j = i + 1; j < g; ++j) p.emplace_back(i, j);
        return p;
    }
    const Mat<T>& forward(const Mat<T>& emb, const Context<T>& ctx) override {
        detail::check_width<T>("PairwiseRankingHead", m_in, emb.cols());
        m_pairs = pairs(emb.rows());
        m_rows = emb.rows();
        m_cat.resize(static_cast<Index>(m_pairs.size()), 2 * m_in);
        for (std::size_t k = 0; k < m_pairs.size(); ++k) {
            m_cat.row(static_cast<Index>(k)).head(m_in) = emb.row(m_pairs[k].first);
            m_cat.row(static_cast<Index>(k)).tail(m_in) = emb.row(m_pairs[k].second);
        }
        if (m_pairs.empty()) {
            m_empty.resize(0, 1);
            return m_empty;
        }
        return m_mlp->forward(m_cat, ctx);
    }
    const Mat<T>& backward(const Mat<T>& dy, const Context<T>& ctx) override {
        m_dx.setZero(m_rows, m_in);
        if (m_pairs.empty()) return m_dx;
        const Mat<T>& dcat = m_mlp->backward(dy, ctx);
        for (std::size_t k = 0; k < m_pairs.size(); ++k) {
            m_dx.row(m_pairs[k].first) += dcat.row(static_cast<Index>(k)).head(m_in);
            m_dx.row(m_pairs[k].second) += dcat.row(static_cast<Index>(k)).tail(m_in);
        }
        return m_dx;
    }
    void collect_parameters(std::vector<Parameter<T>*>& out) override { m_mlp->collect_parameters(out); }
    Index output_width(Index in) const override {
        detail::check_width<T>("PairwiseRankingHead", m_in, in);
        return 1;
    }
    std::string kind() const override { return "PairwiseRankingHead"; }

private:
    Index m_in, m_rows = 0;
    std::unique_ptr<Sequential<T>> m_mlp;
    std::vector<std::pair<int, int>> m_pairs;
    Mat<T> m_cat, m_dx, m_empty;
};

}  // namespace dnncost::nn
