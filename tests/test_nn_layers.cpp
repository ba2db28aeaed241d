// Gradient checks of every layer on random graphs (isolated nodes, self-loops, multi-edges,
// one-node graphs), shape and hyper-parameter errors.
#include "gradcheck.hpp"

#include <dnncost/nn/activations.hpp>
#include <dnncost/nn/dropout.hpp>
#include <dnncost/nn/gnn/edge_conv.hpp>
#include <dnncost/nn/gnn/gcn.hpp>
#include <dnncost/nn/gnn/gin.hpp>
#include <dnncost/nn/gnn/mr_conv.hpp>
#include <dnncost/nn/gnn/residual.hpp>
#include <dnncost/nn/gnn/sage.hpp>
#include <dnncost/nn/gnn/sage_block.hpp>
#include <dnncost/nn/gnn_model.hpp>
#include <dnncost/nn/layer_norm.hpp>
#include <dnncost/nn/mlp.hpp>

using namespace dnncost;
using namespace dnncost::nn;
using dnncost::test::gradcheck;
using dnncost::test::ctx_of;
using dnncost::test::TestBatch;
using features::Direction;


TEST_CASE("gradcheck: Linear, MLP, LayerNorm") {
    TestBatch tb(4);
    Rng rng(1);
    Linear<double> lin(4, 3, rng);
    gradcheck(lin, tb.batch.x, ctx_of(tb));
    auto mlp = make_mlp<double>({4, 6, 5, 2}, Act::tanh, 0.0, rng);
    gradcheck(*mlp, tb.batch.x, ctx_of(tb));
    LayerNorm<double> ln(4);
    ln.parameters()[0]->value.setRandom();
    ln.parameters()[1]->value.setRandom();
    gradcheck(ln, tb.batch.x, ctx_of(tb));
}

TEST_CASE("gradcheck: activations") {
    TestBatch tb(3);
    for (Act a : {Act::identity, Act::relu, Act::leaky_relu, Act::elu, Act::sigmoid, Act::tanh}) {
        auto m = make_activation<double>(a);
        gradcheck(*m, tb.batch.x, ctx_of(tb));
    }
}

TEST_CASE("Dropout: inverted scaling, seeded, off at inference, gradient") {
    TestBatch tb(6);
    Dropout<double> d(0.5);
    auto c = ctx_of(tb);
    c.training = true;
    Rng r(3);
    c.rng = &r;
    gradcheck(d, tb.batch.x, c, [&] { r = Rng(3); });
    Mat<double> ones = Mat<double>::Ones(200, 50);
    r = Rng(5);
    const Mat<double> y = d.forward(ones, c);
    const double zeros = static_cast<double>((y.array() == 0).count()) / y.size();
    CHECK(zeros == doctest::Approx(0.5).epsilon(0.05));
    CHECK(y.mean() == doctest::Approx(1.0).epsilon(0.05));
    c.training = false;
    CHECK(d.forward(ones, c) == ones);
    CHECK_THROWS_AS(Dropout<double>(1.0), config_error);
}

TEST_CASE("gradcheck: GraphSAGE, every aggregation and direction") {
    TestBatch tb(3);
    Rng rng(2);
    for (Aggr a : {Aggr::mean, Aggr::sum, Aggr::max})
        for (Direction dir : {Direction::predecessors, Direction::successors, Direction::both})
            for (bool root : {true, false})
                for (bool norm : {false, true}) {
                    INFO("aggr " << int(a) << " dir " << int(dir) << " root " << root << " norm " << norm);
                    SageConv<double> s(3, 4, rng, a, dir, root, norm);
                    s.parameters()[1]->value.setRandom();  // keep rows away from the zero-norm kink
                    gradcheck(s, tb.batch.x, ctx_of(tb));
                }
}

TEST_CASE("gradcheck: GCN, GIN, EdgeConv, MR-GraphConv") {
    TestBatch tb(3);
    Rng rng(4);
    for (Direction dir : {Direction::predecessors, Direction::successors, Direction::both}) {
        GcnConv<double> g(3, 4, rng, dir);
        gradcheck(g, tb.batch.x, ctx_of(tb));
        GinConv<double> gin(3, {5, 4}, rng, dir);
        gin.parameters()[0]->value(0, 0) = 0.3;
        gradcheck(gin, tb.batch.x, ctx_of(tb));
        EdgeConv<double, act::Tanh> e(3, 4, rng, dir);
        gradcheck(e, tb.batch.x, ctx_of(tb));
        EdgeConv<double> er(3, 4, rng, dir);
        gradcheck(er, tb.batch.x, ctx_of(tb));
        MrConv<double> mr(3, 4, rng, dir);
        gradcheck(mr, tb.batch.x, ctx_of(tb));
    }
}

TEST_CASE("gradcheck: residual with and without projection") {
    TestBatch tb(4);
    Rng rng(5);
    {
        auto inner = std::make_unique<Sequential<double>>();
        inner->add(std::make_unique<SageConv<double>>(4, 4, rng));
        inner->add(make_activation<double>(Act::elu));
        Residual<double> r(std::move(inner), 4, rng);
        gradcheck(r, tb.batch.x, ctx_of(tb));
    }
    {
        Residual<double> r(std::make_unique<GcnConv<double>>(4, 6, rng), 4, rng);
        CHECK(r.output_width(4) == 6);
        gradcheck(r, tb.batch.x, ctx_of(tb));
    }
}

TEST_CASE("layers reject bad widths and inputs") {
    Rng rng(1);
    TestBatch tb(3);
    CHECK_THROWS_AS(Linear<double>(0, 3, rng), config_error);
    CHECK_THROWS_AS(SageConv<double>(3, -1, rng), config_error);
    CHECK_THROWS_AS(make_mlp<double>({3}, Act::relu, 0.0, rng), config_error);
    Linear<double> lin(5, 2, rng);
    CHECK_THROWS_AS(lin.forward(tb.batch.x, ctx_of(tb)), shape_error);
    SageConv<double> s(3, 2, rng);
    CHECK_THROWS_AS(s.forward(tb.batch.x, nn::Context<double>{}), config_error);  // no batch
    features::EncodedGraph bad = tb.graphs[0];
    bad.x[2] = std::numeric_limits<float>::quiet_NaN();
    const features::EncodedGraph* p = &bad;
    CHECK_THROWS_AS(features::GraphBatch<double>(std::span<const features::EncodedGraph* const>(&p, 1)), config_error);
    bad = tb.graphs[0];
    bad.edges.emplace_back(0, 99);
    CHECK_THROWS_AS(features::GraphBatch<double>(std::span<const features::EncodedGraph* const>(&p, 1)), shape_error);
}

TEST_CASE("GraphBatch::slice equals a batch built from the same graphs") {
    TestBatch tb(3, 11, {5, 1, 7, 3, 4});
    std::vector<const features::EncodedGraph*> sub{&tb.graphs[1], &tb.graphs[2], &tb.graphs[3]};
    features::GraphBatch<double> built(sub), sliced;
    sliced.slice(tb.batch, 1, 4);
    CHECK(sliced.x == built.x);
    CHECK(sliced.num_graphs() == 3);
    CHECK(sliced.node_graph() == built.node_graph());
    for (auto d : {features::Direction::predecessors, features::Direction::successors, features::Direction::both}) {
        const auto &a = sliced.neighbourhood(d), &b = built.neighbourhood(d);
        CHECK(a.ptr == b.ptr);
        CHECK(a.idx == b.idx);
        CHECK(a.tptr == b.tptr);
        CHECK(a.tidx == b.tidx);
        CHECK(a.tentry == b.tentry);
        CHECK(a.mean_w == b.mean_w);
        CHECK(a.gcn_w == b.gcn_w);
        CHECK(a.gcn_self == b.gcn_self);
    }
    CHECK_THROWS_AS(sliced.slice(tb.batch, 2, 2), shape_error);
}

TEST_CASE("data parallelism: sharding a batch over replicas changes no prediction or gradient") {
    TestBatch tb(3, 5, {5, 1, 7, 3, 4, 6, 2});
    GnnConfig c{.conv = Conv::sage,
                .depth = 3,
                .width = 8,
                .residual = true,
                .dropout = 0.0f,
                .readout = Readout::lcm_sum,
                .readout_width = 4,
                .head = {.layers = 2, .width = 8},
                .ranking = {.layers = 2, .width = 4, .dropout = 0.0f, .weight = 1.0f}};
    const auto run = [&](unsigned threads, float dropout, std::vector<double>& grads) {
        c.dropout = dropout;
        Rng init(3);
        GnnModel<double> m(c, 3, init);
        if (threads > 1) {
            std::vector<std::unique_ptr<GnnModel<double>>> r;
            Rng other(99);  // different initial weights: they must be overwritten from the model
            for (unsigned i = 1; i < threads; ++i) r.push_back(std::make_unique<GnnModel<double>>(c, 3, other));
            m.set_replicas(std::move(r));
        }
        ThreadPool pool(threads);
        Rng rng(4);
        Context<double> ctx{&tb.batch, true, &rng, &pool};
        const Mat<double> p = m.forward(ctx);
        Mat<double> dp = Mat<double>::Ones(p.rows(), 1);
        Mat<double> dl = Mat<double>::Ones(m.rank_logits()->rows(), 1);
        m.backward(dp, &dl, ctx);
        grads.clear();
        for (auto* q : m.parameters()) grads.insert(grads.end(), q->grad.data(), q->grad.data() + q->grad.size());
        return p;
    };
    std::vector<double> g1, g2, g2b, g3;
    const Mat<double> p1 = run(1, 0.0f, g1), p2 = run(2, 0.0f, g2), p3 = run(3, 0.0f, g3);
    CHECK((p1 - p2).cwiseAbs().maxCoeff() < 1e-12);
    CHECK((p1 - p3).cwiseAbs().maxCoeff() < 1e-12);
    REQUIRE(g1.size() == g2.size());
    double worst = 0;
    for (std::size_t i = 0; i < g1.size(); ++i)
        worst = std::max({worst, std::abs(g1[i] - g2[i]), std::abs(g1[i] - g3[i])});
    CHECK(worst < 1e-10);
    // with dropout: the same thread count gives the same bits
    run(2, 0.3f, g2);
    run(2, 0.3f, g2b);
    CHECK(g2 == g2b);
}

TEST_CASE("SageResidualBlock: equals Residual(SageConv -> ReLU -> Dropout), gradient") {
    TestBatch tb(6, 3, {5, 1, 7, 3});
    for (double p : {0.0, 0.3}) {
        Rng r1(4), r2(4);
        auto inner = std::make_unique<Sequential<double>>();
        inner->add(std::make_unique<SageConv<double>>(6, 6, r1));
        inner->add(make_activation<double>(Act::relu));
        if (p > 0) inner->add(std::make_unique<Dropout<double>>(p));
        Residual<double> ref(std::move(inner), 6, r1);
        SageResidualBlock<double> fused(6, r2, Aggr::mean, features::Direction::predecessors, p);
        REQUIRE(ref.parameters().size() == fused.parameters().size());
        for (std::size_t i = 0; i < fused.parameters().size(); ++i)
            CHECK(ref.parameters()[i]->value == fused.parameters()[i]->value);  // same initialisation
        for (bool training : {false, true}) {
            Rng d1(9), d2(9);
            Context<double> c1{&tb.batch, training, &d1, nullptr}, c2{&tb.batch, training, &d2, nullptr};
            const Mat<double> y1 = ref.forward(tb.batch.x, c1), y2 = fused.forward(tb.batch.x, c2);
            CHECK((y1 - y2).cwiseAbs().maxCoeff() < 1e-12);
            if (!training) continue;
            ref.zero_grad();
            fused.zero_grad();
            Rng g(1);
            Mat<double> dy(y1.rows(), y1.cols());
            for (Index i = 0; i < dy.size(); ++i) dy.data()[i] = g.normal();
            CHECK((ref.backward(dy, c1) - fused.backward(dy, c2)).cwiseAbs().maxCoeff() < 1e-12);
            for (std::size_t i = 0; i < fused.parameters().size(); ++i)
                CHECK((ref.parameters()[i]->grad - fused.parameters()[i]->grad).cwiseAbs().maxCoeff() < 1e-12);
        }
        Rng drop(5);
        gradcheck(fused, tb.batch.x, Context<double>{&tb.batch, true, &drop, nullptr}, [&] { drop = Rng(5); });
    }
    Rng rng(1);
    CHECK_THROWS_AS(SageResidualBlock<double>(4, rng, Aggr::max, features::Direction::predecessors, 0.0), config_error);
    CHECK_THROWS_AS(SageResidualBlock<double>(4, rng, Aggr::mean, features::Direction::predecessors, 1.0),
                    config_error);
}

TEST_CASE("GEMM kernels: float results match a double reference for every shape and split") {
    Rng rng(8);
    ThreadPool two(2);
    for (Index m : {1, 12, 13, 100, 700})
        for (Index k : {3, 40, 256})
            for (Index n : {8, 32, 96, 128, 256}) {
                Mat<float> a(m, k), b(k, n), c0(m, n), g(m, n), w0(k, n);
                for (Index i = 0; i < a.size(); ++i) a.data()[i] = static_cast<float>(rng.normal());
                for (Index i = 0; i < b.size(); ++i) b.data()[i] = static_cast<float>(rng.normal());
                for (Index i = 0; i < c0.size(); ++i) c0.data()[i] = static_cast<float>(rng.normal());
                for (Index i = 0; i < g.size(); ++i) g.data()[i] = static_cast<float>(rng.normal());
                for (Index i = 0; i < w0.size(); ++i) w0.data()[i] = static_cast<float>(rng.normal());
                const Mat<double> ab = a.cast<double>() * b.cast<double>();
                const Mat<double> atg = a.cast<double>().transpose() * g.cast<double>();
                const double tol = 1e-4 * static_cast<double>(k + m);
                for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), &two}) {
                    Mat<float> c;
                    kernels::gemm<float>(c, a, b, false, pool);
                    CHECK((c.cast<double>() - ab).cwiseAbs().maxCoeff() < tol);
                    c = c0;
                    kernels::gemm<float>(c, a, b, true, pool);
                    CHECK((c.cast<double>() - c0.cast<double>() - ab).cwiseAbs().maxCoeff() < tol);
                    Mat<float> w = w0;
                    kernels::gemm_tn<float>(w, a, g, true, pool);
                    CHECK((w.cast<double>() - w0.cast<double>() - atg).cwiseAbs().maxCoeff() < tol);
                    kernels::gemm_tn<float>(w, a, g, false, pool);
                    CHECK((w.cast<double>() - atg).cwiseAbs().maxCoeff() < tol);
                }
            }
}
