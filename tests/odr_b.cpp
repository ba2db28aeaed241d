// ODR check, second translation unit: the same inline definitions must link without clashes.
#include <dnncost/dnncost.hpp>

int odr_b_node_count() {
    const auto g =
        dnncost::nb201::build_graph("|nor_conv_3x3~0|+|none~0|skip_connect~1|+|avg_pool_3x3~0|nor_conv_1x1~1|none~2|");
    return static_cast<int>(g.num_nodes());
}
