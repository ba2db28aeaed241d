#pragma once
/// @file host.hpp
/// The fingerprint of the host that measured: what must be equal for two latency figures to be
/// comparable as they stand. The CPU (model name, family/model/stepping, a digest of its feature
/// flags and the x86-64 ISA level they reach), the logical CPU count, the cache sizes, the
/// kernel release, and the runtime as the runner's device line names it (runtime and version,
/// Node.js version). The hostname is kept as a hint and never compared: two VMs of one kind
/// share everything else, and one VM renamed is the same machine.
///
/// The host is the machine dnncost runs on, which is the measuring machine for local runners
/// (the bundled one); for a remote board the runner's device line is what describes the device.
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <dnncost/core/config.hpp>
#include <dnncost/measure/json.hpp>

namespace dnncost::measure {

struct HostFingerprint {
    std::string cpu;  ///< model name
    int cpu_family = -1, cpu_model = -1, stepping = -1;
    std::string isa_level;     ///< x86-64-v1..v4, or the machine type (uname -m) elsewhere
    std::string flags_digest;  ///< FNV-1a of the sorted feature flags, 16 hex digits
    int logical_cpus = 0;
    std::string caches;    ///< e.g. "L1d 32K, L1i 32K, L2 1024K, L3 32768K"
    std::string kernel;    ///< uname -r
    std::string runtime;   ///< runtime and version from the runner's device line, e.g. "onnxruntime 1.30.0"
    std::string node;      ///< Node.js version from the runner's device line
    std::string hostname;  ///< a hint, not compared
};

namespace detail {
DNNCOST_FUNC std::string read_text(const std::filesystem::path& p);
inline std::string trim(std::string_view s) {
    const auto a = s.find_first_not_of(" \t\r\n");
    if (a == std::string_view::npos) return {};
    const auto b = s.find_last_not_of(" \t\r\n");
    return std::string(s.substr(a, b - a + 1));
}
DNNCOST_FUNC std::string fnv1a_hex(std::string_view s);
}  // namespace detail

/// The x86-64 micro-architecture level (psABI) that a set of /proc/cpuinfo flags reaches, or
/// empty when the flags are not x86 ones.
DNNCOST_FUNC std::string x86_isa_level(const std::set<std::string>& flags);

/// The CPU fields of a fingerprint from the text of /proc/cpuinfo (its first processor; x86
/// "flags" or Arm "Features").
DNNCOST_FUNC void parse_cpuinfo(std::string_view text, HostFingerprint& fp);

/// The runtime fields of a fingerprint from the runner's device object (JSON text; fields
/// "runtime", "version" and "node" when present).
DNNCOST_FUNC void add_runner_device(HostFingerprint& fp, std::string_view device_json);

/// The fingerprint of this machine (CPU, caches, kernel, hostname); the runtime fields come from
/// the runner (add_runner_device).
DNNCOST_FUNC HostFingerprint local_host();

DNNCOST_FUNC json::Value to_json(const HostFingerprint& fp);

/// A fingerprint from its JSON object; fields absent or of another type stay unknown.
DNNCOST_FUNC HostFingerprint host_from_json(const json::Value& v);

/// The fields in which two fingerprints differ, as "field: A vs B"; a field unknown on either
/// side is not compared, nor is the hostname.
DNNCOST_FUNC std::vector<std::string> host_differences(const HostFingerprint& a, const HostFingerprint& b);

}  // namespace dnncost::measure

#if !defined(DNNCOST_COMPILED)
#include <dnncost/measure/host_impl.hpp>
#endif
