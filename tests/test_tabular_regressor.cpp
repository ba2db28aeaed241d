// Per-kernel regressors (MLP on Eigen, gradient-boosted trees through XGBoost) on synthetic
// kernels whose latency law is known: accuracy against the noise floor, extrapolation,
// round trips through bytes, damaged bytes, determinism, and the choice by held-out accuracy.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <dnncost/device/mlp_regressor.hpp>
#include <dnncost/device/tabular_choice.hpp>
#include <dnncost/device/tabular_regressor.hpp>
#include <dnncost/io/serialize.hpp>
#include <dnncost/train/metrics.hpp>
#if defined(DNNCOST_HAS_XGBOOST)
#include <dnncost/core/rng.hpp>
#include <dnncost/device/gbt_regressor.hpp>
#include <limits>
#endif

using namespace dnncost;
using namespace dnncost::device;

namespace {

// Noise of the synthetic measurements: latency x exp(sigma Z), Z standard normal.
constexpr double noise_sigma = 0.02;
// MAPE of a perfect model of the law on noisy data: E|exp(sigma Z) - 1| = sigma sqrt(2/pi) + O(sigma^2).
const double noise_floor = noise_sigma * std::sqrt(2.0 / 3.141592653589793);

struct Kernels {
    Mat<double> x;
    std::vector<double> latency_ms;  ///< measured (noisy)
    std::vector<double> law_ms;      ///< the noiseless law
    std::vector<std::string> names{"c_in",  "c_out",     "spatial", "kernel", "flops",
                                   "bytes", "intensity", "params",  "aligned16"};
};

// The latency law: a roofline (50 GFLOP/s, 10 GB/s) plus 10 us of launch overhead, 30 % slower
// when the output channels miss the 16-wide blocking.
double law(double c_in, double c_out, double hw, double k, double* flops_out = nullptr, double* bytes_out = nullptr,
           double* params_out = nullptr) {
    const double params = c_in * c_out * k * k;
    const double flops = 2.0 * params * hw * hw;
    const double bytes = 4.0 * (c_in * hw * hw + c_out * hw * hw + params);
    if (flops_out) *flops_out = flops;
    if (bytes_out) *bytes_out = bytes;
    if (params_out) *params_out = params;
    const double seconds = std::max(flops / 50e9, bytes / 10e9) + 10e-6;
    const bool aligned = static_cast<long>(c_out) % 16 == 0;
    return seconds * 1e3 * (aligned ? 1.0 : 1.3);
}

void put_row(Kernels& k, Index i, double c_in, double c_out, double hw, double ks) {
    double flops = 0, bytes = 0, params = 0;
    k.law_ms[static_cast<std::size_t>(i)] = law(c_in, c_out, hw, ks, &flops, &bytes, &params);
    k.x.row(i) << c_in, c_out, hw, ks, flops, bytes, flops / bytes, params,
        static_cast<long>(c_out) % 16 == 0 ? 1.0 : 0.0;
}

// Convolution-like kernels: channels log-uniform in [3, 512] (half of the output counts forced
// to multiples of 16), spatial 4..64, kernel 1, 3 or 5.
Kernels make_kernels(Index n, std::uint64_t seed) {
    Rng rng(seed);
    Kernels k;
    k.x.resize(n, static_cast<Index>(k.names.size()));
    k.latency_ms.resize(static_cast<std::size_t>(n));
    k.law_ms.resize(static_cast<std::size_t>(n));
    auto log_uniform = [&](double lo, double hi) { return std::round(std::exp(rng.uniform(std::log(lo), std::log(hi)))); };
    for (Index i = 0; i < n; ++i) {
        const double c_in = log_uniform(3, 512);
        double c_out = log_uniform(3, 512);
        if (rng.bernoulli(0.5)) c_out = std::max(16.0, std::round(c_out / 16) * 16);
        const double hw = std::round(rng.uniform(4, 64));
        const double ks = 1 + 2 * static_cast<double>(rng.below(3));
        put_row(k, i, c_in, c_out, hw, ks);
        k.latency_ms[static_cast<std::size_t>(i)] = k.law_ms[static_cast<std::size_t>(i)] * std::exp(noise_sigma * rng.normal());
    }
    return k;
}

// MAPE of the best constant prediction (the MAPE-optimal constant is one of the true values).
double best_constant_mape(const std::vector<double>& truth) {
    double best = 1e300;
    for (double c : truth) best = std::min(best, train::mape(std::vector<double>(truth.size(), c), truth));
    return best;
}

// Kernels far outside the training range (1000x the channels, 20x the spatial size, tiny
// ones), with the law's own features.
Mat<double> far_rows() {
    Kernels k;
    k.x.resize(4, static_cast<Index>(k.names.size()));
    k.law_ms.resize(4);
    put_row(k, 0, 65536, 65536, 1024, 7);
    put_row(k, 1, 1, 1, 1, 1);
    put_row(k, 2, 1, 100000, 1, 1);
    put_row(k, 3, 8192, 3, 2048, 11);
    return k.x;
}

// Bound on held-out MAPE. A model off the law by a relative error e scores about
// E|e + sigma Z| <= |e| + noise_floor on noisy data; allowing the model an average error of twice
// the noise floor gives 3 x noise_floor = 4.8 %.
const double mape_bound = 3 * noise_floor;

// A payload byte changed and the container resealed with a valid CRC, as a careless tool would.
std::string resealed_with_flip(const std::string& bytes, std::size_t payload_offset_from_end) {
    auto c = io::read_container(bytes);
    const auto at = c.payload.size() - payload_offset_from_end;
    c.payload[at] = static_cast<char>(c.payload[at] ^ 0x40);
    return io::write_container(c.kind, c.config_hash, c.payload);
}

/// Every feature as log2(1 + x), the scale kernel features are on.
Mat<double> logged(Mat<double> x) { return x.array().log1p() / std::log(2.0); }

void check_regressor(TabularRegressor& model, const std::string& what, bool log_features = false) {
    auto train = make_kernels(1500, 11), held = make_kernels(400, 12);
    if (log_features) {
        train.x = logged(train.x);
        held.x = logged(held.x);
    }
    const auto far_x = log_features ? logged(far_rows()) : far_rows();
    model.fit(train.x, train.latency_ms, train.names);
    const auto pred = model.predict(held.x);
    const double mape = train::mape(pred, held.latency_ms);
    const double constant = best_constant_mape(held.latency_ms);
    const double within10 = train::error_bound_accuracy(pred, held.latency_ms, 0.10);
    MESSAGE(what, ": held-out MAPE ", mape, ", within 10 % ", within10, ", best constant ", constant, ", bound ",
            mape_bound);
    CHECK(mape < mape_bound);
    CHECK(mape < 0.1 * constant);
    CHECK(within10 > 0.9);

    const auto far = model.predict(far_x);
    for (double v : far) {
        CHECK(std::isfinite(v));
        CHECK(v > 0);
    }

    const auto bytes = model.save();
    const auto again = load_tabular_regressor(bytes, "kernel.dnnc");
    CHECK(again->kind() == model.kind());
    CHECK(again->feature_names() == train.names);
    CHECK(again->predict(held.x) == pred);
    CHECK(again->predict(far_x) == far);

    // damaged bytes: a flipped byte (CRC), a truncation, a resealed payload with a changed value
    auto flipped = bytes;
    flipped[bytes.size() / 2] = static_cast<char>(flipped[bytes.size() / 2] ^ 1);
    CHECK_THROWS_WITH_AS(load_tabular_regressor(flipped, "kernel.dnnc"), doctest::Contains("kernel.dnnc"),
                         parse_error);
    for (std::size_t cut : {std::size_t{0}, std::size_t{7}, bytes.size() / 3, bytes.size() - 1})
        CHECK_THROWS_AS(load_tabular_regressor(bytes.substr(0, cut), "kernel.dnnc"), parse_error);
    CHECK_THROWS_AS(load_tabular_regressor(resealed_with_flip(bytes, 4), "kernel.dnnc"), error);
}

}  // namespace

TEST_CASE("the synthetic law has a noise floor of about 1.6 % MAPE") {
    // the test's own premise: the law itself, scored on noisy data, sits at the floor
    const auto k = make_kernels(4000, 5);
    const double law_mape = train::mape(k.law_ms, k.latency_ms);
    CHECK(law_mape == doctest::Approx(noise_floor).epsilon(0.05));
    CHECK(best_constant_mape(std::vector<double>(k.latency_ms.begin(), k.latency_ms.begin() + 400)) > 0.5);
}

TEST_CASE("MLP regressor: accurate, positive far out, round trip, damaged bytes") {
    MlpRegressor mlp;
    check_regressor(mlp, "mlp");
}

TEST_CASE("a regressor whose training is not compiled in says which header provides it, and fits once it is") {
    // What a header-only program that never includes device_model_training.hpp sees: the hook unset.
    auto& hook = device::detail::tabular_fitting<MlpRegressor>;
    const auto registered = hook;
    REQUIRE(static_cast<bool>(registered));  // the compiled library registers it
    const auto k = make_kernels(200, 5);
    MlpRegressor mlp({.hidden = {8}, .max_epochs = 5});
    hook = nullptr;
    CHECK_THROWS_WITH_AS(mlp.fit(k.x, k.latency_ms, k.names), doctest::Contains("device_model_training.hpp"),
                         config_error);
    CHECK_FALSE(mlp.fitted());
    hook = registered;
    mlp.fit(k.x, k.latency_ms, k.names);
    CHECK(mlp.fitted());
}

TEST_CASE("MLP regressor: the same seed gives the same model, another seed another") {
    const auto k = make_kernels(300, 3);
    MlpRegressorOptions o;
    o.hidden = {16, 16};
    o.max_epochs = 60;
    MlpRegressor a(o), b(o);
    a.fit(k.x, k.latency_ms, k.names);
    b.fit(k.x, k.latency_ms, k.names);
    CHECK(a.save() == b.save());
    o.seed = 2;
    MlpRegressor c(o);
    c.fit(k.x, k.latency_ms, k.names);
    CHECK(c.save() != a.save());
}

TEST_CASE("tabular regressors reject bad input with a clear error") {
    const auto k = make_kernels(50, 4);
    MlpRegressorOptions o;
    o.hidden = {8};
    o.max_epochs = 5;
    MlpRegressor mlp(o);
    CHECK_THROWS_AS(mlp.predict(k.x), config_error);  // not fitted
    CHECK_THROWS_AS(mlp.save(), config_error);
    auto names = k.names;
    names.pop_back();
    CHECK_THROWS_AS(mlp.fit(k.x, k.latency_ms, names), shape_error);
    names = k.names;
    names[1] = names[0];
    CHECK_THROWS_WITH_AS(mlp.fit(k.x, k.latency_ms, names), doctest::Contains("'c_in' is named twice"), config_error);
    auto y = k.latency_ms;
    y[7] = -1;
    CHECK_THROWS_WITH_AS(mlp.fit(k.x, y, k.names), doctest::Contains("row 7"), config_error);
    y[7] = std::nan("");
    CHECK_THROWS_AS(mlp.fit(k.x, y, k.names), config_error);
    auto x = k.x;
    x(3, 4) = std::numeric_limits<double>::infinity();
    CHECK_THROWS_WITH_AS(mlp.fit(x, k.latency_ms, k.names), doctest::Contains("feature 'flops' of row 3"),
                         config_error);
    CHECK_THROWS_AS(mlp.fit(k.x.topRows(5), std::span(k.latency_ms).first(5), k.names), shape_error);
    CHECK_THROWS_AS(MlpRegressor({.hidden = {0}}), config_error);
    CHECK_THROWS_AS(MlpRegressor({.validation_fraction = 0.9}), config_error);

    mlp.fit(k.x, k.latency_ms, k.names);
    CHECK_THROWS_AS(mlp.predict(k.x.leftCols(3)), shape_error);
    CHECK_THROWS_WITH_AS(mlp.predict(x), doctest::Contains("feature 'flops' of row 3"), config_error);
    CHECK(mlp.predict(k.x.topRows(0)).empty());
    x = k.x;
    x(5, 0) = -2;  // channels were never negative in training
    CHECK_THROWS_WITH_AS(mlp.predict(x), doctest::Contains("feature 'c_in' of row 5 is -2"), config_error);
    // a model of another kind, and bytes that are no model at all
    CHECK_THROWS_AS(MlpRegressor::load(io::write_container("additive", 0, "xyz"), "m.dnnc"), parse_error);
    CHECK_THROWS_WITH_AS(load_tabular_regressor(io::write_container("additive", 0, "xyz"), "m.dnnc"),
                         doctest::Contains("not a tabular regressor"), parse_error);
    CHECK_THROWS_AS(load_tabular_regressor("not a model", "m.dnnc"), parse_error);
}

namespace {
// A planted weak candidate: the mean log-latency for every row.
class ConstantRegressor final : public TabularRegressor {
public:
    std::string kind() const override { return "constant"; }

protected:
    void fit_log(const Mat<double>&, const Eigen::VectorXd& log_y) override { m_c = log_y.mean(); }
    Eigen::VectorXd predict_log(const Mat<double>& x) const override { return Eigen::VectorXd::Constant(x.rows(), m_c); }
    void save_model(io::BinaryWriter& w) const override { w.put_f64(m_c); }
    void load_model(io::BinaryReader& r, std::size_t) override { m_c = r.get_finite_f64("constant"); }

private:
    double m_c = 0;
};
}  // namespace

TEST_CASE("choose_tabular_regressor keeps the candidate with the lower held-out MAPE") {
    const auto k = make_kernels(600, 21);
    MlpRegressorOptions o;
    o.hidden = {16, 16};
    std::vector<TabularCandidate> candidates{
        {"constant", [] { return std::make_unique<ConstantRegressor>(); }},
        {"mlp", [o] { return std::make_unique<MlpRegressor>(o); }},
    };
    const auto choice = choose_tabular_regressor(k.x, k.latency_ms, k.names, candidates, {.held_out_fraction = 0.25});
    REQUIRE(choice.scores.size() == 2);
    CHECK(choice.held_out_rows == 150);
    CHECK(choice.chosen == "mlp");
    CHECK(choice.model->kind() == "mlp");
    CHECK(choice.scores[1].mape < choice.scores[0].mape);
    CHECK(choice.scores[1].within_10 > choice.scores[0].within_10);
    // the constant's held-out MAPE, recomputed independently on the same split
    CHECK(choice.scores[0].mape > 0.5);
    CHECK(choice.model->fitted());

    // with the better candidate listed first the choice follows the scores, not the order
    std::swap(candidates[0], candidates[1]);
    const auto again = choose_tabular_regressor(k.x, k.latency_ms, k.names, candidates, {.held_out_fraction = 0.25});
    CHECK(again.chosen == "mlp");
    CHECK(again.scores[0].mape == doctest::Approx(choice.scores[1].mape));
    CHECK_THROWS_AS(choose_tabular_regressor(k.x, k.latency_ms, k.names, {}), config_error);
    auto y = k.latency_ms;
    y[444] = 0;  // named by its row in the caller's matrix, not in a split
    CHECK_THROWS_WITH_AS(choose_tabular_regressor(k.x, y, k.names, candidates),
                         doctest::Contains("latency of row 444 is 0"), config_error);
}

namespace {
// Planted candidates over one work feature x = log_flops, on the law log(latency) = x: one that is
// exact up to the largest x it was fit on and flat beyond (as trees are), one 3 % high everywhere.
class FlatBeyondRegressor final : public TabularRegressor {
public:
    std::string kind() const override { return "flat-beyond"; }

protected:
    void fit_log(const Mat<double>& x, const Eigen::VectorXd&) override { m_top = x.col(0).maxCoeff(); }
    Eigen::VectorXd predict_log(const Mat<double>& x) const override { return x.col(0).cwiseMin(m_top); }
    void save_model(io::BinaryWriter& w) const override { w.put_f64(m_top); }
    void load_model(io::BinaryReader& r, std::size_t) override { m_top = r.get_finite_f64("top"); }

private:
    double m_top = 0;
};
class BiasedLawRegressor final : public TabularRegressor {
public:
    std::string kind() const override { return "biased-law"; }

protected:
    void fit_log(const Mat<double>&, const Eigen::VectorXd&) override {}
    Eigen::VectorXd predict_log(const Mat<double>& x) const override { return x.col(0).array() + std::log(1.03); }
    void save_model(io::BinaryWriter&) const override {}
    void load_model(io::BinaryReader&, std::size_t) override {}
};
}  // namespace

TEST_CASE("choose_tabular_regressor: the beyond test holds out the largest rows and weighs extrapolation") {
    const Index n = 400;
    Mat<double> x(n, 2);
    std::vector<double> ms;
    Rng rng(5);
    for (Index i = 0; i < n; ++i) {
        x(i, 0) = 5 * rng.uniform();
        x(i, 1) = rng.uniform();  // a feature the law ignores
        ms.push_back(std::exp(x(i, 0)));
    }
    const std::vector<std::string> names{"log_flops", "other"};
    const std::vector<TabularCandidate> candidates{
        {"flat-beyond", [] { return std::make_unique<FlatBeyondRegressor>(); }},
        {"biased-law", [] { return std::make_unique<BiasedLawRegressor>(); }},
    };
    // by the random held-out part alone, the one exact in the sampled range wins
    const auto plain = choose_tabular_regressor(x, ms, names, candidates, {.beyond_fraction = 0});
    CHECK(plain.chosen == "flat-beyond");
    CHECK(plain.beyond_rows == 0);
    CHECK_FALSE(plain.scores[0].beyond_mape.has_value());
    CHECK(plain.scores[1].mape == doctest::Approx(0.03));

    // the 40 largest rows, fit without: flat beyond them, the other is still 3 % high
    const auto choice = choose_tabular_regressor(x, ms, names, candidates);
    CHECK(choice.beyond_rows == 40);
    CHECK(choice.chosen == "biased-law");
    REQUIRE(choice.scores[1].beyond_mape.has_value());
    CHECK(*choice.scores[1].beyond_mape == doctest::Approx(0.03));
    // flat at the 360th row's x: each of the 40 is priced exp(top - x) of its latency
    std::vector<double> xs;
    for (Index i = 0; i < n; ++i) xs.push_back(x(i, 0));
    std::sort(xs.begin(), xs.end());
    double expected = 0;
    for (std::size_t i = 360; i < 400; ++i) expected += 1 - std::exp(xs[359] - xs[i]);
    REQUIRE(choice.scores[0].beyond_mape.has_value());
    CHECK(*choice.scores[0].beyond_mape == doctest::Approx(expected / 40));

    // a size feature the rows all share, or none of the size features: no beyond test
    Mat<double> same = x;
    same.col(0).setConstant(2);
    std::vector<double> ms_same(static_cast<std::size_t>(n), std::exp(2.0));
    CHECK(choose_tabular_regressor(same, ms_same, names, candidates).beyond_rows == 0);
    CHECK(choose_tabular_regressor(x, ms, {"work", "other"}, candidates).beyond_rows == 0);
    // the next size feature when the first does not vary
    CHECK(choose_tabular_regressor(same, ms_same, {"log_flops", "log_input_bytes"}, candidates).beyond_rows == 40);
    // too few rows to hold 3 out beyond and keep 10
    CHECK(choose_tabular_regressor(x.topRows(20), std::span(ms).first(20), names, candidates).beyond_rows == 0);
    CHECK_THROWS_WITH_AS(choose_tabular_regressor(x, ms, names, candidates, {.beyond_fraction = 1}),
                         doctest::Contains("beyond fraction"), config_error);
}

TEST_CASE("held_out_split: whole groups on one side, about the fraction held out, single rows without groups") {
    // 60 rows: 12 groups of 1 to 8 rows, and rows of no group (an empty name each)
    std::vector<std::string> groups;
    for (int g = 0; g < 12; ++g)
        for (int r = 0; r <= g % 8; ++r) groups.push_back("net" + std::to_string(g));
    while (groups.size() < 60) groups.emplace_back();
    const Index n = static_cast<Index>(groups.size());
    const auto split = held_out_split(n, 0.2, 9, groups);
    std::vector<int> seen(groups.size(), 0);
    for (const auto i : split.held) ++seen[static_cast<std::size_t>(i)];
    for (const auto i : split.train) ++seen[static_cast<std::size_t>(i)];
    CHECK(std::all_of(seen.begin(), seen.end(), [](int c) { return c == 1; }));
    for (const auto h : split.held)
        for (const auto t : split.train)
            if (!groups[static_cast<std::size_t>(h)].empty())
                CHECK(groups[static_cast<std::size_t>(h)] != groups[static_cast<std::size_t>(t)]);
    // groups are drawn until 12 rows (a fifth) are held out: the last may take up to 7 more
    CHECK(split.held.size() >= 12);
    CHECK(split.held.size() <= 19);
    CHECK(held_out_split(n, 0.2, 9, groups).held == split.held);
    CHECK(held_out_split(n, 0.2, 10, groups).held != split.held);

    // without groups, exactly the fraction of single rows; one group of every row but one: the same
    const auto rows = held_out_split(n, 0.2, 9);
    CHECK(rows.held.size() == 12);
    std::vector<std::string> one(groups.size(), "net");
    one.back() = "";
    CHECK(held_out_split(n, 0.2, 9, one).held == rows.held);
    CHECK_THROWS_AS(held_out_split(n, 0.2, 9, std::span(groups).first(10)), config_error);
    CHECK_THROWS_AS(held_out_split(n, 1.0, 9, groups), config_error);
    CHECK_THROWS_AS(held_out_split(1, 0.2, 9), shape_error);
}

namespace {
// Planted candidates for rows of networks that each run at their own speed: one copies the
// residual of the row nearest in the network-code feature (exact for a network it has seen, as
// trees that memorise a network's shapes are), one prices every row by the law alone.
class NearestResidualRegressor final : public TabularRegressor {
public:
    std::string kind() const override { return "nearest"; }

protected:
    void fit_log(const Mat<double>& x, const Eigen::VectorXd& y) override {
        m_code = x.col(1);
        m_residual = y - x.col(0);
    }
    Eigen::VectorXd predict_log(const Mat<double>& x) const override {
        Eigen::VectorXd out(x.rows());
        for (Index i = 0; i < x.rows(); ++i) {
            Index best = 0;
            (m_code.array() - x(i, 1)).abs().minCoeff(&best);
            out(i) = x(i, 0) + m_residual(best);
        }
        return out;
    }
    void save_model(io::BinaryWriter&) const override {}
    void load_model(io::BinaryReader&, std::size_t) override {}

private:
    Eigen::VectorXd m_code, m_residual;
};
class MeanLawRegressor final : public TabularRegressor {
public:
    std::string kind() const override { return "law"; }

protected:
    void fit_log(const Mat<double>& x, const Eigen::VectorXd& y) override { m_offset = (y - x.col(0)).mean(); }
    Eigen::VectorXd predict_log(const Mat<double>& x) const override { return x.col(0).array() + m_offset; }
    void save_model(io::BinaryWriter&) const override {}
    void load_model(io::BinaryReader&, std::size_t) override {}

private:
    double m_offset = 0;
};
}  // namespace

TEST_CASE("choose_tabular_regressor by groups: a candidate that knows only the networks it saw loses") {
    // 40 networks of 10 kernels; network g runs at its own factor in [0.7, 1.3]
    const Index n = 400;
    Mat<double> x(n, 2);
    std::vector<double> ms;
    std::vector<std::string> groups;
    Rng rng(3);
    std::vector<double> factor;
    for (int g = 0; g < 40; ++g) factor.push_back(0.7 + 0.6 * rng.uniform());
    for (Index i = 0; i < n; ++i) {
        const auto g = static_cast<int>(i / 10);
        x(i, 0) = 5 * rng.uniform();
        x(i, 1) = g / 40.0;
        ms.push_back(std::exp(x(i, 0)) * factor[static_cast<std::size_t>(g)]);
        groups.push_back("net" + std::to_string(g));
    }
    const std::vector<std::string> names{"log_flops", "network_code"};
    const std::vector<TabularCandidate> candidates{
        {"nearest", [] { return std::make_unique<NearestResidualRegressor>(); }},
        {"law", [] { return std::make_unique<MeanLawRegressor>(); }},
    };
    const TabularChoiceOptions options{.beyond_fraction = 0};
    // single rows held out: every held-out network was seen, and the copy is exact
    const auto by_rows = choose_tabular_regressor(x, ms, names, candidates, options);
    CHECK(by_rows.chosen == "nearest");
    CHECK(by_rows.scores[0].mape < 1e-9);
    // whole networks held out: the copy carries a neighbour's speed, the law the mean one
    const auto by_networks = choose_tabular_regressor(x, ms, names, candidates, options, groups);
    CHECK(by_networks.chosen == "law");
    CHECK(by_networks.scores[0].mape > by_networks.scores[1].mape);
    CHECK(by_networks.held_out_rows == 80);
}

TEST_CASE("select_candidates keeps the candidates named, in the order named") {
    const auto names = [](const std::vector<TabularCandidate>& c) {
        std::vector<std::string> out;
        for (const auto& x : c) out.push_back(x.name);
        return out;
    };
    const auto three = [] {
        std::vector<TabularCandidate> c;
        for (const char* n : {"a", "b", "c"}) c.push_back({n, [] { return std::make_unique<ConstantRegressor>(); }});
        return c;
    };
    CHECK(names(select_candidates(three(), {})) == std::vector<std::string>{"a", "b", "c"});
    CHECK(names(select_candidates(three(), {"c", "a"})) == std::vector<std::string>{"c", "a"});
    CHECK(select_candidates(three(), {"b"}).front().make()->kind() == "constant");
    CHECK_THROWS_WITH_AS(select_candidates(three(), {"a", "d"}),
                         doctest::Contains("regressor 'd' is not a candidate here (candidates: a, b, c)"), config_error);
    CHECK_THROWS_WITH_AS(select_candidates(three(), {"b", "b"}), doctest::Contains("regressor 'b' is named twice"),
                         config_error);
}

#if defined(DNNCOST_HAS_XGBOOST)
TEST_CASE("GBT regressor: accurate, positive far out, round trip, damaged bytes") {
    GbtRegressor gbt;
    check_regressor(gbt, "gbt");
    CHECK(gbt.rounds() >= 1);
}

TEST_CASE("GBT regressor on a linear base: accurate, positive far out, round trip, damaged bytes") {
    GbtRegressor gbt({.linear_base = true});
    CHECK(gbt.kind() == "gbt-linear");
    check_regressor(gbt, "gbt-linear", true);
    CHECK_THROWS_AS(GbtRegressor({.linear_base = true, .linear_ridge = 0}), config_error);
}

TEST_CASE("GBT regressor on a linear base carries a power law beyond the samples, trees alone hold flat") {
    // latency = 2e-5 c^1.2 s^2 ms with log features: the log-latency is linear in them
    Rng rng(5);
    const Index n = 400;
    Mat<double> x(n, 3);
    std::vector<double> y;
    const auto law_ms = [](double c, double s) { return 2e-5 * std::pow(c, 1.2) * s * s; };
    for (Index i = 0; i < n; ++i) {
        const double c = std::exp(rng.uniform(std::log(8.0), std::log(256.0)));
        const double sp = std::exp(rng.uniform(std::log(4.0), std::log(32.0)));
        x.row(i) << std::log2(c), std::log2(sp), rng.uniform(0, 1);  // the last one is noise
        y.push_back(law_ms(c, sp) * std::exp(0.01 * rng.normal()));
    }
    const std::vector<std::string> names{"log_c", "log_s", "unrelated"};
    GbtRegressor linear({.linear_base = true}), trees;
    linear.fit(x, y, names);
    trees.fit(x, y, names);
    Mat<double> far(2, 3);
    far.row(0) << std::log2(1024.0), std::log2(128.0), 0.5;  // 4x the channels, 4x the spatial size
    far.row(1) << std::log2(2.0), std::log2(2.0), 0.5;       // below the range
    const auto pl = linear.predict(far), pt = trees.predict(far);
    for (Index i = 0; i < 2; ++i) {
        const double truth = law_ms(std::exp2(far(i, 0)), std::exp2(far(i, 1)));
        MESSAGE("row ", i, ": law ", truth, " ms, linear base ", pl[static_cast<std::size_t>(i)], ", trees ",
                pt[static_cast<std::size_t>(i)]);
        CHECK(std::abs(pl[static_cast<std::size_t>(i)] / truth - 1) < 0.05);
        CHECK(std::abs(pt[static_cast<std::size_t>(i)] / truth - 1) > 0.5);
    }
    // a feature outside the base's list is left to the trees: a value far beyond its samples
    // does not scale the prediction
    GbtRegressor listed({.linear_base = true, .linear_features = {"log_c", "log_s"}});
    listed.fit(x, y, names);
    auto beyond = far;
    beyond(0, 2) = 1000;
    CHECK(std::abs(listed.predict(beyond)[0] / law_ms(1024, 128) - 1) < 0.1);
    CHECK(std::abs(listed.predict(far)[0] / law_ms(1024, 128) - 1) < 0.05);
    // the base is part of the saved model
    const auto again = GbtRegressor::load(linear.save(), "linear.dnnc");
    CHECK(again.kind() == "gbt-linear");
    CHECK(again.predict(far) == pl);
}

TEST_CASE("GBT regressor: the same seed gives the same model, another seed another") {
    const auto k = make_kernels(400, 3);
    GbtRegressorOptions o;
    o.max_rounds = 60;
    GbtRegressor a(o), b(o);
    a.fit(k.x, k.latency_ms, k.names);
    b.fit(k.x, k.latency_ms, k.names);
    CHECK(a.save() == b.save());
    o.seed = 2;
    GbtRegressor c(o);
    c.fit(k.x, k.latency_ms, k.names);
    CHECK(c.save() != a.save());
    CHECK_THROWS_AS(GbtRegressor({.max_depth = 0}), config_error);
    // XGBoost reads float: a feature beyond its range is refused with the row named
    auto x = k.x;
    x(2, 4) = 1e300;
    CHECK_THROWS_WITH_AS(a.predict(x), doctest::Contains("row 2"), config_error);
}

TEST_CASE("GBT regressor: a booster XGBoost cannot read, with every checksum valid, is a clear error") {
    const auto k = make_kernels(200, 8);
    GbtRegressor gbt({.max_rounds = 20});
    gbt.fit(k.x, k.latency_ms, k.names);
    const auto c = io::read_container(gbt.save());
    // rewrite the payload field by field (the layout of TabularRegressor::save and
    // GbtRegressor::save_model) with the booster cut in half and its hash recomputed
    io::BinaryReader r(c.payload);
    io::BinaryWriter w;
    w.put_u32(r.get_u32());
    w.put_string_vector(r.get_string_vector());
    w.put_f64(r.get_f64());
    w.put_f64(r.get_f64());
    w.put_u64(r.get_u64());
    w.put_f64_vector(r.get_f64_vector());
    w.put_f64_vector(r.get_f64_vector());
    w.put_i32(r.get_i32());
    (void)r.get_u64();
    const auto booster = r.get_string();
    REQUIRE(r.at_end());
    for (const std::string& cut : {booster.substr(0, booster.size() / 2), std::string("not a booster")}) {
        io::BinaryWriter damaged(w);
        damaged.put_u64(io::fnv1a64(cut));
        damaged.put_string(cut);
        const auto bytes = io::write_container(c.kind, c.config_hash, damaged.bytes());
        CHECK_THROWS_WITH_AS(GbtRegressor::load(bytes, "kernel.dnnc"),
                             doctest::Contains("kernel.dnnc: XGBoost cannot read the gbt booster"), parse_error);
    }
}

TEST_CASE("GBT forest: the trees read from XGBoost's JSON give XGBoost's own figures, bit for bit") {
    // a booster trained straight through the C API on rows with missing values, so that splits
    // learn default directions
    const auto nan = std::numeric_limits<float>::quiet_NaN();
    constexpr int n = 600, width = 5;
    Rng rng(11);
    std::vector<float> x(n * width), y(n);
    for (int i = 0; i < n; ++i) {
        for (int j = 0; j < width; ++j) x[i * width + j] = static_cast<float>(rng.uniform() * 10.0 - 3.0);
        if (i % 7 == 0) x[i * width + i % width] = nan;
        const float a = std::isnan(x[i * width]) ? 4.0f : x[i * width];
        y[i] = a * a - 2.0f * (std::isnan(x[i * width + 1]) ? -1.0f : x[i * width + 1]) + 0.1f * static_cast<float>(rng.normal());
    }
    DMatrixHandle train = nullptr;
    REQUIRE(XGDMatrixCreateFromMat(x.data(), n, width, nan, &train) == 0);
    device::detail::XgbMatrix train_owner(train);
    REQUIRE(XGDMatrixSetFloatInfo(train, "label", y.data(), n) == 0);
    BoosterHandle h = nullptr;
    REQUIRE(XGBoosterCreate(&train, 1, &h) == 0);
    device::detail::XgbBooster booster(h);
    for (const auto& [k, v] : {std::pair{"verbosity", "0"}, {"tree_method", "hist"}, {"nthread", "1"},
                               {"max_depth", "6"}, {"eta", "0.1"}, {"base_score", "0.3"}})
        REQUIRE(XGBoosterSetParam(h, k, v) == 0);
    for (int round = 0; round < 40; ++round) REQUIRE(XGBoosterUpdateOneIter(h, round, train) == 0);
    bst_ulong len = 0;
    const char* json = nullptr;
    REQUIRE(XGBoosterSaveModelToBuffer(h, R"({"format": "json"})", &len, &json) == 0);
    const std::string text(json, len);  // XGBoost's buffer lasts until its next call
    const auto forest = GbtForest::from_xgboost_json(text);
    CHECK(forest.num_trees() == 40);
    CHECK(forest.num_features() == width);
    CHECK(forest.base_score() == 0.3f);

    // rows inside the range, far beyond it, missing, and at and just around every threshold
    std::vector<float> rows;
    const auto add = [&](std::vector<float> r) { rows.insert(rows.end(), r.begin(), r.end()); };
    for (int i = 0; i < 300; ++i) {
        std::vector<float> r(width);
        for (auto& v : r) v = static_cast<float>(rng.uniform() * 14.0 - 5.0);
        if (i % 5 == 0) r[static_cast<std::size_t>(i % width)] = nan;
        add(r);
    }
    add(std::vector<float>(width, 1e30f));
    add(std::vector<float>(width, -1e30f));
    add(std::vector<float>(width, 0.0f));
    add(std::vector<float>(width, nan));
    const auto thresholds = forest.thresholds();
    std::size_t splits = 0;
    for (std::size_t j = 0; j < thresholds.size(); ++j)
        for (const float t : thresholds[j]) {
            ++splits;
            for (const float v : {t, std::nextafter(t, -1e38f), std::nextafter(t, 1e38f)}) {
                std::vector<float> r(width, 1.0f);
                r[j] = v;
                add(r);
            }
        }
    CHECK(splits > 20);
    const auto m = rows.size() / width;
    DMatrixHandle test = nullptr;
    REQUIRE(XGDMatrixCreateFromMat(rows.data(), m, width, nan, &test) == 0);
    device::detail::XgbMatrix test_owner(test);
    const float* expected = nullptr;
    REQUIRE(XGBoosterPredict(h, test, 0, 0, 0, &len, &expected) == 0);
    REQUIRE(len == m);
    std::vector<float> mine(m);
    forest.predict(rows, mine);
    std::size_t same = 0;
    for (std::size_t i = 0; i < m; ++i) same += mine[i] == expected[i];
    CHECK(same == m);

    CHECK_THROWS_AS(forest.predict(std::span<const float>(rows.data(), width - 1), std::span<float>(mine.data(), 1)),
                    shape_error);
    // text that is not a single-output tree model is refused, not read as one
    CHECK_THROWS_WITH_AS(GbtForest::from_xgboost_json(text.substr(0, text.size() / 2)),
                         doctest::Contains("XGBoost model: expected"), config_error);
    CHECK_THROWS_WITH_AS(GbtForest::from_xgboost_json("{\"version\": [1, 7, 4]}"),
                         doctest::Contains("no member 'learner'"), config_error);
    auto looped = text;  // the root's left child made the root itself: a walk that never ends
    const auto key = looped.find("\"left_children\"");
    REQUIRE(key != std::string::npos);
    const auto first = looped.find('[', key) + 1, end = looped.find_first_of(",]", first);
    REQUIRE(end != std::string::npos);
    looped = looped.substr(0, first) + "0" + looped.substr(end);
    CHECK_THROWS_WITH_AS(GbtForest::from_xgboost_json(looped), doctest::Contains("node 0 of tree 0 has child 0"),
                         config_error);
}

TEST_CASE("default candidates: the MLP and the trees, alone and on a linear base, compared on one kernel kind") {
    // what is checked is the comparison's bookkeeping, which any number of rows shows
    const auto k = make_kernels(300, 31);
    const auto choice = choose_tabular_regressor(k.x, k.latency_ms, k.names, default_tabular_candidates(7));
    REQUIRE(choice.scores.size() == 3);
    CHECK(choice.scores[0].name == "mlp");
    CHECK(choice.scores[1].name == "gbt");
    CHECK(choice.scores[2].name == "gbt-linear");
    std::size_t better = 0;
    for (std::size_t c = 1; c < 3; ++c)
        if (choice.scores[c].mape < choice.scores[better].mape) better = c;
    CHECK(choice.chosen == choice.scores[better].name);
    CHECK(choice.model->kind() == choice.chosen);
    for (const auto& s : choice.scores) MESSAGE(s.name, ": held-out MAPE ", s.mape, ", within 10 % ", s.within_10);
}
#endif

#if !defined(DNNCOST_HAS_XGBOOST)
TEST_CASE("without XGBoost a saved gradient-boosted model is refused, naming the package") {
    CHECK_THROWS_WITH_AS(load_tabular_regressor(io::write_container("tabular-gbt", 0, "x"), "k.dnnc"),
                         doctest::Contains("libxgboost-dev"), parse_error);
    CHECK(default_tabular_candidates().size() == 1);
}
#endif
