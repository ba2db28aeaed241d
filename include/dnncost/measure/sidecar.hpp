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

#include <dnncost/core/config.hpp>
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
DNNCOST_FUNC std::string to_json(const StoreInfo& info);

/// Read a sidecar; nullopt when the file does not exist.
/// @throws parse_error naming the file when it is not a sidecar
DNNCOST_FUNC std::optional<StoreInfo> read_store_info(const std::filesystem::path& path);

/// Write a sidecar atomically. @throws io_error
inline void write_store_info(const std::filesystem::path& path, const StoreInfo& info) {
    io::write_file_atomic(path, to_json(info));
}

}  // namespace dnncost::measure

#if !defined(DNNCOST_COMPILED)
#include <dnncost/measure/sidecar_impl.hpp>
#endif
