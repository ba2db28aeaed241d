#pragma once
/// @file aggregate.hpp
/// Neighbourhood aggregation kernels over a batch's CSR neighbourhoods, shared by the GNN
/// layers: weighted sums (mean, sum, GCN weights) and their transposes, and channel-wise max
/// with the arg-max kept for the backward pass. Rows are written in place into a destination
/// block, so a layer can aggregate straight into the right half of its concatenated input.
#include <vector>

#include <dnncost/features/batch.hpp>
#include <dnncost/nn/tensor.hpp>

namespace dnncost::nn {

/// Neighbourhood aggregation functions of GraphSAGE-style layers.
enum class Aggr : int { mean, sum, max };

namespace aggregate {

/// dst(v, :) (+)= sum_k w_k src(idx_k, :)  over v's neighbours; w == nullptr means weight 1.
template <class T, class Src, class Dst>
void weighted_sum(const features::Neighbourhood<T>& nb, const T* w, const Src& src, Dst&& dst, bool accumulate) {
    const Index n = static_cast<Index>(nb.ptr.size()) - 1;
    for (Index v = 0; v < n; ++v) {
        auto row = dst.row(v);
        if (!accumulate) row.setZero();
        for (int k = nb.ptr[static_cast<std::size_t>(v)]; k < nb.ptr[static_cast<std::size_t>(v) + 1]; ++k)
            row += (w ? w[k] : T(1)) * src.row(nb.idx[static_cast<std::size_t>(k)]);
    }
}

/// Transpose of weighted_sum: dsrc(u, :) (+)= sum over entries k reading u of w_k ddst(receiver_k, :).
template <class T, class Src, class Dst>
void weighted_sum_t(const features::Neighbourhood<T>& nb, const T* w, const Src& ddst, Dst&& dsrc, bool accumulate) {
    const Index n = static_cast<Index>(nb.tptr.size()) - 1;
    for (Index u = 0; u < n; ++u) {
        auto row = dsrc.row(u);
        if (!accumulate) row.setZero();
        for (int k = nb.tptr[static_cast<std::size_t>(u)]; k < nb.tptr[static_cast<std::size_t>(u) + 1]; ++k) {
            const int e = nb.tentry[static_cast<std::size_t>(k)];
            row += (w ? w[e] : T(1)) * ddst.row(nb.tidx[static_cast<std::size_t>(k)]);
        }
    }
}

/// dst(v, c) = max over neighbours u of (src(u, c) - (relative ? src(v, c) : 0)); 0 without
/// neighbours. argmax(v, c) = the winning sender, -1 without neighbours.
template <class T, class Src, class Dst>
void max(const features::Neighbourhood<T>& nb, const Src& src, Dst&& dst, std::vector<int>& argmax, bool relative) {
    const Index n = static_cast<Index>(nb.ptr.size()) - 1, d = src.cols();
    argmax.assign(static_cast<std::size_t>(n * d), -1);
    for (Index v = 0; v < n; ++v) {
        const int b = nb.ptr[static_cast<std::size_t>(v)], e = nb.ptr[static_cast<std::size_t>(v) + 1];
        auto row = dst.row(v);
        int* am = argmax.data() + v * d;
        if (b == e) {
            row.setZero();
            continue;
        }
        const int u0 = nb.idx[static_cast<std::size_t>(b)];
        row = src.row(u0);
        for (Index c = 0; c < d; ++c) am[c] = u0;
        for (int k = b + 1; k < e; ++k) {
            const int u = nb.idx[static_cast<std::size_t>(k)];
            const auto s = src.row(u);
            for (Index c = 0; c < d; ++c)
                if (s(c) > row(c)) {
                    row(c) = s(c);
                    am[c] = u;
                }
        }
        if (relative) row -= src.row(v);
    }
}

/// Backward of max: dsrc(argmax(v, c), c) += ddst(v, c) (and -= at v itself when relative).
template <class T, class Src, class Dst>
void max_t(const std::vector<int>& argmax, const Src& ddst, Dst&& dsrc, bool relative) {
    const Index n = ddst.rows(), d = ddst.cols();
    for (Index v = 0; v < n; ++v) {
        const int* am = argmax.data() + v * d;
        for (Index c = 0; c < d; ++c)
            if (am[c] >= 0) {
                dsrc(am[c], c) += ddst(v, c);
                if (relative) dsrc(v, c) -= ddst(v, c);
            }
    }
}

}  // namespace aggregate
}  // namespace dnncost::nn
