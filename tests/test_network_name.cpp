// Networks named by text alone: space networks with build options, synthesised networks built
// again from their graph names, and data sets whose keys are such names.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include <dnncost/graph/hash.hpp>
#include <dnncost/spaces/network_name.hpp>
#include <dnncost/spaces/synthetic.hpp>
#include <dnncost/train/dataset.hpp>

using namespace dnncost;

namespace {
// every block kind, with the choices a draw makes for it
std::vector<synthetic::CnnArch> drawn_cnns() {
    std::vector<synthetic::CnnArch> out;
    for (int b = 0; b <= static_cast<int>(synthetic::Block::plain); ++b) {
        Rng rng(100 + static_cast<std::uint64_t>(b));
        for (int i = 0; i < 12; ++i) out.push_back(synthetic::sample_cnn(rng, static_cast<synthetic::Block>(b)));
    }
    return out;
}
}  // namespace

TEST_CASE("synthetic names: a description reads back as the architecture that wrote it") {
    for (const auto& a : drawn_cnns()) {
        const auto text = synthetic::to_string(a);
        CAPTURE(text);
        CHECK(synthetic::to_string(synthetic::parse_cnn(text)) == text);
    }
    Rng rng(7);
    for (int i = 0; i < 30; ++i) {
        const auto a = synthetic::with_sequence(synthetic::sample_transformer(rng),
                                                static_cast<synthetic::Sequence>(i % 3), static_cast<std::size_t>(i));
        const auto text = synthetic::to_string(a);
        CAPTURE(text);
        CHECK(synthetic::to_string(synthetic::parse_transformer(text)) == text);
    }
    // hand-written: every optional part of a stage and of the head
    const auto a =
        synthetic::parse_cnn("r160-s24k5x2p-branched-Swish-w32d2s1k3e4seb3dense-w64d1s2k5b2-f512-flat-h1024x2");
    CHECK(a.resolution == 160);
    CHECK(a.stem == 24);
    CHECK(a.stem_kernel == 5);
    CHECK(a.stem_stride == 2);
    CHECK(a.stem_pool);
    CHECK(a.block == synthetic::Block::branched);
    CHECK(a.act == "Swish");
    REQUIRE(a.stages.size() == 2);
    CHECK(a.stages[0].expand == 4);
    CHECK(a.stages[0].squeeze_excite);
    CHECK(a.stages[0].branches == 3);
    CHECK(a.stages[0].dense);
    CHECK(!a.stages[1].dense);
    CHECK(a.stages[1].kernel == 5);
    CHECK(a.feature_mix == 512);
    CHECK(a.flatten);
    CHECK(a.hidden == 1024);
    CHECK(a.hidden_layers == 2);
    const auto t = synthetic::parse_transformer("t384-tok-e512q64m4d6-cls-ln13-tanh");
    CHECK(t.tokens == 384);
    CHECK(t.patch == 0);
    CHECK(t.embed == 512);
    CHECK(t.head_width == 64);
    CHECK(t.depth == 6);
    CHECK(t.cls_token);
    CHECK(t.decompose_layer_norm);
    CHECK(!t.erf_gelu);
}

TEST_CASE("synthetic names: a network is built again from its graph name, as fitted to its limits") {
    synthetic::Limits small;  // narrowed and shrunk: the name describes what was built
    small.max_params = 2'000'000;
    small.max_macs = 300'000'000;
    small.classes = 10;
    Rng rng(3);
    std::vector<graph::Graph> graphs;
    for (const auto& a : drawn_cnns()) graphs.push_back(synthetic::build_cnn(a, {}));
    for (std::size_t i = 0; i < 8; ++i) graphs.push_back(synthetic::build_cnn(synthetic::sample_cnn(rng), small));
    for (std::size_t i = 0; i < 6; ++i)
        graphs.push_back(
            synthetic::build_transformer(synthetic::sample_transformer(rng), i % 2 ? small : synthetic::Limits{}));
    for (const auto& g : graphs) {
        CAPTURE(g.name());
        REQUIRE(synthetic::is_network_name(g.name()));
        const auto again = synthetic::build_from_name(g.name());
        CHECK(graph::canonical_hash(again) == graph::canonical_hash(g));
        CHECK(again.name() == g.name());
    }
    // the classifier's outputs are part of the name when they are not 1,000
    CHECK(graphs.back().name().ends_with("-out10"));
    CHECK(graphs.front().name().find("-out") == std::string::npos);
}

TEST_CASE("synthetic names: a malformed name is an error naming its token") {
    const auto fails = [](const std::string& name, const std::string& why) {
        CAPTURE(name);
        CHECK_THROWS_WITH_AS(synthetic::build_from_name(name), doctest::Contains(why.c_str()), parse_error);
    };
    fails("cnn:r224-s32-basic-Relu", "found 4 tokens");
    fails("cnn:r224-s32-basic-Relu-w64d2s2", "token 4 'w64d2s2' is not a stage");
    fails("cnn:r224-s32-wide-Relu-w64d2s2k3", "token 2 'wide' is not a block kind");
    fails("cnn:r224-s32-basic-Tanh-w64d2s2k3", "activation 'Tanh'");
    fails("cnn:r0224-s32-basic-Relu-w64d2s2k3", "token 0 'r0224'");
    fails("cnn:r224-s32-basic-Relu-w64d2s2k3e1", "written as 'r224-s32-basic-Relu-w64d2s2k3'");
    fails("cnn:r224-s32-basic-Relu-w64d2s2k3-h512-f64", "token 6 'f64' follows the head");
    fails("cnn:r224-s32-branched-Relu-w64d2s2k3", "b<branches>");
    fails("transformer:t196p16-e384q64m4d4-mean-ln17", "found 4 tokens");
    fails("transformer:t196p16-e384q64m4d4-avg-ln17-erf", "token 2 'avg' is not cls or mean");
    fails("transformer:t195p16-e384q64m4d4-mean-ln17-erf", "not a square");
    fails("transformer:t196p16-e384q64m4d4-mean-ln17-erf-out0", "found 6 tokens");
    fails("cnn:r224-s32-basic-Relu-w64d2s2k3-out0", "token 5 'out0' follows the head");
    fails("resnet:r224", "not a synthesised network's name");
}

TEST_CASE("network names: space networks with their own build options, synthesised networks, and files") {
    const std::string nb = "|nor_conv_3x3~0|+|none~0|skip_connect~1|+|avg_pool_3x3~0|none~1|nor_conv_1x1~2|";
    const auto& nb201 = spaces::find_space("nb201");
    const auto n = spaces::parse_network_name(nb + "@batch=8");
    REQUIRE(n);
    CHECK(n->space == &nb201);
    CHECK(n->arch == nb);
    CHECK(n->build() == nb201.build_graph(nb, spaces::space_options("batch=8")));
    // the name's options win over the defaults given; others are added
    CHECK(n->build(spaces::space_options("batch=2,prune=1")) ==
          nb201.build_graph(nb, spaces::space_options("batch=8,prune=1")));
    CHECK(spaces::network_name("nb201", nb, spaces::space_options("prune=1,batch=8")) == nb + "@batch=8@prune=1");

    const auto& ofa = spaces::find_space("ofa");
    Rng rng(5);
    const auto arch = ofa.sample(rng);
    const auto name = spaces::network_name("ofa", arch, spaces::space_options("resolution=192"));
    CHECK(name == "ofa:" + arch + "@resolution=192");
    const auto o = spaces::parse_network_name(name);
    REQUIRE(o);
    CHECK(o->build() == ofa.build_graph(arch, spaces::space_options("resolution=192")));

    const auto cnn = synthetic::build_cnn(synthetic::sample_cnn(rng));
    const auto c = spaces::parse_network_name(cnn.name());
    REQUIRE(c);
    CHECK(c->space == nullptr);
    CHECK(graph::canonical_hash(c->build()) == graph::canonical_hash(cnn));

    CHECK(!spaces::parse_network_name("models/resnet@2x.onnx"));
    CHECK(!spaces::parse_network_name("nasbench:abc@batch=1"));
    CHECK_THROWS_WITH_AS(spaces::parse_network_name(nb + "@batch"), doctest::Contains("'batch' is not KEY=VALUE"),
                         parse_error);
    CHECK_THROWS_WITH_AS(spaces::parse_network_name(nb + "@batch=1@batch=2"), doctest::Contains("given twice"),
                         parse_error);
    CHECK_THROWS_WITH_AS(spaces::parse_network_name(cnn.name() + "@batch=2"), doctest::Contains("takes no @ options"),
                         parse_error);
    CHECK_THROWS_WITH_AS(spaces::parse_network_name(nb + "@size=3")->build(), doctest::Contains("size"), config_error);
}

TEST_CASE("network names: a data set's keys name networks with options and synthesised networks") {
    const std::string nb = "|nor_conv_3x3~0|+|none~0|skip_connect~1|+|avg_pool_3x3~0|none~1|nor_conv_1x1~2|";
    Rng rng(9);
    const auto cnn = synthetic::build_cnn(synthetic::sample_cnn(rng));
    const auto tf = synthetic::build_transformer(synthetic::sample_transformer(rng));
    const std::string csv = "id,latency_ms\n" + nb + "@batch=8,2.5\n" + nb + ",1.0\n" + cnn.name() + ",30\n" +
                            tf.name() + ",40\n" + nb + "@batch,1.5\n" + "cnn:r224-s32-basic-Relu,9\n" + nb +
                            "@size=3,4\n";
    train::DatasetOptions opt;
    opt.space_options = spaces::space_options("batch=2");
    const auto ds = train::load_dataset_text(csv, "named.csv", ".", opt);
    REQUIRE(ds.size() == 4);
    const auto& nb201 = spaces::find_space("nb201");
    CHECK(*ds.graph(0) == nb201.build_graph(nb, spaces::space_options("batch=8")));
    CHECK(*ds.graph(1) == nb201.build_graph(nb, spaces::space_options("batch=2")));  // the data set's default
    CHECK(graph::canonical_hash(*ds.graph(2)) == graph::canonical_hash(cnn));
    CHECK(graph::canonical_hash(*ds.graph(3)) == graph::canonical_hash(tf));
    REQUIRE(ds.skipped().size() == 3);
    CHECK(ds.skipped()[0].line == 6);
    CHECK(ds.skipped()[0].reason.find("bad architecture: network '") != std::string::npos);
    CHECK(ds.skipped()[1].line == 7);
    CHECK(ds.skipped()[1].reason.find("found 4 tokens") != std::string::npos);
    CHECK(ds.skipped()[2].line == 8);  // an option of the key's own that its space does not take
    CHECK(ds.skipped()[2].reason.find("size") != std::string::npos);
    // an option of the data set's that the space does not take fails the whole data set
    opt.space_options = spaces::space_options("size=3");
    CHECK_THROWS_WITH_AS(train::load_dataset_text("id,latency_ms\n" + nb + ",1\n", "bad.csv", ".", opt),
                         doctest::Contains("size"), config_error);
}
