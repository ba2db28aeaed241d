#pragma once
/// @file store_mix.hpp
/// Whether results stores may be mixed (trained on together, or appended to by another run):
/// figures are comparable when the hosts that measured them share a fingerprint (host.hpp) and
/// their reference network measured the same within the noise (reference.hpp). Every store is
/// compared with the first one that knows its host and reference; a store that disagrees is
/// flagged with what differs. A store written before fingerprints is flagged as an unknown host
/// and still loads.
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <dnncost/core/error.hpp>
#include <dnncost/measure/host.hpp>
#include <dnncost/measure/reference.hpp>
#include <dnncost/measure/run_conditions.hpp>
#include <dnncost/measure/sidecar.hpp>

namespace dnncost::measure {

/// One store that cannot be mixed with the others as it stands.
struct MixFlag {
    std::string store;  ///< its name as given
    enum class Kind { unknown_host, other_host, other_reference, drifting_store } kind = Kind::unknown_host;
    std::string message;  ///< one line saying what differs, naming the store
};

namespace detail {
/// The reference of a store: that of its first run that has one.
inline const ReferenceLatency* store_reference(const StoreInfo& info) {
    for (const auto& r : info.references)
        if (r.known()) return &r;
    return nullptr;
}
inline std::string join(const std::vector<std::string>& parts) {
    std::string s;
    for (const auto& p : parts) s += (s.empty() ? "" : "; ") + p;
    return s;
}
inline std::string reference_gap(const ReferenceLatency& a, const ReferenceLatency& b) {
    return fixed(b.latency_ms, 4) + " ms against " + fixed(a.latency_ms, 4) + " ms (" +
           percent(relative_difference(a.latency_ms, b.latency_ms)) + " apart, noise bound " +
           percent(reference_noise_bound(a, b)) + ")";
}
}  // namespace detail

/// Flag the stores (name, sidecar; nullopt for a store without one) that cannot be mixed.
inline std::vector<MixFlag> check_mix(const std::vector<std::pair<std::string, std::optional<StoreInfo>>>& stores) {
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

/// check_mix over store files, reading each one's sidecar.
/// @throws parse_error for a sidecar that is not one
inline std::vector<MixFlag> check_mix(const std::vector<std::filesystem::path>& stores) {
    std::vector<std::pair<std::string, std::optional<StoreInfo>>> infos;
    for (const auto& s : stores) infos.emplace_back(s.string(), read_store_info(sidecar_path(s)));
    return check_mix(infos);
}

/// Appending a run on `here` to a store described by `stored`: a different fingerprint is a
/// config_error unless `allow` (the message ends with `how_to_allow`), then a warning
/// (returned); an unknown stored host gives a warning.
inline std::vector<std::string> check_append(const std::string& store, const StoreInfo& stored,
                                             const HostFingerprint& here, bool allow,
                                             const std::string& how_to_allow = "allow appending anyway") {
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

}  // namespace dnncost::measure
