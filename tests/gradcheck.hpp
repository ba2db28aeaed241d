#pragma once
// Finite-difference gradient checking for dnncost::nn modules (double precision), and random
// test graphs with isolated nodes, self-loops, multi-edges and one-node graphs.
#include <cmath>
#include <functional>
#include <vector>

#include <doctest/doctest.h>

#include <dnncost/core/matrix.hpp>
#include <dnncost/features/batch.hpp>
#include <dnncost/nn/module.hpp>

namespace dnncost::test {

/// A random graph of n nodes with some edges, a self-loop and a multi-edge; node 0 of a
/// graph with >= 4 nodes stays isolated.
inline features::EncodedGraph random_graph(Rng& rng, int n, int f) {
    features::EncodedGraph g;
    g.num_nodes = n;
    g.num_features = f;
    g.x.resize(static_cast<std::size_t>(n) * f);
    for (auto& v : g.x) v = static_cast<float>(rng.normal());
    const int first = n >= 4 ? 1 : 0;
    for (int i = first + 1; i < n; ++i) {
        const int src = first + static_cast<int>(rng.below(static_cast<std::uint64_t>(i - first)));
        g.edges.emplace_back(src, i);
        if (rng.bernoulli(0.3))
            g.edges.emplace_back(first + static_cast<int>(rng.below(static_cast<std::uint64_t>(n - first))), i);
    }
    if (n >= 3) {
        g.edges.emplace_back(n - 1, n - 1);  // self-loop
        g.edges.push_back(g.edges.front());  // multi-edge
    }
    return g;
}

/// A batch of graphs with sizes {5, 1, 7, 3} (a one-node graph included).
struct TestBatch {
    std::vector<features::EncodedGraph> graphs;
    features::GraphBatch<double> batch;
    explicit TestBatch(int f, std::uint64_t seed = 7, std::vector<int> sizes = {5, 1, 7, 3}) {
        Rng rng(seed);
        for (int n : sizes) graphs.push_back(random_graph(rng, n, f));
        std::vector<const features::EncodedGraph*> ptrs;
        for (const auto& g : graphs) ptrs.push_back(&g);
        batch.build(ptrs);
    }
};

/// A forward context over the batch's graphs.
inline nn::Context<double> ctx_of(const TestBatch& tb) {
    nn::Context<double> c;
    c.batch = &tb.batch;
    return c;
}

/// Check d(sum(R .* module(x)))/dx and /dparams by central differences.
/// `reset` runs before every forward (e.g. to reseed dropout).
inline void gradcheck(nn::Module<double>& m, const Mat<double>& x_in, nn::Context<double> ctx,
                      const std::function<void()>& reset = {}, double tol = 1e-6, double eps = 1e-6) {
    Rng rng(99);
    Mat<double> x = x_in;
    if (reset) reset();
    const Mat<double> y0 = m.forward(x, ctx);
    Mat<double> r(y0.rows(), y0.cols());
    for (Index i = 0; i < r.size(); ++i) r.data()[i] = rng.normal();
    const auto loss = [&]() {
        if (reset) reset();
        return m.forward(x, ctx).cwiseProduct(r).sum();
    };
    m.zero_grad();
    if (reset) reset();
    m.forward(x, ctx);
    const Mat<double> dx = m.backward(r, ctx);
    REQUIRE(dx.rows() == x.rows());
    REQUIRE(dx.cols() == x.cols());
    const auto check = [&](double& v, double analytic, const std::string& what) {
        const double keep = v;
        v = keep + eps;
        const double lp = loss();
        v = keep - eps;
        const double lm = loss();
        v = keep;
        const double numeric = (lp - lm) / (2 * eps);
        const double scale = std::max({1.0, std::abs(numeric), std::abs(analytic)});
        INFO(m.kind() << ": " << what << " numeric " << numeric << " analytic " << analytic);
        CHECK(std::abs(numeric - analytic) / scale < tol);
    };
    for (Index i = 0; i < x.size(); ++i) check(x.data()[i], dx.data()[i], "input " + std::to_string(i));
    const auto params = m.parameters();
    std::vector<Mat<double>> grads;
    for (auto* p : params) grads.push_back(p->grad);
    for (std::size_t k = 0; k < params.size(); ++k) {
        auto& p = *params[k];
        const Index step = std::max<Index>(1, p.value.size() / 40);  // at most ~40 entries per parameter
        for (Index i = 0; i < p.value.size(); i += step)
            check(p.value.data()[i], grads[k].data()[i], p.name + "[" + std::to_string(i) + "]");
    }
}

}  // namespace dnncost::test
