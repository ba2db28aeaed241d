// ViT space: strings, sampling, size, and the network's structure, MACs and parameters
// against a count written out independently from the layer formulas.
#include <doctest/doctest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include <dnncost/spaces/vit.hpp>

#include "spaces_util.hpp"

using namespace dnncost;
using spaces_test::count_op;

namespace {
const std::string kSmall = "p8-e64-mean-h2q16m1-h2q16m1-h2q16m1-h2q16m1";
const std::string kMixed = "p4-e128-cls-h4q32m2-h2q64m4-h8q16m1-h4q32m3-h6q48m2";

// Learnable parameters: weights without known values (constants such as shapes, the GELU
// coefficients and the attention scale carry their values and are not learned).
std::int64_t learnable(const graph::Graph& g) {
    std::int64_t n = 0;
    for (const auto& t : g.tensors())
        if (t.kind == graph::TensorKind::weight && t.data.empty()) n += t.elements();
    return n;
}
struct Expected {
    std::int64_t macs = 0, params = 0;
};
// The count from the architecture alone: patch embedding, per-layer projections and attention
// products, classifier.
Expected by_formula(const vit::Arch& a) {
    const std::int64_t D = a.embed, P = a.patch, N = (32 / P) * (32 / P);
    const std::int64_t T = N + (a.readout == vit::Readout::cls_token ? 1 : 0);
    Expected e;
    e.macs = N * D * 3 * P * P + D * 100;
    e.params = 3 * P * P * D + D + T * D + (a.readout == vit::Readout::cls_token ? D : 0) + 2 * D + D * 100 + 100;
    for (const auto& l : a.layers) {
        const std::int64_t A = static_cast<std::int64_t>(l.heads) * l.qkv_width, H = l.mlp_ratio * D;
        e.macs += T * D * 3 * A                        // queries, keys, values
                  + 2 * l.heads * T * T * l.qkv_width  // scores and context
                  + T * A * D                          // output projection
                  + 2 * T * D * H;                     // MLP
        e.params += 4 * D + (D * 3 * A + 3 * A) + (A * D + D) + (D * H + H) + (H * D + D);
    }
    return e;
}
}  // namespace

TEST_CASE("vit: strings round trip through the architecture") {
    for (const auto& s : {kSmall, kMixed}) CHECK(vit::to_string(vit::parse(s)) == s);
    const auto a = vit::parse(kMixed);
    CHECK(a.patch == 4);
    CHECK(a.embed == 128);
    CHECK(a.readout == vit::Readout::cls_token);
    REQUIRE(a.layers.size() == 5);
    CHECK(a.layers[4] == vit::Layer{6, 48, 2});
}

TEST_CASE("vit: bad strings name the bad token") {
    CHECK_THROWS_WITH_AS(vit::parse("p4-e128-cls-h4q32m2"), doctest::Contains("found 4 tokens"), parse_error);
    CHECK_THROWS_WITH_AS(vit::parse("p2-e128-cls-h4q32m2-h4q32m2-h4q32m2-h4q32m2"), doctest::Contains("token 0 'p2'"),
                         parse_error);
    CHECK_THROWS_WITH_AS(vit::parse("p4-e100-cls-h4q32m2-h4q32m2-h4q32m2-h4q32m2"), doctest::Contains("token 1 'e100'"),
                         parse_error);
    CHECK_THROWS_WITH_AS(vit::parse("p4-e128-max-h4q32m2-h4q32m2-h4q32m2-h4q32m2"), doctest::Contains("token 2 'max'"),
                         parse_error);
    CHECK_THROWS_WITH_AS(vit::parse("p4-e128-cls-h4q32m2-h3q32m2-h4q32m2-h4q32m2"),
                         doctest::Contains("token 4 'h3q32m2' has 3 heads"), parse_error);
    CHECK_THROWS_WITH_AS(vit::parse("p4-e128-cls-h4q32m2-h4q32m2-h4q33m2-h4q32m2"),
                         doctest::Contains("query/key/value width 33"), parse_error);
    CHECK_THROWS_WITH_AS(vit::parse("p4-e128-cls-h4q32m2-h4q32m2-h4q32m5-h4q32m2"), doctest::Contains("MLP ratio 5"),
                         parse_error);
    CHECK_THROWS_WITH_AS(vit::parse("p4-e128-cls-h4q32m2-h4q32m2-h4m2q32-h4q32m2"),
                         doctest::Contains("token 5 'h4m2q32' is not a layer"), parse_error);
    std::string deep = "p4-e128-cls";
    for (int i = 0; i < 13; ++i) deep += "-h4q32m2";
    CHECK_THROWS_AS(vit::parse(deep), parse_error);
    vit::Arch off = vit::parse(kSmall);
    off.layers[0].heads = 3;
    CHECK_THROWS_AS(vit::build_graph(off), config_error);
}

TEST_CASE("vit: the size of the space") {
    // 2 patch sizes x 5 widths x 2 readouts x sum_{L=4}^{12} 64^L
    CHECK(vit::size().to_string() == "95946493620208659333120");
    CHECK(vit::size().log10() == doctest::Approx(22.98203).epsilon(1e-6));
}

TEST_CASE("vit: graph structure, shapes and ONNX operators") {
    const auto g = vit::build_graph(kMixed);
    CHECK_NOTHROW(g.validate());
    CHECK(g.tensor(g.outputs().at(0)).shape == graph::Shape{1, 100});
    const int L = 5;
    CHECK(count_op(g, "LayerNormalization") == 2 * L + 1);
    CHECK(count_op(g, "MatMul") == 6 * L);
    CHECK(count_op(g, "Softmax") == L);
    CHECK(count_op(g, "Tanh") == L);
    CHECK(count_op(g, "Pow") == L);
    CHECK(count_op(g, "Split") == L);
    CHECK(count_op(g, "Gather") == 1);
    CHECK(count_op(g, "Concat") == 1);
    CHECK(g.tensor(g.find_tensor("cls_token.concat:0")).shape == graph::Shape{1, 65, 128});
    CHECK(g.tensor(g.find_tensor("layer1.attn.scores:0")).shape == graph::Shape{1, 2, 65, 65});
    CHECK(g.tensor(g.find_tensor("layer4.qkv.split:2")).shape == graph::Shape{1, 6, 65, 48});
    CHECK(g.tensor(g.find_tensor("layer3.mlp.gelu.tanh:0")).shape == graph::Shape{1, 65, 384});  // ratio 3
    CHECK(g.tensor(g.find_tensor("layer1.mlp.fc1.add_bias:0")).shape == graph::Shape{1, 65, 512});
    const auto scale = g.find_tensor("const.attn_scale_q48");
    REQUIRE(scale >= 0);
    CHECK(g.tensor(scale).data.at(0) == static_cast<double>(static_cast<float>(1.0 / std::sqrt(48.0))));
    const auto mean = vit::build_graph(kSmall);
    CHECK(count_op(mean, "ReduceMean") == 1);
    CHECK(count_op(mean, "Concat") == 0);
    CHECK(mean.tensor(mean.find_tensor("pos_embed.add:0")).shape == graph::Shape{1, 16, 64});
}

TEST_CASE("vit: MACs and parameters match the layer formulas") {
    Rng rng(5);
    std::vector<vit::Arch> archs{vit::parse(kSmall), vit::parse(kMixed)};
    for (int i = 0; i < 30; ++i) archs.push_back(vit::sample(rng));
    for (const auto& a : archs) {
        CAPTURE(vit::to_string(a));
        const auto g = vit::build_graph(a);
        const auto e = by_formula(a);
        CHECK(cost::total_cost(g).macs == e.macs);
        CHECK(learnable(g) == e.params);
    }
    // by hand, kSmall: 16 tokens, width 64, 2 heads of 16, MLP ratio 1, 4 layers
    CHECK(by_formula(vit::parse(kSmall)).macs == 196'608 + 4 * (98'304 + 16'384 + 32'768 + 131'072) + 6'400);
}

TEST_CASE("vit: decomposed layer norm and batches") {
    vit::VitOptions o;
    o.decompose_layer_norm = true;
    const auto g = vit::build_graph(kMixed, o);
    CHECK_NOTHROW(g.validate());
    CHECK(count_op(g, "LayerNormalization") == 0);
    CHECK(count_op(g, "Sqrt") == 11);
    CHECK(cost::total_cost(g).macs == cost::total_cost(vit::build_graph(kMixed)).macs);
    CHECK(learnable(g) == learnable(vit::build_graph(kMixed)));
    vit::VitOptions b;
    b.batch = 3;
    const auto g3 = vit::build_graph(kMixed, b);
    CHECK(g3.tensor(g3.outputs().at(0)).shape == graph::Shape{3, 100});
    CHECK(count_op(g3, "Expand") == 1);
    CHECK_THROWS_AS(vit::build_graph(kMixed, vit::VitOptions{0, false}), config_error);
}

TEST_CASE("vit: seeded sampling is reproducible and covers every choice") {
    Rng a(21), b(21);
    for (int i = 0; i < 20; ++i) CHECK(vit::sample(a) == vit::sample(b));
    Rng rng(4);
    std::map<int, int> patch, embed, depth, heads, qkv, mlp, readout;
    const int n = 2700;
    for (int i = 0; i < n; ++i) {
        const auto arch = vit::sample(rng);
        CHECK(vit::parse(vit::to_string(arch)) == arch);
        ++patch[arch.patch];
        ++embed[arch.embed];
        ++depth[static_cast<int>(arch.layers.size())];
        ++readout[static_cast<int>(arch.readout)];
        for (const auto& l : arch.layers) {
            ++heads[l.heads];
            ++qkv[l.qkv_width];
            ++mlp[l.mlp_ratio];
        }
    }
    CHECK(patch.size() == 2);
    CHECK(embed.size() == 5);
    CHECK(depth.size() == 9);
    CHECK(readout.size() == 2);
    for (const auto& [d, k] : depth) {
        CHECK(k > 220);  // 300 expected per depth
        CHECK(k < 380);
    }
    CHECK(heads.size() == 4);
    CHECK(qkv.size() == 4);
    CHECK(mlp.size() == 4);
    for (const auto* m : {&heads, &qkv, &mlp}) {
        long total = 0;
        for (const auto& [v, k] : *m) total += k;
        for (const auto& [v, k] : *m) CHECK(std::abs(k - total / 4) < total / 20);
    }
}
