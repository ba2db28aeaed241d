#pragma once
/// @file network_search_impl.hpp
/// The definitions of network_search.hpp: compiled once into dnncost::compiled in compiled mode
/// (core/config.hpp), included by network_search.hpp in header-only mode.
#include <chrono>

#include <dnncost/search/hypervolume.hpp>
#include <dnncost/search/mapping/network_search.hpp>

namespace dnncost::search::mapping {

DNNCOST_FUNC LoadedNetwork load_network(const NetworkSearchRequest& r) {
    if (r.blocks.empty() == r.vig.empty()) raise<config_error>("map: give either --blocks FILE.csv or --vig ARCH");
    if (!r.vig.empty() && !r.cus.empty()) raise<config_error>("map: --cus applies to --blocks files only");
    LoadedNetwork l;
    if (!r.blocks.empty()) {
        BlockCostFileOptions o;
        o.cus = r.cus;
        const auto file = load_block_costs(r.blocks, o);
        l.what = r.blocks;
        l.platform = file.platform;
        for (std::size_t d = 0; d < file.platform.num_dvfs(); ++d) l.instances.push_back(file.instance(d));
        return l;
    }
    const VigSpace space;
    const auto blocks = space.blocks(space.parse(r.vig));
    l.what = "ViG " + r.vig;
    auto name = [](const VigBlock& b) { return VigSpace::block_name(b); };
    if (r.platform == "xavier") {
        static const XavierLikePlatform x;
        const TableCostSource<VigSpace> src(tabulate(space, x));
        l.platform = src.platform();
        for (std::size_t d = 0; d < l.platform.num_dvfs(); ++d)
            l.instances.push_back(make_instance(src, blocks, d, name));
    } else if (r.platform == "roofline") {
        static const RooflinePlatform p = three_accelerator_platform();
        const WorkloadCostSource<VigSpace, RooflinePlatform> src(space, p);
        l.platform = src.platform();
        for (std::size_t d = 0; d < l.platform.num_dvfs(); ++d)
            l.instances.push_back(make_instance(src, blocks, d, name));
    } else {
        raise<config_error>("map: unknown platform '", r.platform, "' (xavier | roofline)");
    }
    return l;
}

DNNCOST_FUNC double hypervolume_ratio(const std::vector<MappingSolution>& found,
                                      const std::vector<MappingSolution>& exact) {
    if (exact.empty()) return 0.0;
    double t_max = 0, e_max = 0;
    std::vector<double> a, b;
    for (const auto& s : exact) {
        a.insert(a.end(), {s.value.t, s.value.e});
        t_max = std::max(t_max, s.value.t);
        e_max = std::max(e_max, s.value.e);
    }
    for (const auto& s : found) b.insert(b.end(), {s.value.t, s.value.e});
    const double ref[2] = {t_max + 0.01 * (t_max - exact.front().value.t) + 1e-12,
                           e_max + 0.01 * (e_max - exact.back().value.e) + 1e-12};
    const double hv = search::hypervolume(a, ref);
    return hv > 0.0 ? search::hypervolume(b, ref) / hv : 1.0;
}

DNNCOST_FUNC NetworkSearchReport search_network(const LoadedNetwork& l, const NetworkSearchRequest& request) {
    NetworkSearchReport rep;
    rep.all_dvfs = request.dvfs == "all";
    rep.setting =
        rep.all_dvfs || request.dvfs.empty() ? l.platform.reference_dvfs : l.platform.dvfs_index(request.dvfs);
    std::vector<MappingEvaluator> evs;
    for (const auto& inst : l.instances) evs.emplace_back(inst);
    const auto& o = request.search;
    const auto start = std::chrono::steady_clock::now();
    rep.result = rep.all_dvfs ? search_mappings_dvfs(evs, l.platform.reference_dvfs, o)
                              : search_mappings(evs[rep.setting], o, std::nullopt, rep.setting);
    rep.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!request.exact) return rep;
    std::vector<MappingSolution> pts;
    for (std::size_t d = 0; d < evs.size(); ++d) {
        if (!rep.all_dvfs && d != rep.setting) continue;
        const auto n = l.instances[d].num_mappings();
        if (n > (std::uint64_t{1} << 20))
            raise<config_error>("map: --exact enumerates up to 2^20 = 1048576 mappings; this network has ", n);
        const auto ex = exact_front(evs[d], o.preference);
        rep.exact_evaluations += ex.evaluations;
        for (const auto& p : ex.front)
            pts.push_back(
                {evs[d].to_cus(p.genes), p.value, objective_p(p.value, rep.result.normaliser, o.preference), d, true});
    }
    rep.exact = nondominated_solutions(std::move(pts));
    rep.hypervolume_ratio = hypervolume_ratio(rep.result.front, *rep.exact);
    return rep;
}

}  // namespace dnncost::search::mapping
