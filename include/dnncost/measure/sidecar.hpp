#pragma once
/// @file sidecar.hpp
/// The sidecar of a results store (`results.device.json` beside `results.csv`): what was
/// measured with what. The device name the user gave, the runner commands, the runner's own
/// device line, the harness settings, the fingerprint of the measuring host (host.hpp) and the
/// reference network's latency of every run that wrote to the store (reference.hpp), oldest
/// first. Sidecars written before fingerprints and references still load: their host is
/// unknown and they have no reference.
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <dnncost/core/error.hpp>
#include <dnncost/io/file.hpp>
#include <dnncost/measure/host.hpp>
#include <dnncost/measure/json.hpp>
#include <dnncost/measure/reference.hpp>

namespace dnncost::measure {

struct StoreInfo {
    StoreInfo() = default;
    StoreInfo(std::string device_name, std::vector<std::string> runner_commands, std::string runner_device_json = {},
              std::string settings_json = {})
        : device(std::move(device_name)),
          runners(std::move(runner_commands)),
          runner_device(std::move(runner_device_json)),
          settings(std::move(settings_json)) {}

    std::string device;                        ///< the name the user gave (--device)
    std::vector<std::string> runners;          ///< runner commands
    std::string runner_device;                 ///< the runner's device object (JSON), empty if none
    std::string settings;                      ///< the harness settings (JSON object), informational
    std::optional<HostFingerprint> host;       ///< nullopt: an unknown host (an older store)
    std::vector<ReferenceLatency> references;  ///< one per run that measured it, oldest first
};

inline constexpr const char* sidecar_format = "dnncost-results-1";

/// The sidecar file of a store: `results.csv` -> `results.device.json`.
inline std::filesystem::path sidecar_path(const std::filesystem::path& store) {
    auto p = store;
    return p.replace_extension(".device.json");
}

/// The sidecar as JSON text (one top-level member per line).
inline std::string to_json(const StoreInfo& info) {
    auto v = json::Value::object();
    v.set("format", json::Value::of(sidecar_format));
    v.set("device", json::Value::of(info.device));
    auto runners = json::Value::array();
    for (const auto& r : info.runners) runners.push(json::Value::of(r));
    v.set("runners", std::move(runners));
    // both were serialised by dnncost from parsed JSON; an unreadable one is kept as text
    const auto embedded = [](const std::string& text) {
        if (text.empty()) return json::Value{};
        try {
            return json::parse(text);
        } catch (const parse_error&) {
            return json::Value::of(text);
        }
    };
    v.set("runner_device", embedded(info.runner_device));
    v.set("settings", embedded(info.settings));
    if (info.host) v.set("host", to_json(*info.host));
    if (!info.references.empty()) {
        auto refs = json::Value::array();
        for (const auto& r : info.references) refs.push(to_json(r));
        v.set("references", std::move(refs));
    }
    return json::dump_lines(v);
}

/// Read a sidecar; nullopt when the file does not exist.
/// @throws parse_error naming the file when it is not a sidecar
inline std::optional<StoreInfo> read_store_info(const std::filesystem::path& path) {
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) return std::nullopt;
    json::Value v;
    try {
        v = json::parse(io::read_file(path, 1 << 20));
    } catch (const parse_error& e) {
        raise<parse_error>(path.string(), ": not a results sidecar: ", e.what());
    }
    const auto* device = v.find("device");
    const auto* runners = v.find("runners");
    if (!device || !device->is_string() || !runners || !runners->is_array())
        raise<parse_error>(path.string(), ": not a results sidecar (needs \"device\" and \"runners\")");
    StoreInfo info;
    info.device = device->string;
    for (const auto& r : runners->items)
        if (r.is_string()) info.runners.push_back(r.string);
    if (const auto* d = v.find("runner_device"); d && !d->is_null()) info.runner_device = json::dump(*d);
    if (const auto* s = v.find("settings"); s && !s->is_null()) info.settings = json::dump(*s);
    if (const auto* h = v.find("host"); h && h->is_object()) info.host = host_from_json(*h);
    if (const auto* r = v.find("references"); r && r->is_array())
        for (const auto& x : r->items)
            if (x.is_object()) info.references.push_back(reference_from_json(x));
    return info;
}

/// Write a sidecar atomically. @throws io_error
inline void write_store_info(const std::filesystem::path& path, const StoreInfo& info) {
    io::write_file_atomic(path, to_json(info));
}

}  // namespace dnncost::measure
