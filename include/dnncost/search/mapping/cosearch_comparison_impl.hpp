#pragma once
/// @file cosearch_comparison_impl.hpp
/// The definitions of cosearch_comparison.hpp: compiled once into dnncost::compiled in compiled mode
/// (core/config.hpp), included by cosearch_comparison.hpp in header-only mode.
#include <dnncost/search/mapping/cosearch_comparison.hpp>

namespace dnncost::search::mapping {

DNNCOST_FUNC MappingComparison compare_mappings(const TableCostSource<VigSpace>& src, const VigArchitecture& arch,
                                                const CoSearchRequest& request) {
    const VigSpace space;
    const auto& platform = src.platform();
    MappingComparison c;
    c.architecture = arch;
    c.blocks = space.blocks(arch);
    auto name = [](const VigBlock& b) { return VigSpace::block_name(b); };
    const MappingEvaluator ev(make_instance(src, c.blocks, platform.reference_dvfs, name));
    const auto standalone = standalone_mappings(ev);
    if (standalone.empty()) raise<error>("cosearch: no compute unit runs every block of ", VigSpace::to_string(arch));
    double fastest = std::numeric_limits<double>::infinity();
    for (const auto& s : standalone) fastest = std::min(fastest, s.value.t);
    MappingSearchOptions io = request.search.inner;
    io.seed = request.search.seed;
    io.preference.t_target = (1.0 + request.latency_increase) * fastest;
    c.latency_budget = io.preference.t_target;
    c.ioe = search_mappings(ev, io);
    const auto norm = c.ioe.normaliser;
    for (const auto& s : standalone) {
        c.standalone_cus.push_back(s.cu);
        c.standalone.push_back(
            {ev.to_cus(s.genes), s.value, objective_p(s.value, norm, io.preference), platform.reference_dvfs, true});
    }
    auto closest = [&](std::size_t k) {
        auto f = transition_limited_front(ev, k).front;
        std::sort(f.begin(), f.end(), [&](const auto& x, const auto& y) {
            return std::abs(x.value.t - c.ioe.best.value.t) < std::abs(y.value.t - c.ioe.best.value.t);
        });
        std::vector<MappingSolution> out;
        for (std::size_t i = 0; i < f.size() && i < 2; ++i)
            out.push_back({ev.to_cus(f[i].genes), f[i].value, objective_p(f[i].value, norm, io.preference),
                           platform.reference_dvfs, io.preference.feasible(f[i].value)});
        return out;
    };
    c.transitions_1 = closest(1);
    c.transitions_2 = closest(2);
    if (request.ioe_front) c.ioe_front = search_mappings(ev, request.search.inner).front;
    return c;
}

DNNCOST_FUNC CoSearchReport run_cosearch(const CoSearchRequest& request) {
    const VigSpace space;
    CoSearchReport rep;
    auto source = [&]() -> TableCostSource<VigSpace> {
        if (request.platform == "xavier") {
            rep.platform_name = "the Xavier-like GPU + DLA platform";
            return TableCostSource<VigSpace>(tabulate(space, XavierLikePlatform{}));
        }
        if (request.platform != "roofline")
            raise<config_error>("cosearch: unknown platform '", request.platform, "' (xavier | roofline)");
        if (request.search.dvfs_brute_force)
            raise<config_error>("cosearch: the roofline platform has a single DVFS setting");
        rep.platform_name = "the three-accelerator roofline platform";
        return TableCostSource<VigSpace>(tabulate(space, three_accelerator_platform()));
    };
    const auto src = source();
    rep.platform = src.platform();
    const VigAccuracyProxy accuracy(request.dataset);
    rep.result = co_search(space, src, accuracy, request.search);
    VigArchitecture arch;
    if (!request.compare.empty()) {
        arch = space.parse(request.compare);
    } else {
        if (rep.result.front.empty()) raise<error>("cosearch: empty front");
        arch = std::max_element(rep.result.front.begin(), rep.result.front.end(), [](const auto& x, const auto& y) {
                   return x.accuracy < y.accuracy;
               })->architecture;
    }
    rep.comparison = compare_mappings(src, arch, request);
    return rep;
}

}  // namespace dnncost::search::mapping
