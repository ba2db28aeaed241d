// Readouts, heads and losses: gradient checks, permutation invariance, LCM symmetry.
#include "gradcheck.hpp"

#include <numeric>

#include <dnncost/nn/gnn/sage.hpp>
#include <dnncost/nn/heads.hpp>
#include <dnncost/nn/loss/losses.hpp>
#include <dnncost/nn/readout/lcm.hpp>
#include <dnncost/nn/readout/pooling.hpp>

using namespace dnncost;
using namespace dnncost::nn;
using dnncost::test::gradcheck;
using dnncost::test::ctx_of;
using dnncost::test::TestBatch;

namespace {
// The same graph with its nodes relabelled by a random permutation.
features::EncodedGraph permuted(const features::EncodedGraph& g, Rng& rng) {
    std::vector<int> perm(static_cast<std::size_t>(g.num_nodes));
    std::iota(perm.begin(), perm.end(), 0);
    rng.shuffle(perm.begin(), perm.end());
    features::EncodedGraph p = g;
    for (int i = 0; i < g.num_nodes; ++i)
        for (int f = 0; f < g.num_features; ++f)
            p.x[static_cast<std::size_t>(perm[static_cast<std::size_t>(i)]) * g.num_features + f] = g.at(i, f);
    p.edges.clear();
    for (auto [s, d] : g.edges)
        p.edges.emplace_back(perm[static_cast<std::size_t>(s)], perm[static_cast<std::size_t>(d)]);
    rng.shuffle(p.edges.begin(), p.edges.end());
    return p;
}
}  // namespace

TEST_CASE("gradcheck: sum, mean, max pooling and their concatenation") {
    TestBatch tb(3);
    for (unsigned modes : {1u, 2u, 4u, 7u}) {
        Pooling<double> p(modes);
        CHECK(p.output_width(3) == 3 * std::popcount(modes));
        gradcheck(p, tb.batch.x, ctx_of(tb));
    }
    CHECK_THROWS_AS(Pooling<double>(0), config_error);
}

TEST_CASE("gradcheck: LCM readout (with and without projection) and a concatenated readout") {
    TestBatch tb(3, 11, {5, 1, 8, 3, 2});
    Rng rng(8);
    LcmReadout<double> lcm(3, 4, rng, true);
    gradcheck(lcm, tb.batch.x, ctx_of(tb));
    LcmReadout<double> plain(3, 3, rng, false);
    gradcheck(plain, tb.batch.x, ctx_of(tb));
    ConcatReadout<double> cat;
    cat.add(std::make_unique<LcmReadout<double>>(3, 2, rng));
    cat.add(std::make_unique<Pooling<double>>(pool_sum));
    CHECK(cat.output_width(3) == 5);
    gradcheck(cat, tb.batch.x, ctx_of(tb));
    CHECK_THROWS_AS(LcmReadout<double>(3, 4, rng, false), config_error);
}

TEST_CASE("LCM combiner is symmetric in the pair order, one-node graphs pass through") {
    Rng rng(3);
    LcmReadout<double> lcm(4, 4, rng, false);
    features::EncodedGraph a;
    a.num_nodes = 2;
    a.num_features = 4;
    a.x = {0.1f, -0.5f, 0.3f, 0.9f, -0.7f, 0.2f, 0.4f, -0.1f};
    features::EncodedGraph b = a;
    std::swap_ranges(b.x.begin(), b.x.begin() + 4, b.x.begin() + 4);
    features::EncodedGraph one;
    one.num_nodes = 1;
    one.num_features = 4;
    one.x = {1, 2, 3, 4};
    std::vector<const features::EncodedGraph*> ptrs{&a, &b, &one};
    features::GraphBatch<double> batch(ptrs);
    nn::Context<double> c;
    c.batch = &batch;
    const Mat<double> y = lcm.forward(batch.x, c);
    CHECK((y.row(0) - y.row(1)).norm() == 0.0);
    CHECK((y.row(2) - batch.x.row(4)).norm() == 0.0);
}

TEST_CASE("permutation: relabelling nodes leaves sum/mean/max readouts after GNN layers unchanged") {
    Rng rng(21);
    std::vector<features::EncodedGraph> gs, ps;
    for (int n : {6, 1, 9}) gs.push_back(dnncost::test::random_graph(rng, n, 3));
    for (const auto& g : gs) ps.push_back(permuted(g, rng));
    std::vector<const features::EncodedGraph*> gp, pp;
    for (std::size_t i = 0; i < gs.size(); ++i) {
        gp.push_back(&gs[i]);
        pp.push_back(&ps[i]);
    }
    features::GraphBatch<double> b1(gp), b2(pp);
    for (Aggr a : {Aggr::mean, Aggr::sum, Aggr::max})
        for (unsigned modes : {1u, 2u, 4u, 7u}) {
            Rng wr(5);
            Sequential<double> net;
            net.add(std::make_unique<SageConv<double>>(3, 5, wr, a, features::Direction::both));
            net.add(std::make_unique<SageConv<double>>(5, 5, wr, a, features::Direction::predecessors));
            net.add(std::make_unique<Pooling<double>>(modes));
            nn::Context<double> c1, c2;
            c1.batch = &b1;
            c2.batch = &b2;
            const Mat<double> y1 = net.forward(b1.x, c1);
            const Mat<double> y2 = net.forward(b2.x, c2);
            CHECK((y1 - y2).cwiseAbs().maxCoeff() < 1e-12);
        }
}

TEST_CASE("gradcheck: regression head and pairwise ranking head") {
    Rng rng(6);
    Mat<double> emb(5, 4);
    for (Index i = 0; i < emb.size(); ++i) emb.data()[i] = rng.normal();
    auto head = make_regression_head<double>(4, 3, 6, 2, Act::relu, 0.0, rng);
    gradcheck(*head, emb, nn::Context<double>{});
    PairwiseRankingHead<double> rank(4, 2, 5, 0.0, rng);
    CHECK(rank.forward(emb, nn::Context<double>{}).rows() == 10);
    gradcheck(rank, emb, nn::Context<double>{});
}

namespace {
void loss_check(const std::function<double(const Mat<double>&, Mat<double>&)>& f, const Mat<double>& p0) {
    Mat<double> p = p0, g, dummy;
    f(p, g);
    for (Index i = 0; i < p.size(); ++i) {
        const double keep = p.data()[i], eps = 1e-6;
        p.data()[i] = keep + eps;
        const double lp = f(p, dummy);
        p.data()[i] = keep - eps;
        const double lm = f(p, dummy);
        p.data()[i] = keep;
        CHECK((lp - lm) / (2 * eps) == doctest::Approx(g.data()[i]).epsilon(1e-5));
    }
}
}  // namespace

TEST_CASE("gradcheck: losses and their weighted sum") {
    Mat<double> p(6, 1), y(6, 1);
    p << 1.2, 0.3, 2.5, -0.4, 0.9, 3.0;
    y << 1.0, 0.5, 1.0, 0.2, 0.95, 0.5;
    loss_check([&](const Mat<double>& q, Mat<double>& g) { return mse_loss(q, y, g); }, p);
    loss_check([&](const Mat<double>& q, Mat<double>& g) { return l1_loss(q, y, g); }, p);
    loss_check([&](const Mat<double>& q, Mat<double>& g) { return huber_loss(q, y, g, 0.5); }, p);
    loss_check([&](const Mat<double>& q, Mat<double>& g) { return mape_loss(q, y, g); }, p);
    loss_check([&](const Mat<double>& q, Mat<double>& g) { return mape_rmse_loss(q, y, g, 0.7); }, p);
    Mat<double> labels(6, 1);
    labels << 1, 0, 0.5, 1, 0, 1;
    loss_check([&](const Mat<double>& q, Mat<double>& g) { return pairwise_bce_loss(q, labels, g); }, p);
    const std::vector<LossTerm> terms{
        {LossKind::huber, 1.0, 1.0}, {LossKind::mape_rmse, 0.5, 2.0}, {LossKind::l1, 0.1, 1.0}};
    loss_check([&](const Mat<double>& q, Mat<double>& g) { return weighted_loss(terms, q, y, g); }, p);
    Mat<double> g;
    CHECK(mse_loss(y, y, g) == 0.0);
    CHECK(huber_loss<double>(p, y, g, 1.0) < mse_loss(p, y, g));
    // BCE of a confident right answer is small, of a confident wrong one large
    Mat<double> z(1, 1), t(1, 1);
    z << 30.0;
    t << 1.0;
    CHECK(pairwise_bce_loss(z, t, g) < 1e-10);
    t << 0.0;
    CHECK(pairwise_bce_loss(z, t, g) == doctest::Approx(30.0));
    Mat<double> bad = y;
    bad(0, 0) = std::nan("");
    CHECK_THROWS_AS(mse_loss(p, bad, g), config_error);
    Mat<double> zero = Mat<double>::Zero(6, 1);
    CHECK_THROWS_AS(mape_loss(p, zero, g), config_error);
    CHECK_THROWS_AS(mse_loss(p, Mat<double>(5, 1), g), shape_error);
}
