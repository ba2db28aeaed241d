// The graph-level residual of the kernel device model: its loss gradient against central
// differences, the zero residual returning the kernel sum exactly, a planted residual learnt on
// synthetic kernel graphs (and noise not fitted), the saved model, and the sample built from a
// hand-built graph.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include <dnncost/device/fusion_rules.hpp>
#include <dnncost/device/kernel_features.hpp>
#include <dnncost/device/kernel_graph.hpp>
#include <dnncost/device/kernel_residual.hpp>

#include "kernel_graph_fixtures.hpp"

using namespace dnncost;
using device::KernelGraphSample;
using device::KernelResidual;
using device::KernelResidualOptions;

namespace {

/// A random kernel graph of 3-10 kernels with `f` features: a chain plus a few skip edges.
/// Feature 0 of every kernel is drawn around a per-network level, so that its mean over the
/// kernels varies from network to network.
KernelGraphSample random_sample(Rng& rng, int f) {
    const int n = 3 + static_cast<int>(rng.below(8));
    KernelGraphSample s;
    s.features.resize(n, f);
    const double level = rng.normal();
    for (int k = 0; k < n; ++k) {
        s.features(k, 0) = level + 0.5 * rng.normal();
        for (int j = 1; j < f; ++j) s.features(k, j) = rng.normal();
        s.kernel_ms.push_back(0.05 + rng.uniform());
    }
    for (int k = 1; k < n; ++k) {
        s.edges.emplace_back(k - 1, k);
        if (k >= 2 && rng.bernoulli(0.3)) s.edges.emplace_back(static_cast<int>(rng.below(static_cast<std::uint64_t>(k - 1))), k);
    }
    s.sum_ms = 0.1;
    for (double ms : s.kernel_ms) s.sum_ms += ms;
    return s;
}

std::vector<KernelGraphSample> random_set(Rng& rng, int count, int f) {
    std::vector<KernelGraphSample> v;
    for (int i = 0; i < count; ++i) v.push_back(random_sample(rng, f));
    return v;
}

double mean_feature0(const KernelGraphSample& s) { return s.features.col(0).mean(); }

/// measured = sum * exp(0.3 tanh(mean over kernels of feature 0)).
std::vector<double> planted_ms(const std::vector<KernelGraphSample>& set) {
    std::vector<double> ms;
    for (const auto& s : set) ms.push_back(s.sum_ms * std::exp(0.3 * std::tanh(mean_feature0(s))));
    return ms;
}

/// Mean of log(predicted / measured)^2.
double log_mse(const KernelResidual& m, const std::vector<KernelGraphSample>& set, const std::vector<double>& ms) {
    double s = 0;
    for (std::size_t i = 0; i < set.size(); ++i) {
        const double e = std::log(m.predict_ms(set[i]) / ms[i]);
        s += e * e;
    }
    return s / static_cast<double>(set.size());
}

double zero_log_mse(const std::vector<KernelGraphSample>& set, const std::vector<double>& ms) {
    double s = 0;
    for (std::size_t i = 0; i < set.size(); ++i) {
        const double e = std::log(set[i].sum_ms / ms[i]);
        s += e * e;
    }
    return s / static_cast<double>(set.size());
}

}  // namespace

TEST_CASE("kernel residual: loss gradient of every layer matches central differences") {
    Rng rng(11);
    const auto set = random_set(rng, 4, 3);
    std::vector<double> ms;
    for (const auto& s : set) ms.push_back(s.sum_ms * std::exp(rng.uniform(-0.6, 0.6)));
    KernelResidualOptions o;
    o.hidden = 5;
    o.layers = 2;
    KernelResidual m(o);
    m.initialise(set, 3);
    auto params = m.parameters();
    REQUIRE(params.size() == 6);  // two SAGE layers (weight, bias) and the head (weight, bias)
    // a head away from zero, so that gradients reach every layer; moderate, so tanh is not flat
    for (auto* p : params)
        for (Index i = 0; i < p->value.size(); ++i) p->value.data()[i] = 0.4 * rng.normal();
    m.loss_and_gradient(set, ms);
    std::vector<Mat<double>> analytic;
    for (auto* p : params) analytic.push_back(p->grad);
    const double eps = 1e-6;
    for (std::size_t pi = 0; pi < params.size(); ++pi) {
        auto* p = params[pi];
        const Index n = p->value.size();
        for (Index i : {Index{0}, n / 2, n - 1}) {
            double& v = p->value.data()[i];
            const double keep = v;
            v = keep + eps;
            const double lp = m.loss_and_gradient(set, ms);
            v = keep - eps;
            const double lm = m.loss_and_gradient(set, ms);
            v = keep;
            const double numeric = (lp - lm) / (2 * eps);
            const double a = analytic[pi].data()[i];
            INFO("parameter " << pi << " (" << p->name << ") element " << i << ": numeric " << numeric
                              << " analytic " << a);
            CHECK(std::abs(numeric - a) <= 1e-4 * std::max({std::abs(numeric), std::abs(a), 1e-6}));
        }
    }
    // the gradient is of the loss, not accumulated over calls
    const double l1 = m.loss_and_gradient(set, ms);
    CHECK(l1 > 0);
    CHECK(params.back()->grad(0, 0) == doctest::Approx(analytic.back()(0, 0)).epsilon(1e-12));
}

TEST_CASE("kernel residual: the zero residual returns the kernel sum exactly and the factor is bounded") {
    Rng rng(5);
    const auto set = random_set(rng, 6, 4);
    const KernelResidual untrained;
    CHECK_FALSE(untrained.fitted());
    CHECK(untrained.is_zero());
    for (const auto& s : set) {
        CHECK(untrained.factor(s) == 1.0);
        CHECK(untrained.predict_ms(s) == s.sum_ms);
    }
    // initialised, head still at zero: exp(0) times the sum, bit for bit
    KernelResidual fresh;
    fresh.initialise(set, 9);
    CHECK(fresh.fitted());
    for (const auto& s : set) CHECK(fresh.predict_ms(s) == s.sum_ms);

    // large random weights and absurd (finite) features: always within [1/4, 4]
    for (auto* p : fresh.parameters())
        for (Index i = 0; i < p->value.size(); ++i) p->value.data()[i] = 1e3 * rng.normal();
    auto absurd = set;
    absurd[0].features.setConstant(1e300);
    absurd[1].features.setConstant(-1e300);
    absurd[2].features(0, 1) = std::numeric_limits<double>::max();
    absurd[3].features *= 1e12;
    bool saw_high = false, saw_low = false;
    for (const auto& s : absurd) {
        const double f = fresh.factor(s);
        CHECK(std::isfinite(f));
        CHECK(f >= 0.25);
        CHECK(f <= 4.0);
        saw_high = saw_high || f > 3.9;
        saw_low = saw_low || f < 0.26;
    }
    CHECK((saw_high || saw_low));  // such weights do drive the factor to its bounds

    auto bad = set[0];
    bad.features(0, 0) = std::nan("");
    CHECK_THROWS_AS(fresh.factor(bad), config_error);
    bad = set[0];
    bad.kernel_ms.pop_back();
    CHECK_THROWS_AS(fresh.factor(bad), shape_error);
    bad = set[0];
    bad.edges.emplace_back(0, static_cast<int>(bad.features.rows()));
    CHECK_THROWS_AS(fresh.factor(bad), shape_error);
    bad = set[0];
    bad.features.conservativeResize(Eigen::NoChange, 3);
    CHECK_THROWS_AS(fresh.factor(bad), shape_error);
    CHECK_THROWS_AS(KernelResidual(KernelResidualOptions{.hidden = 0}), config_error);
}

TEST_CASE("kernel residual: a planted residual is learnt, noise is not") {
    Rng rng(21);
    const auto train = random_set(rng, 240, 4), val = random_set(rng, 120, 4), test = random_set(rng, 120, 4);
    KernelResidualOptions o;
    o.hidden = 16;
    o.learning_rate = 3e-3;
    o.max_epochs = 200;
    o.patience = 30;
    {
        const auto t_ms = planted_ms(train), v_ms = planted_ms(val), x_ms = planted_ms(test);
        KernelResidual m(o);
        const auto r = m.fit(train, t_ms, val, v_ms, {});
        INFO(r.summary);
        CHECK_FALSE(m.is_zero());
        CHECK(r.epochs >= 1);
        const double before = zero_log_mse(val, v_ms), after = log_mse(m, val, v_ms);
        CHECK(after <= 0.5 * before);
        CHECK(r.best_validation == doctest::Approx(after).epsilon(1e-5));
        // batched and one at a time agree (a network without kernels keeps its sum)
        auto mixed = std::vector<KernelGraphSample>(val.begin(), val.begin() + 40);
        mixed[5] = KernelGraphSample{Mat<double>(0, 4), {}, {}, 0.3};
        const auto fs = m.factors(mixed);
        REQUIRE(fs.size() == mixed.size());
        CHECK(fs[5] == 1.0);
        for (std::size_t i = 0; i < mixed.size(); ++i) CHECK(fs[i] == doctest::Approx(m.factor(mixed[i])).epsilon(1e-12));
        // and on networks it saw neither in training nor in early stopping
        CHECK(log_mse(m, test, x_ms) <= 0.5 * zero_log_mse(test, x_ms));
    }
    {
        // measured = sum * exp(noise), independent of the graphs
        std::vector<double> t_ms, v_ms;
        for (const auto& s : train) t_ms.push_back(s.sum_ms * std::exp(0.1 * rng.normal()));
        for (const auto& s : val) v_ms.push_back(s.sum_ms * std::exp(0.1 * rng.normal()));
        KernelResidual m(o);
        const auto r = m.fit(train, t_ms, val, v_ms, {});
        INFO(r.summary);
        CHECK(log_mse(m, val, v_ms) <= zero_log_mse(val, v_ms) + 1e-15);
        if (m.is_zero()) {
            CHECK(r.summary.find("kept the zero residual") != std::string::npos);
            for (const auto& s : val) CHECK(m.predict_ms(s) == s.sum_ms);
        }
    }
    {
        // bad inputs name the set and the network
        auto t_ms = planted_ms(train);
        t_ms[7] = -1;
        KernelResidual m(o);
        CHECK_THROWS_WITH_AS(m.fit(train, t_ms, val, planted_ms(val), {}),
                             doctest::Contains("training network 7"), config_error);
        CHECK_THROWS_AS(m.fit(train, planted_ms(val), val, planted_ms(val), {}), shape_error);
        auto v2 = val;
        v2[3].kernel_ms[0] = 0;
        CHECK_THROWS_WITH_AS(m.fit(train, planted_ms(train), v2, planted_ms(val), {}),
                             doctest::Contains("validation network 3"), config_error);
    }
}

TEST_CASE("kernel residual: save and load give identical predictions, a damaged payload is an error") {
    Rng rng(31);
    const auto train = random_set(rng, 60, 4), val = random_set(rng, 30, 4);
    KernelResidualOptions o;
    o.hidden = 8;
    o.max_epochs = 15;
    o.learning_rate = 1e-2;
    KernelResidual m(o);
    m.fit(train, planted_ms(train), val, planted_ms(val), {});
    REQUIRE(m.fitted());
    io::BinaryWriter w;
    m.save(w);
    const std::string bytes = w.bytes();
    io::BinaryReader r(bytes, "residual.bin");
    const auto back = KernelResidual::load(r);
    r.expect_end();
    CHECK(back.fitted());
    CHECK(back.is_zero() == m.is_zero());
    for (const auto& s : val) CHECK(back.predict_ms(s) == m.predict_ms(s));
    const KernelResidual copy = m;  // NOLINT(performance-unnecessary-copy-initialization): the copy is the test
    for (const auto& s : val) CHECK(copy.predict_ms(s) == m.predict_ms(s));

    // the same seed gives the same model; another seed, another one
    KernelResidual again(o), other(o);
    again.fit(train, planted_ms(train), val, planted_ms(val), {});
    other.fit(train, planted_ms(train), val, planted_ms(val), {.seed = 2});
    bool differs = false;
    for (const auto& s : val) {
        CHECK(again.predict_ms(s) == m.predict_ms(s));
        differs = differs || other.predict_ms(s) != m.predict_ms(s);
    }
    CHECK(differs);

    for (std::size_t cut : {bytes.size() - 1, bytes.size() / 2, std::size_t{10}, std::size_t{0}}) {
        INFO("truncated to " << cut << " bytes");
        io::BinaryReader t(std::string_view(bytes).substr(0, cut), "residual.bin");
        CHECK_THROWS_AS(KernelResidual::load(t), parse_error);
    }
    // the last 8 bytes are the head's bias: make it NaN
    std::string nan_bytes = bytes;
    const double nan = std::numeric_limits<double>::quiet_NaN();
    std::memcpy(nan_bytes.data() + nan_bytes.size() - 8, &nan, 8);
    io::BinaryReader nr(nan_bytes, "residual.bin");
    CHECK_THROWS_WITH_AS(KernelResidual::load(nr), doctest::Contains("not a finite number"), parse_error);

    // an unfitted residual round-trips as the zero residual
    io::BinaryWriter w0;
    KernelResidual{}.save(w0);
    io::BinaryReader r0(w0.bytes());
    const auto zero = KernelResidual::load(r0);
    CHECK(zero.is_zero());
    CHECK(zero.predict_ms(val[0]) == val[0].sum_ms);
}

TEST_CASE("kernel residual: the sample of Conv -> Relu -> Conv under 'fuse Conv Relu'") {
    using namespace kg_fixtures;
    Graph g("conv_relu_conv");
    const int x = g.add_input("x", {1, 16, 8, 8});
    const int c1 = conv(g, "conv1", x, 32, 3);
    const int r1 = same(g, "Relu", "relu", {c1});
    g.mark_output(conv(g, "conv2", r1, 16, 1));
    g.validate();
    const auto rules =
        device::FusionRules::parse("dnncost-fusion-rules 1\nfuse Conv Relu operands=none\n", "test rules");
    const auto kg = device::kernel_graph(g, rules);
    REQUIRE(kg.kernels.size() == 2);  // Conv+Relu, then Conv
    CHECK(kg.kernels[0].kind == "Conv+Relu");

    const std::vector<double> kernel_ms{0.7, 1.3};
    const auto s = device::make_kernel_graph_sample(g, kg, 0, kernel_ms, 0.05);
    const auto ncols = static_cast<Index>(device::kernel_feature_names().size()) + 1;
    REQUIRE(s.features.rows() == 2);
    REQUIRE(s.features.cols() == ncols);
    CHECK(s.features(0, ncols - 1) == doctest::Approx(std::log(0.7)));
    CHECK(s.features(1, ncols - 1) == doctest::Approx(std::log(1.3)));
    for (std::size_t k = 0; k < 2; ++k) {
        const auto f = device::kernel_features(g, kg, k, 0).values;
        for (std::size_t j = 0; j < f.size(); ++j)
            CHECK(s.features(static_cast<Index>(k), static_cast<Index>(j)) == f[j]);
    }
    CHECK(s.edges == std::vector<std::pair<int, int>>{{0, 1}});
    CHECK(s.kernel_ms == kernel_ms);
    CHECK(s.sum_ms == doctest::Approx(2.05));

    CHECK_THROWS_AS(device::make_kernel_graph_sample(g, kg, 0, std::vector<double>{1.0}, 0.0), shape_error);
    CHECK_THROWS_AS(device::make_kernel_graph_sample(g, kg, 0, std::vector<double>{1.0, 0.0}, 0.0), config_error);
    CHECK_THROWS_AS(device::make_kernel_graph_sample(g, kg, 0, kernel_ms, -1.0), config_error);
}
