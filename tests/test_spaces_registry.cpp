// The registry: every space by name, options as text, errors that name what is wrong.
#include <doctest/doctest.h>

#include <set>
#include <string>
#include <vector>

#include <dnncost/cost/analytic.hpp>
#include <dnncost/spaces/nb201.hpp>
#include <dnncost/spaces/registry.hpp>
#include <dnncost/spaces/sample.hpp>

using namespace dnncost;

TEST_CASE("registry: every space samples, prints canonically and builds by name") {
    std::set<std::string> names;
    for (const auto& s : spaces::all_spaces()) {
        CAPTURE(s.name);
        names.insert(std::string(s.name));
        CHECK(&spaces::find_space(s.name) == &s);
        Rng a(3), b(3);
        for (int i = 0; i < 5; ++i) {
            const auto arch = s.sample(a);
            CHECK(arch == s.sample(b));
            CHECK(s.canonical(arch) == arch);
            const auto g = s.build_graph(arch, {});
            CHECK_NOTHROW(g.validate());
            CHECK(g.outputs().size() == 1);
        }
        CHECK(s.size().log10() > 4);
        CHECK(s.onnx_opset >= 13);
    }
    CHECK(names == std::set<std::string>{"nb201", "fbnet", "ofa", "vit", "kws"});
    CHECK(spaces::find_space("nb201").size() == spaces::Count(15625));
    CHECK(spaces::find_space("fbnet").size() == fbnet::size());
    CHECK(spaces::find_space("ofa").size() == ofa::size());
    CHECK(spaces::find_space("vit").size() == vit::size());
    CHECK(spaces::find_space("kws").size() == kws::size());
}

TEST_CASE("registry: options reach the builders") {
    const auto& ofa = spaces::find_space("ofa");
    const std::string arch =
        "r224-d2.2.2.2.2-k3.3.3.3.3.3.3.3.3.3.3.3.3.3.3.3.3.3.3.3-e3.3.3.3.3.3.3.3.3.3.3.3.3.3.3.3.3.3.3.3";
    const auto g = ofa.build_graph(arch, spaces::space_options("resolution=160,width=1.0,batch=2"));
    CHECK(g.tensor(g.inputs().at(0)).shape == graph::Shape{2, 3, 160, 160});
    ofa::OfaOptions o;
    o.width = ofa::Width::w1_0;
    o.resolution = 160;
    o.batch = 2;
    auto direct = ofa::build_graph(arch, o);
    CHECK(direct == g);
    const auto& vit = spaces::find_space("vit");
    const auto v =
        vit.build_graph("p8-e64-mean-h2q16m1-h2q16m1-h2q16m1-h2q16m1", spaces::space_options("layer_norm=decomposed"));
    for (const auto& nd : v.nodes()) CHECK(nd.op_type != "LayerNormalization");
}

TEST_CASE("registry: errors name the space, option or token") {
    CHECK_THROWS_WITH_AS(spaces::find_space("nasbench"),
                         doctest::Contains("unknown search space 'nasbench' (known: nb201, fbnet, ofa, vit or kws)"),
                         config_error);
    CHECK_THROWS_WITH_AS(spaces::space_options("width"), doctest::Contains("item 'width' is not key=value"),
                         config_error);
    CHECK_THROWS_WITH_AS(spaces::space_options("batch=1,batch=2"), doctest::Contains("given twice"), config_error);
    CHECK(spaces::space_options("").empty());
    const auto& kws = spaces::find_space("kws");
    const std::string arch = "10x4s2x2c64-3x3c64-3x3c64";
    CHECK_THROWS_WITH_AS(kws.build_graph(arch, spaces::space_options("width=1.0")),
                         doctest::Contains("space 'kws': unknown option 'width' (known: batch)"), config_error);
    CHECK_THROWS_WITH_AS(kws.build_graph(arch, spaces::space_options("batch=-1")),
                         doctest::Contains("not a positive integer"), config_error);
    CHECK_THROWS_AS(kws.build_graph(arch, spaces::space_options("batch=0")), config_error);
    CHECK_THROWS_WITH_AS(spaces::find_space("ofa").build_graph("r224", spaces::space_options("width=1.1")),
                         doctest::Contains("width"), error);
    CHECK_THROWS_WITH_AS(kws.canonical("10x4s2x2c64-3x3c64-3x4c64"), doctest::Contains("token 2 '3x4c64'"),
                         parse_error);
}

TEST_CASE("registry: nb201 by name equals the builder, prune as an option") {
    const auto& nb = spaces::find_space("nb201");
    const std::string arch = "|nor_conv_3x3~0|+|none~0|skip_connect~1|+|avg_pool_3x3~0|none~1|nor_conv_1x1~2|";
    CHECK(nb.build_graph(arch, {}) == nb201::build_graph(arch));
    nb201::Nb201Options pruned;
    pruned.prune = true;
    CHECK(nb.build_graph(arch, spaces::space_options("prune=1")) == nb201::build_graph(arch, pruned));
    CHECK_THROWS_WITH_AS(nb.build_graph(arch, spaces::space_options("prune=yes")), doctest::Contains("prune"),
                         config_error);
}

TEST_CASE("registry: qualified architecture strings name their space") {
    const std::string fb =
        "k3_e1-k3_e1-k3_e1-k3_e1-k3_e1-k3_e1-k3_e1-k3_e1-k3_e1-k3_e1-k3_e1-k3_e1-k3_e1-k3_e1-k3_e1-k3_e1-"
        "k3_e1-k3_e1-k3_e1-k3_e1-k3_e1-k3_e1";
    const auto q = spaces::qualified_arch("fbnet", fb);
    CHECK(q == "fbnet:" + fb);
    const auto s = spaces::split_qualified(q);
    REQUIRE(s);
    CHECK(s->space->name == "fbnet");
    CHECK(s->arch == fb);
    const std::string nb = "|none~0|+|none~0|none~1|+|none~0|none~1|none~2|";
    CHECK(spaces::qualified_arch("nb201", nb) == nb);
    REQUIRE(spaces::split_qualified(nb));
    CHECK(spaces::split_qualified(nb)->space->name == "nb201");
    CHECK(!spaces::split_qualified("models/resnet50.onnx"));
    CHECK(!spaces::split_qualified("C:/models/x.onnx"));
    CHECK(!spaces::split_qualified("nasbench:abc"));
}

TEST_CASE("sample: distinct canonical strings, the same for the same seed") {
    for (const auto& s : spaces::all_spaces()) {
        CAPTURE(s.name);
        Rng a(11), b(11), c(12);
        const auto first = spaces::sample_distinct(s, 20, a);
        CHECK(first == spaces::sample_distinct(s, 20, b));
        CHECK(first != spaces::sample_distinct(s, 20, c));
        CHECK(std::set<std::string>(first.begin(), first.end()).size() == 20);
        for (const auto& arch : first) CHECK(s.canonical(arch) == arch);
    }
}

TEST_CASE("sample: NB201 by index reaches the whole space and no further") {
    Rng rng(5);
    const auto all = spaces::sample_nb201_by_index(static_cast<std::size_t>(nb201::num_architectures), rng);
    std::set<std::string> distinct(all.begin(), all.end());
    CHECK(distinct.size() == static_cast<std::size_t>(nb201::num_architectures));
    CHECK(distinct.count(nb201::to_string(nb201::from_index(0))) == 1);
    CHECK(distinct.count(nb201::to_string(nb201::from_index(nb201::num_architectures - 1))) == 1);
    Rng again(5);
    CHECK(spaces::sample_nb201_by_index(3, again) ==
          std::vector<std::string>(all.begin(), all.begin() + 3));  // a prefix of the same shuffle
    CHECK_THROWS_AS(spaces::sample_nb201_by_index(static_cast<std::size_t>(nb201::num_architectures) + 1, rng),
                    config_error);
}
