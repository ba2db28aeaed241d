// The additive path's warm start (shared ridge solver), model selection against the untrained
// network, and the bf16 GEMM path.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <string>

#include "gradcheck.hpp"

#include <dnncost/estimators/additive.hpp>
#include <dnncost/estimators/presets.hpp>
#include <dnncost/graph/nb201.hpp>
#include <dnncost/nn/gnn/sage_block.hpp>
#include <dnncost/train/dataset.hpp>
#include <dnncost/train/split.hpp>

using namespace dnncost;
using namespace dnncost::nn;
namespace fs = std::filesystem;

namespace {
constexpr GnnConfig skip_preset{.conv = Conv::sage, .depth = 2, .width = 16, .residual = true,
                                .readout = Readout::lcm_sum, .readout_width = 8,
                                .head = {.layers = 2, .width = 16, .additive_skip = true},
                                .features = {.rw_steps = 2, .compiler_view = false},
                                .train = {.batch_size = 8, .max_epochs = 2, .patience = 5}};

// NB201 architectures with a latency-like label: additive in MACs and op counts plus a
// deterministic non-additive wiggle, so that no linear model is exact.
struct Data {
    std::vector<graph::Graph> graphs;
    estimators::TrainData train, val;
    explicit Data(int n_train = 60, int n_val = 40) {
        nb201::Nb201Options o;
        o.cells_per_stage = 1;
        for (int i = 0; i < n_train + n_val; ++i) graphs.push_back(nb201::build_graph(nb201::from_index(i * 151 + 3), o));
        for (int i = 0; i < n_train + n_val; ++i) {
            const auto c = nb201::op_counts(nb201::from_index(i * 151 + 3));
            const double y = 1.0 + 1e-8 * static_cast<double>(cost::total_cost(graphs[static_cast<std::size_t>(i)]).macs) +
                             0.3 * c[3] + 0.05 * std::sin(1.7 * i);
            auto& d = i < n_train ? train : val;
            d.graphs.push_back(&graphs[static_cast<std::size_t>(i)]);
            d.targets.push_back(y);
        }
    }
};
}  // namespace

TEST_CASE("additive path: the untrained GNN estimator predicts exactly what the additive baseline predicts") {
    Data d;
    estimators::AdditiveEstimator add;
    add.fit(d.train, d.val, {});
    Estimator<skip_preset> est;
    est.prepare(d.train, 1);
    const auto xt = est.encode(d.train.graphs), xv = est.encode(d.val.graphs);
    CHECK(est.warm_start_skip(d.train, xt, d.val, xv));  // no compiler view: the baseline alone
    const auto p = est.predict(d.val.graphs, 1);
    const auto q = add.predict(d.val.graphs);
    REQUIRE(p.size() == q.size());
    for (std::size_t i = 0; i < p.size(); ++i) CHECK(p[i] == doctest::Approx(q[i].mean).epsilon(1e-5));
}

TEST_CASE("additive path: a zero network is skipped at prediction, with bit-identical results") {
    Data d;
    Estimator<skip_preset> est;
    est.prepare(d.train, 1);
    const auto xt = est.encode(d.train.graphs), xv = est.encode(d.val.graphs);
    est.warm_start_skip(d.train, xt, d.val, xv);
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
    const auto from_graphs = est.predict(d.val.graphs, 1);
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

TEST_CASE("additive path: HiFi-SAGE with the compiler view predicts from graph-level aggregates alone while its network is zero") {
    Data d;
    estimators::HiFiSage est;
    est.prepare(d.train, 1);
    const auto xt = est.encode(d.train.graphs), xv = est.encode(d.val.graphs);
    est.warm_start_skip(d.train, xt, d.val, xv);
    REQUIRE(est.model().network_is_zero());
    const auto level = est.encode(d.val.graphs, nullptr, true);  // aggregates over all and over compiler-kept operators
    for (std::size_t i = 0; i < xv.size(); ++i) CHECK(level[i].graph_x == xv[i].graph_x);
    const auto p = est.predict(d.val.graphs, 2);
    const auto q = est.predict_encoded(xv, nullptr);
    REQUIRE(p.size() == q.size());
    for (std::size_t i = 0; i < p.size(); ++i) CHECK(p[i] == q[i]);
}

TEST_CASE("additive path: fit keeps the additive baseline when training cannot beat it out of bag") {
    Data d;
    estimators::AdditiveEstimator add;
    add.fit(d.train, d.val, {});
    Estimator<skip_preset> est;
    estimators::FitOptions o;
    o.threads = 1;
    const auto r = est.fit(d.train, d.val, o);
    const std::string& last = r.summary;
    CHECK(r.epochs == 2);
    CHECK(last.find("out-of-bag improvement") != std::string::npos);
    const auto p = est.predict(d.val.graphs, 1);
    const auto q = add.predict(d.val.graphs);
    if (last.find("untrained network kept") != std::string::npos) {
        for (std::size_t i = 0; i < p.size(); ++i) CHECK(p[i] == doctest::Approx(q[i].mean).epsilon(1e-5));
        CHECK(r.validation_metric.find("untrained") != std::string::npos);
    } else {
        CHECK(last.find("trained network kept") != std::string::npos);
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
    o.keep = estimators::Keep::untrained;
    Estimator<skip_preset> untrained;
    const auto ru = untrained.fit(d.train, d.val, o);
    CHECK(ru.summary.find("-> untrained network kept (keep = untrained)") != std::string::npos);
    const auto pu = untrained.predict(d.val.graphs, 1);
    for (std::size_t i = 0; i < pu.size(); ++i) CHECK(pu[i] == doctest::Approx(q[i].mean).epsilon(1e-5));
    CHECK(ru.best_validation == doctest::Approx(validation_score(pu, d.val.targets)).epsilon(1e-6));

    // The same seed trains the same epochs; keep = trained ends with the best of them, whose
    // validation score fit() reports, and which is not the additive baseline.
    o.keep = estimators::Keep::trained;
    Estimator<skip_preset> trained;
    const auto rt = trained.fit(d.train, d.val, o);
    CHECK(rt.summary.find("-> trained network kept (keep = trained)") != std::string::npos);
    const auto pt = trained.predict(d.val.graphs, 1);
    CHECK(rt.best_validation == doctest::Approx(validation_score(pt, d.val.targets)).epsilon(1e-6));
    double moved = 0;
    for (std::size_t i = 0; i < pt.size(); ++i) moved = std::max(moved, std::abs(pt[i] / q[i].mean - 1.0));
    CHECK(moved > 1e-4);

    CHECK(estimators::keep_from_string("auto") == estimators::Keep::automatic);
    CHECK(estimators::keep_from_string("trained") == estimators::Keep::trained);
    CHECK(estimators::keep_from_string("untrained") == estimators::Keep::untrained);
    CHECK_FALSE(estimators::keep_from_string("best").has_value());
    CHECK(estimators::to_string(estimators::Keep::automatic) == "auto");
}

TEST_CASE("additive path: training graphs whose aggregates never vary give the mean label, not an error") {
    nb201::Nb201Options o;
    o.cells_per_stage = 1;
    std::vector<graph::Graph> gs(6, nb201::build_graph(nb201::from_index(77), o));
    estimators::TrainData tr, va;
    for (std::size_t i = 0; i < gs.size(); ++i) {
        auto& d = i < 4 ? tr : va;
        d.graphs.push_back(&gs[i]);
        d.targets.push_back(1.0 + 0.1 * static_cast<double>(i));
    }
    Estimator<skip_preset> est;
    estimators::FitOptions fo;
    fo.threads = 1;
    fo.max_epochs = 1;
    est.fit(tr, va, fo);
    for (double p : est.predict(va.graphs, 1)) CHECK(std::isfinite(p));
    Estimator<skip_preset> cold;
    cold.prepare(tr, 1);
    const auto x = cold.encode(tr.graphs);
    CHECK(cold.warm_start_skip(tr, x, {}, {}));
    for (double p : cold.predict(va.graphs, 1)) CHECK(p == doctest::Approx(1.15).epsilon(1e-6));
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
    const auto a = selection_improvement(untrained, {noise, good}, y, 1);
    CHECK(a.mean > 0.3);
    CHECK(a.mean > a.se);  // kept by fit()
    // epochs that are all worse are rejected even though one of them is "best" on the full set
    std::vector<std::vector<double>> worse;
    for (int e = 0; e < 20; ++e) {
        std::vector<double> p(100);
        for (std::size_t i = 0; i < y.size(); ++i) p[i] = y[i] * (1.0 + 0.2 * rng.normal());
        worse.push_back(p);
    }
    const auto b = selection_improvement(untrained, worse, y, 1);
    CHECK(b.mean < 0);
    CHECK(b.se > 0);
    // the untrained network against itself: no improvement at all
    const auto c = selection_improvement(untrained, {untrained}, y, 1);
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
    const auto g = estimators::RidgeFit::select(x, y, &xv, &yv, 0.0, [&](const Eigen::VectorXd&, const Eigen::VectorXd&) {
        ++calls;
        return 1.0;
    });
    CHECK(calls == 42);  // 2 losses x 21 penalties
    CHECK(g.score == 1.0);
    const auto loo = estimators::RidgeFit::select(x, y, nullptr, nullptr, 0.0);
    CHECK(loo.loo);
    CHECK(loo.beta(1) == doctest::Approx(0.5).epsilon(1e-3));
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
        const auto u = unpaid_share(s, pred, y, 0.0);
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
        CHECK_FALSE(unpaid_share(s, pred, y, 0.0).compiled());
    }
    auto [s, pred, y] = device(0.0, 5);
    // degenerate items are left out
    for (int i = 0; i < 10; ++i) {
        s.push_back(0.3);
        pred.push_back(1.3);
        y.push_back(0.01);
    }
    CHECK(unpaid_share(s, pred, y, 0.05).n == 200);
    // no network with removed operators, or too few items: no verdict, the baseline stays
    const std::vector<double> none(y.size(), 0.0);
    const auto flat = unpaid_share(none, pred, y, 0.0);
    CHECK_FALSE(flat.verdict);
    CHECK_FALSE(flat.compiled());
    CHECK_FALSE(unpaid_share(std::span(s).first(2), std::span(pred).first(2), std::span(y).first(2), 0.0).verdict);
    CHECK_THROWS_AS((void)unpaid_share(std::span(s).first(5), pred, y, 0.0), shape_error);
    // a prediction that is not a number gives no verdict rather than a garbage share
    pred[7] = std::nan("");
    CHECK_FALSE(unpaid_share(s, pred, y, 0.0).verdict);
}

TEST_CASE("warm start: the compiler-kept aggregates are used where the labels skip removed operators, not where they pay them") {
    nb201::Nb201Options o;
    Rng rng(7);
    std::vector<graph::Graph> graphs;
    for (int i = 0; i < 200; ++i) graphs.push_back(nb201::build_graph(nb201::from_index(static_cast<std::int64_t>(rng.below(nb201::num_architectures))), o));
    // per-operator cost: MACs plus a small fixed overhead; a compiled runtime pays it only for the
    // operators a compiler keeps, an eager one for all; 1 % measurement noise
    const auto label = [&](std::size_t i, bool compiled, double overhead = 0.002) {
        const auto& g = graphs[i];
        const auto costs = cost::annotate(g);
        const auto an = graph::analyse(g);
        double y = 1.0;
        for (std::size_t v = 0; v < g.num_nodes(); ++v)
            if (!compiled || (an[v].kept() && !an[v].constant)) y += 1e-8 * static_cast<double>(costs[v].macs) + overhead;
        return y * (1.0 + 0.01 * std::sin(1.3 * static_cast<double>(i)));
    };
    const auto split = [&](bool compiled, double overhead) {
        std::array<estimators::TrainData, 2> d;
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
        CHECK(est.warm_start_skip(train, xt, val, xv) == !compiled);  // true: the additive baseline alone
        REQUIRE(est.warm_start_test());
        CHECK(std::abs(est.warm_start_test()->share - (compiled ? 1.0 : 0.0)) < 0.2);
        const auto r = est.fit(train, val, {.seed = 1, .max_epochs = 1, .threads = 1});
        CHECK(r.summary.find(compiled ? "additive path: additive baseline + compiler-kept aggregates (unpaid share"
                                       : "additive path: additive baseline (unpaid share") != std::string::npos);
    }
    // the documented limit: where the skipped cost is mostly a fixed overhead per operator, the
    // baseline's per-type rates absorb part of it and the share stays well below 1, so the
    // baseline is kept although the device skips every removed operator
    {
        const auto [train, val] = split(true, 0.02);
        estimators::HiFiSage est;
        est.prepare(train, 1);
        CHECK(est.warm_start_skip(train, est.encode(train.graphs), val, est.encode(val.graphs)));
        REQUIRE(est.warm_start_test());
        CHECK(est.warm_start_test()->share > 0.2);
        CHECK(est.warm_start_test()->share < 0.8);
    }
    // mismatched encodings and null graphs are errors, not a silent misfit or a crash
    estimators::TrainData train;
    for (std::size_t i = 0; i < 10; ++i) {
        train.graphs.push_back(&graphs[i]);
        train.targets.push_back(label(i, false));
    }
    estimators::HiFiSage est;
    est.prepare(train, 1);
    const auto xt = est.encode(train.graphs);
    auto short_xt = xt;
    short_xt.pop_back();
    CHECK_THROWS_AS(est.warm_start_skip(train, short_xt, {}, {}), shape_error);
    estimators::TrainData val, null_val;
    val.graphs = {&graphs[20], &graphs[21], &graphs[22]};
    val.targets = {label(20, false), label(21, false), label(22, false)};
    null_val = val;
    null_val.graphs[1] = nullptr;
    CHECK_THROWS_AS(est.warm_start_skip(train, xt, null_val, est.encode(val.graphs)), config_error);
}

TEST_CASE("warm start on measured latencies: TFLite on the Pixel 3 skips removed operators, PyTorch on the Xeon Gold runs them") {
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
        CHECK(est.warm_start_skip(train, xt, val, xv) == (device != "pixel3"));
    }
}

namespace {
// no additive path: the trained network itself is kept, so its GEMM arithmetic shows
constexpr GnnConfig gnn_only = [] {
    GnnConfig c = skip_preset;
    c.head.additive_skip = false;
    c.readout = Readout::sum;
    return c;
}();

/// Runs bf16 products on one unit for its lifetime (amx: the tile unit; avx512: AVX512-BF16
/// with the tile unit forbidden; emulated: both forbidden, as on a CPU without either).
struct UseUnit {
    explicit UseUnit(kernels::Bf16Unit u) {
        kernels::set_amx_allowed(u == kernels::Bf16Unit::amx);
        kernels::set_avx512bf16_allowed(u != kernels::Bf16Unit::emulated);
    }
    ~UseUnit() {
        kernels::set_amx_allowed(true);
        kernels::set_avx512bf16_allowed(true);
    }
    UseUnit(const UseUnit&) = delete;
    UseUnit& operator=(const UseUnit&) = delete;
};
bool unit_available(kernels::Bf16Unit u) {
    return u == kernels::Bf16Unit::amx ? kernels::amx_available()
           : u == kernels::Bf16Unit::avx512 ? kernels::avx512bf16_available()
                                             : true;
}
constexpr kernels::Bf16Unit all_units[] = {kernels::Bf16Unit::amx, kernels::Bf16Unit::avx512, kernels::Bf16Unit::emulated};
Mat<double> rounded(const Mat<float>& m) {
    Mat<double> r(m.rows(), m.cols());
    for (Index i = 0; i < m.size(); ++i) r.data()[i] = kernels::from_bf16(kernels::to_bf16(m.data()[i]));
    return r;
}
}  // namespace

TEST_CASE("bf16 GEMMs, on AMX, on AVX512-BF16 and emulated: the exact product of the bf16-rounded inputs up to fp32 sums, all shapes, threads") {
    if (!kernels::amx_available()) MESSAGE("this CPU has no AMX-BF16: the tile unit is not checked");
    if (!kernels::avx512bf16_available()) MESSAGE("this CPU has no AVX512-BF16: only the emulated bf16 path is checked");
    Rng rng(9);
    const auto rnd = [&](Index r, Index c) {
        Mat<float> m(r, c);
        for (Index i = 0; i < m.size(); ++i) m.data()[i] = static_cast<float>(rng.normal());
        return m;
    };
    ThreadPool pool(2);
    // {50, 77, 64} and {40, 1003, 128}: depth padded, width not (pack_b then zeroes only the last
    // depth block, over what the products before left in the reused buffers); {64, 65, 33} and
    // {37, 71, 45}: column blocks that overhang n; {300, 256, 128}: several 32-row blocks per thread
    for (const auto& [m, k, n] : std::vector<std::array<Index, 3>>{{300, 256, 128}, {50, 77, 64}, {37, 71, 45}, {5, 3, 7}, {64, 65, 33}, {40, 1003, 128}}) {
        for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool}) {
            const Mat<float> a = rnd(m, k), b = rnd(k, n), at = rnd(k, m), bt = rnd(n, k);
            const bool bf16 = static_cast<double>(m) * n * k >= kernels::bf16_threshold_macs;  // smaller products stay fp32
            // independent truth: double-precision products of the inputs as each path should see them
            const auto in = [&](const Mat<float>& x) { return bf16 ? rounded(x) : Mat<double>(x.cast<double>()); };
            const Mat<double> ab = in(a) * in(b), atb = in(at).transpose() * in(b), abt = in(a) * in(bt).transpose();
            const Mat<double> ab_fp = a.cast<double>() * b.cast<double>();
            Mat<float> c[3], t[3], u[3];
            for (const auto unit : all_units) {
                if (!unit_available(unit)) continue;
                const auto e = static_cast<int>(unit);
                const UseUnit use(unit);
                const kernels::PrecisionScope scope(Precision::bf16);
                CHECK(kernels::precision() == Precision::bf16);
                CHECK(kernels::bf16_unit() == unit);
                kernels::gemm<float>(c[e], a, b, false, p);
                kernels::gemm<float>(c[e], a, b, true, p);  // accumulate: 2 A B
                kernels::gemm_tn<float>(t[e], at, b, false, p);
                kernels::gemm_nt<float>(u[e], a, bt, false, p);
            }
            CHECK(kernels::precision() == Precision::fp32);
            CHECK(kernels::amx_in_use() == kernels::amx_available());
            INFO(m << "x" << k << "x" << n << (bf16 ? ", bf16" : ", below the bf16 threshold: fp32"));
            // products of bf16 values are exact in fp32: what remains is the rounding of k fp32
            // additions, at most ~k u sum|a b| with u = 2^-24 and sum|a b| ~ 0.64 k for N(0,1) inputs
            const double tol = 2.0 * static_cast<double>(k) * 6e-8 * 0.64 * static_cast<double>(k);
            for (const auto unit : all_units) {
                const auto e = static_cast<int>(unit);
                if (c[e].size() == 0) continue;
                INFO(std::string(kernels::to_string(unit)));
                REQUIRE(c[e].rows() == m);
                REQUIRE(c[e].cols() == n);
                CHECK((c[e].cast<double>() - 2.0 * ab).cwiseAbs().maxCoeff() < 2 * tol);
                CHECK((t[e].cast<double>() - atb).cwiseAbs().maxCoeff() < tol);
                CHECK((u[e].cast<double>() - abt).cwiseAbs().maxCoeff() < tol);
                if (bf16 && m * n * k >= 32768)  // really bf16: the rounding of the inputs shows
                    CHECK((c[e].cast<double>() - 2.0 * ab_fp).cwiseAbs().maxCoeff() > 1e-3);
            }
        }
    }
    // rounding to bf16: nearest, ties to even; NaN stays NaN
    CHECK(kernels::from_bf16(kernels::to_bf16(1.0f)) == 1.0f);
    CHECK(kernels::from_bf16(kernels::to_bf16(1.0f + 1.0f / 256.0f)) == 1.0f);             // tie -> even (down)
    CHECK(kernels::from_bf16(kernels::to_bf16(1.0f + 3.0f / 256.0f)) == 1.0f + 4.0f / 256.0f);  // tie -> even (up)
    CHECK(std::isnan(kernels::from_bf16(kernels::to_bf16(std::nanf("")))));
}

TEST_CASE("bf16 training: a GNN trained with bf16 GEMMs predicts close to its fp32 twin; the default is bf16 where a bf16 unit runs it") {
    Data d;
    Estimator<gnn_only> a, b, dflt;
    estimators::FitOptions o;
    o.threads = 1;
    o.max_epochs = 3;
    dflt.fit(d.train, d.val, o);
    CHECK(dflt.precision() == kernels::default_precision());
    CHECK(kernels::default_precision() == (kernels::bf16_in_hardware() ? Precision::bf16 : Precision::fp32));
    CHECK(kernels::bf16_in_hardware() == (kernels::amx_available() || kernels::avx512bf16_available()));
    {  // without a bf16 unit the default is fp32 (bf16 would only be emulated, slower)
        const UseUnit emulated(kernels::Bf16Unit::emulated);
        CHECK(kernels::default_precision() == Precision::fp32);
        Estimator<gnn_only> plain;
        plain.fit(d.train, d.val, o);
        CHECK(plain.precision() == Precision::fp32);
    }
    o.precision = Precision::fp32;
    a.fit(d.train, d.val, o);
    o.precision = Precision::bf16;
    b.fit(d.train, d.val, o);
    CHECK(a.precision() == Precision::fp32);
    CHECK(b.precision() == Precision::bf16);
    const auto pa = a.predict(d.val.graphs, 1), pb = b.predict(d.val.graphs, 1);
    double mean = 0, worst = 0;
    for (std::size_t i = 0; i < pa.size(); ++i) {
        REQUIRE(std::isfinite(pb[i]));
        mean += std::abs(pa[i]) / static_cast<double>(pa.size());
        worst = std::max(worst, std::abs(pa[i] - pb[i]));
    }
    INFO("largest fp32/bf16 difference " << worst << " (mean prediction " << mean << ")");
    CHECK(worst < 0.05 * mean);
    CHECK(worst > 0.0);  // the bf16 arithmetic really ran (on AMX or emulated)
}

TEST_CASE("bf16 model: saved with its precision, predicts the same numbers on every bf16 unit and emulated, a version-2 file loads as fp32") {
    Data d;
    Estimator<gnn_only> est;
    estimators::FitOptions o;
    o.threads = 1;
    o.max_epochs = 3;
    o.precision = Precision::bf16;
    est.fit(d.train, d.val, o);
    const auto bytes = est.save("skip");
    auto loaded = Estimator<gnn_only>::load(bytes, "skip");
    CHECK(loaded.precision() == Precision::bf16);
    const auto p_here = est.predict(d.val.graphs, 1);
    CHECK(loaded.predict(d.val.graphs, 1) == p_here);  // same machine, same arithmetic: bit-identical
    // as on a CPU with the other unit or with neither: the same bf16 arithmetic, fp32 sums in
    // another order
    double worst = 0;
    for (const auto unit : all_units) {
        if (!unit_available(unit)) continue;
        std::vector<double> p_unit;
        {
            const UseUnit use(unit);
            p_unit = loaded.predict(d.val.graphs, 1);
        }
        double w = 0;
        for (std::size_t i = 0; i < p_here.size(); ++i) w = std::max(w, std::abs(p_unit[i] - p_here[i]) / std::abs(p_here[i]));
        MESSAGE("largest relative difference, here (" << std::string(kernels::to_string(kernels::bf16_unit())) << ") vs "
                                                            << std::string(kernels::to_string(unit)) << ": " << w);
        CHECK(w < 1e-4);
        worst = std::max(worst, w);
    }
    // and not what the same weights give in fp32 (so the comparison above is not vacuous)
    loaded.set_precision(Precision::fp32);
    const auto p_fp32 = loaded.predict(d.val.graphs, 1);
    double fp32_diff = 0;
    for (std::size_t i = 0; i < p_here.size(); ++i) fp32_diff = std::max(fp32_diff, std::abs(p_fp32[i] - p_here[i]) / std::abs(p_here[i]));
    MESSAGE("largest relative bf16 / fp32 difference " << fp32_diff);
    CHECK(fp32_diff > 10 * worst);

    // a payload of version 2 (before the precision field) loads, as fp32
    const auto c = io::read_container(bytes, "skip", "<test>");
    io::BinaryReader r(c.payload, "<test>");
    REQUIRE(r.get_u32() == 3);
    const auto preset = r.get_string();
    const std::size_t at = 4 + 8 + preset.size();
    std::string v2 = c.payload.substr(0, at) + c.payload.substr(at + 4);
    v2[0] = 2;
    const auto old = Estimator<gnn_only>::load(io::write_container("skip", c.config_hash, v2), "skip");
    CHECK(old.precision() == Precision::fp32);
    // an unknown precision code is a clear error
    std::string bad = c.payload;
    bad[at] = 7;
    CHECK_THROWS_WITH_AS(Estimator<gnn_only>::load(io::write_container("skip", c.config_hash, bad), "skip", "m.dnnc"),
                         doctest::Contains("precision code 7"), parse_error);
}

TEST_CASE("bf16 inference: the SAGE block's direct packing and frozen weights give the unfused bf16 result") {
    Rng rng(21);
    // 64: one 64-column block; 160: a 128-column block in registers plus a 32-column one;
    // 40: not a multiple of 32, the generic packing path
    for (const int d : {64, 160, 40}) {
        INFO("width " << d);
        std::vector<features::EncodedGraph> graphs;
        for (int n : {40, 1, 75, 9}) graphs.push_back(test::random_graph(rng, n, d));  // 125 nodes: not a multiple of 32
        std::vector<const features::EncodedGraph*> ptrs;
        for (const auto& g : graphs) ptrs.push_back(&g);
        features::GraphBatch<float> batch;
        batch.build(ptrs);
        SageResidualBlock<float> block(d, rng, Aggr::mean, features::Direction::predecessors, 0.06);
        const Context<float> eval{&batch, false, nullptr, nullptr, false}, infer{&batch, false, nullptr, nullptr, true};
        const Mat<float> fp32 = block.forward(batch.x, infer);
        Mat<float> unfused, direct, frozen1, frozen2;
        {
            const kernels::PrecisionScope scope(Precision::bf16);
            unfused = block.forward(batch.x, eval);  // [x | agg] built in fp32, then packed
            direct = block.forward(batch.x, infer);  // [x | agg] written straight into the packed operand
            const kernels::FrozenWeightsScope frozen({block.parameters()[0]->value.data()});
            frozen1 = block.forward(batch.x, infer);
            frozen2 = block.forward(batch.x, infer);  // the weight packed by the first call
        }
        const double scale = fp32.cwiseAbs().maxCoeff();
        INFO("output scale " << scale);
        // the aggregate is summed in another order than Eigen's, so a few inputs may round to the
        // neighbouring bf16 value: differences of a bf16 ulp of the input, not more
        CHECK((direct - unfused).cwiseAbs().maxCoeff() < 2e-2 * scale);
        CHECK((direct - fp32).cwiseAbs().maxCoeff() < 5e-2 * scale);
        CHECK(frozen1 == direct);
        CHECK(frozen2 == direct);
        if (kernels::bf16_in_hardware()) CHECK((direct - fp32).cwiseAbs().maxCoeff() > 0.0);  // bf16 really ran
    }

    // only listed weights are frozen: a right operand buffer reused with new contents is repacked
    const Mat<float> a = Mat<float>::Random(70, 96), w = Mat<float>::Random(96, 48);
    Mat<float> act = Mat<float>::Random(96, 48), c_frozen, c_fresh, c_w1, c_w2;
    {
        const kernels::PrecisionScope scope(Precision::bf16);
        const kernels::FrozenWeightsScope frozen({w.data()});
        kernels::gemm<float>(c_w1, a, w, false, nullptr);
        kernels::gemm<float>(c_frozen, a, act, false, nullptr);
        act.array() += 1.0f;
        kernels::gemm<float>(c_frozen, a, act, false, nullptr);
        kernels::gemm<float>(c_w2, a, w, false, nullptr);
    }
    {
        const kernels::PrecisionScope scope(Precision::bf16);
        kernels::gemm<float>(c_fresh, a, act, false, nullptr);
    }
    CHECK(c_frozen == c_fresh);
    CHECK(c_w1 == c_w2);
    CHECK((c_fresh.cast<double>() - a.cast<double>() * act.cast<double>()).cwiseAbs().maxCoeff() < 0.05 * std::sqrt(96.0) * 2.0);
}

TEST_CASE("bf16 packed operands are cache-line aligned") {
    kernels::Bf16Workspace ws;
    kernels::pack_a(ws, Mat<float>::Random(33, 40));
    kernels::pack_b(ws, Mat<float>::Random(40, 17));
    CHECK(reinterpret_cast<std::uintptr_t>(ws.a.data()) % 64 == 0);
    CHECK(reinterpret_cast<std::uintptr_t>(ws.b.data()) % 64 == 0);
    CHECK(ws.mp == 64);
    CHECK(ws.kp == 64);
    CHECK(ws.np == 32);
    // element (i, k) of A sits in tile (i / 16, k / 32) at row i % 16, column k % 32
    const Mat<float> a = Mat<float>::Random(33, 40);
    kernels::pack_a(ws, a);
    CHECK(kernels::from_bf16(ws.a[static_cast<std::size_t>((2 * 2 + 1) * 512 + 0 * 32 + 7)]) ==
          kernels::from_bf16(kernels::to_bf16(a(32, 39))));
    CHECK(ws.a[static_cast<std::size_t>((2 * 2 + 1) * 512 + 0 * 32 + 8)] == 0);  // depth padding
    CHECK(ws.a[static_cast<std::size_t>((2 * 2 + 0) * 512 + 1 * 32 + 0)] == 0);  // row padding
}

TEST_CASE("bf16 packing of S^T (weight gradients): every element in place, padding zero, odd shapes and strides") {
    // the packed A of a weight-gradient product S^T B holds A(i, d) = bf16(S(d, i)) in tile
    // (i / 16, d / 32) at row i % 16, column d % 32; rows of S beyond `rows` and columns beyond
    // `cols` are zero. On AMX machines this runs the in-register transpose, elsewhere the scalar one.
    Rng rng(21);
    for (const auto [rows, cols, ld] : {std::array<Eigen::Index, 3>{1, 1, 1}, {31, 33, 40}, {64, 32, 32}, {100, 128, 130},
                                        {257, 70, 70}, {5, 96, 200}}) {
        std::vector<float> s(static_cast<std::size_t>(rows * ld));
        for (auto& v : s) v = static_cast<float>(rng.normal());
        kernels::Bf16Workspace ws;
        ws.a.assign(4096, 0xFFFF);  // stale contents must not leak into padding
        kernels::pack_a_transposed(ws, s.data(), rows, cols, ld);
        CAPTURE(rows);
        CAPTURE(cols);
        REQUIRE(ws.mp == (cols + 31) / 32 * 32);
        REQUIRE(ws.kp == (rows + 31) / 32 * 32);
        const Eigen::Index kt = ws.kp / 32;
        std::size_t wrong = 0;
        for (Eigen::Index i = 0; i < ws.mp; ++i)
            for (Eigen::Index d = 0; d < ws.kp; ++d) {
                const std::uint16_t want = i < cols && d < rows ? kernels::to_bf16(s[static_cast<std::size_t>(d * ld + i)]) : 0;
                wrong += ws.a[static_cast<std::size_t>(((i / 16) * kt + d / 32) * 512 + (i % 16) * 32 + d % 32)] != want;
            }
        CHECK(wrong == 0);
    }
}
