#include <doctest/doctest.h>

#include <set>

#include <dnncost/cost/analytic.hpp>
#include <dnncost/graph/nb201.hpp>

using namespace dnncost;

namespace {
int count_op(const graph::Graph& g, const std::string& op) {
    int n = 0;
    for (const auto& nd : g.nodes()) n += nd.op_type == op;
    return n;
}
const char* kAll3x3 = "|nor_conv_3x3~0|+|nor_conv_3x3~0|nor_conv_3x3~1|+|nor_conv_3x3~0|nor_conv_3x3~1|nor_conv_3x3~2|";
const char* kAllSkip = "|skip_connect~0|+|skip_connect~0|skip_connect~1|+|skip_connect~0|skip_connect~1|skip_connect~2|";
const char* kAllNone = "|none~0|+|none~0|none~1|+|none~0|none~1|none~2|";
}  // namespace

TEST_CASE("nb201: parse / print / index round trip over the whole space") {
    const auto all = nb201::enumerate();
    REQUIRE(all.size() == 15625);
    std::set<std::string> seen;
    for (std::int64_t i = 0; i < nb201::num_architectures; ++i) {
        const auto& a = all[static_cast<std::size_t>(i)];
        CHECK(nb201::to_index(a) == i);
        const auto s = nb201::to_string(a);
        CHECK(nb201::parse(s) == a);
        seen.insert(s);
    }
    CHECK(seen.size() == 15625);
    CHECK(nb201::to_string(nb201::parse(kAll3x3)) == kAll3x3);
}

TEST_CASE("nb201: bad strings give clear errors") {
    CHECK_THROWS_WITH_AS(nb201::parse("|nor_conv_3x3~0|+|none~0|"), doctest::Contains("3 groups"), parse_error);
    CHECK_THROWS_WITH_AS(nb201::parse("|conv~0|+|none~0|none~1|+|none~0|none~1|none~2|"),
                         doctest::Contains("unknown operation 'conv'"), parse_error);
    CHECK_THROWS_WITH_AS(nb201::parse("|none~1|+|none~0|none~1|+|none~0|none~1|none~2|"),
                         doctest::Contains("node 0"), parse_error);
    CHECK_THROWS_AS(nb201::parse(""), parse_error);
    CHECK_THROWS_AS(nb201::from_index(15625), config_error);
    CHECK_THROWS_AS(nb201::from_index(-1), config_error);
}

TEST_CASE("nb201: eager graph structure follows the reference network") {
    // stem 2 + two reduction blocks of 9 + head 5 = 25 fixed nodes; per cell 3 adds plus
    // 3 nodes per conv edge, 1 per pool or zero edge, 0 per skip edge.
    const auto g = nb201::build_graph(kAll3x3);
    CHECK_NOTHROW(g.validate());
    CHECK(g.num_nodes() == 25 + 15 * (3 + 6 * 3));
    CHECK(count_op(g, "Conv") == 1 + 2 * 3 + 15 * 6);
    const auto skip = nb201::build_graph(kAllSkip);
    CHECK(skip.num_nodes() == 25 + 15 * 3);
    const auto none = nb201::build_graph(kAllNone);
    CHECK(none.num_nodes() == 25 + 15 * (3 + 6));
    CHECK(count_op(none, "Mul") == 90);
    // shapes: 32x32 stage, 16x16, 8x8; logits [1,10]
    CHECK(g.tensor(g.outputs().at(0)).shape == graph::Shape{1, 10});
    CHECK(g.is_topologically_sorted());
}

TEST_CASE("nb201: MACs match the published range of the space (7.78 M to 220.11 M)") {
    // NAS-Bench-201 reports FLOPs (multiply-accumulates) from 7.78 M (no conv in the cell) to
    // 220.11 M (all six edges 3x3 conv) on CIFAR-10.
    const auto big = cost::total_cost(nb201::build_graph(kAll3x3));
    const auto small = cost::total_cost(nb201::build_graph(kAllSkip));
    CHECK(static_cast<double>(big.macs) / 1e6 == doctest::Approx(220.11).epsilon(0.001));
    CHECK(static_cast<double>(small.macs) / 1e6 == doctest::Approx(7.78).epsilon(0.001));
}

TEST_CASE("nb201: pruned view removes what cannot influence the output") {
    // node 3 only reads node 1 through a conv; node 2 is unused; edges from none are gone.
    const char* arch = "|nor_conv_3x3~0|+|nor_conv_1x1~0|avg_pool_3x3~1|+|none~0|nor_conv_3x3~1|none~2|";
    const auto eager = nb201::build_graph(arch);
    nb201::Nb201Options opt;
    opt.prune = true;
    const auto pruned = nb201::build_graph(arch, opt);
    CHECK_NOTHROW(pruned.validate());
    CHECK(count_op(eager, "Mul") == 30);
    CHECK(count_op(pruned, "Mul") == 0);
    // per cell kept: conv(1<-0) and conv(3<-1) = 6 nodes, no adds
    CHECK(pruned.num_nodes() == 25 + 15 * 6);
    CHECK(count_op(pruned, "AveragePool") == 2);  // only the two reduction shortcuts

    // a disconnected cell makes the whole network after it a constant
    const auto folded = nb201::build_graph(kAllNone, opt);
    CHECK(folded.num_nodes() == 1);
    CHECK(folded.node(0).op_type == "Constant");
    // eager graphs never change with the prune flag off
    CHECK(nb201::build_graph(arch) == eager);
}
