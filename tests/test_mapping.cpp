// Mapping cost model, block-cost files, exact enumeration and the inner mapping search (IOE):
// a hand-computed 4-block example, the evaluator against a direct transcription of MaGNAS
// Eq. 6-7, every bad-file error, and the IOE against exact fronts of enumerable instances.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include <dnncost/core/rng.hpp>
#include <dnncost/search/hypervolume.hpp>
#include <dnncost/search/mapping/block_costs.hpp>
#include <dnncost/search/mapping/exact.hpp>
#include <dnncost/search/mapping/inner_search.hpp>
#include <dnncost/search/mapping/mapping_cost.hpp>
#include <dnncost/search/mapping/network_search.hpp>
#include <dnncost/search/mapping/random_instance.hpp>

using namespace dnncost;
using namespace dnncost::search::mapping;

namespace {

// Four blocks on CUs A and B; every field differs so that a wrong term shows.
MappingInstance four_blocks() {
    MappingInstance m({"A", "B"}, {"b0", "b1", "b2", "b3"});
    //              t_comp e_comp t_in  t_out e_in  e_out
    m.set(0, 0, {2.0, 10.0, 0.5, 0.3, 1.0, 2.0});
    m.set(0, 1, {4.0, 3.0, 0.7, 0.4, 0.5, 0.6});
    m.set(1, 0, {1.0, 6.0, 0.2, 0.1, 0.3, 0.4});
    m.set(1, 1, {3.0, 2.0, 0.25, 0.15, 0.35, 0.45});
    m.set(2, 0, {5.0, 20.0, 0.6, 0.2, 1.5, 0.7});
    m.set(2, 1, {6.0, 8.0, 0.1, 0.9, 0.2, 0.8});
    m.set(3, 0, {1.0, 5.0, 0.3, 0.3, 0.9, 0.9});
    m.set(3, 1, {2.0, 1.0, 0.4, 0.5, 0.6, 0.7});
    return m;
}

// MaGNAS Eq. 6-7 transcribed literally: per block comp + [pi_{i-1} != pi_i] in + [pi_i != pi_{i+1}] out,
// no input transfer for the first block and no output transfer for the last.
TimeEnergy direct(const MappingInstance& m, const std::vector<std::uint8_t>& cus) {
    TimeEnergy v;
    const std::size_t n = cus.size();
    for (std::size_t i = 0; i < n; ++i) {
        const auto& c = m.cost(i, cus[i]);
        v.t += c.t_comp;
        v.e += c.e_comp;
        if (i > 0 && cus[i - 1] != cus[i]) {
            v.t += c.t_in;
            v.e += c.e_in;
        }
        if (i + 1 < n && cus[i + 1] != cus[i]) {
            v.t += c.t_out;
            v.e += c.e_out;
        }
    }
    return v;
}

std::vector<std::uint8_t> genes_of(const MappingEvaluator& ev, std::vector<std::uint8_t> cus) {
    const auto g = ev.to_genes(cus);
    REQUIRE(g.has_value());
    return *g;
}

// All mappings of a small instance by brute force (CU index vectors).
std::vector<std::vector<std::uint8_t>> all_mappings(const MappingInstance& m) {
    std::vector<std::vector<std::uint8_t>> out{{}};
    for (std::size_t b = 0; b < m.num_blocks(); ++b) {
        std::vector<std::vector<std::uint8_t>> next;
        for (const auto& prefix : out)
            for (auto c : m.supported(b)) {
                auto p = prefix;
                p.push_back(c);
                next.push_back(p);
            }
        out = std::move(next);
    }
    return out;
}

std::string parse_error_of(const std::string& text, const BlockCostFileOptions& o = {}) {
    try {
        (void)parse_block_costs(text, "costs.csv", o);
    } catch (const parse_error& e) {
        return e.what();
    }
    return "no error";
}

const std::string header = "block,cu,dvfs,t_comp,e_comp,t_in,t_out,e_in,e_out\n";

}  // namespace

TEST_CASE("hand-computed 4-block example: T, E and P with transfer terms") {
    const auto inst = four_blocks();
    const MappingEvaluator ev(inst);
    // [A, B, B, A]: T = 2 + 0.3 (b0 out) + 3 + 0.25 (b1 in) + 6 + 0.9 (b2 out) + 1 + 0.3 (b3 in)
    const auto abba = genes_of(ev, {0, 1, 1, 0});
    const auto v = ev.evaluate(abba);
    CHECK(v.t == doctest::Approx(13.75).epsilon(1e-14));
    CHECK(v.e == doctest::Approx(10 + 2 + 2 + 0.35 + 8 + 0.8 + 5 + 0.9).epsilon(1e-14));  // 29.05
    // first block: no input transfer; last block: no output transfer
    const auto baaa = ev.evaluate(genes_of(ev, {1, 0, 0, 0}));
    CHECK(baaa.t == doctest::Approx(4 + 0.4 + 1 + 0.2 + 5 + 1).epsilon(1e-14));
    CHECK(baaa.e == doctest::Approx(3 + 0.6 + 6 + 0.3 + 20 + 5).epsilon(1e-14));
    const auto aaab = ev.evaluate(genes_of(ev, {0, 0, 0, 1}));
    CHECK(aaab.t == doctest::Approx(2 + 1 + 5 + 0.2 + 2 + 0.4).epsilon(1e-14));
    CHECK(aaab.e == doctest::Approx(10 + 6 + 20 + 0.7 + 1 + 0.6).epsilon(1e-14));

    const auto sa = standalone_mappings(ev);
    REQUIRE(sa.size() == 2);
    CHECK(sa[0].value.t == doctest::Approx(9.0));
    CHECK(sa[0].value.e == doctest::Approx(41.0));
    CHECK(sa[1].value.t == doctest::Approx(15.0));
    CHECK(sa[1].value.e == doctest::Approx(14.0));
    const auto norm = standalone_normaliser(ev);
    CHECK(norm.t_max == doctest::Approx(15.0));
    CHECK(norm.e_max == doctest::Approx(41.0));
    // P = (E / 41)^g1 (T / 15)^g2
    CHECK(objective_p(v, norm, {}) == doctest::Approx(0.6494918699186992).epsilon(1e-12));
    Preference pref;
    pref.gamma1 = 2.0;
    pref.gamma2 = 0.5;
    CHECK(objective_p(v, norm, pref) == doctest::Approx(0.4806514751953261).epsilon(1e-12));

    // incremental: from all-A to [A, B, B, A] one gene at a time
    IncrementalMapping inc(ev, genes_of(ev, {0, 0, 0, 0}));
    CHECK(inc.with(1, 1).t == doctest::Approx(ev.evaluate(genes_of(ev, {0, 1, 0, 0})).t));
    inc.set(1, 1);
    inc.set(2, 1);
    CHECK(inc.value().t == doctest::Approx(13.75).epsilon(1e-14));
    CHECK(inc.value().e == doctest::Approx(29.05).epsilon(1e-14));
    CHECK(transitions(std::vector<std::uint8_t>{0, 1, 1, 0}) == 2);
}

TEST_CASE("the same 4-block instance read from a block-cost file gives the same T and E") {
    const std::string text = "# hand-written\n" + header +
                             "0,A,x,2,10,0.5,0.3,1,2\n0,B,x,4,3,0.7,0.4,0.5,0.6\n"
                             "1,A,x,1,6,0.2,0.1,0.3,0.4\n1,B,x,3,2,0.25,0.15,0.35,0.45\n\n"
                             "2,A,x,5,20,0.6,0.2,1.5,0.7\n2,B,x,6,8,0.1,0.9,0.2,0.8\n"
                             "3,A,x,1,5,0.3,0.3,0.9,0.9\r\n3,B,x,2,1,0.4,0.5,0.6,0.7\n";
    const auto file = parse_block_costs(text, "four.csv");
    CHECK(file.num_blocks == 4);
    CHECK(file.platform.cus == std::vector<std::string>{"A", "B"});
    const MappingEvaluator ev(file.instance(0));
    const auto v = ev.evaluate(genes_of(ev, {0, 1, 1, 0}));
    CHECK(v.t == doctest::Approx(13.75).epsilon(1e-14));
    CHECK(v.e == doctest::Approx(29.05).epsilon(1e-14));

    // writing and reading back gives identical numbers
    const auto inst = four_blocks();
    const std::vector<MappingInstance> insts{inst};
    const std::vector<std::string> names{"x"};
    const auto back = parse_block_costs(block_costs_csv(insts, names), "back.csv");
    const auto again = back.instance(0);
    for (std::size_t b = 0; b < 4; ++b)
        for (std::size_t c = 0; c < 2; ++c)
            for (std::size_t k = 0; k < BlockCost::fields; ++k)
                CHECK(again.cost(b, c).field(k) == inst.cost(b, c).field(k));
}

TEST_CASE("the evaluator matches Eq. 6-7 on random instances, with unsupported blocks") {
    for (std::uint64_t seed = 1; seed <= 5; ++seed) {
        const auto inst = random_instance({.blocks = 9, .cus = 3, .unsupported = 0.3}, seed);
        const MappingEvaluator ev(inst);
        for (const auto& cus : all_mappings(inst)) {
            const auto want = direct(inst, cus);
            const auto got = ev.evaluate(genes_of(ev, cus));
            REQUIRE(got.t == doctest::Approx(want.t).epsilon(1e-12));
            REQUIRE(got.e == doctest::Approx(want.e).epsilon(1e-12));
        }
        // incremental evaluation after many random one-gene changes
        Rng rng(seed);
        const auto card = ev.cardinalities();
        IncrementalMapping inc(ev, std::vector<std::uint8_t>(inst.num_blocks(), 0));
        for (int k = 0; k < 1000; ++k) {
            const std::size_t i = rng.below(card.size());
            inc.set(i, static_cast<std::uint8_t>(rng.below(card[i])));
        }
        const auto full = ev.evaluate(inc.genes());
        CHECK(inc.value().t == doctest::Approx(full.t).epsilon(1e-9));
        CHECK(inc.value().e == doctest::Approx(full.e).epsilon(1e-9));
    }
}

TEST_CASE("exact and transition-limited fronts equal brute force") {
    const auto inst = random_instance({.blocks = 8, .cus = 3, .unsupported = 0.2}, 7);
    const MappingEvaluator ev(inst);
    const auto maps = all_mappings(inst);
    auto brute_front = [&](std::size_t max_transitions) {
        std::vector<TimeEnergy> pts;
        for (const auto& m : maps)
            if (transitions(m) <= max_transitions) pts.push_back(direct(inst, m));
        std::vector<TimeEnergy> front;
        for (const auto& p : pts) {
            bool dominated = false;
            for (const auto& q : pts) dominated = dominated || (q.t <= p.t && q.e <= p.e && (q.t < p.t || q.e < p.e));
            if (!dominated) front.push_back(p);
        }
        std::sort(front.begin(), front.end(), [](auto a, auto b) { return a.t < b.t; });
        return front;
    };
    const auto ex = exact_front(ev);
    CHECK(ex.evaluations == maps.size());
    const auto bf = brute_front(100);
    REQUIRE(ex.front.size() == bf.size());
    for (std::size_t i = 0; i < bf.size(); ++i) {
        CHECK(ex.front[i].value.t == doctest::Approx(bf[i].t).epsilon(1e-12));
        CHECK(ex.front[i].value.e == doctest::Approx(bf[i].e).epsilon(1e-12));
        // the stored genes give the stored value, bit for bit
        CHECK(ev.evaluate(ex.front[i].genes).t == ex.front[i].value.t);
    }
    for (std::size_t k : {0, 1, 2}) {
        const auto lim = transition_limited_front(ev, k);
        const auto want = brute_front(k);
        REQUIRE(lim.front.size() == want.size());
        for (std::size_t i = 0; i < want.size(); ++i) {
            CHECK(lim.front[i].value.t == doctest::Approx(want[i].t).epsilon(1e-12));
            CHECK(transitions(ev.to_cus(lim.front[i].genes)) <= k);
        }
    }
    // targets: only feasible mappings
    Preference pref;
    pref.t_target = bf[bf.size() / 2].t;
    for (const auto& p : exact_front(ev, pref).front) CHECK(p.value.t < pref.t_target);
    CHECK_THROWS_AS(exact_front(MappingEvaluator(random_instance({.blocks = 21, .cus = 2}, 1))), config_error);
}

TEST_CASE("IOE reaches 99% of the exact front's hypervolume within 5% of the enumeration's evaluations") {
    struct Case {
        RandomInstanceOptions shape;
        std::uint64_t seed;
    };
    // 2^20 mappings with 2 CUs; 3^12 = 531,441 with 3 CUs; 3 CUs with unsupported blocks; one seed
    // each (every exact front enumerates up to 2^20 mappings; bench/mapping_quality.cpp runs more)
    std::vector<Case> cases;
    cases.push_back({{.blocks = 20, .cus = 2}, 1});
    cases.push_back({{.blocks = 12, .cus = 3}, 2});
    // with unsupported blocks: the block count whose instance comes closest to 2^20 mappings
    RandomInstanceOptions partial{.blocks = 12, .cus = 3, .unsupported = 0.25};
    std::uint64_t most = 0;
    for (std::size_t n = 12; n <= 24; ++n) {
        const auto k = random_instance({.blocks = n, .cus = 3, .unsupported = 0.25}, 3).num_mappings();
        if (k <= (std::uint64_t{1} << 20) && k > most) {
            most = k;
            partial.blocks = n;
        }
    }
    cases.push_back({partial, 3});
    for (const auto& c : cases) {
        const auto inst = random_instance(c.shape, c.seed);
        const MappingEvaluator ev(inst);
        REQUIRE(inst.num_mappings() <= (std::uint64_t{1} << 20));
        REQUIRE(inst.num_mappings() >= (std::uint64_t{1} << 17));
        const auto ex = exact_front(ev);
        const std::uint64_t budget = ex.evaluations / 20;
        MappingSearchOptions o;
        o.seed = c.seed;
        o.generations = 0;
        // NSGA-II stops at the end of the generation that reaches max_evaluations
        o.max_evaluations = static_cast<std::size_t>(budget) - o.population - inst.num_cus();
        const auto r = search_mappings(ev, o);
        REQUIRE(r.evaluations <= budget);

        std::vector<double> exact_pts, found_pts;
        double t_max = 0, e_max = 0;
        for (const auto& p : ex.front) {
            exact_pts.insert(exact_pts.end(), {p.value.t, p.value.e});
            t_max = std::max(t_max, p.value.t);
            e_max = std::max(e_max, p.value.e);
        }
        for (const auto& p : r.front) {
            found_pts.insert(found_pts.end(), {p.value.t, p.value.e});
            // every reported mapping is real: its CUs give its (T, E)
            const auto v = ev.evaluate(genes_of(ev, p.cus));
            REQUIRE(v.t == p.value.t);
        }
        // reference: 1% beyond the exact front's nadir
        const double ref[2] = {t_max + 0.01 * (t_max - ex.front.front().value.t),
                               e_max + 0.01 * (e_max - ex.front.back().value.e)};
        const double ratio = search::hypervolume(found_pts, ref) / search::hypervolume(exact_pts, ref);
        INFO("blocks ", c.shape.blocks, ", CUs ", c.shape.cus, ", seed ", c.seed, ": ", r.evaluations, " of ",
             ex.evaluations, " evaluations, hypervolume ratio ", ratio);
        CHECK(ratio >= 0.99);
        CHECK(ratio <= 1.0 + 1e-12);
    }
}

TEST_CASE("IOE best P is the exact constrained optimum on a small instance, infeasible targets fall back") {
    const auto inst = random_instance({.blocks = 10, .cus = 2}, 3);
    const MappingEvaluator ev(inst);
    const auto sa = standalone_mappings(ev);
    REQUIRE(sa.size() == 2);
    Preference pref;
    pref.t_target = 0.5 * (sa[0].value.t + sa[1].value.t);
    const auto norm = standalone_normaliser(ev);
    double best = std::numeric_limits<double>::infinity();
    for (const auto& p : exact_front(ev, pref).front) best = std::min(best, objective_p(p.value, norm, pref));
    MappingSearchOptions o;
    o.preference = pref;
    o.enumerate_small = false;  // 1,024 mappings: the search would enumerate them otherwise
    const auto r = search_mappings(ev, o);
    CHECK_FALSE(r.fallback);
    CHECK(r.best.feasible);
    CHECK(r.best.value.t < pref.t_target);
    CHECK(r.best.p == doctest::Approx(best).epsilon(1e-12));
    for (const auto& s : r.front) CHECK(s.value.t < pref.t_target);

    // no mapping can be that fast: the best standalone mapping, and a note that says so
    o.preference.t_target = 1e-6;
    const auto f = search_mappings(ev, o);
    CHECK(f.fallback);
    CHECK_FALSE(f.best.feasible);
    CHECK(f.note.find("best standalone") != std::string::npos);
    const auto p0 = objective_p(sa[0].value, norm, o.preference), p1 = objective_p(sa[1].value, norm, o.preference);
    CHECK(f.best.p == doctest::Approx(std::min(p0, p1)));
    CHECK(transitions(f.best.cus) == 0);

    o.preference.gamma1 = -1.0;
    CHECK_THROWS_AS(search_mappings(ev, o), config_error);
    o.preference = {};
    o.operators.mutation_probability = 1.5;
    CHECK_THROWS_AS(search_mappings(ev, o), config_error);
}

TEST_CASE("IOE enumerates an instance with no more mappings than its budget") {
    const auto inst = random_instance({.blocks = 10, .cus = 2}, 8);
    const MappingEvaluator ev(inst);
    MappingSearchOptions o;
    const auto r = search_mappings(ev, o);
    const auto ex = exact_front(ev);
    CHECK(r.evaluations == 1024 + 2);  // every mapping, and the two standalone ones
    REQUIRE(r.front.size() == ex.front.size());
    for (std::size_t i = 0; i < ex.front.size(); ++i) CHECK(r.front[i].value.t == ex.front[i].value.t);
    o.population = 100;
    o.generations = 9;  // a budget of 1,000 evaluations: the search runs
    CHECK(search_mappings(ev, o).evaluations == 100 * 10 + 2);
}

TEST_CASE("IOE with MaGNAS's operators (resample each gene with 0.4, uniform initial mappings) also works") {
    const auto inst = random_instance({.blocks = 12, .cus = 2}, 4);
    const MappingEvaluator ev(inst);
    MappingSearchOptions o;
    o.operators.mutation_probability = 0.4;
    o.operators.stratified_initialisation = false;
    const auto r = search_mappings(ev, o);
    const auto ex = exact_front(ev);
    // at 4096 mappings the paper's budget (2,200 evaluations) finds most of the exact front
    std::size_t found = 0;
    for (const auto& p : ex.front)
        for (const auto& s : r.front) found += s.value.t == p.value.t && s.value.e == p.value.e;
    CHECK(found >= ex.front.size() * 9 / 10);
    CHECK(r.evaluations <= 200 * 11 + 2);
}

TEST_CASE("same seed, same IOE front, DVFS brute force merges settings and normalises at the reference") {
    const auto inst = random_instance({.blocks = 16, .cus = 2}, 5);
    const MappingEvaluator ev(inst);
    MappingSearchOptions o;
    o.seed = 9;
    const auto a = search_mappings(ev, o), b = search_mappings(ev, o);
    REQUIRE(a.front.size() == b.front.size());
    for (std::size_t i = 0; i < a.front.size(); ++i) CHECK(a.front[i].cus == b.front[i].cus);

    // setting 1: every cost halved, so its front dominates setting 0's
    MappingInstance half(inst.cu_names(), inst.block_names());
    for (std::size_t i = 0; i < inst.num_blocks(); ++i)
        for (std::size_t c = 0; c < inst.num_cus(); ++c) {
            BlockCost k = inst.cost(i, c);
            for (std::size_t f = 0; f < BlockCost::fields; ++f) k.set_field(f, 0.5 * k.field(f));
            half.set(i, c, k);
        }
    const std::vector<MappingEvaluator> evs{ev, MappingEvaluator(half)};
    const auto d = search_mappings_dvfs(evs, 0, o);
    CHECK(d.normaliser.t_max == doctest::Approx(standalone_normaliser(ev).t_max));
    for (const auto& s : d.front) CHECK(s.dvfs == 1);
    CHECK(d.best.dvfs == 1);
    CHECK(d.best.p < 0.5);  // half the latency and half the energy of some mapping at the reference
}

TEST_CASE("bad block-cost files are clear errors naming the line") {
    const std::string row0 = "0,GPU,max,1,2,0.1,0.1,0.2,0.2\n";
    struct Bad {
        std::string text, expect;
    };
    const std::vector<Bad> cases = {
        {"", "costs.csv: empty file: no header line"},
        {header, "costs.csv: no data rows"},
        {"block,cu,dvfs,t_comp,e_comp,t_in,t_out,e_in\n" + row0, "costs.csv:1: missing column(s) e_out"},
        {"block,cu,t_comp,e_comp,t_in,t_out,e_in,e_out\n", "costs.csv:1: missing column(s) dvfs"},
        {"block,cu,dvfs,t_comp,e_comp,t_in,t_out,e_in,e_out,power\n", "costs.csv:1: unknown column 'power'"},
        {"block,cu,cu,dvfs,t_comp,e_comp,t_in,t_out,e_in,e_out\n", "costs.csv:1: column 'cu' appears twice"},
        {header + "0,GPU,max,1,2,0.1,0.1,0.2\n", "costs.csv:2: 8 field(s), the header has 9"},
        {header + row0 + "x,GPU,max,1,2,0.1,0.1,0.2,0.2\n", "costs.csv:3: block 'x' is not a non-negative integer"},
        {header + "-1,GPU,max,1,2,0.1,0.1,0.2,0.2\n", "costs.csv:2: block '-1' is not a non-negative integer"},
        {header + "0,GPU,max,1,2,0.1,0.1,-0.2,0.2\n", "costs.csv:2: negative e_in (-0.2)"},
        {header + "0,GPU,max,-1,2,0.1,0.1,0.2,0.2\n", "costs.csv:2: negative t_comp (-1)"},
        {header + "0,GPU,max,nan,2,0.1,0.1,0.2,0.2\n", "costs.csv:2: t_comp is NaN"},
        {header + "0,GPU,max,1,inf,0.1,0.1,0.2,0.2\n", "costs.csv:2: e_comp is infinite"},
        {header + "0,GPU,max,1,2,abc,0.1,0.2,0.2\n", "costs.csv:2: t_in 'abc' is not a number"},
        {header + "0,GPU,max,1,2,,0.1,0.2,0.2\n", "costs.csv:2: t_in is empty"},
        {header + "0,GPU,max,1,2,1e999,0.1,0.2,0.2\n", "costs.csv:2: t_in '1e999' is out of the range"},
        {header + "0,,max,1,2,0.1,0.1,0.2,0.2\n", "costs.csv:2: empty compute unit name"},
        {header + "0,GPU,,1,2,0.1,0.1,0.2,0.2\n", "costs.csv:2: empty DVFS setting name"},
        {header + row0 + row0, "costs.csv:3: repeated row for block 0 on GPU at DVFS setting 'max' (first on line 2)"},
        {header + row0 + "2,GPU,max,1,2,0.1,0.1,0.2,0.2\n",
         "costs.csv:3: block 1 has no row, so no compute unit supports it"},
        {header + row0 + "0,GPU,min,1,2,0.1,0.1,0.2,0.2\n1,GPU,max,1,2,0.1,0.1,0.2,0.2\n",
         "costs.csv:4: block 1 on GPU has no row for DVFS setting 'min'"},
        {header + "99999999999,GPU,max,1,2,0.1,0.1,0.2,0.2\n", "costs.csv:2: block 99999999999 is beyond the limit"},
    };
    for (const auto& c : cases) {
        const std::string got = parse_error_of(c.text);
        INFO("file:\n", c.text, "\nerror: ", got);
        CHECK(got.find(c.expect) != std::string::npos);
    }
    // a CU the platform does not have
    BlockCostFileOptions declared;
    declared.cus = {"GPU", "DLA"};
    const std::string tpu = header + row0 + "0,TPU,max,1,2,0.1,0.1,0.2,0.2\n";
    CHECK(parse_error_of(tpu, declared).find("costs.csv:3: unknown compute unit 'TPU' (the platform has GPU, DLA)") !=
          std::string::npos);
    CHECK(parse_error_of(tpu).find("no error") != std::string::npos);  // undeclared: TPU is a CU of the file
    CHECK_THROWS_AS(load_block_costs("/nonexistent/costs.csv"), io_error);
}

TEST_CASE("network search: hypervolume share of the exact front, computed by hand") {
    // exact front (1, 3), (2, 1): reference (2.01, 3.02) past its nadir; the two boxes
    // 1.01 x 0.02 and 0.01 x 2.02 overlap in 0.01 x 0.02
    auto sol = [](double t, double e) { return MappingSolution{{0}, {t, e}, 0.0, 0, true}; };
    const std::vector<MappingSolution> exact{sol(1, 3), sol(2, 1)};
    const double union_area = 1.01 * 0.02 + 0.01 * 2.02 - 0.01 * 0.02;
    CHECK(hypervolume_ratio(exact, exact) == doctest::Approx(1.0));
    CHECK(hypervolume_ratio({sol(1, 3)}, exact) == doctest::Approx(1.01 * 0.02 / union_area));
    CHECK(hypervolume_ratio({}, exact) == doctest::Approx(0.0));
}

TEST_CASE("network search: a block-cost file searched and enumerated, its DVFS setting by name") {
    const auto inst = four_blocks();
    const auto path = std::filesystem::temp_directory_path() / "dnncost_test_network_search.csv";
    {
        std::ofstream out(path);
        const std::vector<MappingInstance> instances{inst};
        const std::vector<std::string> names{"nominal"};
        out << block_costs_csv(instances, names);
    }
    NetworkSearchRequest r;
    r.blocks = path.string();
    r.exact = true;
    r.search.population = 8;
    r.search.generations = 4;
    const auto l = load_network(r);
    REQUIRE(l.instances.size() == 1);
    CHECK(l.platform.cus == std::vector<std::string>{"A", "B"});
    const auto rep = search_network(l, r);
    REQUIRE(rep.exact);
    CHECK(rep.exact_evaluations == 16);  // 2^4 mappings
    CHECK(rep.exact->front().value.t == doctest::Approx(9.0));  // all on A: B is slower on every block
    CHECK(rep.hypervolume_ratio == doctest::Approx(1.0));  // 16 mappings: the search enumerates them
    r.dvfs = "nominal";
    CHECK(search_network(l, r).setting == 0);
    r.dvfs = "turbo";
    CHECK_THROWS_AS(search_network(l, r), config_error);
    NetworkSearchRequest neither;
    CHECK_THROWS_AS(load_network(neither), config_error);
    std::filesystem::remove(path);
}
