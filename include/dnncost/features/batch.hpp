#pragma once
/// @file batch.hpp
/// Many graphs as one block-diagonal graph: stacked node features (row-major), the node
/// ranges of each graph, a node -> graph index and, per aggregation direction, a CSR
/// neighbourhood with its transpose and the mean/GCN edge weights. Built once per batch and
/// read by every layer, so no layer allocates per node.
#include <cmath>
#include <cstddef>
#include <span>
#include <vector>

#include <dnncost/core/error.hpp>
#include <dnncost/core/matrix.hpp>
#include <dnncost/features/encode.hpp>

namespace dnncost::features {

/// Which neighbours a layer aggregates from along the directed edges.
enum class Direction : int { predecessors = 0, successors = 1, both = 2 };

/// CSR neighbourhood of one direction. Receiver v reads senders idx[ptr[v] .. ptr[v+1]).
/// The transpose lists for each sender u the entries (receiver, entry id) that read it, so
/// that backward passes scatter without atomics.
template <class T>
struct Neighbourhood {
    std::vector<int> ptr, idx;
    std::vector<int> tptr, tidx, tentry;
    std::vector<T> mean_w;    ///< 1 / in-degree of the receiver
    std::vector<T> gcn_w;     ///< 1 / sqrt((d_v + 1)(d_u + 1))
    std::vector<T> gcn_self;  ///< 1 / (d_v + 1), the self-loop weight of GCN
    int degree(int v) const { return ptr[static_cast<std::size_t>(v) + 1] - ptr[static_cast<std::size_t>(v)]; }
};

/// A batch of encoded graphs.
template <class T>
class GraphBatch {
public:
    GraphBatch() = default;

    /// Stack graphs. Throws shape_error on a feature-width mismatch or a bad edge, and
    /// config_error on a NaN or infinite feature.
    explicit GraphBatch(std::span<const EncodedGraph* const> graphs) { build(graphs); }

    void build(std::span<const EncodedGraph* const> graphs) {
        if (graphs.empty()) raise<shape_error>("GraphBatch: empty batch");
        const int f = graphs[0]->num_features;
        int n = 0;
        m_offset.assign(1, 0);
        for (std::size_t g = 0; g < graphs.size(); ++g) {
            const auto& e = *graphs[g];
            if (e.num_features != f)
                raise<shape_error>("GraphBatch: graph ", g, " has ", e.num_features, " features, graph 0 has ", f);
            if (e.num_nodes < 1) raise<shape_error>("GraphBatch: graph ", g, " has no nodes");
            if (e.x.size() != static_cast<std::size_t>(e.num_nodes) * f)
                raise<shape_error>("GraphBatch: graph ", g, " feature buffer holds ", e.x.size(), " values, expected ",
                                   static_cast<std::size_t>(e.num_nodes) * f);
            n += e.num_nodes;
            m_offset.push_back(n);
        }
        x.resize(n, f);
        stack_graph_features(graphs, graph_x);
        m_node_graph.resize(static_cast<std::size_t>(n));
        std::vector<std::pair<int, int>> edges;
        for (std::size_t g = 0; g < graphs.size(); ++g) {
            const auto& e = *graphs[g];
            const int base = m_offset[g];
            for (int i = 0; i < e.num_nodes; ++i) {
                m_node_graph[static_cast<std::size_t>(base + i)] = static_cast<int>(g);
                for (int j = 0; j < f; ++j) {
                    const float v = e.x[static_cast<std::size_t>(i) * f + j];
                    if (!std::isfinite(v))
                        raise<config_error>("GraphBatch: graph ", g, " node ", i, " feature ", j, " is ", v);
                    x(base + i, j) = static_cast<T>(v);
                }
            }
            for (auto [s, d] : e.edges) {
                if (s < 0 || d < 0 || s >= e.num_nodes || d >= e.num_nodes)
                    raise<shape_error>("GraphBatch: graph ", g, " edge (", s, ", ", d, ") outside [0, ", e.num_nodes,
                                       ")");
                edges.emplace_back(base + s, base + d);
            }
        }
        build_neighbourhood(m_nb[0], edges, n, false);
        build_neighbourhood(m_nb[1], edges, n, true);
        build_both(m_nb[2], edges, n);
    }

    /// Become the sub-batch of graphs [g0, g1) of `src` (node ids, CSR entries and weights
    /// re-based; nothing is validated again). Graphs never share edges, so each range is a
    /// contiguous block of every array: this is a few memcpys, not a rebuild.
    void slice(const GraphBatch& src, int g0, int g1) {
        if (g0 < 0 || g1 > src.num_graphs() || g0 >= g1)
            raise<shape_error>("GraphBatch::slice: graphs [", g0, ", ", g1, ") of a batch of ", src.num_graphs());
        const int n0 = src.offset(g0), n1 = src.offset(g1);
        x = src.x.middleRows(n0, n1 - n0);
        graph_x = src.graph_x.middleRows(g0, g1 - g0);
        m_offset.assign(src.m_offset.begin() + g0, src.m_offset.begin() + g1 + 1);
        for (auto& o : m_offset) o -= n0;
        m_node_graph.assign(src.m_node_graph.begin() + n0, src.m_node_graph.begin() + n1);
        for (auto& g : m_node_graph) g -= g0;
        for (int d = 0; d < 3; ++d) slice_neighbourhood(m_nb[d], src.m_nb[d], n0, n1);
    }

    /// out = the graphs' graph-level features, one row per graph (what build() puts in graph_x).
    /// @throws shape_error when a graph's width differs from graph 0's, config_error on a NaN or
    ///         infinite feature
    static void stack_graph_features(std::span<const EncodedGraph* const> graphs, Mat<T>& out) {
        const auto gf = graphs.empty() ? std::size_t{0} : graphs[0]->graph_x.size();
        out.resize(static_cast<Index>(graphs.size()), static_cast<Index>(gf));
        for (std::size_t g = 0; g < graphs.size(); ++g) {
            if (graphs[g]->graph_x.size() != gf)
                raise<shape_error>("GraphBatch: graph ", g, " has ", graphs[g]->graph_x.size(),
                                   " graph-level features, graph 0 has ", gf);
            for (std::size_t j = 0; j < gf; ++j) {
                const float v = graphs[g]->graph_x[j];
                if (!std::isfinite(v))
                    raise<config_error>("GraphBatch: graph ", g, " graph-level feature ", j, " is ", v);
                out(static_cast<Index>(g), static_cast<Index>(j)) = static_cast<T>(v);
            }
        }
    }

    Index num_nodes() const { return x.rows(); }
    int num_graphs() const { return static_cast<int>(m_offset.size()) - 1; }
    /// Node range of graph g is [offset(g), offset(g + 1)).
    int offset(int g) const { return m_offset[static_cast<std::size_t>(g)]; }
    int graph_size(int g) const { return offset(g + 1) - offset(g); }
    const std::vector<int>& node_graph() const { return m_node_graph; }
    const Neighbourhood<T>& neighbourhood(Direction d) const { return m_nb[static_cast<int>(d)]; }

    Mat<T> x;        ///< stacked node features, num_nodes x num_features
    Mat<T> graph_x;  ///< graph-level features, num_graphs x (0 or more)

private:
    static void finish(Neighbourhood<T>& nb, std::vector<std::pair<int, int>>& pairs, int n) {
        // pairs are (receiver, sender)
        nb.ptr.assign(static_cast<std::size_t>(n) + 1, 0);
        for (auto [r, s] : pairs) ++nb.ptr[static_cast<std::size_t>(r) + 1];
        for (int v = 0; v < n; ++v) nb.ptr[static_cast<std::size_t>(v) + 1] += nb.ptr[static_cast<std::size_t>(v)];
        nb.idx.assign(pairs.size(), 0);
        std::vector<int> fill(nb.ptr.begin(), nb.ptr.end() - 1);
        for (auto [r, s] : pairs) nb.idx[static_cast<std::size_t>(fill[static_cast<std::size_t>(r)]++)] = s;
        nb.tptr.assign(static_cast<std::size_t>(n) + 1, 0);
        for (int s : nb.idx) ++nb.tptr[static_cast<std::size_t>(s) + 1];
        for (int v = 0; v < n; ++v) nb.tptr[static_cast<std::size_t>(v) + 1] += nb.tptr[static_cast<std::size_t>(v)];
        nb.tidx.assign(pairs.size(), 0);
        nb.tentry.assign(pairs.size(), 0);
        std::vector<int> tfill(nb.tptr.begin(), nb.tptr.end() - 1);
        for (int r = 0; r < n; ++r)
            for (int k = nb.ptr[static_cast<std::size_t>(r)]; k < nb.ptr[static_cast<std::size_t>(r) + 1]; ++k) {
                const int s = nb.idx[static_cast<std::size_t>(k)];
                const int slot = tfill[static_cast<std::size_t>(s)]++;
                nb.tidx[static_cast<std::size_t>(slot)] = r;
                nb.tentry[static_cast<std::size_t>(slot)] = k;
            }
        nb.mean_w.assign(pairs.size(), T(0));
        nb.gcn_w.assign(pairs.size(), T(0));
        nb.gcn_self.assign(static_cast<std::size_t>(n), T(0));
        for (int r = 0; r < n; ++r) {
            const int d = nb.degree(r);
            nb.gcn_self[static_cast<std::size_t>(r)] = T(1) / static_cast<T>(d + 1);
            for (int k = nb.ptr[static_cast<std::size_t>(r)]; k < nb.ptr[static_cast<std::size_t>(r) + 1]; ++k) {
                const int s = nb.idx[static_cast<std::size_t>(k)];
                nb.mean_w[static_cast<std::size_t>(k)] = T(1) / static_cast<T>(d);
                nb.gcn_w[static_cast<std::size_t>(k)] =
                    T(1) / std::sqrt(static_cast<T>(d + 1) * static_cast<T>(nb.degree(s) + 1));
            }
        }
    }
    static void slice_neighbourhood(Neighbourhood<T>& dst, const Neighbourhood<T>& src, int n0, int n1) {
        const auto u0 = static_cast<std::size_t>(n0), u1 = static_cast<std::size_t>(n1);
        const int e0 = src.ptr[u0], e1 = src.ptr[u1];
        const auto rebase = [](std::vector<int>& out, const std::vector<int>& in, std::size_t b, std::size_t e,
                               int by) {
            out.assign(in.begin() + static_cast<std::ptrdiff_t>(b), in.begin() + static_cast<std::ptrdiff_t>(e));
            for (auto& v : out) v -= by;
        };
        rebase(dst.ptr, src.ptr, u0, u1 + 1, e0);
        rebase(dst.idx, src.idx, static_cast<std::size_t>(e0), static_cast<std::size_t>(e1), n0);
        const int t0 = src.tptr[u0], t1 = src.tptr[u1];
        rebase(dst.tptr, src.tptr, u0, u1 + 1, t0);
        rebase(dst.tidx, src.tidx, static_cast<std::size_t>(t0), static_cast<std::size_t>(t1), n0);
        rebase(dst.tentry, src.tentry, static_cast<std::size_t>(t0), static_cast<std::size_t>(t1), e0);
        const auto copy = [](std::vector<T>& out, const std::vector<T>& in, std::size_t b, std::size_t e) {
            out.assign(in.begin() + static_cast<std::ptrdiff_t>(b), in.begin() + static_cast<std::ptrdiff_t>(e));
        };
        copy(dst.mean_w, src.mean_w, static_cast<std::size_t>(e0), static_cast<std::size_t>(e1));
        copy(dst.gcn_w, src.gcn_w, static_cast<std::size_t>(e0), static_cast<std::size_t>(e1));
        copy(dst.gcn_self, src.gcn_self, u0, u1);
    }
    static void build_neighbourhood(Neighbourhood<T>& nb, const std::vector<std::pair<int, int>>& edges, int n,
                                    bool reverse) {
        std::vector<std::pair<int, int>> pairs;
        pairs.reserve(edges.size());
        for (auto [s, d] : edges) pairs.emplace_back(reverse ? s : d, reverse ? d : s);
        finish(nb, pairs, n);
    }
    static void build_both(Neighbourhood<T>& nb, const std::vector<std::pair<int, int>>& edges, int n) {
        std::vector<std::pair<int, int>> pairs;
        pairs.reserve(2 * edges.size());
        for (auto [s, d] : edges) {
            pairs.emplace_back(d, s);
            pairs.emplace_back(s, d);
        }
        finish(nb, pairs, n);
    }

    std::vector<int> m_offset, m_node_graph;
    Neighbourhood<T> m_nb[3];
};

}  // namespace dnncost::features
