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

#include <dnncost/core/config.hpp>
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
DNNCOST_FUNC std::vector<MixFlag> check_mix(const std::vector<std::pair<std::string, std::optional<StoreInfo>>>& stores);

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
DNNCOST_FUNC std::vector<std::string> check_append(const std::string& store, const StoreInfo& stored,
                                             const HostFingerprint& here, bool allow,
                                             const std::string& how_to_allow = "allow appending anyway");

}  // namespace dnncost::measure

#if !defined(DNNCOST_COMPILED)
#include <dnncost/measure/store_mix_impl.hpp>
#endif
