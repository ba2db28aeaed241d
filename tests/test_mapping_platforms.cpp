// Example platforms and the ViG space: the Xavier-like platform against MaGNAS Table 2, its
// transfers and DVFS model, the roofline platform against hand-computed layer costs and its
// support relation, the roofline platform as cost's roofline formula, blocks priced through the
// pricing interface (a cost::CostSource per unit), the N-d cost table, the ViG supernet encoding
// and the accuracy proxy.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <dnncost/cost/roofline_cost.hpp>
#include <dnncost/graph/graph.hpp>
#include <dnncost/search/mapping/cost_source.hpp>
#include <dnncost/search/mapping/cost_table.hpp>
#include <dnncost/search/mapping/mapping_cost.hpp>
#include <dnncost/search/mapping/platforms/xavier.hpp>
#include <dnncost/search/mapping/roofline.hpp>
#include <dnncost/search/mapping/vig_space.hpp>

using namespace dnncost;
using namespace dnncost::search::mapping;

TEST_CASE("Xavier-like platform reproduces MaGNAS Table 2 standalone totals of the four ViG-S baselines") {
    const XavierLikePlatform x;
    const VigSpace space;
    const TableCostSource<VigSpace> table(tabulate(space, x));
    const WorkloadCostSource<VigSpace, XavierLikePlatform> direct(space, x);
    for (const auto& row : xavier_table2) {
        const auto blocks = space.blocks(VigSpace::baseline(row.op));
        CHECK(blocks.size() == 34);  // stem + 16 x (Grapher + FFN) + cls
        for (int source = 0; source < 2; ++source) {
            const MappingEvaluator ev = source ? MappingEvaluator(make_instance(table, blocks, 0))
                                               : MappingEvaluator(make_instance(direct, blocks, 0));
            const auto sa = standalone_mappings(ev);
            REQUIRE(sa.size() == 2);
            INFO(graph_op_name[static_cast<int>(row.op)], source ? " (table)" : " (direct)");
            CHECK(sa[0].value.t == doctest::Approx(row.gpu_ms).epsilon(1e-12));
            CHECK(sa[1].value.t == doctest::Approx(row.dla_ms).epsilon(1e-12));
            CHECK(sa[0].value.e == doctest::Approx(row.gpu_mj).epsilon(1e-12));
            CHECK(sa[1].value.e == doctest::Approx(row.dla_mj).epsilon(1e-12));
        }
    }
    // GIN anchors the scale: its factor is 1; every factor positive
    const auto& c = x.calibration();
    for (std::size_t u = 0; u < 2; ++u) {
        CHECK(c.time_factor[u][3] == doctest::Approx(1.0));
        CHECK(c.energy_factor[u][3] == doctest::Approx(1.0));
        for (std::size_t o = 0; o < 4; ++o) CHECK(c.time_factor[u][o] > 0.0);
    }
}

TEST_CASE("Xavier-like transfers come from feature sizes at 136.5 GB/s, the DVFS grid is the paper's") {
    const XavierLikePlatform x;
    const VigSpace space;
    const auto& p = x.platform();
    CHECK(p.num_dvfs() == 2 * 3 * 2 * 2);
    CHECK(p.dvfs.front().name == "cpu2265-gpu1377-emc2133-dla1395");
    CHECK(p.dvfs.back().name == "cpu1728-gpu520-emc1065-dla1050");
    std::set<double> gpu_clocks;
    for (const auto& s : p.dvfs) gpu_clocks.insert(s.clock("gpu"));
    CHECK(gpu_clocks == std::set<double>{520.0, 900.0, 1377.0});

    const VigBlock grapher{VigBlockKind::grapher, 1, 0, GraphOp::gin, true, 0};
    const auto w = space.workload(grapher);
    const double features = 196.0 * 320.0 * 2.0;  // fp16
    CHECK(w.input_bytes == features);
    const auto maxn = *x.cost(w, XavierLikePlatform::gpu, 0);
    CHECK(maxn.t_in == doctest::Approx(1e3 * features / 136.5e9));
    CHECK(maxn.t_out == doctest::Approx(1e3 * features / 136.5e9));
    CHECK(maxn.e_in == doctest::Approx(1e3 * features * 40e-12));
    const auto slow_emc = *x.cost(w, XavierLikePlatform::gpu, p.dvfs_index("cpu2265-gpu1377-emc1065-dla1395"));
    CHECK(slow_emc.t_in == doctest::Approx(maxn.t_in * 2133.0 / 1065.0));

    // a lower GPU clock slows GPU blocks between not at all (memory-bound) and 1/r (compute-bound),
    // plus nothing on the DLA
    const std::size_t gpu520 = p.dvfs_index("cpu2265-gpu520-emc2133-dla1395");
    const double r = 520.0 / 1377.0;
    const auto gpu_slow = *x.cost(w, XavierLikePlatform::gpu, gpu520);
    CHECK(gpu_slow.t_comp > maxn.t_comp);
    CHECK(gpu_slow.t_comp < maxn.t_comp * ((1.0 - 0.05) / r + 0.05) + 1e-12);
    const auto dla_max = *x.cost(w, XavierLikePlatform::dla, 0);
    CHECK(x.cost(w, XavierLikePlatform::dla, gpu520)->t_comp == doctest::Approx(dla_max.t_comp));
    // MinN is slower everywhere
    const auto minn = *x.cost(w, XavierLikePlatform::dla, p.num_dvfs() - 1);
    CHECK(minn.t_comp > dla_max.t_comp);
    CHECK_THROWS_AS(x.cost(w, 2, 0), config_error);
    CHECK_THROWS_AS(p.dvfs_index("turbo"), config_error);
}

TEST_CASE("roofline platform: per-layer max(FLOPs / peak, bytes / bandwidth) with class efficiencies") {
    const auto r = three_accelerator_platform();
    const VigSpace space;
    CHECK(r.platform().cus == std::vector<std::string>{"DSA-k", "DSA-y", "DSA-d"});
    // FFN, width 96, on DSA-y (dense efficiency 0.55, elementwise 0.40), by hand
    const VigBlock ffn{VigBlockKind::ffn, 0, 0, GraphOp::max_relative, false, 96};
    const double n = 196, d = 320, h = 96;
    const double fc_flops = 2 * n * d * h, fc_bytes = 2 * (n * d + n * h + d * h);
    const double res_flops = 4 * n * d, res_bytes = 2 * 3 * n * d;
    const double t_fc = std::max(fc_flops / (4e12 * 0.55), fc_bytes / (51.2e9 * 0.55));
    const double t_res = std::max(res_flops / (4e12 * 0.40), res_bytes / (51.2e9 * 0.40));
    const double t = 2 * t_fc + t_res;
    const double e = (2 * fc_flops + res_flops) * 0.6e-12 + (2 * fc_bytes + res_bytes) * 20e-12 + 0.5 * t;
    const auto k = r.cost(space.workload(ffn), 1, 0);
    REQUIRE(k.has_value());
    CHECK(k->t_comp == doctest::Approx(1e3 * t).epsilon(1e-9));
    CHECK(k->e_comp == doctest::Approx(1e3 * e).epsilon(1e-9));
    CHECK(k->t_out == doctest::Approx(1e3 * 2 * n * d / 51.2e9));
    // the weight-stationary DSA-k has no gather unit: it cannot run a Grapher, so it has no
    // standalone mapping, and P is normalised by the other two
    const VigBlock grapher{VigBlockKind::grapher, 0, 0, GraphOp::gin, false, 0};
    CHECK_FALSE(r.cost(space.workload(grapher), 0, 0).has_value());
    CHECK(r.cost(space.workload(grapher), 2, 0).has_value());
    const WorkloadCostSource<VigSpace, RooflinePlatform> src(space, r);
    const MappingEvaluator ev(make_instance(src, space.blocks(VigSpace::baseline(GraphOp::gin)), 0));
    const auto sa = standalone_mappings(ev);
    REQUIRE(sa.size() == 2);
    CHECK(sa[0].cu == 1);
    CHECK(sa[1].cu == 2);
    CHECK(ev.supported(1) == std::vector<std::uint8_t>{1, 2});     // a Grapher
    CHECK(ev.supported(2) == std::vector<std::uint8_t>{0, 1, 2});  // its FFN
    // efficiencies are checked
    CHECK_THROWS_AS(RooflinePlatform("bad", {RooflineUnit{{"x", 1e12, 1e9, 0.0}, {1.5, 1, 1, 1}}}, 1e9, 0.0),
                    config_error);
}

TEST_CASE("the roofline platform's layer cost is cost's roofline formula on its unit's derated device") {
    // one unit: 2 TFLOP/s, 50 GB/s; conv efficiency 0.5, gather 0.25
    RooflineUnit u{{"u", 2e12, 50e9, 0.0}, {0.5, 0.8, 0.25, 1.0}, 1e-12, 10e-12, 2.0};
    BlockWork w;
    w.layers.push_back({"conv", OpClass::conv, 1e9, 1e6, -1});
    w.layers.push_back({"gather", OpClass::gather, 1e6, 4e7, -1});
    w.input_bytes = 1e6;
    w.output_bytes = 2e6;
    // by hand: the conv is compute-bound, 1e9 / 1e12 = 1 ms (its bytes take 1e6 / 25e9 = 0.04 ms);
    // the gather memory-bound, 4e7 / 12.5e9 = 3.2 ms (its FLOPs 1e6 / 0.5e12 = 0.002 ms)
    const double t = 1e-3 + 3.2e-3;
    const auto k = RooflinePlatform("one", {u}, 100e9, 5e-12).cost(w, 0, 0);
    REQUIRE(k.has_value());
    CHECK(k->t_comp == doctest::Approx(1e3 * t).epsilon(1e-12));
    CHECK(k->t_comp == 1e3 * (cost::roofline_seconds(1e9, 1e6, u.device.derated(0.5)) +
                              cost::roofline_seconds(1e6, 4e7, u.device.derated(0.25))));
    CHECK(k->e_comp == doctest::Approx(1e3 * ((1e9 + 1e6) * 1e-12 + (1e6 + 4e7) * 10e-12 + 2.0 * t)).epsilon(1e-12));
    CHECK(k->t_in == doctest::Approx(1e3 * 1e6 / 100e9));
    CHECK(k->e_out == doctest::Approx(1e3 * 2e6 * 5e-12));
    // the device's per-operator overhead is paid once per layer, and burns static power
    u.device.per_op_overhead_s = 1e-4;
    const auto ko = RooflinePlatform("one", {u}, 100e9, 5e-12).cost(w, 0, 0);
    REQUIRE(ko.has_value());
    CHECK(ko->t_comp == doctest::Approx(1e3 * (t + 2e-4)).epsilon(1e-12));
    CHECK(ko->e_comp - k->e_comp == doctest::Approx(1e3 * 2.0 * 2e-4).epsilon(1e-9));
    u.device.per_op_overhead_s = -1.0;
    CHECK_THROWS_WITH_AS(RooflinePlatform("one", {u}, 100e9, 5e-12), doctest::Contains("unit 'u'"), config_error);
}

namespace {
/// x [1,C,8,8] -> Conv 1x1 (K, no bias) -> Relu: a block of a toy network as a graph.
graph::Graph conv_block(std::int64_t C, std::int64_t K) {
    graph::Graph g("conv_block");
    const int x = g.add_input("x", {1, C, 8, 8});
    const int w = g.add_weight("w", {K, C, 1, 1});
    const int y = g.add_op("Conv", "conv", {x, w}, {1, K, 8, 8}, {{"kernel_shape", std::vector<std::int64_t>{1, 1}}});
    const int r = g.add_op("Relu", "relu", {y}, {1, K, 8, 8});
    g.mark_output(r);
    g.validate();
    return g;
}
}  // namespace

TEST_CASE("blocks priced through the pricing interface: a cost::CostSource per unit and DVFS setting") {
    // blocks are (C, K) pairs; unit "big" is a 1 GFLOP/s, 1 GB/s roofline at "hi" and half
    // that at "lo"; unit "small" a 0.25 GFLOP/s roofline that cannot run block 0
    using Block = std::pair<std::int64_t, std::int64_t>;
    const cost::DeviceSpec big{"big", 1e9, 1e9, 0.0};
    const auto roof = [](cost::DeviceSpec d) { return std::make_shared<cost::RooflineCost>(std::move(d)); };
    Platform p{"toy", {"big", "small"}, {{"hi", {}}, {"lo", {}}}};
    std::vector<std::vector<PricedUnit>> units = {
        {{roof(big), 2.0}, {roof(big.derated(0.5)), 0.8}},
        {{roof({"small", 0.25e9, 1e9, 0.0}), 0.5}, {roof({"small", 0.25e9, 1e9, 0.0}), 0.5}}};
    const std::vector<Block> blocks = {{4, 8}, {8, 8}};
    const PricedCostSource<Block> src(
        p, units, [](const Block& b) { return conv_block(b.first, b.second); }, 10e9, 1e-11,
        [&](const Block& b, std::size_t cu) { return cu == 0 || b != blocks[0]; });
    // block (4, 8) on "big" at "hi", by hand: the Conv 2*512*4 = 4096 FLOPs against 4*(256 +
    // 512 + 32) = 3200 bytes, compute-bound, 4.096 us; the Relu 512 FLOPs against 4096 bytes,
    // memory-bound, 4.096 us
    const auto k = src.cost(blocks[0], 0, 0);
    REQUIRE(k.has_value());
    CHECK(k->t_comp == doctest::Approx(8.192e-3).epsilon(1e-12));
    CHECK(k->e_comp == doctest::Approx(8.192e-3 * 2.0).epsilon(1e-12));    // ms x W = mJ
    CHECK(k->t_in == doctest::Approx(1e3 * 1024 / 10e9).epsilon(1e-12));   // x: 4*64 floats
    CHECK(k->t_out == doctest::Approx(1e3 * 2048 / 10e9).epsilon(1e-12));  // the Relu's output
    CHECK(k->e_in == doctest::Approx(1e3 * 1024 * 1e-11).epsilon(1e-12));
    CHECK(src.cost(blocks[0], 0, 1)->t_comp == doctest::Approx(2 * 8.192e-3).epsilon(1e-12));
    CHECK_FALSE(src.cost(blocks[0], 1, 0).has_value());
    // the same figures as pricing the block's graph directly
    CHECK(src.cost(blocks[1], 1, 0)->t_comp ==
          cost::RooflineCost({"small", 0.25e9, 1e9, 0.0}).cost(conv_block(8, 8)).total_ms);
    // a mapping instance over it: only "big" runs block 0
    const MappingEvaluator ev(make_instance(src, blocks, 0));
    CHECK(ev.supported(0) == std::vector<std::uint8_t>{0});
    CHECK(ev.supported(1) == std::vector<std::uint8_t>{0, 1});
    // units that do not match the platform, and missing sources, are errors naming them
    const auto to_graph = [](const Block& b) { return conv_block(b.first, b.second); };
    CHECK_THROWS_WITH_AS(PricedCostSource<Block>(p, {units[0]}, to_graph, 10e9, 0.0),
                         doctest::Contains("1 units for 2 compute units"), config_error);
    auto missing = units;
    missing[1][1].source = nullptr;
    CHECK_THROWS_WITH_AS(PricedCostSource<Block>(p, missing, to_graph, 10e9, 0.0),
                         doctest::Contains("unit 'small' at 'lo' has no cost source"), config_error);
    auto hot = units;
    hot[0][0].power_w = -1;
    CHECK_THROWS_AS(PricedCostSource<Block>(p, hot, to_graph, 10e9, 0.0), config_error);
    CHECK_THROWS_AS(PricedCostSource<Block>(p, units, {}, 10e9, 0.0), config_error);
    CHECK_THROWS_AS(src.cost(blocks[0], 2, 0), config_error);
}

TEST_CASE("cost table: N-d lookups, support mask, checked indices") {
    Platform p{"p", {"A", "B"}, {{"lo", {}}, {"hi", {}}}};
    CostTable t({{"op", {"x", "y", "z"}}, {"width", {"8", "16"}}}, p);
    CHECK(t.values().dimension() == 2 + 3);  // op, width, cu, dvfs, field
    CHECK(t.values().shape()[4] == 6);
    t.set({2, 1}, 1, 1, {1, 2, 3, 4, 5, 6});
    CHECK(t.supports(std::vector<std::size_t>{2, 1}, 1));
    CHECK_FALSE(t.supports(std::vector<std::size_t>{2, 1}, 0));
    const auto k = t.get({2, 1}, 1, 1);
    REQUIRE(k.has_value());
    CHECK(k->e_out == 6.0);
    CHECK(t.get({2, 1}, 1, 0)->t_comp == 0.0);  // supported, other setting not set yet
    CHECK_FALSE(t.get({0, 0}, 0, 0).has_value());
    CHECK_THROWS_AS(t.set({3, 0}, 0, 0, {}), config_error);
    CHECK_THROWS_AS(t.set({0}, 0, 0, {}), config_error);
    CHECK_THROWS_AS(t.set({0, 0}, 2, 0, {}), config_error);
    CHECK_THROWS_AS(t.set({0, 0}, 0, 0, {std::nan(""), 0, 0, 0, 0, 0}), config_error);
    CHECK_THROWS_AS(t.set({0, 0}, 0, 0, {1, -1, 0, 0, 0, 0}), config_error);
    CHECK(t.describe(std::vector<std::size_t>{1, 0}, 0, 1) == "op=y, width=8, cu=A, dvfs=hi");
    CHECK_THROWS_AS(CostTable({{"empty", {}}}, p), config_error);
}

TEST_CASE("ViG supernet space: genes, blocks, text form, canonical genomes") {
    const VigSpace space;
    const auto card = space.cardinalities();
    REQUIRE(card.size() == 20);
    double size = 1;
    for (auto c : card) size *= static_cast<double>(c);
    CHECK(size == doctest::Approx(std::pow(144.0, 4)));  // ~2^29 as in the paper
    CHECK(std::log2(size) == doctest::Approx(28.7).epsilon(0.01));

    const auto b0 = VigSpace::baseline(GraphOp::max_relative);
    CHECK(VigSpace::to_string(b0) == "4Mpf320-4Mpf320-4Mpf320-4Mpf320");
    CHECK(space.decode(space.encode(b0)) == b0);
    const auto a = space.parse("2G-3Epf96-4S-2Mf192");
    CHECK(VigSpace::to_string(a) == "2G-3Epf96-4S-2Mf192");
    CHECK(space.decode(space.encode(a)) == a);
    const auto blocks = space.blocks(a);
    // stem, 2 graphers, 3 x (grapher, ffn), 4 graphers, 2 x (grapher, ffn), cls
    CHECK(blocks.size() == 1 + 2 + 6 + 4 + 4 + 1);
    CHECK(VigSpace::block_name(blocks[0]) == "stem");
    CHECK(VigSpace::block_name(blocks[3]) == "grapher2.1");
    CHECK(VigSpace::block_name(blocks[4]) == "ffn2.1");
    CHECK(VigSpace::block_name(blocks.back()) == "cls");
    CHECK(blocks[4].ffn_hidden == 96);
    CHECK(blocks[1].op == GraphOp::gin);
    CHECK_FALSE(blocks[1].pre_fc);
    CHECK(blocks[3].pre_fc);
    // a skipped FFN's width does not change the network
    auto g = space.encode(a);
    auto g2 = g;
    g2[4] = 2;  // superblock 1 has no FFN
    CHECK(space.blocks(space.decode(g2)).size() == blocks.size());
    CHECK(space.canonical(g2) == space.canonical(g));
    CHECK(space.canonical(g2) != g2);
    // 37 distinct block types in the table; the largest workloads grow with K and the operator
    CHECK(VigSpace::block_types().size() == 37);
    const VigBlock e1{VigBlockKind::grapher, 0, 0, GraphOp::edge_conv, true, 0};
    const VigBlock e4{VigBlockKind::grapher, 3, 0, GraphOp::edge_conv, true, 0};
    const VigBlock m4{VigBlockKind::grapher, 3, 0, GraphOp::max_relative, true, 0};
    CHECK(space.workload(e4).flops() > space.workload(e1).flops());
    CHECK(space.workload(e4).flops() > space.workload(m4).flops());

    for (const char* bad : {"4Mpf320-4Mpf320-4Mpf320", "5M-2M-2M-2M", "4X-2M-2M-2M", "4Mf100-2M-2M-2M", "4Mq-2M-2M-2M",
                            "2M-2M-2M-2M-2M", ""})
        CHECK_THROWS_AS(space.parse(bad), parse_error);
    CHECK_THROWS_AS(space.decode(std::vector<std::uint8_t>(19, 0)), config_error);
    CHECK_THROWS_AS(space.decode(std::vector<std::uint8_t>(20, 3)), config_error);
}

TEST_CASE("ViG accuracy proxy: Table 2 baselines exactly, less capacity less accuracy") {
    for (const auto& b : vig_baseline_accuracies()) {
        const VigAccuracyProxy proxy(b.dataset);
        for (std::size_t op = 0; op < num_graph_ops; ++op)
            CHECK(proxy(VigSpace::baseline(static_cast<GraphOp>(op))) == doctest::Approx(b.top1[op]));
    }
    const VigAccuracyProxy proxy("cifar100");
    const VigSpace space;
    const double full = proxy(space.parse("4Gpf320-4Gpf320-4Gpf320-4Gpf320"));
    CHECK(proxy(space.parse("3Gpf320-4Gpf320-4Gpf320-4Gpf320")) < full);
    CHECK(proxy(space.parse("4Gp-4Gpf320-4Gpf320-4Gpf320")) < full);
    CHECK(proxy(space.parse("4Gpf96-4Gpf320-4Gpf320-4Gpf320")) < full);
    CHECK(proxy(space.parse("4Gf320-4Gpf320-4Gpf320-4Gpf320")) < full);
    // a mixed network lies between the homogeneous ones
    const double mixed = proxy(space.parse("4Mpf320-4Gpf320-4Mpf320-4Gpf320"));
    CHECK(mixed < 82.13);
    CHECK(mixed > 81.49);
    CHECK_THROWS_AS(VigAccuracyProxy("imagenet"), config_error);
}
