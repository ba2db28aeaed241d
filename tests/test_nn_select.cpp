// The additive path's warm start (shared ridge solver) and model selection against the
// untrained network.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

#include "latency_like_data.hpp"

#include <dnncost/estimators/additive.hpp>
#include <dnncost/estimators/ensemble.hpp>
#include <dnncost/estimators/model_selection.hpp>
#include <dnncost/estimators/presets.hpp>
#include <dnncost/spaces/nb201.hpp>
#include <dnncost/train/dataset.hpp>
#include <dnncost/train/split.hpp>

using namespace dnncost;
using namespace dnncost::nn;
using estimators::GnnEstimator;
using Data = test::LatencyLikeData;
namespace fs = std::filesystem;

TEST_CASE("additive path: the untrained GNN estimator predicts exactly what the additive baseline predicts") {
    Data d;
    estimators::AdditiveEstimator add;
    add.fit(d.train, d.val, {});
    GnnEstimator<test::additive_preset> est;
    est.prepare(d.train, 1);
    const auto xt = est.encode(d.train.graphs), xv = est.encode(d.val.graphs);
    CHECK(est.warm_start_additive_path(d.train, xt, d.val, xv));  // no compiler view: the baseline alone
    const auto p = est.predict_mean(d.val.graphs, 1);
    const auto q = add.predict(d.val.graphs);
    REQUIRE(p.size() == q.size());
    for (std::size_t i = 0; i < p.size(); ++i) CHECK(p[i] == doctest::Approx(q[i].mean).epsilon(1e-5));
}

TEST_CASE("additive path: a zero network is skipped at prediction, with bit-identical results") {
    Data d;
    GnnEstimator<test::additive_preset> est;
    est.prepare(d.train, 1);
    const auto xt = est.encode(d.train.graphs), xv = est.encode(d.val.graphs);
    est.warm_start_additive_path(d.train, xt, d.val, xv);
    // what running the network gives, chunk by chunk as predict_encoded cuts them
    const auto network = [&] {
        std::vector<double> out;
        features::GraphBatch<float> b;
        for (std::size_t s = 0; s < xv.size(); s += est.inference_chunk) {
            std::vector<const features::EncodedGraph*> ptrs;
            for (std::size_t i = s; i < std::min(xv.size(), s + est.inference_chunk); ++i) ptrs.push_back(&xv[i]);
            b.build(ptrs);
            const Context<float> ctx{&b, false, nullptr, nullptr, true};
            const Mat<float>& q = est.model().forward(ctx);
            for (Index i = 0; i < q.rows(); ++i) out.push_back(static_cast<double>(q(i, 0)) * est.label_scale());
        }
        return out;
    };
    REQUIRE(est.model().network_is_zero());  // the head's last layer starts at zero
    const auto skipped = est.predict_encoded(xv, nullptr);
    const auto full = network();
    REQUIRE(skipped.size() == full.size());
    for (std::size_t i = 0; i < full.size(); ++i) CHECK(skipped[i] == full[i]);
    // a graph whose graph-level features do not fit is an error on this path too
    auto bad = xv;
    bad[3].graph_x.pop_back();
    CHECK_THROWS_AS(est.predict_encoded(bad, nullptr), shape_error);
    bad = xv;
    bad[3].graph_x[0] = std::nanf("");
    CHECK_THROWS_AS(est.predict_encoded(bad, nullptr), config_error);
    // predict() from graphs encodes only the graph-level aggregates here: the same numbers
    const auto from_graphs = est.predict_mean(d.val.graphs, 1);
    REQUIRE(from_graphs.size() == full.size());
    for (std::size_t i = 0; i < full.size(); ++i) CHECK(from_graphs[i] == full[i]);
    const auto level = est.encode(d.val.graphs, nullptr, true);
    CHECK(level[0].x.empty());
    CHECK(level[0].graph_x == xv[0].graph_x);

    // one training step moves the head: the network runs again and its output is no longer zero
    Rng rng(5);
    est.train_epoch(xt, d.train.targets, rng, nullptr);
    CHECK_FALSE(est.model().network_is_zero());
    CHECK_THROWS_AS(est.predict_encoded(level, nullptr), shape_error);  // no node data for the network
    const auto trained = est.predict_encoded(xv, nullptr);
    const auto trained_full = network();
    double moved = 0;
    for (std::size_t i = 0; i < trained.size(); ++i) {
        CHECK(trained[i] == trained_full[i]);
        moved = std::max(moved, std::abs(trained[i] - skipped[i]));
    }
    CHECK(moved > 0);
}

TEST_CASE(
    "additive path: HiFi-SAGE with the compiler view predicts from graph-level aggregates alone while its network is "
    "zero") {
    Data d;
    estimators::HiFiSage est;
    est.prepare(d.train, 1);
    const auto xt = est.encode(d.train.graphs), xv = est.encode(d.val.graphs);
    est.warm_start_additive_path(d.train, xt, d.val, xv);
    REQUIRE(est.model().network_is_zero());
    const auto level = est.encode(d.val.graphs, nullptr, true);  // aggregates over all and over compiler-kept operators
    for (std::size_t i = 0; i < xv.size(); ++i) CHECK(level[i].graph_x == xv[i].graph_x);
    const auto p = est.predict_mean(d.val.graphs, 2);
    const auto q = est.predict_encoded(xv, nullptr);
    REQUIRE(p.size() == q.size());
    for (std::size_t i = 0; i < p.size(); ++i) CHECK(p[i] == q[i]);
}

TEST_CASE("additive path: fit keeps the additive baseline when training cannot beat it out of bag") {
    Data d;
    estimators::AdditiveEstimator add;
    add.fit(d.train, d.val, {});
    GnnEstimator<test::additive_preset> est;
    estimators::FitOptions o;
    o.threads = 1;
    const auto r = est.fit(d.train, d.val, o);
    const std::string& last = r.summary;
    CHECK(r.epochs == 2);
    CHECK(last.find("out-of-bag improvement") != std::string::npos);
    const auto p = est.predict_mean(d.val.graphs, 1);
    const auto q = add.predict(d.val.graphs);
    REQUIRE(r.trained_kept.has_value());
    if (last.find("untrained network kept") != std::string::npos) {
        for (std::size_t i = 0; i < p.size(); ++i) CHECK(p[i] == doctest::Approx(q[i].mean).epsilon(1e-5));
        CHECK(r.validation_metric.find("untrained") != std::string::npos);
        CHECK(*r.trained_kept == 0.0);
    } else {
        CHECK(last.find("trained network kept") != std::string::npos);
        CHECK(*r.trained_kept == 1.0);
    }
}

TEST_CASE("model selection forced: keep = untrained is the additive baseline, keep = trained the best epoch") {
    Data d;
    estimators::AdditiveEstimator add;
    add.fit(d.train, d.val, {});
    const auto q = add.predict(d.val.graphs);
    estimators::FitOptions o;
    o.threads = 1;
    o.max_epochs = 3;
    GnnEstimator<test::additive_preset> untrained;
    untrained.set_options({.keep = estimators::Keep::untrained});
    const auto ru = untrained.fit(d.train, d.val, o);
    CHECK(ru.summary.find("-> untrained network kept (keep = untrained)") != std::string::npos);
    CHECK(ru.trained_kept == 0.0);
    const auto pu = untrained.predict_mean(d.val.graphs, 1);
    for (std::size_t i = 0; i < pu.size(); ++i) CHECK(pu[i] == doctest::Approx(q[i].mean).epsilon(1e-5));
    CHECK(ru.best_validation == doctest::Approx(estimators::validation_score(pu, d.val.targets)).epsilon(1e-6));

    // The same seed trains the same epochs; keep = trained ends with the best of them, whose
    // validation score fit() reports, and which is not the additive baseline.
    GnnEstimator<test::additive_preset> trained;
    trained.set_options({.keep = estimators::Keep::trained});
    const auto rt = trained.fit(d.train, d.val, o);
    CHECK(rt.summary.find("-> trained network kept (keep = trained)") != std::string::npos);
    CHECK(rt.trained_kept == 1.0);
    const auto pt = trained.predict_mean(d.val.graphs, 1);
    CHECK(rt.best_validation == doctest::Approx(estimators::validation_score(pt, d.val.targets)).epsilon(1e-6));
    double moved = 0;
    for (std::size_t i = 0; i < pt.size(); ++i) moved = std::max(moved, std::abs(pt[i] / q[i].mean - 1.0));
    CHECK(moved > 1e-4);

    CHECK(estimators::keep_from_string("auto") == estimators::Keep::automatic);
    CHECK(estimators::keep_from_string("trained") == estimators::Keep::trained);
    CHECK(estimators::keep_from_string("untrained") == estimators::Keep::untrained);
    CHECK_FALSE(estimators::keep_from_string("best").has_value());
    CHECK(estimators::to_string(estimators::Keep::automatic) == "auto");
}

TEST_CASE("model selection in an ensemble: the share of members that kept the trained network") {
    Data d;
    estimators::FitOptions o;
    o.threads = 1;
    o.max_epochs = 2;
    // members forced one way or the other: every member makes the same choice
    for (const auto keep : {estimators::Keep::trained, estimators::Keep::untrained}) {
        estimators::EnsembleEstimator ens(
            "additive-path GNN",
            [keep] {
                auto m = std::make_unique<GnnEstimator<test::additive_preset>>();
                m->set_options({.keep = keep});
                return m;
            },
            3, estimators::EnsembleEstimator::Resample::none);
        const auto r = ens.fit(d.train, d.val, o);
        const bool trained = keep == estimators::Keep::trained;
        REQUIRE(r.trained_kept.has_value());
        CHECK(*r.trained_kept == (trained ? 1.0 : 0.0));
        CHECK(r.summary ==
              (trained ? "3 of 3 members kept the trained network" : "0 of 3 members kept the trained network"));
    }
    // no validation data: no member chooses, and the ensemble reports no choice
    estimators::EnsembleEstimator ens(
        "additive-path GNN", [] { return std::make_unique<GnnEstimator<test::additive_preset>>(); }, 2,
        estimators::EnsembleEstimator::Resample::none);
    const auto r = ens.fit(d.train, {}, o);
    CHECK_FALSE(r.trained_kept.has_value());
    CHECK(r.summary.empty());
}

TEST_CASE("additive path: training graphs whose aggregates never vary give the mean label, not an error") {
    nb201::Nb201Options o;
    o.cells_per_stage = 1;
    std::vector<graph::Graph> gs(6, nb201::build_graph(nb201::from_index(77), o));
    train::TrainData tr, va;
    for (std::size_t i = 0; i < gs.size(); ++i) {
        auto& d = i < 4 ? tr : va;
        d.graphs.push_back(&gs[i]);
        d.targets.push_back(1.0 + 0.1 * static_cast<double>(i));
    }
    GnnEstimator<test::additive_preset> est;
    estimators::FitOptions fo;
    fo.threads = 1;
    fo.max_epochs = 1;
    est.fit(tr, va, fo);
    for (double p : est.predict_mean(va.graphs, 1)) CHECK(std::isfinite(p));
    GnnEstimator<test::additive_preset> cold;
    cold.prepare(tr, 1);
    const auto x = cold.encode(tr.graphs);
    CHECK(cold.warm_start_additive_path(tr, x, {}, {}));
    for (double p : cold.predict_mean(va.graphs, 1)) CHECK(p == doctest::Approx(1.15).epsilon(1e-6));
}

TEST_CASE("model selection: out-of-bag improvement of the best epoch over the untrained network") {
    Rng rng(4);
    std::vector<double> y(100), untrained(100), good(100), noise(100);
    for (std::size_t i = 0; i < y.size(); ++i) {
        y[i] = 1.0 + rng.uniform();
        untrained[i] = y[i] * (1.0 + 0.15 * rng.normal());  // ~15 % errors
        good[i] = y[i] * (1.0 + 0.01 * rng.normal());       // ~1 % errors
        noise[i] = y[i] * (1.0 + 0.30 * rng.normal());      // worse than untrained
    }
    // a genuinely better epoch is kept
    const auto a = estimators::selection_improvement(untrained, {noise, good}, y, 1);
    CHECK(a.mean > 0.3);
    CHECK(a.mean > a.se);  // kept by fit()
    // epochs that are all worse are rejected even though one of them is "best" on the full set
    std::vector<std::vector<double>> worse;
    for (int e = 0; e < 20; ++e) {
        std::vector<double> p(100);
        for (std::size_t i = 0; i < y.size(); ++i) p[i] = y[i] * (1.0 + 0.2 * rng.normal());
        worse.push_back(p);
    }
    const auto b = estimators::selection_improvement(untrained, worse, y, 1);
    CHECK(b.mean < 0);
    CHECK(b.se > 0);
    // the untrained network against itself: no improvement at all
    const auto c = estimators::selection_improvement(untrained, {untrained}, y, 1);
    CHECK(c.mean == doctest::Approx(0.0));
}

TEST_CASE("shared ridge solver: an exact linear relation is recovered, a custom scorer is used") {
    Rng rng(3);
    Eigen::MatrixXd x(50, 3), xv(20, 3);
    Eigen::VectorXd y(50), yv(20);
    for (int i = 0; i < 50; ++i) {
        x.row(i) << 1.0, rng.normal(), rng.normal();
        y(i) = 2.0 + 0.5 * x(i, 1) - 0.25 * x(i, 2);
    }
    for (int i = 0; i < 20; ++i) {
        xv.row(i) << 1.0, rng.normal(), rng.normal();
        yv(i) = 2.0 + 0.5 * xv(i, 1) - 0.25 * xv(i, 2);
    }
    const auto f = estimators::RidgeFit::select(x, y, &xv, &yv, 0.0);
    CHECK(f.beta(0) == doctest::Approx(2.0).epsilon(1e-4));
    CHECK(f.beta(1) == doctest::Approx(0.5).epsilon(1e-3));
    CHECK(f.beta(2) == doctest::Approx(-0.25).epsilon(1e-3));
    CHECK(f.lambda <= 1e-6);
    int calls = 0;
    const auto g =
        estimators::RidgeFit::select(x, y, &xv, &yv, 0.0, [&](const Eigen::VectorXd&, const Eigen::VectorXd&) {
            ++calls;
            return 1.0;
        });
    CHECK(calls == 42);  // 2 losses x 21 penalties
    CHECK(g.score == 1.0);
    const auto loo = estimators::RidgeFit::select(x, y, nullptr, nullptr, 0.0);
    CHECK(loo.loo);
    CHECK(loo.beta(1) == doctest::Approx(0.5).epsilon(1e-3));
}

TEST_CASE("shared ridge solver: non-negative coefficients satisfy the optimality conditions, either picks the better") {
    // y depends negatively on x2: a free fit keeps the sign, a non-negative one must hold it at 0
    Rng rng(8);
    const int n = 60;
    Eigen::MatrixXd x(n, 4), xv(n, 4);
    Eigen::VectorXd y(n), yv(n);
    for (int i = 0; i < n; ++i) {
        for (auto* m : {&x, &xv}) (*m).row(i) << 1.0, rng.normal(), rng.normal(), rng.normal();
        y(i) = 3.0 + 0.5 * x(i, 1) - 0.4 * x(i, 2) + 0.2 * x(i, 3) + 0.05 * rng.normal();
        yv(i) = 3.0 + 0.5 * xv(i, 1) - 0.4 * xv(i, 2) + 0.2 * xv(i, 3) + 0.05 * rng.normal();
    }
    using Signs = estimators::RidgeFit::Signs;
    const auto held = estimators::RidgeFit::select(x, y, &xv, &yv, 0.0, {}, Signs::nonnegative);
    const auto unconstrained = estimators::RidgeFit::select(x, y, &xv, &yv, 0.0, {}, Signs::free);
    const auto either = estimators::RidgeFit::select(x, y, &xv, &yv, 0.0, {}, Signs::either);
    CHECK(held.nonnegative);
    CHECK_FALSE(unconstrained.nonnegative);
    CHECK(unconstrained.beta(2) < -0.3);
    CHECK(held.beta(2) == 0.0);
    for (Eigen::Index j = 1; j < held.beta.size(); ++j) CHECK(held.beta(j) >= 0.0);
    // KKT conditions of min 1/2 b'Ab - b'c, b_j >= 0 (j > 0): gradient zero where b_j > 0 or
    // j = 0, non-negative where b_j = 0
    const auto ne = estimators::RidgeFit::NormalEquations::of(x, y, held.loss, 0.0);
    REQUIRE(ne);
    Eigen::MatrixXd a = ne->xtwx;
    for (Eigen::Index j = 1; j < a.rows(); ++j) a(j, j) += held.lambda;
    a(0, 0) += 1e-12;
    const Eigen::VectorXd grad = a * held.beta - ne->xtwy;
    for (Eigen::Index j = 0; j < grad.size(); ++j) {
        if (j == 0 || held.beta(j) > 0)
            CHECK(std::abs(grad(j)) < 1e-9);
        else
            CHECK(grad(j) > -1e-9);
    }
    // the validation data favour the free fit here; either takes it, with its score
    CHECK(unconstrained.score < held.score);
    CHECK_FALSE(either.nonnegative);
    CHECK(either.score == doctest::Approx(unconstrained.score));
    // leave-one-out selection works for the held fit too
    const auto held_loo = estimators::RidgeFit::select(x, y, nullptr, nullptr, 0.0, {}, Signs::nonnegative);
    CHECK(held_loo.loo);
    CHECK(held_loo.beta(2) == 0.0);
    CHECK(std::isfinite(held_loo.score));
}

TEST_CASE("unpaid share: the slope of the baseline's relative residual on its charge for removed operators") {
    // a synthetic device: a third of the networks contain operators a compiler removes, which the
    // baseline charges s; the device pays `paid` of that
    const auto device = [](double paid, std::uint64_t seed) {
        Rng rng(seed);
        std::vector<double> s(200), pred(200), y(200);
        for (std::size_t i = 0; i < y.size(); ++i) {
            const double base = 1.0 + rng.uniform();
            s[i] = i % 3 == 0 ? 0.6 * rng.uniform() : 0.0;
            pred[i] = base + s[i];
            y[i] = (base + paid * s[i]) * (1.0 + 0.02 * rng.normal());
        }
        return std::array{s, pred, y};
    };
    for (const double paid : {0.0, 0.2, 0.6, 1.0}) {
        CAPTURE(paid);
        const auto [s, pred, y] = device(paid, 9);
        const auto u = estimators::unpaid_share(s, pred, y, 0.0);
        REQUIRE(u.verdict);
        CHECK(u.n == 200);
        CHECK(std::abs(u.share - (1.0 - paid)) < 4 * u.se + 0.02);
        CHECK(u.se < 0.05);
        CHECK(u.compiled() == (paid < 0.5));  // the rule: most of the removed cost is skipped
        // the same slope and standard error from a least-squares solve of r on [1 u]
        Eigen::MatrixXd x(200, 2);
        Eigen::VectorXd r(200);
        for (Eigen::Index i = 0; i < 200; ++i) {
            const auto k = static_cast<std::size_t>(i);
            x.row(i) << 1.0, s[k] / y[k];
            r(i) = (y[k] - pred[k]) / y[k];
        }
        const Eigen::MatrixXd xtx_inv = (x.transpose() * x).inverse();
        const Eigen::VectorXd b = xtx_inv * x.transpose() * r;
        const double sigma2 = (r - x * b).squaredNorm() / 198.0;
        CHECK(-u.share == doctest::Approx(b(1)).epsilon(1e-9));
        CHECK(u.se == doctest::Approx(std::sqrt(sigma2 * xtx_inv(1, 1))).epsilon(1e-9));
    }
    // a share of exactly one half is not "most": the rule needs it above 1/2 by two standard errors
    {
        const auto [s, pred, y] = device(0.5, 3);
        CHECK_FALSE(estimators::unpaid_share(s, pred, y, 0.0).compiled());
    }
    auto [s, pred, y] = device(0.0, 5);
    // degenerate items are left out
    for (int i = 0; i < 10; ++i) {
        s.push_back(0.3);
        pred.push_back(1.3);
        y.push_back(0.01);
    }
    CHECK(estimators::unpaid_share(s, pred, y, 0.05).n == 200);
    // no network with removed operators, or too few items: no verdict, the baseline stays
    const std::vector<double> none(y.size(), 0.0);
    const auto flat = estimators::unpaid_share(none, pred, y, 0.0);
    CHECK_FALSE(flat.verdict);
    CHECK_FALSE(flat.compiled());
    CHECK_FALSE(
        estimators::unpaid_share(std::span(s).first(2), std::span(pred).first(2), std::span(y).first(2), 0.0).verdict);
    CHECK_THROWS_AS((void)estimators::unpaid_share(std::span(s).first(5), pred, y, 0.0), shape_error);
    // a prediction that is not a number gives no verdict rather than a garbage share
    pred[7] = std::nan("");
    CHECK_FALSE(estimators::unpaid_share(s, pred, y, 0.0).verdict);
}

TEST_CASE(
    "warm start: the compiler-kept aggregates are used where the labels skip removed operators, not where they pay "
    "them") {
    nb201::Nb201Options o;
    Rng rng(7);
    std::vector<graph::Graph> graphs;
    for (int i = 0; i < 200; ++i)
        graphs.push_back(
            nb201::build_graph(nb201::from_index(static_cast<std::int64_t>(rng.below(nb201::num_architectures))), o));
    // per-operator cost: MACs plus a small fixed overhead; a compiled runtime pays it only for the
    // operators a compiler keeps, an eager one for all; 1 % measurement noise
    const auto label = [&](std::size_t i, bool compiled, double overhead = 0.002) {
        const auto& g = graphs[i];
        const auto costs = cost::annotate(g);
        const auto an = graph::analyse(g);
        double y = 1.0;
        for (std::size_t v = 0; v < g.num_nodes(); ++v)
            if (!compiled || (an[v].kept() && !an[v].constant))
                y += 1e-8 * static_cast<double>(costs[v].macs) + overhead;
        return y * (1.0 + 0.01 * std::sin(1.3 * static_cast<double>(i)));
    };
    const auto split = [&](bool compiled, double overhead) {
        std::array<train::TrainData, 2> d;
        for (std::size_t i = 0; i < graphs.size(); ++i) {
            d[i < 100 ? 0 : 1].graphs.push_back(&graphs[i]);
            d[i < 100 ? 0 : 1].targets.push_back(label(i, compiled, overhead));
        }
        return d;
    };
    int removed = 0;  // networks with operators a compiler removes
    for (std::size_t i = 0; i < graphs.size(); ++i) removed += label(i, true) < label(i, false) - 1e-9;
    REQUIRE(removed > 50);
    for (const bool compiled : {true, false}) {
        CAPTURE(compiled);
        const auto [train, val] = split(compiled, 0.002);
        estimators::HiFiSage est;
        est.prepare(train, 1);
        const auto xt = est.encode(train.graphs), xv = est.encode(val.graphs);
        CHECK(est.warm_start_additive_path(train, xt, val, xv) == !compiled);  // true: the additive baseline alone
        REQUIRE(est.warm_start_test());
        CHECK(std::abs(est.warm_start_test()->share - (compiled ? 1.0 : 0.0)) < 0.2);
        // fit() runs the same warm start and reports its choice; one fit (a full HiFi-SAGE epoch)
        // shows that, on the data where the aggregates are chosen
        if (compiled) {
            const auto r = est.fit(train, val, {.seed = 1, .max_epochs = 1, .threads = 1});
            CHECK(r.summary.find("additive path: additive baseline + compiler-kept aggregates (unpaid share") !=
                  std::string::npos);
        }
    }
    // the documented limit: where the skipped cost is mostly a fixed overhead per operator, the
    // baseline's per-type rates absorb part of it and the share stays well below 1, so the
    // baseline is kept although the device skips every removed operator
    {
        const auto [train, val] = split(true, 0.02);
        estimators::HiFiSage est;
        est.prepare(train, 1);
        CHECK(est.warm_start_additive_path(train, est.encode(train.graphs), val, est.encode(val.graphs)));
        REQUIRE(est.warm_start_test());
        CHECK(est.warm_start_test()->share > 0.2);
        CHECK(est.warm_start_test()->share < 0.8);
    }
    // mismatched encodings and null graphs are errors, not a silent misfit or a crash
    train::TrainData train;
    for (std::size_t i = 0; i < 10; ++i) {
        train.graphs.push_back(&graphs[i]);
        train.targets.push_back(label(i, false));
    }
    estimators::HiFiSage est;
    est.prepare(train, 1);
    const auto xt = est.encode(train.graphs);
    auto short_xt = xt;
    short_xt.pop_back();
    CHECK_THROWS_AS(est.warm_start_additive_path(train, short_xt, {}, {}), shape_error);
    train::TrainData val, null_val;
    val.graphs = {&graphs[20], &graphs[21], &graphs[22]};
    val.targets = {label(20, false), label(21, false), label(22, false)};
    null_val = val;
    null_val.graphs[1] = nullptr;
    CHECK_THROWS_AS(est.warm_start_additive_path(train, xt, null_val, est.encode(val.graphs)), config_error);
}

TEST_CASE(
    "warm start on measured latencies: TFLite on the Pixel 3 skips removed operators, PyTorch on the Xeon Gold runs "
    "them") {
    train::DatasetOptions dopt;
    dopt.columns = {"pixel3", "gold_6240"};
    dopt.threads = 2;
    const auto ds = train::load_dataset(fs::path(DNNCOST_DATA_DIR) / "nb201" / "latency_ms.csv", dopt);
    const auto split = train::make_split(ds.size(), {.n_train = 100, .n_validation = 100, .n_test = 1, .seed = 0});
    for (const std::string device : {"pixel3", "gold_6240"}) {
        CAPTURE(device);
        const auto train = ds.subset(split.train, device), val = ds.subset(split.validation, device);
        estimators::HiFiSage est;
        est.prepare(train, 0);
        const auto xt = est.encode(train.graphs), xv = est.encode(val.graphs);
        CHECK(est.warm_start_additive_path(train, xt, val, xv) == (device != "pixel3"));
    }
}
