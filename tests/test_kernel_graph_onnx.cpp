// The kernel pass on the real networks of data/onnx under a rule set of the kind a CPU runtime
// has: invariants that hold for any correct pass (every executed node in one kernel, kernels in
// execution order, arithmetic kept), and counts that follow from the networks' structure; the
// committed device models' prices of these and of NB201 networks, kernel by kernel, unchanged.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <dnncost/core/rng.hpp>
#include <dnncost/device/device_model.hpp>
#include <dnncost/device/kernel_graph.hpp>
#include <dnncost/io/file.hpp>
#include <dnncost/io/onnx.hpp>
#include <dnncost/spaces/nb201.hpp>

using namespace dnncost;

namespace {

const char* const cpu_rules = R"(dnncost-fusion-rules 1
fold Conv BatchNormalization operands=constant
fuse Conv Relu operands=none
fuse Conv Clip operands=constant
fuse Conv Add operands=activation
fuse Add Relu operands=none after=Conv
fuse Gemm Relu operands=none
layout NCHWc 16 anchors=Conv followers=MaxPool,AveragePool,GlobalAveragePool,Add,Relu,Clip,Concat
)";

}  // namespace

TEST_CASE("kernel graph on data/onnx: invariants and structure of real networks") {
    const auto rules = device::FusionRules::parse(cpu_rules);
    for (const std::string file : {"resnet50.onnx", "mobilenet_v2.onnx", "squeezenet1_1.onnx", "inception_v3.onnx"}) {
        CAPTURE(file);
        const auto g = io::import_onnx(std::string(DNNCOST_DATA_DIR) + "/onnx/" + file);
        const auto kg = device::kernel_graph(g, rules);
        std::map<std::string, int> ops;
        for (const auto& n : g.nodes()) ++ops[n.op_type];
        // every compute node is in exactly one kernel, the others in none
        std::vector<int> seen(g.num_nodes(), 0);
        for (std::size_t k = 0; k < kg.kernels.size(); ++k) {
            for (int v : kg.kernels[k].nodes) ++seen[static_cast<std::size_t>(v)];
            for (int v : kg.kernels[k].folded) ++seen[static_cast<std::size_t>(v)];
        }
        for (std::size_t v = 0; v < g.num_nodes(); ++v) {
            const bool compute = kg.roles[v] == device::NodeRole::compute;
            CHECK(seen[v] == (compute ? 1 : 0));
            CHECK((kg.kernel_of_node[v] >= 0) == compute);
        }
        for (const auto& e : kg.edges) CHECK(e.src < e.dst);
        // arithmetic is kept: folded BatchNorms do none in the kernels, the rest is the analytic sum
        std::int64_t macs = 0, flops = 0, folded_flops = 0;
        for (std::size_t v = 0; v < g.num_nodes(); ++v) {
            const auto c = cost::node_cost(g, static_cast<int>(v));
            if (kg.roles[v] != device::NodeRole::compute) continue;
            macs += c.macs;
            flops += c.flops;
        }
        for (const auto& k : kg.kernels)
            for (int v : k.folded) folded_flops += cost::node_cost(g, v).flops;
        CHECK(kg.total_cost().macs == macs);
        CHECK(kg.total_cost().flops == flops - folded_flops);
        // one kernel per convolution, each starting with it
        int conv_kernels = 0;
        for (const auto& k : kg.kernels) conv_kernels += !k.is_reorder() && g.node(k.nodes.front()).op_type == "Conv";
        CHECK(conv_kernels == ops["Conv"]);
        CHECK(kg.num_reorders() >= 1);  // at least the graph output leaves the blocked layout
        CHECK(kg.to_json(g) == device::kernel_graph(g, rules).to_json(g));
        MESSAGE(file, ": ", g.num_nodes(), " nodes, ", kg.kernels.size(), " kernels (", kg.num_reorders(),
                " reorders)");
    }
}

// Prices of the committed device models, kernel by kernel, against the figures the reference
// pass wrote (tests/data/device_model_prices.txt; its first lines say how it was made): a change
// that makes pricing faster must leave every kernel, its kind, layout and nodes as they were, and
// its price to within a relative 1e-12. Not bit for bit: builds of other vector widths (the
// sanitizer build has no AVX) sum an MLP's products in another order, which moves the last bits;
// a change to the pass or the features moves a price by far more.
// DNNCOST_WRITE_DEVICE_PRICES=FILE writes the figures of this build to FILE instead.
namespace {

constexpr double build_tolerance = 1e-12;

/// Whether two lines agree: the same words, numbers (hexadecimal floats) within build_tolerance.
bool same_line(const std::string& a, const std::string& b) {
    const auto words = [](std::string s) {
        std::replace(s.begin(), s.end(), '\t', ' ');
        std::vector<std::string> w;
        std::size_t at = 0;
        for (;;) {
            const auto end = s.find(' ', at);
            w.push_back(s.substr(at, end == std::string::npos ? std::string::npos : end - at));
            if (end == std::string::npos) return w;
            at = end + 1;
        }
    };
    const auto wa = words(a), wb = words(b);
    if (wa.size() != wb.size()) return false;
    for (std::size_t i = 0; i < wa.size(); ++i) {
        if (wa[i] == wb[i]) continue;
        const bool numbers = wa[i].find("0x") != std::string::npos && wb[i].find("0x") != std::string::npos;
        if (!numbers) return false;
        const double x = std::strtod(wa[i].c_str(), nullptr), y = std::strtod(wb[i].c_str(), nullptr);
        if (!(std::abs(x - y) <= build_tolerance * std::max(std::abs(x), std::abs(y)))) return false;
    }
    return true;
}

std::string hex(double x) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%a", x);
    return buf;
}

// One line per network, then one per kernel: kind, the kind that priced it, layout, nodes,
// milliseconds (hexadecimal, exact), warning.
std::string price_lines(const std::string& label, const device::DevicePrice& p, double batch_total) {
    std::string o = "network " + label + " total " + hex(p.total_ms) + " batch_total " + hex(batch_total) +
                    " overhead " + hex(p.run_overhead_ms) + "\n";
    for (const auto& k : p.kernels) {
        std::string nodes;
        for (int v : k.nodes) {
            if (!nodes.empty()) nodes += ',';
            nodes += std::to_string(v);
        }
        o += k.kind + "\t" + k.priced_as + "\t" + k.layout + "\t" + nodes + "\t" + hex(k.ms) + "\t" + k.warning + "\n";
    }
    return o;
}

}  // namespace

TEST_CASE("device models price data/onnx and NB201 networks as the reference figures, kernel by kernel") {
#if !defined(DNNCOST_HAS_XGBOOST)
    MESSAGE("skipped: the committed device models' gradient-boosted trees need a build with XGBoost");
    return;
#endif
    std::vector<std::pair<std::string, graph::Graph>> nets;
    for (const std::string file :
         {"resnet50.onnx", "mobilenet_v2.onnx", "squeezenet1_1.onnx", "inception_v3.onnx", "resnet18-v1-7-no-weight.onnx"})
        nets.emplace_back(file, io::import_onnx(std::string(DNNCOST_DATA_DIR) + "/onnx/" + file));
    Rng rng(2024);  // the cells of bench/nb201_networks.hpp, the first twelve
    for (int i = 0; i < 12; ++i) {
        const auto index = static_cast<std::int64_t>(rng() % 15625);
        nets.emplace_back("nb201-" + std::to_string(index), nb201::build_graph(nb201::from_index(index)));
    }
    std::vector<const graph::Graph*> ptrs;
    for (const auto& n : nets) ptrs.push_back(&n.second);
    std::string got =
        "# Device model prices kernel by kernel (tests/test_kernel_graph_onnx.cpp). Made by that test with\n"
        "# DNNCOST_WRITE_DEVICE_PRICES=FILE when the committed models were last rebuilt or given new rules (their "
        "provenance:\n"
        "# data/README.md); a change to pricing must leave them as they are.\n";
    for (const std::string model : {"ort-cpu-all-1t.dnnc", "ort-cpu-disabled-1t.dnnc", "ort-cpu-basic-1t.dnnc"}) {
        const auto path = std::string(DNNCOST_DATA_DIR) + "/devices/" + model;
        const auto m = device::DeviceModel::deserialize(io::read_file(path), path);
        const auto prices = m->price_networks(ptrs);
        const auto totals = m->price_totals(ptrs);
        REQUIRE(prices.size() == nets.size());
        REQUIRE(totals.size() == nets.size());
        for (std::size_t i = 0; i < nets.size(); ++i) {
            CHECK(totals[i] == prices[i].total_ms);  // the search's route gives the breakdown's totals
            got += price_lines(model + " " + nets[i].first, prices[i], totals[i]);
        }
        // one network at a time: no batch effect on any figure
        for (std::size_t i = 0; i < nets.size(); ++i) {
            const graph::Graph* one[] = {ptrs[i]};
            CHECK(m->price_totals(one).front() == totals[i]);
        }
    }
    if (const char* out = std::getenv("DNNCOST_WRITE_DEVICE_PRICES")) {
        io::write_file_atomic(out, got);
        MESSAGE("wrote ", out);
        return;
    }
    const auto want = io::read_file(std::string(DNNCOST_TESTS_DIR) + "/data/device_model_prices.txt");
    // the first differing line, not a 400 kB dump
    std::istringstream g(got), w(want);
    std::size_t line = 0;
    std::string lg, lw;
    for (;;) {
        const bool more_g = static_cast<bool>(std::getline(g, lg)), more_w = static_cast<bool>(std::getline(w, lw));
        ++line;
        if (!more_g && !more_w) break;
        INFO("line ", line, "\n  expected: ", lw, "\n  got:      ", lg);
        REQUIRE(more_g == more_w);
        REQUIRE(same_line(lg, lw));
    }
}
