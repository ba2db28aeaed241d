#pragma once
/// @file network_search.hpp
/// The mapping search on one network as `dnncost map` runs it: the network's per-DVFS instances
/// (a block-cost file, or a ViG subnet on an example platform), the IOE at one DVFS setting or
/// all of them, and optionally the exact front with the search's share of its hypervolume.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <dnncost/core/error.hpp>
#include <dnncost/search/hypervolume.hpp>
#include <dnncost/search/mapping/block_costs.hpp>
#include <dnncost/search/mapping/cost_source.hpp>
#include <dnncost/search/mapping/exact.hpp>
#include <dnncost/search/mapping/inner_search.hpp>
#include <dnncost/search/mapping/platforms/xavier.hpp>
#include <dnncost/search/mapping/roofline.hpp>
#include <dnncost/search/mapping/vig_space.hpp>
#include <dnncost/search/mapping/workload.hpp>

namespace dnncost::search::mapping {

/// Which network, on which platform, searched how.
struct NetworkSearchRequest {
    std::string blocks;                   ///< block-cost CSV file, or empty for `vig`
    std::vector<std::string> cus;         ///< the file's compute units, if given (a row naming another is an error)
    std::string vig;                      ///< a ViG subnet, instead of `blocks`
    std::string platform = "xavier";      ///< platform of `vig`: xavier | roofline
    std::string dvfs;                     ///< DVFS setting name, "all" (brute force), or empty (the reference)
    MappingSearchOptions search;
    bool exact = false;                   ///< also enumerate every mapping (up to 2^20)
};

/// A network's mapping instances, one per DVFS setting of its platform.
struct LoadedNetwork {
    std::string what;
    Platform platform;
    std::vector<MappingInstance> instances;
};

/// What `search_network` found.
struct NetworkSearchReport {
    bool all_dvfs = false;
    std::size_t setting = 0;  ///< the DVFS setting searched (the reference one with all_dvfs)
    MappingSearchResult result;
    double seconds = 0;
    std::optional<std::vector<MappingSolution>> exact;  ///< the exact front, when asked for
    std::uint64_t exact_evaluations = 0;
    double hypervolume_ratio = 0;  ///< of the search's front to the exact one's
};

/// The network of a request. @throws config_error for neither or both of blocks and vig
inline LoadedNetwork load_network(const NetworkSearchRequest& r) {
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
        for (std::size_t d = 0; d < l.platform.num_dvfs(); ++d) l.instances.push_back(make_instance(src, blocks, d, name));
    } else if (r.platform == "roofline") {
        static const RooflinePlatform p = three_accelerator_platform();
        const WorkloadCostSource<VigSpace, RooflinePlatform> src(space, p);
        l.platform = src.platform();
        for (std::size_t d = 0; d < l.platform.num_dvfs(); ++d) l.instances.push_back(make_instance(src, blocks, d, name));
    } else {
        raise<config_error>("map: unknown platform '", r.platform, "' (xavier | roofline)");
    }
    return l;
}

/// Hypervolume of `found` relative to `exact` (reference: 1% beyond the exact front's nadir).
inline double hypervolume_ratio(const std::vector<MappingSolution>& found, const std::vector<MappingSolution>& exact) {
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

/// The IOE on a loaded network, at the request's DVFS setting (or all), and the exact front.
/// @throws config_error for an unknown DVFS setting or --exact on more than 2^20 mappings
inline NetworkSearchReport search_network(const LoadedNetwork& l, const NetworkSearchRequest& request) {
    NetworkSearchReport rep;
    rep.all_dvfs = request.dvfs == "all";
    rep.setting = rep.all_dvfs || request.dvfs.empty() ? l.platform.reference_dvfs : l.platform.dvfs_index(request.dvfs);
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
            pts.push_back({evs[d].to_cus(p.genes), p.value, objective_p(p.value, rep.result.normaliser, o.preference), d,
                           true});
    }
    rep.exact = nondominated_solutions(std::move(pts));
    rep.hypervolume_ratio = hypervolume_ratio(rep.result.front, *rep.exact);
    return rep;
}

}  // namespace dnncost::search::mapping
