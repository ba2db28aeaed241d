// Regressors that extrapolate with the work: the roofline base recovers planted laws robustly and
// non-negatively, a rate per kind of bytes; a roofline regressor holds its correction at the samples' edge, so beyond them
// its price scales as the base; a device model built on kernels of a planted law of FLOPs and
// bytes prices kernels four times larger (in FLOPs) than any sample within 20 % of the law,
// where trees alone hold the largest sample's figure; saved models round-trip, and a payload of
// the version before still loads and prices as it did.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <dnncost/core/rng.hpp>
#include <dnncost/device/device_model.hpp>
#include <dnncost/device/kernel_features.hpp>
#include <dnncost/device/kernel_graph.hpp>
#include <dnncost/device/kernel_sampler.hpp>
#include <dnncost/device/mlp_regressor.hpp>
#include <dnncost/device/roofline_base.hpp>
#include <dnncost/device/roofline_base_fit.hpp>
#include <dnncost/device/roofline_regressor.hpp>
#include <dnncost/device/tabular_choice.hpp>
#include <dnncost/estimators/preset_registry.hpp>
#include <dnncost/io/file.hpp>
#include <dnncost/io/serialize.hpp>
#include <dnncost/spaces/nb201.hpp>
#if defined(DNNCOST_HAS_XGBOOST)
#include <dnncost/device/gbt_regressor.hpp>
#endif

using namespace dnncost;
using namespace dnncost::device;

namespace {

// ---------------------------------------------------------------- the base alone

// a family's kernels: FLOPs log-uniform over three decades, at intensities of 0.5-50 FLOPs per
// byte (partly memory-bound); a quarter of the bytes are weights
struct Work {
    std::vector<double> flops, ms;
    Mat<double> bytes;  ///< activations, weights
    Mat<double> total() const { return bytes.rowwise().sum(); }
};
template <class Law>
Work planted_work(std::size_t n, std::uint64_t seed, Law law, double sigma) {
    Rng rng(seed);
    Work w;
    w.bytes.resize(static_cast<Index>(n), 2);
    for (std::size_t i = 0; i < n; ++i) {
        const double f = std::exp(rng.uniform(std::log(1e5), std::log(1e8)));
        const double b = f / std::exp(rng.uniform(std::log(0.5), std::log(50.0)));
        const double weights = b * rng.uniform(0.0, 0.5);
        w.flops.push_back(f);
        w.bytes.row(static_cast<Index>(i)) << b - weights, weights;
        w.ms.push_back(law(f, b - weights, weights) * std::exp(sigma * rng.normal()));
    }
    return w;
}

// ---------------------------------------------------------------- a planted device

device::FusionRules plain_rules() { return device::FusionRules::parse("dnncost-fusion-rules 1\ndevice planted\n"); }

constexpr double overhead_ms = 0.02;

// the planted device: 3 us a kernel, then 40 GFLOP/s or 8 GB/s, whichever is slower
double law_ms(const device::Kernel& k) {
    return 0.003 + std::max(static_cast<double>(k.cost.flops) * 2.5e-8, static_cast<double>(k.cost.bytes()) * 1.25e-7);
}

struct Planted {
    device::KernelConfig config;
    graph::Graph graph;
    std::string kind;
    std::vector<double> features;
    double flops = 0, law = 0;
};

Planted plant(const device::KernelConfig& c) {
    Planted p{c, device::kernel_sample_graph(c), {}, {}, 0, 0};
    const auto kg = device::kernel_graph(p.graph, plain_rules());
    REQUIRE(kg.kernels.size() == 1);
    auto f = device::kernel_features(p.graph, kg, 0, 0);
    p.kind = f.kind.key;
    p.features = std::move(f.values);
    p.flops = static_cast<double>(kg.kernels[0].cost.flops);
    p.law = law_ms(kg.kernels[0]);
    return p;
}

device::KernelConfig gemm(std::int64_t m, std::int64_t k, std::int64_t n) {
    device::KernelConfig c;
    c.kind = "Gemm";
    c.h = m, c.c = k, c.k = n;
    return c;
}

device::KernelConfig conv(std::int64_t cin, std::int64_t cout, std::int64_t hw, std::int64_t ks) {
    device::KernelConfig c;
    c.kind = "Conv";
    c.c = cin, c.k = cout, c.h = c.w = hw, c.kh = c.kw = ks;
    return c;
}

// Small kernels only: GEMMs of 1-64 rows and 16-256 columns, convolutions of 8-64 channels on
// 4-28 pixels; the measured latency is the overhead plus the law with 3 % noise.
struct Training {
    std::vector<Planted> kernels;
    std::vector<KernelMeasurement> samples;
};
Training small_kernels(std::size_t per_family, std::uint64_t seed) {
    Rng rng(seed);
    const auto log_int = [&](double lo, double hi) {
        return static_cast<std::int64_t>(std::lround(std::exp(rng.uniform(std::log(lo), std::log(hi)))));
    };
    Training t;
    for (std::size_t i = 0; i < per_family; ++i) {
        t.kernels.push_back(plant(gemm(log_int(1, 64), log_int(16, 256), log_int(16, 256))));
        t.kernels.push_back(plant(conv(log_int(8, 64), log_int(8, 64), log_int(4, 28), rng.bernoulli(0.5) ? 3 : 1)));
    }
    for (const auto& k : t.kernels)
        t.samples.push_back({k.kind, k.features, overhead_ms + k.law * std::exp(0.03 * rng.normal())});
    return t;
}

const Planted& largest(const Training& t, const std::string& kind) {
    const Planted* best = nullptr;
    for (const auto& k : t.kernels)
        if (k.kind == kind && (!best || k.flops > best->flops)) best = &k;
    REQUIRE(best);
    return *best;
}

// Kernels four times the FLOPs of the family's largest sample: along rows or spatial size, along
// channels, and (GEMM) a matrix-vector product that is memory-bound where every sample was small.
std::vector<Planted> beyond(const Training& t) {
    const auto g = largest(t, "Gemm").config, c = largest(t, "Conv").config;
    const double gemm_max = largest(t, "Gemm").flops;
    const auto gemv_side = static_cast<std::int64_t>(std::ceil(std::sqrt(4 * gemm_max / 2)));
    return {plant(gemm(4 * g.h, g.c, g.k)), plant(gemm(g.h, 2 * g.c, 2 * g.k)), plant(gemm(1, gemv_side, gemv_side)),
            plant(conv(c.c, c.k, 2 * c.h, c.kh)), plant(conv(2 * c.c, 2 * c.k, c.h, c.kh))};
}

Mat<double> row_of(const std::vector<double>& f) {
    Mat<double> x(1, static_cast<Index>(f.size()));
    for (std::size_t j = 0; j < f.size(); ++j) x(0, static_cast<Index>(j)) = f[j];
    return x;
}

double kernel_ms(const DeviceModel& m, const graph::Graph& g) {
    const graph::Graph* one[] = {&g};
    const auto p = m.price_networks(one).front();
    REQUIRE(p.kernels.size() == 1);
    return p.kernels[0].ms;
}

std::uint32_t payload_version_of(const std::string& bytes) {
    const auto c = io::read_container(bytes);
    io::BinaryReader r(c.payload);
    return r.get_u32();
}

std::string with_payload_version(const std::string& bytes, std::uint32_t v) {
    auto c = io::read_container(bytes);
    std::memcpy(c.payload.data(), &v, sizeof v);  // little-endian, as the writer puts it
    return io::write_container(c.kind, c.config_hash, c.payload);
}

std::string without_payload_tail(const std::string& bytes, std::size_t n) {
    auto c = io::read_container(bytes);
    REQUIRE(c.payload.size() > n);
    c.payload.resize(c.payload.size() - n);
    return io::write_container(c.kind, c.config_hash, c.payload);
}

// rows of kernel-like features for a regressor on its own: the work features by their kernel
// names (log2(1 + count)) and a layout flag that makes the kernel 30 % slower
struct Rows {
    Mat<double> x;
    std::vector<double> ms;
    std::vector<std::string> names{"log_flops", "log_input_bytes", "log_output_bytes", "log_weight_bytes", "misaligned"};
};
Rows rows(std::size_t n, std::uint64_t seed) {
    Rng rng(seed);
    Rows r;
    r.x.resize(static_cast<Index>(n), 5);
    for (std::size_t i = 0; i < n; ++i) {
        const double f = std::exp(rng.uniform(std::log(1e5), std::log(1e8)));
        const double in = f / std::exp(rng.uniform(std::log(2.0), std::log(100.0))), out = in / 2, w = in / 4;
        const bool odd = rng.bernoulli(0.5);
        r.x.row(static_cast<Index>(i)) << std::log2(1 + f), std::log2(1 + in), std::log2(1 + out), std::log2(1 + w),
            odd ? 1.0 : 0.0;
        const double law = 0.002 + std::max(f * 2.5e-8, (in + out + w) * 1.25e-7);
        r.ms.push_back(law * (odd ? 1.3 : 1.0) * std::exp(0.02 * rng.normal()));
    }
    return r;
}

}  // namespace

TEST_CASE("roofline base: planted sum and max laws recovered, non-negative, robust to a few odd samples") {
    const auto sum_law = [](double f, double a, double w) { return 0.01 + f * 1e-8 + (a + w) * 5e-8; };
    const auto max_law = [](double f, double a, double w) { return 0.01 + std::max(f * 2.5e-8, (a + w) * 1.25e-7); };
    const auto s = planted_work(300, 1, sum_law, 0.01);
    const auto sum = fit_roofline_base(s.flops, s.total(), s.ms);
    CHECK(sum.base.form == RooflineBase::Form::sum);
    CHECK(sum.base.ms_per_flop == doctest::Approx(1e-8).epsilon(0.05));
    REQUIRE(sum.base.ms_per_byte.size() == 1);
    CHECK(sum.base.ms_per_byte[0] == doctest::Approx(5e-8).epsilon(0.05));
    CHECK(sum.base.fixed_ms == doctest::Approx(0.01).epsilon(0.2));

    auto w = planted_work(300, 2, max_law, 0.01);
    for (std::size_t i = 0; i < 300; i += 30) w.ms[i] *= 5;  // ten samples five times too slow
    const auto max = fit_roofline_base(w.flops, w.total(), w.ms);
    MESSAGE("max law: form ", int(max.base.form), ", ", max.base.fixed_ms, " ms + max(", max.base.ms_per_flop,
            " ms/FLOP, ", max.base.ms_per_byte[0], " ms/byte); errors sum ", max.sum_error, ", max ", max.max_error);
    CHECK(max.base.form == RooflineBase::Form::max);
    CHECK(max.base.ms_per_flop == doctest::Approx(2.5e-8).epsilon(0.05));
    CHECK(max.base.ms_per_byte[0] == doctest::Approx(1.25e-7).epsilon(0.05));
    CHECK(max.base.valid());

    // weights four times as dear as activations: each kind of bytes gets its own rate
    const auto dear_law = [](double f, double a, double wt) { return 0.01 + std::max(f * 2.5e-8, a * 5e-8 + wt * 2e-7); };
    const auto d = planted_work(300, 4, dear_law, 0.01);
    const auto dear = fit_roofline_base(d.flops, d.bytes, d.ms);
    REQUIRE(dear.base.ms_per_byte.size() == 2);
    CHECK(dear.base.ms_per_byte[0] == doctest::Approx(5e-8).epsilon(0.05));
    CHECK(dear.base.ms_per_byte[1] == doctest::Approx(2e-7).epsilon(0.05));

    // no FLOPs at all (a data-movement family): the rate of FLOPs stays zero, bytes carry it
    auto moves = planted_work(100, 3, max_law, 0.01);
    const Mat<double> moved = moves.total();
    for (std::size_t i = 0; i < moves.flops.size(); ++i) {
        moves.flops[i] = 0;
        moves.ms[i] = 0.005 + moved(static_cast<Index>(i), 0) * 1e-7;
    }
    const auto m = fit_roofline_base(moves.flops, moved, moves.ms);
    CHECK(m.base.ms_per_flop == 0);
    CHECK(m.base.ms_per_byte[0] == doctest::Approx(1e-7).epsilon(0.02));
    const double none[] = {0.0};
    CHECK(m.base.ms(0, none) > 0);

    CHECK_THROWS_AS(fit_roofline_base({}, Mat<double>(0, 1), {}), shape_error);
    const std::vector<double> one{1.0}, negative{-1.0}, zero{0.0};
    const Mat<double> one_byte = Mat<double>::Ones(1, 1);
    CHECK_THROWS_AS(fit_roofline_base(negative, one_byte, one), config_error);
    CHECK_THROWS_AS(fit_roofline_base(one, one_byte, zero), config_error);
    CHECK_THROWS_AS(fit_roofline_base(one, Mat<double>::Ones(1, roofline_max_byte_kinds + 1), one), shape_error);
}

TEST_CASE("roofline regressor: beyond the samples the price scales as the base, round trip, damaged bytes") {
    const auto r = rows(400, 5);
    RooflineRegressor model(std::make_unique<MlpRegressor>());
    CHECK(model.kind() == "roofline-mlp");
    model.fit(r.x, r.ms, r.names);
    CHECK(model.base().form == RooflineBase::Form::max);
    const auto held = rows(200, 6);
    const auto pred = model.predict(held.x);
    double worst = 0;
    for (std::size_t i = 0; i < pred.size(); ++i) worst = std::max(worst, std::abs(pred[i] / held.ms[i] - 1));
    MESSAGE("held-out worst relative error ", worst);
    CHECK(worst < 0.15);

    // the largest sample, then 4x, 16x and 64x its work: the correction is the one at the edge,
    // so the prices are the base's, times one factor
    Index top = 0;
    r.x.col(0).maxCoeff(&top);
    Mat<double> far(4, 5);
    for (Index k = 0; k < 4; ++k) {
        const double scale = std::pow(4.0, static_cast<double>(k));
        far.row(k) = r.x.row(top);
        for (Index j = 0; j < 4; ++j) far(k, j) = std::log2(1 + (std::exp2(r.x(top, j)) - 1) * scale);
    }
    const auto p = model.predict(far);
    const auto b = model.base_ms(far);
    // how far beyond: the largest sample's FLOPs were the most any sample had, so its row is 1
    // and each grown row its growth; no training row lies beyond
    const auto row = [](const Mat<double>& m, Index i) {
        return std::vector<double>(m.row(i).data(), m.row(i).data() + m.cols());
    };
    for (Index k = 0; k < 4; ++k)
        CHECK(model.work_beyond_samples(row(far, k)) == doctest::Approx(std::pow(4.0, static_cast<double>(k))));
    double most = 0;
    for (Index i = 0; i < r.x.rows(); ++i) most = std::max(most, model.work_beyond_samples(row(r.x, i)));
    CHECK(most == doctest::Approx(1.0));
    for (Index k = 1; k < 4; ++k) {
        const auto i = static_cast<std::size_t>(k);
        CHECK(p[i] > p[i - 1]);
        CHECK(p[i] / b[i] == doctest::Approx(p[1] / b[1]).epsilon(1e-9));
    }
    // far outside in every direction: positive and finite
    Mat<double> wild(3, 5);
    wild.row(0) << 900, 900, 900, 900, 1;
    wild.row(1) << 0, 0, 0, 0, 0;
    wild.row(2) << 5000, 0, 0, 0, -3;
    for (double v : model.predict(wild)) {
        CHECK(std::isfinite(v));
        CHECK(v > 0);
    }

    const auto bytes = model.save();
    const auto again = load_tabular_regressor(bytes, "roofline.dnnc");
    CHECK(again->kind() == "roofline-mlp");
    CHECK(again->predict(held.x) == pred);
    CHECK(again->predict(far) == p);
    CHECK(again->save() == bytes);
    auto flipped = bytes;
    flipped[bytes.size() / 2] = static_cast<char>(flipped[bytes.size() / 2] ^ 1);
    CHECK_THROWS_WITH_AS(load_tabular_regressor(flipped, "roofline.dnnc"), doctest::Contains("roofline.dnnc"),
                         parse_error);
    for (std::size_t cut : {std::size_t{7}, bytes.size() / 2, bytes.size() - 1})
        CHECK_THROWS_AS(load_tabular_regressor(bytes.substr(0, cut), "roofline.dnnc"), parse_error);
    // the base's fixed time changed and the container resealed: the probes catch it
    {
        auto c = io::read_container(bytes);
        const double fixed = model.base().fixed_ms;
        std::string needle(sizeof fixed, '\0');
        std::memcpy(needle.data(), &fixed, sizeof fixed);
        const auto pos = c.payload.find(needle);
        REQUIRE(pos != std::string::npos);
        const double changed = fixed * 3 + 1;
        std::memcpy(c.payload.data() + pos, &changed, sizeof changed);
        CHECK_THROWS_WITH_AS(load_tabular_regressor(io::write_container(c.kind, c.config_hash, c.payload), "x.dnnc"),
                             doctest::Contains("probe"), parse_error);
    }
    CHECK_THROWS_AS(RooflineRegressor(nullptr), config_error);
    CHECK_THROWS_AS(RooflineRegressor(std::make_unique<RooflineRegressor>(std::make_unique<MlpRegressor>())),
                    config_error);
    RooflineRegressor no_work(std::make_unique<MlpRegressor>());
    CHECK_THROWS_WITH_AS(no_work.fit(r.x, r.ms, {"a", "b", "c", "d", "e"}), doctest::Contains("log_flops"),
                         config_error);
}

TEST_CASE("device model: kernels 4x beyond every sample priced within 20 % of the planted law") {
    const auto t = small_kernels(120, 11);
    DeviceModelOptions o;
    o.min_samples = 24;
    const auto m = DeviceModel::build(plain_rules(), t.samples, overhead_ms, o);
    for (const std::string kind : {"Gemm", "Conv"}) {
        REQUIRE(m.kinds().at(kind).regressor);
        CHECK(m.kinds().at(kind).chosen.starts_with("roofline-"));
        CHECK(m.kinds().at(kind).regressor->kind() == m.kinds().at(kind).chosen);
    }
    const auto far = beyond(t);
    for (const auto& k : far) {
        const double family_max = largest(t, k.kind).flops;
        REQUIRE(k.flops >= 3.9 * family_max);  // the premise: larger than every sample
        const double ms = kernel_ms(m, k.graph);
        MESSAGE(k.kind, " ", k.config.h, "x", k.config.c, "x", k.config.k, " (", k.flops / family_max,
                "x the largest sample's FLOPs): law ", k.law, " ms, priced ", ms, " ms");
        CHECK(ms / k.law == doctest::Approx(1).epsilon(0.2));
        CHECK(std::isfinite(ms));
    }
    // the price keeps growing with the work: 4x, 16x, 64x the rows of the largest GEMM
    const auto g = largest(t, "Gemm").config;
    double last = 0;
    for (std::int64_t s : {4, 16, 64}) {
        const auto k = plant(gemm(s * g.h, g.c, g.k));
        const double ms = kernel_ms(m, k.graph);
        CHECK(ms > last);
        CHECK(ms / k.law == doctest::Approx(1).epsilon(0.25));
        last = ms;
    }

#if defined(DNNCOST_HAS_XGBOOST)
    // trees alone on the same samples hold the largest sample's figure: far below the law
    for (const std::string kind : {"Gemm", "Conv"}) {
        std::vector<std::size_t> rows;
        for (std::size_t i = 0; i < t.samples.size(); ++i)
            if (t.samples[i].kind == kind) rows.push_back(i);
        Mat<double> x(static_cast<Index>(rows.size()), static_cast<Index>(device::kernel_feature_names().size()));
        std::vector<double> y;
        for (std::size_t r = 0; r < rows.size(); ++r) {
            x.row(static_cast<Index>(r)) = row_of(t.samples[rows[r]].features);
            y.push_back(DeviceModel::kernel_time(t.samples[rows[r]].latency_ms, overhead_ms));
        }
        GbtRegressor trees;
        trees.fit(x, y, device::kernel_feature_names());
        for (const auto& k : far) {
            if (k.kind != kind) continue;
            const double ms = trees.predict(row_of(k.features))[0];
            MESSAGE(kind, " trees alone: law ", k.law, " ms, priced ", ms, " ms");
            CHECK(ms / k.law < 0.8);
        }
    }
#endif

    // saved and loaded: the same prices, and the file is of the current version
    const auto bytes = m.serialize();
    CHECK(payload_version_of(bytes) == DeviceModel::payload_version);
    const auto loaded = DeviceModel::deserialize(bytes, "roofline.dnnc");
    for (const auto& k : far) CHECK(kernel_ms(*loaded, k.graph) == kernel_ms(m, k.graph));
    CHECK(loaded->kinds().at("Gemm").chosen == m.kinds().at("Gemm").chosen);
    for (const auto& [kind, km] : m.kinds()) {
        const auto& back = loaded->kinds().at(kind);
        CHECK(back.beyond == km.beyond);
        REQUIRE(back.scores.size() == km.scores.size());
        for (std::size_t i = 0; i < km.scores.size(); ++i)
            CHECK(back.scores[i].beyond_mape == km.scores[i].beyond_mape);
    }
    CHECK(m.kinds().at("Gemm").beyond > 0);
    const auto again = estimators::load_estimator(bytes, "roofline.dnnc");
    CHECK(again->preset() == "device");

    // without the base (the build before it): a payload of version 4 loads and prices as it did
    // (and without the beyond test). Its payload is that of today without what versions 6 to 8
    // added at its end: per kind the count of rows (8 bytes) and per score whether it has a beyond
    // MAPE (1 byte, none here); then the intensity factor (three doubles); then whether each of
    // the two sample-boundary bounds is present (1 byte each, neither here).
    o.roofline_base = false;
    o.choice.beyond_fraction = 0;
    const auto old = DeviceModel::build(plain_rules(), t.samples, overhead_ms, o);
    CHECK_FALSE(old.kinds().at("Gemm").chosen.starts_with("roofline-"));
    std::size_t tail = 3 * sizeof(double) + 2;
    for (const auto& [kind, km] : old.kinds()) {
        CHECK(km.beyond == 0);
        tail += 8 + km.scores.size();
    }
    const auto v4 = with_payload_version(without_payload_tail(old.serialize(), tail), 4);
    const auto old_loaded = DeviceModel::deserialize(v4, "v4.dnnc");
    for (const auto& k : far) {
        CHECK(kernel_ms(*old_loaded, k.graph) == kernel_ms(old, k.graph));
        MESSAGE(k.kind, " without the base: law ", k.law, " ms, priced ", kernel_ms(old, k.graph), " ms");
    }
    CHECK_THROWS_WITH_AS(DeviceModel::deserialize(with_payload_version(bytes, DeviceModel::payload_version + 1), "new.dnnc"),
                         doctest::Contains("payload version"), parse_error);
}

#if defined(DNNCOST_HAS_XGBOOST)
TEST_CASE("device model: a model of an earlier payload version loads, and saved again prices the same") {
    // the "all" model shipped before the roofline base (payload version 3), kept for this test
    const auto path = std::string(DNNCOST_TESTS_DIR) + "/data/ort-cpu-all-1t-payload3.dnnc";
    const auto bytes = io::read_file(path);
    CHECK(payload_version_of(bytes) < DeviceModel::payload_version);
    const auto m = DeviceModel::deserialize(bytes, path);
    for (const auto& [kind, km] : m->kinds())
        if (km.regressor) CHECK_FALSE(km.regressor->kind().starts_with("roofline-"));
    std::vector<graph::Graph> nets;
    Rng rng(3);
    for (int i = 0; i < 3; ++i) nets.push_back(nb201::build_graph(nb201::from_index(static_cast<std::int64_t>(rng() % 15625))));
    std::vector<const graph::Graph*> ptrs;
    for (const auto& g : nets) ptrs.push_back(&g);
    const auto resaved = m->serialize();
    CHECK(payload_version_of(resaved) == DeviceModel::payload_version);
    CHECK(DeviceModel::deserialize(resaved, "resaved.dnnc")->price_totals(ptrs) == m->price_totals(ptrs));
}
#endif
