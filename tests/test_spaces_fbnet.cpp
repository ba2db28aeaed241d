// FBNet space: strings, sampling, size, and the network against data/fbnet/SPEC.md's check
// values (whole-model and per-layer MACs and parameters, and the MAC range of the data set).
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <dnncost/spaces/fbnet.hpp>

#include "spaces_util.hpp"

using namespace dnncost;
using spaces_test::count_op;
using spaces_test::spec_macs;
using spaces_test::spec_params;

namespace {
const std::string kRow0 =
    "k5_e6-skip-k3_e1_g2-skip-k5_e1-skip-skip-skip-k5_e6-k5_e1-k3_e1_g2-k5_e1-k5_e6-k3_e6-k3_e3-k5_e6-k3_e6-k3_e3-"
    "k5_e1-k3_e3-k5_e1-k5_e1_g2";
std::string all_of(const std::string& op) {
    std::string s;
    for (int i = 0; i < fbnet::num_layers; ++i) {
        if (i) s += '-';
        s += op;
    }
    return s;
}
// MACs and parameters of the nodes whose names start with `prefix` (SPEC conventions).
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
}  // namespace

TEST_CASE("fbnet: strings round trip through the architecture") {
    const auto a = fbnet::parse(kRow0);
    CHECK(fbnet::to_string(a) == kRow0);
    CHECK(a.ops[0] == fbnet::Op::k5_e6);
    CHECK(a.ops[1] == fbnet::Op::skip);
    CHECK(a.ops[21] == fbnet::Op::k5_e1_g2);
    for (int op = 0; op < fbnet::num_ops; ++op) {
        const auto s = all_of(std::string(fbnet::op_names[static_cast<std::size_t>(op)]));
        CHECK(fbnet::to_string(fbnet::parse(s)) == s);
    }
}

TEST_CASE("fbnet: bad strings name the bad token") {
    CHECK_THROWS_WITH_AS(fbnet::parse("k3_e1-k3_e1"), doctest::Contains("found 2"), parse_error);
    auto bad = kRow0;
    bad[bad.find("k3_e1_g2") + 1] = '7';
    CHECK_THROWS_WITH_AS(fbnet::parse(bad), doctest::Contains("token 2 'k7_e1_g2'"), parse_error);
    CHECK_THROWS_WITH_AS(fbnet::parse(kRow0 + "-"), doctest::Contains("found 23"), parse_error);
    // appended rather than "-" + ...: GCC 12 at -O3 warns on a string insert at the front (a false positive)
    std::string empty_first = "-";
    empty_first += kRow0.substr(6);
    CHECK_THROWS_WITH_AS(fbnet::parse(empty_first), doctest::Contains("token 0 ''"), parse_error);
    CHECK_THROWS_AS(fbnet::parse(""), parse_error);
    CHECK_THROWS_AS(fbnet::build_graph(kRow0, fbnet::FbnetOptions{0}), config_error);
}

TEST_CASE("fbnet: the size of the space is 9^22") {
    const auto n = fbnet::size();
    CHECK(n.to_string() == "984770902183611232881");
    CHECK_FALSE(n.to_uint64().has_value());  // beyond 64 bits
    CHECK(n.log10() == doctest::Approx(20.99333).epsilon(1e-6));
}

TEST_CASE("fbnet: MACs and parameters of the SPEC check architectures are exact") {
    struct Check {
        std::string arch;
        std::int64_t macs, params;
    };
    const Check checks[] = {{kRow0, 67'605'376, 1'790'500},
                            {all_of("k3_e1"), 31'322'240, 1'170'676},
                            {all_of("k5_e6"), 160'926'080, 3'749'652},
                            {all_of("skip"), 11'608'960, 780'660}};
    for (const auto& c : checks) {
        CAPTURE(c.arch);
        const auto g = fbnet::build_graph(c.arch);
        CHECK(spec_macs(g) == c.macs);
        CHECK(spec_params(g) == c.params);
        CHECK(cost::total_cost(g).macs == c.macs);  // the library's own total agrees (no MatMul here)
    }
}

TEST_CASE("fbnet: per-layer MACs and parameters of CSV row 0 follow SPEC.md") {
    const auto g = fbnet::build_graph(kRow0);
    const std::map<std::string, std::pair<std::int64_t, std::int64_t>> expected{{"stem.", {442'368, 464}},
                                                                                {"layer1.", {5'603'328, 5'888}},
                                                                                {"layer2.", {393'216, 432}},
                                                                                {"layer3.", {811'008, 936}},
                                                                                {"layer4.", {0, 0}},
                                                                                {"layer5.", {1'794'048, 1'896}},
                                                                                {"layer6.", {196'608, 832}},
                                                                                {"layer7.", {0, 0}},
                                                                                {"layer9.", {4'374'528, 17'920}},
                                                                                {"layer10.", {444'416, 4'128}},
                                                                                {"layer11.", {299'008, 5'056}},
                                                                                {"layer12.", {626'688, 10'176}},
                                                                                {"layer13.", {3'760'128, 60'416}},
                                                                                {"layer14.", {4'546'560, 72'800}},
                                                                                {"layer15.", {5'010'432, 79'856}},
                                                                                {"layer16.", {10'708'992, 170'240}},
                                                                                {"layer17.", {10'020'864, 159'488}},
                                                                                {"layer18.", {3'446'016, 104'192}},
                                                                                {"layer19.", {1'156'992, 73'416}},
                                                                                {"layer20.", {3'329'664, 210'680}},
                                                                                {"layer21.", {1'156'992, 73'416}},
                                                                                {"layer22.", {862'592, 55'352}},
                                                                                {"head.", {8'470'528, 532'416}},
                                                                                {"classifier", {150'400, 150'500}}};
    for (const auto& [prefix, mp] : expected) {
        CAPTURE(prefix);
        CHECK(part(g, prefix) == mp);
    }
}

TEST_CASE("fbnet: graph structure follows the layer operators") {
    const auto g = fbnet::build_graph(kRow0);
    CHECK_NOTHROW(g.validate());
    CHECK(g.tensor(g.outputs().at(0)).shape == graph::Shape{1, 100});
    // identity skips (L4, L7, L8) have no operator; L2 and L6 are projections
    CHECK(g.find_node("layer4.pw1.conv") < 0);
    CHECK(g.find_node("layer2.proj.conv") >= 0);
    CHECK(g.node(g.find_node("layer6.proj.conv")).attr_ints("strides") == std::vector<std::int64_t>{2, 2});
    // L3 k3_e1_g2 (24 -> 24): grouped 1x1 convs and one channel shuffle between them
    const auto& pw1 = g.node(g.find_node("layer3.pw1.conv"));
    CHECK(pw1.attr_int("group", 1) == 2);
    CHECK(g.node(g.find_node("layer3.pw2.conv")).attr_int("group", 1) == 2);
    CHECK(g.node(g.find_node("layer3.dw.conv")).attr_int("group", 1) == 24);
    CHECK(g.tensor(g.find_tensor("layer3.shuffle.split:0")).shape == graph::Shape{1, 2, 12, 32, 32});
    CHECK(g.node(g.find_node("layer3.shuffle.swap")).attr_ints("perm") == std::vector<std::int64_t>{0, 2, 1, 3, 4});
    CHECK(count_op(g, "Transpose") == 3);  // L3, L11, L22
    // residual adds: ConvBlocks with C_in == C_out and stride 1 (L1, L3, L5, L9, L11-13, L15-17, L19-21)
    CHECK(count_op(g, "Add") == 13);
    CHECK(g.find_node("layer10.add") < 0);  // stride 2: no residual
    const auto skip = fbnet::build_graph(all_of("skip"));
    CHECK(count_op(skip, "Conv") == 1 + 6 + 1);  // stem, six projections, head
}

TEST_CASE("fbnet: all 5,000 strings of data/fbnet parse, round trip, and span the SPEC MAC range") {
    const auto archs = spaces_test::arch_column("fbnet");
    REQUIRE(archs.size() == 5000);
    std::set<std::string> distinct;
    std::vector<std::int64_t> macs;
    for (const auto& s : archs) {
        const auto a = fbnet::parse(s);
        CHECK(fbnet::to_string(a) == s);
        distinct.insert(fbnet::to_string(a));
        macs.push_back(spec_macs(fbnet::build_graph(a)));
    }
    CHECK(distinct.size() == 5000);
    std::sort(macs.begin(), macs.end());
    // SPEC.md: min 29.83 M, median 64.43 M, max 107.49 M
    CHECK(static_cast<double>(macs.front()) / 1e6 == doctest::Approx(29.83).epsilon(0.0002));
    CHECK(static_cast<double>(macs[2499] + macs[2500]) / 2e6 == doctest::Approx(64.43).epsilon(0.0002));
    CHECK(static_cast<double>(macs.back()) / 1e6 == doctest::Approx(107.49).epsilon(0.0002));
}

TEST_CASE("fbnet: seeded sampling is reproducible and covers every operator at every layer") {
    Rng a(7), b(7), c(8);
    std::vector<std::string> sa, sb, sc;
    for (int i = 0; i < 20; ++i) {
        sa.push_back(fbnet::to_string(fbnet::sample(a)));
        sb.push_back(fbnet::to_string(fbnet::sample(b)));
        sc.push_back(fbnet::to_string(fbnet::sample(c)));
    }
    CHECK(sa == sb);
    CHECK(sa != sc);
    Rng rng(1);
    std::vector<std::array<int, fbnet::num_ops>> counts(fbnet::num_layers);
    const int n = 1800;  // 200 expected per (layer, operator)
    for (int i = 0; i < n; ++i) {
        const auto arch = fbnet::sample(rng);
        if (i < 10) CHECK_NOTHROW(fbnet::build_graph(arch).validate());
        for (std::size_t l = 0; l < arch.ops.size(); ++l) ++counts[l][static_cast<std::size_t>(arch.ops[l])];
    }
    for (const auto& layer : counts)
        for (int k : layer) {
            CHECK(k > 140);  // > 4 standard deviations below 200: a broken sampler, not chance
            CHECK(k < 260);
        }
}
