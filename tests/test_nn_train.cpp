// End-to-end training, determinism, save/load, the additive path's warm start.
#include <doctest/doctest.h>

#include <type_traits>

#include <dnncost/estimators/presets.hpp>
#include <dnncost/estimators/registry.hpp>
#include <dnncost/spaces/nb201.hpp>

#include "gradcheck.hpp"
#include "nn_configs.hpp"

using namespace dnncost;
using namespace dnncost::nn;
using estimators::GnnEstimator;
using dnncost::test::small_sum;

namespace {
// Random graphs whose target is the sum of node attribute 0 (in [0, 1]) over the graph.
struct SumTask {
    std::vector<features::EncodedGraph> graphs;
    std::vector<float> y;
    explicit SumTask(int n, std::uint64_t seed) {
        Rng rng(seed);
        for (int i = 0; i < n; ++i) {
            auto g = dnncost::test::random_graph(rng, 1 + static_cast<int>(rng.below(12)), 3);
            float s = 0;
            for (int v = 0; v < g.num_nodes; ++v) {
                g.x[static_cast<std::size_t>(v) * 3] = static_cast<float>(rng.uniform());
                s += g.at(v, 0);
            }
            graphs.push_back(std::move(g));
            y.push_back(s);
        }
    }
};

double train_sum_task(int epochs, std::uint64_t seed, std::vector<float>* weights_out = nullptr) {
    SumTask task(64, 3);
    Rng rng(seed);
    GnnModel<float> model(small_sum, 3, rng);
    optim::Adam<float> opt(model.parameters(), {.lr = 3e-3});
    features::GraphBatch<float> batch;
    std::vector<const features::EncodedGraph*> all;
    for (const auto& g : task.graphs) all.push_back(&g);
    Mat<float> yall(static_cast<Index>(task.y.size()), 1);
    for (std::size_t i = 0; i < task.y.size(); ++i) yall(static_cast<Index>(i), 0) = task.y[i];
    const auto full_loss = [&] {
        batch.build(all);
        Context<float> c{&batch, false, nullptr, nullptr};
        Mat<float> g;
        return static_cast<double>(mse_loss<float>(model.forward(c), yall, g));
    };
    const double initial = full_loss();
    Mat<float> dp;
    for (int e = 0; e < epochs; ++e)
        for (std::size_t s = 0; s < all.size(); s += 8) {
            std::vector<const features::EncodedGraph*> ptrs(all.begin() + static_cast<std::ptrdiff_t>(s),
                                                            all.begin() + static_cast<std::ptrdiff_t>(s + 8));
            Mat<float> y = yall.middleRows(static_cast<Index>(s), 8);
            batch.build(ptrs);
            Context<float> c{&batch, true, &rng, nullptr};
            opt.zero_grad();
            mse_loss<float>(model.forward(c), y, dp);
            model.backward(dp, nullptr, c);
            opt.step();
        }
    if (weights_out)
        for (auto* p : model.parameters())
            weights_out->insert(weights_out->end(), p->value.data(), p->value.data() + p->value.size());
    return initial / full_loss();
}

constexpr GnnConfig tiny_preset{.conv = Conv::sage,
                                .depth = 2,
                                .width = 16,
                                .residual = true,
                                .dropout = 0.1f,
                                .readout = Readout::lcm_sum,
                                .readout_width = 8,
                                .head = {.layers = 2, .width = 16},
                                .ranking = {.layers = 2, .width = 8, .dropout = 0.0f, .weight = 1.5f},
                                .features = {.rw_steps = 4, .self_loops_on_inputs = true},
                                .train = {.batch_size = 4, .max_epochs = 3, .patience = 5}};
using Tiny = GnnEstimator<tiny_preset>;

struct Nb201Data {
    std::vector<graph::Graph> graphs;
    train::TrainData train, val;
    Nb201Data() {
        for (int i = 0; i < 12; ++i) graphs.push_back(nb201::build_graph(nb201::from_index(i * 1301 + 17)));
        for (std::size_t i = 0; i < graphs.size(); ++i) {
            auto& d = i < 8 ? train : val;
            d.graphs.push_back(&graphs[i]);
            d.targets.push_back(static_cast<double>(cost::total_cost(graphs[i]).macs) * 1e-7 +
                                0.1 * static_cast<double>(i % 3));
        }
    }
};
}  // namespace

TEST_CASE("Adam, AdamW and Adam + L2: three steps match the textbook update in double, a pool changes no bit") {
    for (int mode = 0; mode < 3; ++mode) {  // 0 Adam, 1 AdamW (decoupled decay), 2 Adam with L2 decay
        CAPTURE(mode);
        const optim::AdamOptions o{.lr = 1e-2, .weight_decay = mode == 0 ? 0.0 : 0.1, .decoupled = mode == 1};
        // a 200 x 100 parameter spans two of step()'s 16,384-element blocks
        std::vector<Parameter<float>> a, b;
        Rng rng(21);
        for (const auto& [r, c] : std::vector<std::pair<Index, Index>>{{3, 5}, {200, 100}}) {
            a.emplace_back("w", r, c);
            for (Index i = 0; i < a.back().value.size(); ++i)
                a.back().value.data()[i] = static_cast<float>(rng.normal());
            b.push_back(a.back());
        }
        std::vector<Parameter<float>*> pa, pb;
        for (auto& p : a) pa.push_back(&p);
        for (auto& p : b) pb.push_back(&p);
        optim::Adam<float> serial(pa, o), pooled(pb, o);
        ThreadPool pool(2);
        // the reference, in double
        std::vector<Eigen::ArrayXd> w, m, v;
        for (const auto& p : a) {
            w.push_back(p.value.reshaped<Eigen::RowMajor>().cast<double>().array());
            m.push_back(Eigen::ArrayXd::Zero(p.value.size()));
            v.push_back(Eigen::ArrayXd::Zero(p.value.size()));
        }
        for (int t = 1; t <= 3; ++t) {
            for (std::size_t k = 0; k < a.size(); ++k) {
                for (Index i = 0; i < a[k].grad.size(); ++i) a[k].grad.data()[i] = static_cast<float>(rng.normal());
                b[k].grad = a[k].grad;
                Eigen::ArrayXd g = a[k].grad.reshaped<Eigen::RowMajor>().cast<double>().array();
                if (mode == 1) w[k] *= 1.0 - o.lr * o.weight_decay;
                if (mode == 2) g += o.weight_decay * w[k];
                m[k] = o.beta1 * m[k] + (1 - o.beta1) * g;
                v[k] = o.beta2 * v[k] + (1 - o.beta2) * g.square();
                const Eigen::ArrayXd mhat = m[k] / (1 - std::pow(o.beta1, t)), vhat = v[k] / (1 - std::pow(o.beta2, t));
                w[k] -= o.lr * mhat / (vhat.sqrt() + o.eps);
            }
            serial.step();
            pooled.step(&pool);
        }
        for (std::size_t k = 0; k < a.size(); ++k) {
            CHECK(a[k].value == b[k].value);  // bit-identical with and without the pool
            const Eigen::ArrayXd got = a[k].value.reshaped<Eigen::RowMajor>().cast<double>().array();
            CHECK((got - w[k]).abs().maxCoeff() < 1e-5);  // each step moves a weight by ~1e-2
        }
    }
}

TEST_CASE("end to end: a GNN learns the sum of a node attribute (loss down >= 100x)") {
    const double ratio = train_sum_task(60, 1);
    INFO("loss reduction " << ratio);
    CHECK(ratio >= 100.0);
}

TEST_CASE("determinism: the same seed gives bit-identical training on one thread") {
    std::vector<float> a, b, c;
    train_sum_task(2, 5, &a);
    train_sum_task(2, 5, &b);
    train_sum_task(2, 6, &c);
    CHECK(a == b);
    CHECK(a != c);
}

TEST_CASE("feature encoder: vocabulary, unknown slot, scaling, random-walk encoding, options") {
    const auto g = nb201::build_graph(nb201::from_index(1234));
    const graph::Graph* gp = &g;
    features::FeatureEncoder enc({.vocabulary = {}, .rw_steps = 3});
    CHECK_THROWS_AS(enc.encode(g), config_error);
    enc.fit(std::span<const graph::Graph* const>(&gp, 1));
    const auto e = enc.encode(g);
    CHECK(e.num_nodes == static_cast<int>(g.num_nodes()));
    CHECK(e.num_features == static_cast<int>(enc.vocabulary().size()) + 1 + 9 + 3);
    // the same from per-node costs computed by the caller; costs of another graph are an error
    CHECK(enc.encode(g, cost::annotate(g), {}).x == e.x);
    const auto other = nb201::build_graph(nb201::from_index(1234), {.cells_per_stage = 1});
    CHECK_THROWS_AS(enc.encode(g, cost::annotate(other), {}), shape_error);
    features::FeatureEncoder cv({.vocabulary = {}, .rw_steps = 0, .compiler_view = true});
    cv.fit(std::span<const graph::Graph* const>(&gp, 1));
    CHECK(cv.encode(g, cost::annotate(g), graph::analyse(g)).x == cv.encode(g).x);
    CHECK_THROWS_AS(cv.encode(g, cost::annotate(g), {}), shape_error);  // the compiler view needs the analysis
    const int v = static_cast<int>(enc.vocabulary().size());
    for (int i = 0; i < e.num_nodes; ++i) {
        float onehot = 0;
        for (int j = 0; j <= v; ++j) onehot += e.at(i, j);
        CHECK(onehot == 1.0f);
        CHECK(e.at(i, v) == 0.0f);       // every op type is known
        CHECK(e.at(i, v + 10) == 0.0f);  // a DAG walk cannot return in one step
    }
    // standardised attributes: mean ~0 over the fitting graph
    double mean = 0;
    for (int i = 0; i < e.num_nodes; ++i) mean += e.at(i, v + 1 + 6);
    CHECK(std::abs(mean / e.num_nodes) < 1e-3);
    // fixed vocabulary: unknown ops go to the unknown slot
    features::FeatureEncoder fixed(
        {.vocabulary = {"Conv"}, .rw_steps = 0, .self_loops_on_inputs = true, .drop_output_nodes = true});
    fixed.fit(std::span<const graph::Graph* const>(&gp, 1));
    const auto f = fixed.encode(g);
    CHECK(f.num_features == 2 + 9);
    CHECK(f.num_nodes == static_cast<int>(g.num_nodes()) - 1);  // the classifier writes the output
    int self_loops = 0;
    for (auto [s, d] : f.edges) self_loops += s == d;
    CHECK(self_loops == 1);  // the stem conv reads the graph input
    // random walk on a 2-cycle path a-b: returns after 2 steps with probability 1
    const auto rw = features::random_walk_encoding(2, {{0, 1}}, 2);
    CHECK(rw[0] == 0.0f);
    CHECK(rw[1] == 1.0f);
    // against dense powers of P = D^-1 A (self-loops count twice, multi-edges per copy, an
    // isolated node), odd and even k
    Rng rng(12);
    for (int k : {1, 5, 8}) {
        const int n = 30;
        std::vector<std::pair<int, int>> edges;
        for (int i = 2; i < n; ++i)
            edges.emplace_back(1 + static_cast<int>(rng.below(static_cast<std::uint64_t>(i - 1))), i);
        edges.emplace_back(3, 3);
        edges.emplace_back(4, 9);
        edges.emplace_back(4, 9);
        Eigen::MatrixXd a = Eigen::MatrixXd::Zero(n, n);
        for (auto [s, t] : edges) {
            a(s, t) += 1;
            a(t, s) += 1;
        }
        Eigen::MatrixXd p = a;
        for (int i = 0; i < n; ++i)
            if (a.row(i).sum() > 0) p.row(i) /= a.row(i).sum();
        const auto enc = features::random_walk_encoding(n, edges, k);
        Eigen::MatrixXd power = Eigen::MatrixXd::Identity(n, n);
        for (int s = 0; s < k; ++s) {
            power = power * p;
            for (int i = 0; i < n; ++i)
                CHECK(enc[static_cast<std::size_t>(i * k + s)] == doctest::Approx(power(i, i)).epsilon(1e-6));
        }
        CHECK(enc[0] == 0.0f);  // node 0 is isolated
    }
    features::EncodeOptions neg;
    neg.rw_steps = -1;
    CHECK_THROWS_AS(features::FeatureEncoder{neg}, config_error);
}

TEST_CASE("GnnEstimator: fit, predict, save/load round trip and bad files") {
    Nb201Data d;
    Tiny est("tiny");
    estimators::FitOptions o;
    o.seed = 3;
    o.threads = 1;
    int epochs_seen = 0;
    o.on_epoch = [&](const std::string&) { return ++epochs_seen >= 2; };
    const auto r = est.fit(d.train, d.val, o);
    CHECK(r.epochs == 2);
    CHECK(epochs_seen == 2);
    CHECK(std::isfinite(r.best_validation));
    const auto p = est.predict_mean(d.val.graphs, 1);
    REQUIRE(p.size() == d.val.size());
    for (double x : p) CHECK(std::isfinite(x));
    const std::string bytes = est.serialize();
    auto back = Tiny::deserialize(bytes, "tiny");
    CHECK(back.predict_mean(d.val.graphs, 1) == p);
    CHECK(back.label_scale() == est.label_scale());
    // wrong preset name / configuration, truncation, corruption
    CHECK_THROWS_AS(Tiny::deserialize(bytes, "other"), parse_error);
    CHECK_THROWS_AS(estimators::HiFiSage::deserialize(bytes, "tiny"), parse_error);
    CHECK_THROWS_AS(Tiny::deserialize(std::string_view(bytes).substr(0, bytes.size() / 2), "tiny"), parse_error);
    std::string bad = bytes;
    bad[bad.size() / 2] ^= 0x55;
    CHECK_THROWS_AS(Tiny::deserialize(bad, "tiny"), parse_error);
    try {
        (void)estimators::HiFiSage::deserialize(bytes, "tiny");
    } catch (const parse_error& e) {
        CHECK(std::string(e.what()).find("configuration") != std::string::npos);
    }
    // NaN targets are rejected with a clear error
    auto nan_train = d.train;
    nan_train.targets[1] = std::nan("");
    CHECK_THROWS_AS(est.fit(nan_train, d.val, o), config_error);
}

TEST_CASE("additive path: fit starts from the ridge solution and keeps it unless the GNN beats it") {
    // NB201 graphs whose label is exactly additive in operator counts: the warm start alone fits.
    constexpr GnnConfig cfg = [] {
        GnnConfig c = small_sum;
        c.head.additive_path = true;
        c.features = {.rw_steps = 2, .self_loops_on_inputs = false, .drop_output_nodes = false, .compiler_view = true};
        return c;
    }();
    std::vector<graph::Graph> gs;
    std::vector<double> y;
    nb201::Nb201Options o;
    o.cells_per_stage = 1;
    for (std::int64_t i = 0; i < 120; ++i) {
        const auto a = nb201::from_index(i * 129 + 7);
        gs.push_back(nb201::build_graph(a, o));
        const auto c = nb201::op_counts(a);
        y.push_back(1.0 + 0.5 * c[2] + 1.5 * c[3] + 0.2 * c[4] + 0.05 * c[1]);
    }
    train::TrainData tr, va;
    for (std::size_t i = 0; i < gs.size(); ++i) {
        auto& d = i < 80 ? tr : va;
        d.graphs.push_back(&gs[i]);
        d.targets.push_back(y[i]);
    }
    GnnEstimator<cfg> est;
    estimators::FitOptions fo;
    fo.max_epochs = 3;
    fo.threads = 1;
    const auto r = est.fit(tr, va, fo);
    const auto p = est.predict_mean(va.graphs, 1);
    double worst = 0;
    for (std::size_t i = 0; i < p.size(); ++i) worst = std::max(worst, std::abs(p[i] - va.targets[i]) / va.targets[i]);
    CHECK(worst < 0.05);
    CHECK(r.best_validation < 0.1);
}
