#include <doctest/doctest.h>

#include <algorithm>
#include <functional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <dnncost/cost/analytic.hpp>
#include <dnncost/graph/analysis.hpp>
#include <dnncost/spaces/nb201.hpp>

using namespace dnncost;

namespace {
int count_op(const graph::Graph& g, const std::string& op) {
    int n = 0;
    for (const auto& nd : g.nodes()) n += nd.op_type == op;
    return n;
}
const char* kAll3x3 = "|nor_conv_3x3~0|+|nor_conv_3x3~0|nor_conv_3x3~1|+|nor_conv_3x3~0|nor_conv_3x3~1|nor_conv_3x3~2|";
const char* kAllSkip =
    "|skip_connect~0|+|skip_connect~0|skip_connect~1|+|skip_connect~0|skip_connect~1|skip_connect~2|";
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
    CHECK_THROWS_WITH_AS(nb201::parse("|none~1|+|none~0|none~1|+|none~0|none~1|none~2|"), doctest::Contains("node 0"),
                         parse_error);
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

TEST_CASE("nb201: isomorphic twins are the same network under another string") {
    // Exchanging nodes 1 and 2 is an isomorphism exactly when edge 2<-1 is none: 5^5 cells,
    // minus the 125 the exchange maps to themselves, in 1,500 pairs.
    int with_twin = 0;
    for (const auto& a : nb201::enumerate()) {
        const auto t = nb201::isomorphic_twin(a);
        if (a.ops[2] != nb201::Op::none) {
            CHECK_FALSE(t.has_value());
            continue;
        }
        if (!t) {
            CHECK(a.ops[0] == a.ops[1]);
            CHECK(a.ops[4] == a.ops[5]);
            continue;
        }
        ++with_twin;
        CHECK(*t != a);
        CHECK(nb201::isomorphic_twin(*t) == a);
        CHECK(nb201::op_counts(*t) == nb201::op_counts(a));
    }
    CHECK(with_twin == 3000);
    // The compiled (pruned) networks are isomorphic operator graphs: equal costs and equal
    // Weisfeiler-Lehman colour multisets (operator type and MACs, refined over predecessors and
    // successors); another exchange of edges keeps the costs but changes the colours. The eager
    // networks run the same operators on the same shapes.
    const auto op_multiset = [](const graph::Graph& g) {
        std::vector<std::pair<std::string, std::int64_t>> ops;
        const auto costs = cost::annotate(g);
        for (std::size_t i = 0; i < g.num_nodes(); ++i)
            ops.emplace_back(g.node(static_cast<int>(i)).op_type, costs[i].bytes());
        std::sort(ops.begin(), ops.end());
        return ops;
    };
    const auto colours = [](const graph::Graph& g) {
        const auto costs = cost::annotate(g);
        const int n = static_cast<int>(g.num_nodes());
        std::vector<std::string> c(static_cast<std::size_t>(n));
        for (int i = 0; i < n; ++i)
            c[static_cast<std::size_t>(i)] =
                g.node(i).op_type + ":" + std::to_string(costs[static_cast<std::size_t>(i)].macs);
        for (int round = 0; round < 12; ++round) {
            std::vector<std::vector<std::string>> in(static_cast<std::size_t>(n)), out(static_cast<std::size_t>(n));
            for (const auto& e : g.edges()) {
                in[static_cast<std::size_t>(e.dst)].push_back(c[static_cast<std::size_t>(e.src)]);
                out[static_cast<std::size_t>(e.src)].push_back(c[static_cast<std::size_t>(e.dst)]);
            }
            std::vector<std::string> next(static_cast<std::size_t>(n));
            for (std::size_t i = 0; i < next.size(); ++i) {
                std::sort(in[i].begin(), in[i].end());
                std::sort(out[i].begin(), out[i].end());
                std::string k = c[i] + "(";
                for (const auto& x : in[i]) k += x + ",";
                k += ")(";
                for (const auto& x : out[i]) k += x + ",";
                next[i] = std::to_string(std::hash<std::string>{}(k + ")"));
            }
            c = std::move(next);
        }
        std::sort(c.begin(), c.end());
        return c;
    };
    for (const char* s : {"|nor_conv_3x3~0|+|avg_pool_3x3~0|none~1|+|skip_connect~0|nor_conv_1x1~1|none~2|",
                          "|none~0|+|nor_conv_3x3~0|none~1|+|nor_conv_1x1~0|avg_pool_3x3~1|nor_conv_3x3~2|"}) {
        const auto a = nb201::parse(s);
        const auto t = nb201::isomorphic_twin(a);
        REQUIRE(t.has_value());
        for (bool prune : {false, true}) {
            nb201::Nb201Options o;
            o.prune = prune;
            const auto ga = nb201::build_graph(a, o), gt = nb201::build_graph(*t, o);
            CHECK(ga.num_nodes() == gt.num_nodes());
            CHECK(cost::total_cost(ga).macs == cost::total_cost(gt).macs);
            CHECK(cost::total_cost(ga).params == cost::total_cost(gt).params);
            auto wrong = a;  // exchanging two edges into node 3 instead changes the network
            std::swap(wrong.ops[3], wrong.ops[5]);
            if (prune) {
                CHECK(colours(ga) == colours(gt));
                CHECK(colours(nb201::build_graph(wrong, o)) != colours(ga));
            } else {
                // eager: the same operators on the same shapes, but the multiplication by zero of
                // edge 2<-1 reads the other node's output, so the graphs differ in that one edge
                CHECK(colours(ga) != colours(gt));
                CHECK(op_multiset(ga) == op_multiset(gt));
            }
        }
        // ... while a cell whose edge 2<-1 carries an operation has no such twin
        auto b = a;
        b.ops[2] = nb201::Op::skip_connect;
        CHECK_FALSE(nb201::isomorphic_twin(b).has_value());
    }
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

TEST_CASE("graph analysis: the operators a compiler keeps are those of the pruned NB201 graph") {
    // Every 7th architecture (2,233 of 15,625; covers all op kinds on every edge), one cell per
    // stage to keep the test fast; plus the full network for a few.
    const auto signature = [](const graph::Graph& g, const std::vector<char>& keep) {
        std::multiset<std::string> s;
        for (std::size_t v = 0; v < g.num_nodes(); ++v) {
            if (!keep[v]) continue;
            const auto& nd = g.nodes()[v];
            if (nd.op_type == "Constant") continue;  // the pruned view's folded output
            // Add names count the surviving terms, so only their number is compared.
            s.insert(nd.op_type == "Add" ? std::string("Add") : nd.op_type + ":" + nd.name);
        }
        return s;
    };
    int checked = 0, disconnected = 0;
    for (std::int64_t i = 0; i < nb201::num_architectures; i += 7) {
        const auto arch = nb201::from_index(i);
        nb201::Nb201Options eager, pruned;
        eager.cells_per_stage = pruned.cells_per_stage = (i % 700 == 0) ? 5 : 1;
        pruned.prune = true;
        const auto ge = nb201::build_graph(arch, eager), gp = nb201::build_graph(arch, pruned);
        const auto a = graph::analyse(ge);
        std::vector<char> keep_e(ge.num_nodes()), keep_p(gp.num_nodes(), 1);
        for (std::size_t v = 0; v < ge.num_nodes(); ++v) keep_e[v] = a[v].kept();
        INFO(nb201::to_string(arch));
        REQUIRE(signature(ge, keep_e) == signature(gp, keep_p));
        // the analysis finds nothing to drop in the pruned graph
        const auto ap = graph::analyse(gp);
        for (std::size_t v = 0; v < gp.num_nodes(); ++v)
            if (gp.nodes()[v].op_type != "Constant") CHECK(ap[v].kept());
        disconnected += std::none_of(a.begin(), a.end(), [](const graph::NodeAnalysis& x) { return x.live; });
        ++checked;
    }
    CHECK(checked > 2000);
    CHECK(disconnected > 0);
}

TEST_CASE("graph analysis: constant propagation rules") {
    graph::Graph g("t");
    const int x = g.add_input("x", {1, 4, 8, 8});
    const int z = g.add_weight("z", {});
    g.set_data(z, {0.0});
    const int w = g.add_weight("w", {4, 4, 1, 1});
    const int m = g.add_op("Mul", "mul", {x, z}, {1, 4, 8, 8});    // zero
    const int r = g.add_op("Relu", "relu", {m}, {1, 4, 8, 8});     // zero
    const int c = g.add_op("Conv", "conv", {r, w}, {1, 4, 8, 8});  // zero (no bias)
    const int y = g.add_op("Relu", "relu_x", {x}, {1, 4, 8, 8});   // live
    const int s = g.add_op("Add", "add", {y, c}, {1, 4, 8, 8});    // identity-like
    const int d = g.add_op("Sigmoid", "dead", {y}, {1, 4, 8, 8});  // non-constant, unused
    (void)d;
    g.mark_output(s);
    const auto a = graph::analyse(g);
    CHECK(a[0].zero);
    CHECK(a[1].zero);
    CHECK(a[2].zero);
    CHECK((a[3].live && a[3].kept()));
    CHECK((a[4].identity_like && a[4].live && !a[4].kept()));
    CHECK((!a[5].constant && !a[5].live));
    CHECK_THROWS_AS(g.set_data(x, {1.0}), config_error);
    CHECK_THROWS_AS(g.set_data(w, {1.0}), config_error);
}
