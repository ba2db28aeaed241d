// bf16 GEMMs on every bf16 unit and emulated, the packing of their operands, and GNN estimators
// trained and saved in bf16.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <string>

#include "gradcheck.hpp"
#include "latency_like_data.hpp"

#include <dnncost/estimators/presets.hpp>
#include <dnncost/nn/gnn/sage_block.hpp>
#include <dnncost/nn/tensor.hpp>

using namespace dnncost;
using namespace dnncost::nn;
using estimators::GnnEstimator;
using Data = test::LatencyLikeData;

namespace {
// no additive path: the trained network itself is kept, so its GEMM arithmetic shows
constexpr GnnConfig gnn_only = [] {
    GnnConfig c = test::additive_preset;
    c.head.additive_path = false;
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
    return u == kernels::Bf16Unit::amx      ? kernels::amx_available()
           : u == kernels::Bf16Unit::avx512 ? kernels::avx512bf16_available()
                                            : true;
}
constexpr kernels::Bf16Unit all_units[] = {kernels::Bf16Unit::amx, kernels::Bf16Unit::avx512,
                                           kernels::Bf16Unit::emulated};
Mat<double> rounded(const Mat<float>& m) {
    Mat<double> r(m.rows(), m.cols());
    for (Index i = 0; i < m.size(); ++i) r.data()[i] = kernels::from_bf16(kernels::to_bf16(m.data()[i]));
    return r;
}
}  // namespace

TEST_CASE(
    "bf16 GEMMs, on AMX, on AVX512-BF16 and emulated: the exact product of the bf16-rounded inputs up to fp32 sums, "
    "all shapes, threads") {
    if (!kernels::amx_available()) MESSAGE("this CPU has no AMX-BF16: the tile unit is not checked");
    if (!kernels::avx512bf16_available())
        MESSAGE("this CPU has no AVX512-BF16: only the emulated bf16 path is checked");
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
    for (const auto& [m, k, n] : std::vector<std::array<Index, 3>>{
             {300, 256, 128}, {50, 77, 64}, {37, 71, 45}, {5, 3, 7}, {64, 65, 33}, {40, 1003, 128}}) {
        for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool}) {
            const Mat<float> a = rnd(m, k), b = rnd(k, n), at = rnd(k, m), bt = rnd(n, k);
            const bool bf16 =
                static_cast<double>(m) * n * k >= kernels::bf16_threshold_macs;  // smaller products stay fp32
            // independent truth: double-precision products of the inputs as each path should see them
            const auto in = [&](const Mat<float>& x) { return bf16 ? rounded(x) : Mat<double>(x.cast<double>()); };
            const Mat<double> ab = in(a)*in(b), atb = in(at).transpose() * in(b), abt = in(a)*in(bt).transpose();
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
    CHECK(kernels::from_bf16(kernels::to_bf16(1.0f + 1.0f / 256.0f)) == 1.0f);                  // tie -> even (down)
    CHECK(kernels::from_bf16(kernels::to_bf16(1.0f + 3.0f / 256.0f)) == 1.0f + 4.0f / 256.0f);  // tie -> even (up)
    CHECK(std::isnan(kernels::from_bf16(kernels::to_bf16(std::nanf("")))));
}

TEST_CASE(
    "bf16 training: a GNN trained with bf16 GEMMs predicts close to its fp32 twin; the default is bf16 where a bf16 "
    "unit runs it") {
    Data d;
    GnnEstimator<gnn_only> a, b, dflt;
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
        GnnEstimator<gnn_only> plain;
        plain.fit(d.train, d.val, o);
        CHECK(plain.precision() == Precision::fp32);
    }
    a.set_options({.precision = Precision::fp32});
    a.fit(d.train, d.val, o);
    b.set_options({.precision = Precision::bf16});
    b.fit(d.train, d.val, o);
    CHECK(a.precision() == Precision::fp32);
    CHECK(b.precision() == Precision::bf16);
    const auto pa = a.predict_mean(d.val.graphs, 1), pb = b.predict_mean(d.val.graphs, 1);
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

TEST_CASE(
    "bf16 model: saved with its precision, predicts the same numbers on every bf16 unit and emulated, a version-2 file "
    "loads as fp32") {
    Data d;
    GnnEstimator<gnn_only> est("bf16test");
    estimators::FitOptions o;
    o.threads = 1;
    o.max_epochs = 3;
    est.set_options({.precision = Precision::bf16});
    est.fit(d.train, d.val, o);
    const auto bytes = est.serialize();
    auto loaded = GnnEstimator<gnn_only>::deserialize(bytes, "bf16test");
    CHECK(loaded.precision() == Precision::bf16);
    const auto p_here = est.predict_mean(d.val.graphs, 1);
    CHECK(loaded.predict_mean(d.val.graphs, 1) == p_here);  // same machine, same arithmetic: bit-identical
    // as on a CPU with the other unit or with neither: the same bf16 arithmetic, fp32 sums in
    // another order
    double worst = 0;
    for (const auto unit : all_units) {
        if (!unit_available(unit)) continue;
        std::vector<double> p_unit;
        {
            const UseUnit use(unit);
            p_unit = loaded.predict_mean(d.val.graphs, 1);
        }
        double w = 0;
        for (std::size_t i = 0; i < p_here.size(); ++i)
            w = std::max(w, std::abs(p_unit[i] - p_here[i]) / std::abs(p_here[i]));
        MESSAGE("largest relative difference, here (" << std::string(kernels::to_string(kernels::bf16_unit()))
                                                      << ") vs " << std::string(kernels::to_string(unit)) << ": " << w);
        CHECK(w < 1e-4);
        worst = std::max(worst, w);
    }
    // and not what the same weights give in fp32 (so the comparison above is not vacuous)
    loaded.set_precision(Precision::fp32);
    const auto p_fp32 = loaded.predict_mean(d.val.graphs, 1);
    double fp32_diff = 0;
    for (std::size_t i = 0; i < p_here.size(); ++i)
        fp32_diff = std::max(fp32_diff, std::abs(p_fp32[i] - p_here[i]) / std::abs(p_here[i]));
    MESSAGE("largest relative bf16 / fp32 difference " << fp32_diff);
    CHECK(fp32_diff > 10 * worst);

    // a payload of version 2 (before the precision field and the convolution-kinds flag) loads,
    // as fp32
    const auto c = io::read_container(bytes, "bf16test", "<test>");
    io::BinaryReader r(c.payload, "<test>");
    REQUIRE(r.get_u32() == 4);
    const auto preset = r.get_string();
    const std::size_t at = 4 + 8 + preset.size();
    std::string v2 = c.payload.substr(0, at) + c.payload.substr(at + 4 + 1);
    v2[0] = 2;
    const auto old = GnnEstimator<gnn_only>::deserialize(io::write_container("bf16test", c.config_hash, v2), "bf16test");
    CHECK(old.precision() == Precision::fp32);
    // an unknown precision code is a clear error
    std::string bad = c.payload;
    bad[at] = 7;
    CHECK_THROWS_WITH_AS(
        GnnEstimator<gnn_only>::deserialize(io::write_container("bf16test", c.config_hash, bad), "bf16test", "m.dnnc"),
        doctest::Contains("precision code 7"), parse_error);
}

TEST_CASE("bf16 inference: the SAGE block's direct packing and frozen weights give the unfused bf16 result") {
    Rng rng(21);
    // 64: one 64-column block; 160: a 128-column block in registers plus a 32-column one;
    // 40: not a multiple of 32, the generic packing path
    for (const int d : {64, 160, 40}) {
        INFO("width " << d);
        std::vector<features::EncodedGraph> graphs;
        for (int n : {40, 1, 75, 9})
            graphs.push_back(test::random_graph(rng, n, d));  // 125 nodes: not a multiple of 32
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
    CHECK((c_fresh.cast<double>() - a.cast<double>() * act.cast<double>()).cwiseAbs().maxCoeff() <
          0.05 * std::sqrt(96.0) * 2.0);
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
    for (const auto [rows, cols, ld] : {std::array<Eigen::Index, 3>{1, 1, 1},
                                        {31, 33, 40},
                                        {64, 32, 32},
                                        {100, 128, 130},
                                        {257, 70, 70},
                                        {5, 96, 200}}) {
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
                const std::uint16_t want =
                    i < cols && d < rows ? kernels::to_bf16(s[static_cast<std::size_t>(d * ld + i)]) : 0;
                wrong +=
                    ws.a[static_cast<std::size_t>(((i / 16) * kt + d / 32) * 512 + (i % 16) * 32 + d % 32)] != want;
            }
        CHECK(wrong == 0);
    }
}
