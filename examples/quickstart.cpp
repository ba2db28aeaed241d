// Quick-start: build an NB201 network, annotate its cost, and estimate its roofline latency.
#include <cstdio>

#include <dnncost/dnncost.hpp>

int main() {
    using namespace dnncost;
    const auto g = nb201::build_graph("|nor_conv_3x3~0|+|nor_conv_3x3~0|avg_pool_3x3~1|+|skip_connect~0|nor_conv_3x3~1|skip_connect~2|");
    const auto total = cost::total_cost(g);
    cost::DeviceSpec cpu{.name = "laptop", .peak_flops = 200e9, .bandwidth = 20e9};
    std::printf("%zu operators, %zu edges, %.2f MMACs, %lld params, roofline %.3f ms\n", g.num_nodes(), g.num_edges(),
                static_cast<double>(total.macs) / 1e6, static_cast<long long>(total.params),
                cost::roofline(g, cpu).total * 1e3);
}
