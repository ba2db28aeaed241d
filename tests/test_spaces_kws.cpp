// Keyword-spotting space: strings, sampling, size, and the network's shapes, padding, MACs and
// parameters against counts written out by hand.
#include <doctest/doctest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include <dnncost/spaces/kws.hpp>

#include "spaces_util.hpp"

using namespace dnncost;
using spaces_test::count_op;
using spaces_test::spec_macs;
using spaces_test::spec_params;

namespace {
// Hello Edge's DS-CNN (small): 10x4 stem with stride 2x2 and 64 channels, four 3x3 blocks of 64.
const std::string kDsCnnS = "10x4s2x2c64-3x3c64-3x3c64-3x3c64-3x3c64";
const std::string kMixed = "4x2s2x1c16-9x1c256-5x3c48";
}  // namespace

TEST_CASE("kws: strings round trip through the architecture") {
    for (const auto& s : {kDsCnnS, kMixed}) CHECK(kws::to_string(kws::parse(s)) == s);
    const auto a = kws::parse(kMixed);
    CHECK(a.stem_kernel == kws::Extent{4, 2});
    CHECK(a.stem_stride == kws::Extent{2, 1});
    CHECK(a.stem_channels == 16);
    REQUIRE(a.blocks.size() == 2);
    CHECK(a.blocks[0] == kws::Block{{9, 1}, 256});
}

TEST_CASE("kws: bad strings name the bad token") {
    CHECK_THROWS_WITH_AS(kws::parse("10x4s2x2c64-3x3c64"), doctest::Contains("found 2 tokens"), parse_error);
    CHECK_THROWS_WITH_AS(kws::parse("10x4s2x2c64-3x3c64-3x3c64-3x3c64-3x3c64-3x3c64-3x3c64-3x3c64"),
                         doctest::Contains("found 8 tokens"), parse_error);
    CHECK_THROWS_WITH_AS(kws::parse("10x5s2x2c64-3x3c64-3x3c64"),
                         doctest::Contains("token 0 '10x5s2x2c64' has stem kernel 10x5"), parse_error);
    CHECK_THROWS_WITH_AS(kws::parse("10x4s1x1c64-3x3c64-3x3c64"), doctest::Contains("stem stride 1x1"), parse_error);
    CHECK_THROWS_WITH_AS(kws::parse("10x4s2x2c65-3x3c64-3x3c64"), doctest::Contains("65 channels"), parse_error);
    CHECK_THROWS_WITH_AS(kws::parse("10x4-3x3c64-3x3c64"), doctest::Contains("token 0 '10x4' is not a stem"),
                         parse_error);
    CHECK_THROWS_WITH_AS(kws::parse("10x4s2x2c64-3x3c64-4x3c64"), doctest::Contains("token 2 '4x3c64' has kernel 4x3"),
                         parse_error);
    CHECK_THROWS_WITH_AS(kws::parse("10x4s2x2c64-3x3c64-3x3"), doctest::Contains("token 2 '3x3' is not a block"),
                         parse_error);
    CHECK_THROWS_WITH_AS(kws::parse("10x4s2x2c64-3x3c64-3x3c064"), doctest::Contains("token 2"), parse_error);
    CHECK_THROWS_AS(kws::parse(""), parse_error);
    auto off = kws::parse(kDsCnnS);
    off.blocks[1].channels = 100;
    CHECK_THROWS_AS(kws::build_graph(off), config_error);
}

TEST_CASE("kws: the size of the space") {
    const auto n = kws::size();  // 4 x 2 x 8 stems x sum_{n=2}^{6} 64^n
    CHECK(n.to_string() == "4467856769024");
    CHECK(n.to_uint64() == std::optional<std::uint64_t>(4'467'856'769'024ULL));
}

TEST_CASE("kws: DS-CNN shapes, 'same' padding, MACs and parameters by hand") {
    const auto g = kws::build_graph(kDsCnnS);
    CHECK_NOTHROW(g.validate());
    CHECK(g.tensor(g.inputs().at(0)).shape == graph::Shape{1, 1, 49, 10});
    CHECK(g.tensor(g.find_tensor("stem.relu:0")).shape == graph::Shape{1, 64, 25, 5});
    // 10x4 kernel at stride 2: 9 rows of padding (4 before, 5 after), 2 columns (1 and 1)
    CHECK(g.node(g.find_node("stem.conv")).attr_ints("pads") == std::vector<std::int64_t>{4, 1, 5, 1});
    CHECK(g.node(g.find_node("block0.dw.conv")).attr_ints("pads") == std::vector<std::int64_t>{1, 1, 1, 1});
    CHECK(g.node(g.find_node("block0.dw.conv")).attr_int("group", 1) == 64);
    CHECK(g.node(g.find_node("pool")).attr_ints("kernel_shape") == std::vector<std::int64_t>{25, 5});
    CHECK(g.tensor(g.outputs().at(0)).shape == graph::Shape{1, 12});
    // stem 125 positions x 64 x 40; per block depthwise 125 x 64 x 9 and pointwise 125 x 64 x 64; FC 64 x 12
    CHECK(spec_macs(g) == 320'000 + 4 * (72'000 + 512'000) + 768);
    // stem 2,560 + BN 128; per block 576 + 128 + 4,096 + 128; FC 768 + 12
    CHECK(spec_params(g) == 2'688 + 4 * 4'928 + 780);
    CHECK(count_op(g, "Conv") == 9);
    CHECK(count_op(g, "Add") == 0);  // no residuals in this space
}

TEST_CASE("kws: non-square strides and kernels") {
    const auto g = kws::build_graph(kMixed);
    CHECK_NOTHROW(g.validate());
    // 4x2 kernel, stride 2x1: 25 x 10 output; rows pad 1 + 2, columns 0 + 1
    CHECK(g.tensor(g.find_tensor("stem.relu:0")).shape == graph::Shape{1, 16, 25, 10});
    CHECK(g.node(g.find_node("stem.conv")).attr_ints("pads") == std::vector<std::int64_t>{1, 0, 2, 1});
    CHECK(g.node(g.find_node("block0.dw.conv")).attr_ints("kernel_shape") == std::vector<std::int64_t>{9, 1});
    CHECK(g.node(g.find_node("block0.dw.conv")).attr_ints("pads") == std::vector<std::int64_t>{4, 0, 4, 0});
    CHECK(g.tensor(g.find_tensor("block1.pw.relu:0")).shape == graph::Shape{1, 48, 25, 10});
    // stem 250 x 16 x 8; block 0: 250 x 16 x 9 + 250 x 256 x 16; block 1: 250 x 256 x 15 + 250 x 48 x 256
    CHECK(spec_macs(g) == 32'000 + (36'000 + 1'024'000) + (960'000 + 3'072'000) + 48 * 12);
}

TEST_CASE("kws: seeded sampling is reproducible and covers every choice") {
    Rng a(9), b(9);
    for (int i = 0; i < 20; ++i) CHECK(kws::sample(a) == kws::sample(b));
    Rng rng(2);
    std::set<std::string> stems, kernels;
    std::map<int, int> blocks, channels;
    for (int i = 0; i < 2000; ++i) {
        const auto arch = kws::sample(rng);
        if (i < 20) CHECK_NOTHROW(kws::build_graph(arch).validate());
        CHECK(kws::parse(kws::to_string(arch)) == arch);
        stems.insert(kws::to_string(arch).substr(0, kws::to_string(arch).find('c')));
        ++blocks[static_cast<int>(arch.blocks.size())];
        ++channels[arch.stem_channels];
        for (const auto& bl : arch.blocks) {
            kernels.insert(std::to_string(bl.kernel[0]) + "x" + std::to_string(bl.kernel[1]));
            ++channels[bl.channels];
        }
    }
    CHECK(stems.size() == 8);  // 4 kernels x 2 strides
    CHECK(kernels.size() == 8);
    CHECK(blocks.size() == 5);
    for (const auto& [n, k] : blocks) {
        CHECK(k > 320);  // 400 expected
        CHECK(k < 480);
    }
    CHECK(channels.size() == 8);
}
