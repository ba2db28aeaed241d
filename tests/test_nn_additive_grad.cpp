// The additive path of a GNN: gradients of the whole model by central differences.
// Apart from test_nn_train.cpp: together they need more than 2 GB of compiler memory under ASan.
#include <doctest/doctest.h>

#include <type_traits>

#include <dnncost/estimators/presets.hpp>
#include <dnncost/estimators/registry.hpp>

#include "gradcheck.hpp"
#include "nn_configs.hpp"

using namespace dnncost;
using namespace dnncost::nn;
using dnncost::test::small_sum;

TEST_CASE(
    "additive path: gradients of the whole model (path weight, path bias, head, encoder) by central differences") {
    GnnConfig cfg = small_sum;
    cfg.head.additive_path = true;
    cfg.readout = Readout::lcm_sum;
    cfg.width = 6;
    Rng rng(5);
    GnnModel<double> m(cfg, 4, rng, 0.25);
    REQUIRE(m.has_additive_path());
    std::vector<double> w{0.3, -0.7, 1.1, 0.2};
    m.set_additive_path(w, 0.4);
    dnncost::test::TestBatch tb(4);
    Context<double> ctx{&tb.batch, false, nullptr, nullptr};
    // the path adds sum(x) * scale . w + b to the GNN's prediction
    const Mat<double> full = m.forward(ctx);
    Mat<double> sums;
    m.additive_path_inputs(tb.batch, sums);
    for (int g = 0; g < 4; ++g) {
        double s = 0;
        for (int v = tb.batch.offset(g); v < tb.batch.offset(g + 1); ++v)
            for (int j = 0; j < 4; ++j) s += tb.batch.x(v, j) * 0.25 * w[static_cast<std::size_t>(j)];
        CHECK(sums.row(g).dot(Eigen::Vector4d(w[0], w[1], w[2], w[3])) == doctest::Approx(s));
    }
    Mat<double> r(full.rows(), 1);
    for (Index i = 0; i < r.rows(); ++i) r(i, 0) = rng.normal();
    const auto loss = [&] { return m.forward(ctx).cwiseProduct(r).sum(); };
    const auto params = m.parameters();
    for (auto* p : params) p->zero_grad();
    m.forward(ctx);
    m.backward(r, nullptr, ctx);
    int checked_path = 0;
    for (auto* p : params) {
        const Index step = std::max<Index>(1, p->value.size() / 10);
        for (Index i = 0; i < p->value.size(); i += step) {
            const double keep = p->value.data()[i], eps = 1e-6;
            p->value.data()[i] = keep + eps;
            const double lp = loss();
            p->value.data()[i] = keep - eps;
            const double lm = loss();
            p->value.data()[i] = keep;
            const double numeric = (lp - lm) / (2 * eps), analytic = p->grad.data()[i];
            INFO(p->name << "[" << i << "] numeric " << numeric << " analytic " << analytic);
            CHECK(std::abs(numeric - analytic) / std::max({1.0, std::abs(numeric), std::abs(analytic)}) < 1e-6);
            checked_path += p->name.rfind("additive.", 0) == 0;
        }
    }
    CHECK(checked_path == 5);
    CHECK_THROWS_AS(m.set_additive_path({1.0}, 0.0), config_error);
}
