// A downstream program: builds an NB201 network and prints its MACs (headers alone).
#include <cstdio>

#include <dnncost/cost/analytic.hpp>
#include <dnncost/spaces/nb201.hpp>

int main() {
    const auto g = dnncost::nb201::build_graph(
        "|nor_conv_3x3~0|+|nor_conv_3x3~0|nor_conv_3x3~1|+|nor_conv_3x3~0|nor_conv_3x3~1|nor_conv_3x3~2|");
    const auto macs = dnncost::cost::total_cost(g).macs;
    std::printf("%lld\n", static_cast<long long>(macs));
    return macs == 220119680 ? 0 : 1;  // 90 3x3 convs in the cells + stem, reductions, classifier
}
