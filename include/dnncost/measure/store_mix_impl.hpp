#pragma once
/// @file store_mix_impl.hpp
/// The definitions of store_mix.hpp: compiled once into dnncost::compiled in compiled mode
/// (core/config.hpp), included by store_mix.hpp in header-only mode.
#include <dnncost/measure/store_mix.hpp>

DNNCOST_FUNC auto dnncost::measure::check_mix(
    const std::vector<std::pair<std::string, std::optional<StoreInfo>>>& stores) -> std::vector<MixFlag> {
    std::vector<MixFlag> flags;
    const StoreInfo* base = nullptr;
    std::string base_name;
    for (const auto& [name, info] : stores)
        if (info && info->host && detail::store_reference(*info)) {
            base = &*info;
            base_name = name;
            break;
        }
    if (!base)
        for (const auto& [name, info] : stores)
            if (info && info->host) {
                base = &*info;
                base_name = name;
                break;
            }
    for (const auto& [name, info] : stores) {
        if (!info || !info->host) {
            if (stores.size() > 1)
                flags.push_back({name, MixFlag::Kind::unknown_host,
                                 name + ": unknown host (no fingerprint: measured before dnncost recorded one); its "
                                        "figures cannot be checked against the other stores'"});
            continue;
        }
        // runs of one store that disagree among themselves
        if (const auto* first = detail::store_reference(*info))
            for (const auto& r : info->references)
                if (r.known() && (r.key.empty() || r.key == first->key) && references_differ(*first, r)) {
                    flags.push_back({name, MixFlag::Kind::drifting_store,
                                     name + ": its runs disagree: the reference network measured " +
                                         detail::reference_gap(*first, r) + (r.time.empty() ? "" : " at " + r.time)});
                    break;
                }
        if (!base || base == &*info) continue;
        const auto diff = host_differences(*base->host, *info->host);
        if (!diff.empty())
            flags.push_back({name, MixFlag::Kind::other_host,
                             name + ": measured on another host than " + base_name + " (" + detail::join(diff) + ")"});
        const auto* a = detail::store_reference(*base);
        const auto* b = detail::store_reference(*info);
        if (a && b && (a->key.empty() || b->key.empty() || a->key == b->key) && references_differ(*a, *b))
            flags.push_back({name, MixFlag::Kind::other_reference,
                             name + ": the reference network measured " + detail::reference_gap(*a, *b) + " in " +
                                 base_name + ": its latencies are not comparable as they stand"});
    }
    return flags;
}

DNNCOST_FUNC auto dnncost::measure::check_append(const std::string& store, const StoreInfo& stored,
                                                 const HostFingerprint& here, bool allow,
                                                 const std::string& how_to_allow) -> std::vector<std::string> {
    std::vector<std::string> warnings;
    if (!stored.host) {
        warnings.push_back(store + ": unknown host (its measurements carry no fingerprint); appending from " +
                           (here.hostname.empty() ? std::string("this host") : "'" + here.hostname + "'"));
        return warnings;
    }
    const auto diff = host_differences(*stored.host, here);
    if (diff.empty()) return warnings;
    const auto what = store + " was measured on another host (" + detail::join(diff) + ")";
    if (!allow) raise<config_error>(what, ": measure into another store, or ", how_to_allow);
    warnings.push_back(what + "; appending anyway: the store now mixes two hosts");
    return warnings;
}
