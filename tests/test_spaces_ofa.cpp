// Once-for-All space: strings, sampling, size, and the network against data/ofa/SPEC.md's
// check values (whole-model and per-block MACs and parameters at both widths, the published
// 595 M sub-network, and the MAC range of the data set).
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <dnncost/spaces/ofa.hpp>

#include "spaces_util.hpp"

using namespace dnncost;
using spaces_test::count_op;
using spaces_test::spec_macs;
using spaces_test::spec_params;

namespace {
const std::string kRow0 =
    "r204-d2.2.2.2.3-k7.5.5.5.7.7.5.7.5.7.3.7.5.3.7.3.5.3.5.3-e6.4.4.6.6.3.4.3.3.6.3.3.3.6.3.4.6.4.3.6";
const std::string kRow1 =
    "r136-d2.3.4.3.4-k7.3.5.3.3.7.3.7.3.7.3.7.3.7.7.3.5.5.7.3-e4.6.3.4.4.4.4.6.3.6.6.4.4.6.6.4.3.6.6.4";
std::string uniform(int r, int d, int k, int e) {
    ofa::Arch a;
    a.resolution = r;
    a.depths.fill(d);
    a.kernels.fill(k);
    a.expansions.fill(e);
    return ofa::to_string(a);
}
std::pair<std::int64_t, std::int64_t> part(const graph::Graph& g, const std::string& prefix) {
    std::int64_t macs = 0, params = 0;
    for (std::size_t i = 0; i < g.num_nodes(); ++i) {
        const auto& nd = g.node(static_cast<int>(i));
        if (nd.name.rfind(prefix, 0) != 0) continue;
        if (nd.op_type == "Conv" || nd.op_type == "Gemm") {
            macs += cost::node_cost(g, static_cast<int>(i)).macs;
            for (std::size_t s = 1; s < nd.inputs.size(); ++s) params += g.tensor(nd.inputs[s]).elements();
        }
        if (nd.op_type == "BatchNormalization")
            params += g.tensor(nd.inputs[1]).elements() + g.tensor(nd.inputs[2]).elements();
    }
    return {macs, params};
}
graph::Graph build(const std::string& arch, ofa::Width w) {
    ofa::OfaOptions o;
    o.width = w;
    return ofa::build_graph(arch, o);
}
}  // namespace

TEST_CASE("ofa: strings round trip through the architecture") {
    for (const auto& s : {kRow0, kRow1, uniform(128, 2, 3, 3), uniform(224, 4, 7, 6)}) {
        const auto a = ofa::parse(s);
        CHECK(ofa::to_string(a) == s);
    }
    const auto a = ofa::parse(kRow0);
    CHECK(a.resolution == 204);
    CHECK(a.depths == std::array<int, 5>{2, 2, 2, 2, 3});
    CHECK(a.kernels[19] == 3);
    CHECK(a.expansions[0] == 6);
}

TEST_CASE("ofa: bad strings name the bad field and value") {
    CHECK_THROWS_WITH_AS(ofa::parse("r204-d2.2.2.2.3"), doctest::Contains("found 2"), parse_error);
    const auto bad_r = "r130" + kRow0.substr(4);
    CHECK_THROWS_WITH_AS(ofa::parse(bad_r), doctest::Contains("token 0 'r130'"), parse_error);
    auto bad_k = kRow0;
    bad_k[bad_k.find("-k7.5") + 2] = '4';
    CHECK_THROWS_WITH_AS(ofa::parse(bad_k), doctest::Contains("value '4' at position 0 (expected 3, 5 or 7)"),
                         parse_error);
    auto short_e = kRow0.substr(0, kRow0.size() - 2);
    CHECK_THROWS_WITH_AS(ofa::parse(short_e), doctest::Contains("should hold 20 values"), parse_error);
    auto bad_tag = kRow0;
    bad_tag[bad_tag.find("-d") + 1] = 'x';
    CHECK_THROWS_WITH_AS(ofa::parse(bad_tag), doctest::Contains("should start with 'd'"), parse_error);
    auto bad_d = kRow0;
    bad_d[bad_d.find("-d2") + 2] = '5';
    CHECK_THROWS_WITH_AS(ofa::parse(bad_d), doctest::Contains("expected 2, 3 or 4"), parse_error);
    CHECK_THROWS_AS(ofa::parse(""), parse_error);
    ofa::OfaOptions tiny;
    tiny.resolution = 16;
    CHECK_THROWS_AS(ofa::build_graph(kRow0, tiny), config_error);
}

TEST_CASE("ofa: size of the space counts distinct networks") {
    CHECK(ofa::size().to_string() == "543966387314312146275");  // 25 x (9^2 + 9^3 + 9^4)^5
    CHECK(ofa::size().log10() == doctest::Approx(20.7356).epsilon(1e-5));
}

TEST_CASE("ofa: widths follow make_divisible as in SPEC.md") {
    const auto w12 = ofa::widths(ofa::Width::w1_2);
    CHECK(w12.stem == 24);
    CHECK(w12.block0 == 24);
    CHECK(w12.stages == std::array<std::int64_t, 5>{32, 48, 96, 136, 192});
    CHECK(w12.final_expand == 1152);
    CHECK(w12.feature_mix == 1536);
    const auto w10 = ofa::widths(ofa::Width::w1_0);
    CHECK(w10.stages == std::array<std::int64_t, 5>{24, 40, 80, 112, 160});
    CHECK(w10.feature_mix == 1280);
    // SE widths of the SPEC table: M // 4 rounded by make_divisible
    CHECK(ofa::make_divisible(408 / 4) == 104);
    CHECK(ofa::make_divisible(72 / 4) == 24);
    CHECK(ofa::make_divisible(336 / 4) == 88);
    CHECK(ofa::make_divisible(96 / 4) == 24);
}

TEST_CASE("ofa: MACs and parameters of the SPEC check architectures are exact at both widths") {
    struct Check {
        std::string arch;
        std::int64_t macs12, params12, macs10, params10;
    };
    const Check checks[] = {{kRow0, 305'047'776, 6'132'040, 194'900'424, 4'457'920},
                            {kRow1, 194'332'104, 8'563'984, 129'940'136, 6'166'880},
                            {uniform(224, 4, 7, 6), 843'101'040, 10'701'632, 566'170'656, 7'664'760},
                            {uniform(128, 2, 3, 3), 65'536'896, 4'602'456, 41'476'224, 3'410'792}};
    for (const auto& c : checks) {
        CAPTURE(c.arch);
        const auto g12 = build(c.arch, ofa::Width::w1_2);
        const auto g10 = build(c.arch, ofa::Width::w1_0);
        CHECK(spec_macs(g12) == c.macs12);
        CHECK(spec_params(g12) == c.params12);
        CHECK(spec_macs(g10) == c.macs10);
        CHECK(spec_params(g10) == c.params10);
        CHECK(cost::total_cost(g12).macs == c.macs12);
    }
}

TEST_CASE("ofa: the published flops@595M sub-network gives 595.19 M MACs at resolution 236") {
    // R 236 is outside the strings' range: built through the resolution override.
    const std::string arch =
        "r224-d3.4.4.4.4-k3.5.3.7.5.5.3.5.7.5.3.5.3.5.7.3.3.3.5.3-e3.4.3.6.4.4.6.3.6.6.3.4.6.6.6.4.6.6.6.3";
    ofa::OfaOptions o;
    o.resolution = 236;
    const auto g = ofa::build_graph(arch, o);
    CHECK(g.tensor(g.inputs().at(0)).shape == graph::Shape{1, 3, 236, 236});
    CHECK(static_cast<double>(spec_macs(g)) / 1e6 == doctest::Approx(595.19).epsilon(0.00002));
}

TEST_CASE("ofa: per-block MACs, parameters and feature sizes of CSV row 0 follow SPEC.md") {
    const auto g = build(kRow0, ofa::Width::w1_2);
    const std::map<std::string, std::pair<std::int64_t, std::int64_t>> expected{
        {"stem.", {6'741'792, 696}},
        {"block0.", {8'239'968, 888}},
        {"stage1.block0.", {66'294'288, 15'760}},
        {"stage1.block1.", {29'630'592, 11'968}},
        {"stage2.block0.", {28'588'800, 44'304}},
        {"stage2.block1.", {14'126'400, 33'256}},
        {"stage3.block0.", {7'617'168, 25'104}},
        {"stage3.block1.", {23'459'904, 141'312}},
        {"stage4.block0.", {12'550'176, 117'272}},
        {"stage4.block1.", {39'090'480, 573'312}},
        {"stage5.block0.", {27'770'928, 632'176}},
        {"stage5.block1.", {15'084'288, 601'152}},
        {"stage5.block2.", {11'709'504, 404'880}},
        {"final_expand.", {10'838'016, 223'488}},
        {"feature_mix.", {1'769'472, 1'769'472}},
        {"classifier", {1'536'000, 1'537'000}}};
    for (const auto& [prefix, mp] : expected) {
        CAPTURE(prefix);
        CHECK(part(g, prefix) == mp);
    }
    const auto side = [&](const std::string& t) { return g.tensor(g.find_tensor(t)).shape[2]; };
    CHECK(side("stem.hswish:0") == 102);
    CHECK(side("block0.add:0") == 102);
    CHECK(side("stage1.block1.add:0") == 51);
    CHECK(side("stage2.block1.add:0") == 26);
    CHECK(side("stage3.block1.add:0") == 13);
    CHECK(side("stage4.block1.add:0") == 13);
    CHECK(side("stage5.block2.add:0") == 7);
    // SE in stages 2, 4, 5 only (2 + 2 + 3 blocks), h-swish from stage 3 on
    CHECK(count_op(g, "HardSigmoid") == 7);
    CHECK(g.find_node("stage1.block0.se.pool") < 0);
    CHECK(g.tensor(g.find_tensor("stage2.block0.se.reduce:0")).shape == graph::Shape{1, 48, 1, 1});
    CHECK(g.find_node("stage2.block0.dw.relu") >= 0);
    CHECK(g.find_node("stage3.block0.dw.hswish") >= 0);
    // residual: every block but the first of a stage, plus block 0
    CHECK(count_op(g, "Add") == 1 + 1 + 1 + 1 + 1 + 2);
    CHECK(g.find_node("stage4.block0.add") < 0);  // stride 1 but 96 -> 136 channels
}

TEST_CASE("ofa: unused slots do not change the network") {
    auto a = ofa::parse(kRow0);
    auto b = a;
    b.kernels[3] = b.kernels[3] == 3 ? 5 : 3;  // stage 1 has depth 2: slots 2 and 3 are unused
    b.expansions[2] = b.expansions[2] == 6 ? 4 : 6;
    CHECK(ofa::same_network(a, b));
    CHECK_FALSE(a == b);
    auto ga = ofa::build_graph(a), gb = ofa::build_graph(b);
    gb.set_name(ga.name());
    CHECK(ga == gb);
    b.kernels[1] = b.kernels[1] == 3 ? 5 : 3;  // used
    CHECK_FALSE(ofa::same_network(a, b));
}

TEST_CASE("ofa: all 5,000 strings of data/ofa parse, round trip, are distinct networks and span the SPEC MAC range") {
    const auto archs = spaces_test::arch_column("ofa");
    REQUIRE(archs.size() == 5000);
    std::vector<ofa::Arch> parsed;
    std::vector<std::int64_t> macs12, macs10;
    for (const auto& s : archs) {
        parsed.push_back(ofa::parse(s));
        CHECK(ofa::to_string(parsed.back()) == s);
        macs12.push_back(spec_macs(build(s, ofa::Width::w1_2)));
        macs10.push_back(spec_macs(build(s, ofa::Width::w1_0)));
    }
    // distinct after masking the unused slots
    std::set<std::string> networks;
    for (auto a : parsed) {
        for (int st = 0; st < ofa::num_stages; ++st)
            for (int j = a.depths[static_cast<std::size_t>(st)]; j < ofa::max_depth; ++j) {
                a.kernels[static_cast<std::size_t>(4 * st + j)] = 3;
                a.expansions[static_cast<std::size_t>(4 * st + j)] = 3;
            }
        networks.insert(ofa::to_string(a));
    }
    CHECK(networks.size() == 5000);
    // SPEC.md: w1.2 min 91.9 M, median 271.8 M, max 635.6 M; w1.0 60.1 M / 178.1 M / 421.1 M
    const auto stats = [](std::vector<std::int64_t> v) {
        std::sort(v.begin(), v.end());
        return std::array<double, 3>{static_cast<double>(v.front()) / 1e6, static_cast<double>(v[2499] + v[2500]) / 2e6,
                                     static_cast<double>(v.back()) / 1e6};
    };
    const auto s12 = stats(macs12), s10 = stats(macs10);
    CHECK(s12[0] == doctest::Approx(91.9).epsilon(0.0006));
    CHECK(s12[1] == doctest::Approx(271.8).epsilon(0.0002));
    CHECK(s12[2] == doctest::Approx(635.6).epsilon(0.0001));
    CHECK(s10[0] == doctest::Approx(60.1).epsilon(0.0009));
    CHECK(s10[1] == doctest::Approx(178.1).epsilon(0.0003));
    CHECK(s10[2] == doctest::Approx(421.1).epsilon(0.00013));
}

TEST_CASE("ofa: seeded sampling is reproducible and covers every choice") {
    Rng a(11), b(11);
    for (int i = 0; i < 20; ++i) CHECK(ofa::sample(a) == ofa::sample(b));
    Rng rng(3);
    std::set<int> resolutions;
    std::vector<std::map<int, int>> depth(5), kernel(20), expansion(20);
    const int n = 3000;
    for (int i = 0; i < n; ++i) {
        const auto arch = ofa::sample(rng);
        if (i < 5) CHECK_NOTHROW(ofa::build_graph(arch).validate());
        CHECK(ofa::parse(ofa::to_string(arch)) == arch);
        resolutions.insert(arch.resolution);
        for (std::size_t s = 0; s < 5; ++s) ++depth[s][arch.depths[s]];
        for (std::size_t j = 0; j < 20; ++j) {
            ++kernel[j][arch.kernels[j]];
            ++expansion[j][arch.expansions[j]];
        }
    }
    CHECK(resolutions.size() == ofa::num_resolutions);
    for (const auto* table : {&depth, &kernel, &expansion})
        for (const auto& m : *table) {
            CHECK(m.size() == 3);
            for (const auto& [v, k] : m) {
                CHECK(k > 850);  // 1000 expected; 850 is > 5 standard deviations away
                CHECK(k < 1150);
            }
        }
}

TEST_CASE("ofa: the resolution override keeps the string and changes the input") {
    ofa::OfaOptions o;
    o.resolution = 160;
    const auto g = ofa::build_graph(kRow0, o);
    CHECK(g.tensor(g.inputs().at(0)).shape == graph::Shape{1, 3, 160, 160});
    CHECK(g.name().find(kRow0) != std::string::npos);
    CHECK(spec_macs(g) < spec_macs(ofa::build_graph(kRow0)));
    CHECK(spec_params(g) == 6'132'040);  // parameters do not depend on the resolution
}
