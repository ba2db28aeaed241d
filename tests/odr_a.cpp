// ODR check, first translation unit: includes the umbrella and uses it.
#include <doctest/doctest.h>
#include <dnncost/dnncost.hpp>

int odr_b_node_count();

TEST_CASE("umbrella header links from two translation units") {
    const auto g =
        dnncost::nb201::build_graph("|nor_conv_3x3~0|+|none~0|skip_connect~1|+|avg_pool_3x3~0|nor_conv_1x1~1|none~2|");
    CHECK(static_cast<int>(g.num_nodes()) == odr_b_node_count());
}
