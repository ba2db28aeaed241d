// Quality figures of the mapping search (not a Google Benchmark; the output is committed as
// bench/results/mapping_quality.txt and quoted in docs/mapping.md):
//   1. the IOE against exact fronts of enumerable random instances (the acceptance cases);
//   2. IOE operators at MaGNAS's budget (200 x 10) on ViG instances of the Xavier-like platform;
//   3. the Xavier-like platform against MaGNAS Table 2 and the standalone rows of Table 3;
//   4. a Table 3 style comparison (standalone, transition-limited, IOE) for that network.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <vector>

#include <dnncost/search/hypervolume.hpp>
#include <dnncost/search/mapping/mapping.hpp>

using namespace dnncost;
using namespace dnncost::search::mapping;

namespace {

std::vector<double> points_of(const std::vector<MappingSolution>& front) {
    std::vector<double> p;
    for (const auto& s : front) p.insert(p.end(), {s.value.t, s.value.e});
    return p;
}

void exact_comparison(double share) {
    std::printf("1. IOE vs exact fronts (budget %g%% of the enumeration, default operators)\n", 100.0 * share);
    std::printf("   %-38s %9s %6s %9s %7s %7s %10s\n", "instance", "mappings", "exact", "IOE evals", "share", "found",
                "HV ratio");
    for (std::uint64_t s = 1; s <= 3; ++s) {
        std::vector<RandomInstanceOptions> shapes{{.blocks = 20, .cus = 2}, {.blocks = 12, .cus = 3}};
        RandomInstanceOptions partial{.blocks = 12, .cus = 3, .unsupported = 0.25};
        std::uint64_t most = 0;
        for (std::size_t n = 12; n <= 24; ++n) {
            const auto k = random_instance({.blocks = n, .cus = 3, .unsupported = 0.25}, s).num_mappings();
            if (k <= (std::uint64_t{1} << 20) && k > most) most = k, partial.blocks = n;
        }
        shapes.push_back(partial);
        for (const auto& shape : shapes) {
            const auto inst = random_instance(shape, s);
            const MappingEvaluator ev(inst);
            const auto ex = exact_front(ev);
            MappingSearchOptions o;
            o.seed = s;
            o.generations = 0;
            o.max_evaluations =
                static_cast<std::size_t>(share * static_cast<double>(ex.evaluations)) - o.population - inst.num_cus();
            const auto r = search_mappings(ev, o);
            std::vector<double> a;
            double t_max = 0, e_max = 0;
            for (const auto& p : ex.front) {
                a.insert(a.end(), {p.value.t, p.value.e});
                t_max = std::max(t_max, p.value.t), e_max = std::max(e_max, p.value.e);
            }
            const double ref[2] = {t_max + 0.01 * (t_max - ex.front.front().value.t),
                                   e_max + 0.01 * (e_max - ex.front.back().value.e)};
            std::size_t found = 0;
            for (const auto& p : ex.front)
                for (const auto& q : r.front) found += p.value.t == q.value.t && p.value.e == q.value.e;
            char name[64];
            std::snprintf(name, sizeof name, "%zu blocks, %zu CUs%s, seed %llu", shape.blocks, shape.cus,
                          shape.unsupported > 0 ? " (partial)" : "", static_cast<unsigned long long>(s));
            std::printf("   %-38s %9llu %6zu %9zu %6.2f%% %7zu %10.6f\n", name,
                        static_cast<unsigned long long>(ex.evaluations), ex.front.size(), r.evaluations,
                        100.0 * static_cast<double>(r.evaluations) / static_cast<double>(ex.evaluations), found,
                        search::hypervolume(points_of(r.front), ref) / search::hypervolume(a, ref));
        }
    }
}

void operator_comparison(const TableCostSource<VigSpace>& src, const VigSpace& space) {
    std::printf(
        "\n2. IOE operators at MaGNAS's budget (population 200, 10 generations), Xavier-like MaxN,\n"
        "   mean hypervolume ratio over seeds 1-10 against a reference front (population 400 x 2000\n"
        "   generations, standalone mappings added; reference point 1.01 x the standalone maxima)\n");
    for (const char* arch : {"4Mpf320-4Mpf320-4Mpf320-4Mpf320", "2Gf96-3Mpf192-2S-4Gf320"}) {
        const auto blocks = space.blocks(space.parse(arch));
        const MappingEvaluator ev(make_instance(src, blocks, 0));
        MappingSearchOptions big;
        big.population = 400;
        big.generations = 2000;
        const auto reference = search_mappings(ev, big);
        const auto norm = reference.normaliser;
        const double ref[2] = {1.01 * norm.t_max, 1.01 * norm.e_max};
        const double hv_ref = search::hypervolume(points_of(reference.front), ref);
        std::printf("   %s (%zu blocks, %zu reference front points)\n", arch, blocks.size(), reference.front.size());
        for (double pm : {0.4, -1.0})
            for (bool stratified : {false, true}) {
                double sum = 0.0;
                for (std::uint64_t seed = 1; seed <= 10; ++seed) {
                    MappingSearchOptions o;
                    o.seed = seed;
                    o.operators.mutation_probability = pm;
                    o.operators.stratified_initialisation = stratified;
                    sum += search::hypervolume(points_of(search_mappings(ev, o).front), ref) / hv_ref;
                }
                std::printf("     mutation %-5s initialisation %-10s  %.4f\n", pm < 0 ? "1/n" : "0.4",
                            stratified ? "stratified" : "uniform", sum / 10.0);
            }
    }
}

void paper_tables(const TableCostSource<VigSpace>& src, const VigSpace& space) {
    std::printf("\n3. Xavier-like platform vs MaGNAS (MaxN; ms / mJ)\n");
    std::printf("   %-34s %21s %21s %21s %21s\n", "network", "GPU-only T", "DLA-only T", "GPU-only E", "DLA-only E");
    for (const auto& row : xavier_table2) {
        const auto arch = VigSpace::baseline(row.op);
        const MappingEvaluator ev(make_instance(src, space.blocks(arch), 0));
        const auto sa = standalone_mappings(ev);
        std::printf("   %-34s %9.2f (paper %6.2f) %9.2f (paper %6.2f) %9.2f (paper %6.2f) %9.2f (paper %6.2f)\n",
                    VigSpace::to_string(arch).c_str(), sa[0].value.t, row.gpu_ms, sa[1].value.t, row.dla_ms,
                    sa[0].value.e, row.gpu_mj, sa[1].value.e, row.dla_mj);
    }
    // Table 3's network (CIFAR-100 a3: S-G-S-G, FFN everywhere, pre-FC in one superblock); depth
    // and FFN width are not published: depth 2 and width 320 assumed
    const auto a3 = space.parse("2Spf320-2Gf320-2Sf320-2Gf320");
    const MappingEvaluator ev(make_instance(src, space.blocks(a3), 0));
    const auto sa = standalone_mappings(ev);
    std::printf(
        "   %-34s %9.2f (paper %6.2f) %9.2f (paper %6.2f) %9.2f (paper %6.2f) %9.2f (paper %6.2f)  (not calibrated "
        "on)\n",
        "2Spf320-2Gf320-2Sf320-2Gf320 (a3?)", sa[0].value.t, 13.42, sa[1].value.t, 25.56, sa[0].value.e, 273.22,
        sa[1].value.e, 121.74);

    std::printf("\n4. Table 3 style comparison for 2Spf320-2Gf320-2Sf320-2Gf320, latency budget +30%% over GPU-only\n");
    MappingSearchOptions o;
    o.preference.t_target = 1.3 * sa[0].value.t;
    const auto ioe = search_mappings(ev, o);
    std::printf("   %-16s %8s %8s %8s   %s\n", "option", "#transit", "T (ms)", "E (mJ)",
                "mapping (stem, graphers/FFNs interleaved, cls)");
    auto row = [&](const char* name, const std::vector<std::uint8_t>& cus, TimeEnergy v) {
        std::string m;
        for (auto c : cus) m += c == 0 ? 'G' : 'D';
        std::printf("   %-16s %8zu %8.2f %8.2f   %s\n", name, transitions(cus), v.t, v.e, m.c_str());
    };
    row("GPU-only", ev.to_cus(sa[0].genes), sa[0].value);
    row("DLA-only", ev.to_cus(sa[1].genes), sa[1].value);
    for (std::size_t k : {1, 2}) {
        auto f = transition_limited_front(ev, k).front;
        std::sort(f.begin(), f.end(), [&](const auto& x, const auto& y) {
            return std::abs(x.value.t - ioe.best.value.t) < std::abs(y.value.t - ioe.best.value.t);
        });
        for (std::size_t i = 0; i < 2 && i < f.size(); ++i)
            row(k == 1 ? "constr-transit1" : "constr-transit2", ev.to_cus(f[i].genes), f[i].value);
    }
    row("IOE (best P)", ioe.best.cus, ioe.best.value);
    std::printf(
        "   paper (CIFAR-100 a3): GPU-only 13.42/273.22, DLA-only 25.56/121.74, constr-transit1 16.31/232.60 and\n"
        "   17.42/226.79, constr-transit2 17.58/220.23 and 17.11/227.15, IOE 17.29/197.8 (12 transitions)\n");
}

}  // namespace

int main() {
    exact_comparison(0.05);
    exact_comparison(0.01);
    const XavierLikePlatform x;
    const VigSpace space;
    const TableCostSource<VigSpace> src(tabulate(space, x));
    operator_comparison(src, space);
    paper_tables(src, space);
}
