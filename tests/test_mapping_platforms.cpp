// Example platforms and the ViG space: the Xavier-like platform against MaGNAS Table 2, its
// transfers and DVFS model, the roofline platform against hand-computed layer costs and its
// support relation, the N-d cost table, the ViG supernet encoding and the accuracy proxy.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

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
    CHECK_THROWS_AS(RooflinePlatform("bad", {RooflineUnit{"x", 1e12, 1e9, {1.5, 1, 1, 1}}}, 1e9, 0.0), config_error);
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
