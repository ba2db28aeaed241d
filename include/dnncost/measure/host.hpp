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
inline std::string read_text(const std::filesystem::path& p) {
    std::ifstream in(p);
    if (!in) return {};
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}
inline std::string trim(std::string_view s) {
    const auto a = s.find_first_not_of(" \t\r\n");
    if (a == std::string_view::npos) return {};
    const auto b = s.find_last_not_of(" \t\r\n");
    return std::string(s.substr(a, b - a + 1));
}
inline std::string fnv1a_hex(std::string_view s) {
    std::uint64_t h = 0xcbf29ce484222325ULL;
    for (const char c : s) {
        h ^= static_cast<unsigned char>(c);
        h *= 0x100000001b3ULL;
    }
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
    return buf;
}
}  // namespace detail

/// The x86-64 micro-architecture level (psABI) that a set of /proc/cpuinfo flags reaches, or
/// empty when the flags are not x86 ones.
inline std::string x86_isa_level(const std::set<std::string>& flags) {
    const auto all = [&](std::initializer_list<const char*> need) {
        return std::all_of(need.begin(), need.end(), [&](const char* f) { return flags.count(f) > 0; });
    };
    if (!all({"cmov", "cx8", "fpu", "fxsr", "mmx", "sse", "sse2"})) return {};
    if (!all({"cx16", "lahf_lm", "popcnt", "pni", "sse4_1", "sse4_2", "ssse3"})) return "x86-64-v1";
    if (!all({"avx", "avx2", "bmi1", "bmi2", "f16c", "fma", "abm", "movbe", "xsave"})) return "x86-64-v2";
    if (!all({"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"})) return "x86-64-v3";
    return "x86-64-v4";
}

/// The CPU fields of a fingerprint from the text of /proc/cpuinfo (its first processor; x86
/// "flags" or Arm "Features").
inline void parse_cpuinfo(std::string_view text, HostFingerprint& fp) {
    std::set<std::string> flags;
    std::istringstream in{std::string(text)};
    bool first_done = false;
    for (std::string line; std::getline(in, line);) {
        if (detail::trim(line).empty()) {
            if (!fp.cpu.empty() || !flags.empty()) first_done = true;
            continue;
        }
        if (first_done) break;
        const auto colon = line.find(':');
        if (colon == std::string::npos) continue;
        const auto key = detail::trim(std::string_view(line).substr(0, colon));
        const auto value = detail::trim(std::string_view(line).substr(colon + 1));
        const auto integer = [&](int& out) {
            try {
                out = std::stoi(value, nullptr, 0);
            } catch (const std::exception&) {
                out = -1;
            }
        };
        if (key == "model name" || (key == "Processor" && fp.cpu.empty()))
            fp.cpu = value;
        else if (key == "cpu family" || key == "CPU architecture")
            integer(fp.cpu_family);
        else if (key == "model" || key == "CPU part")
            integer(fp.cpu_model);
        else if (key == "stepping" || key == "CPU revision")
            integer(fp.stepping);
        else if (key == "flags" || key == "Features") {
            std::istringstream f(value);
            for (std::string w; f >> w;) flags.insert(w);
        }
    }
    std::string joined;
    for (const auto& f : flags) joined += f + " ";
    fp.flags_digest = flags.empty() ? std::string() : detail::fnv1a_hex(joined);
    fp.isa_level = x86_isa_level(flags);
}

/// The runtime fields of a fingerprint from the runner's device object (JSON text; fields
/// "runtime", "version" and "node" when present).
inline void add_runner_device(HostFingerprint& fp, std::string_view device_json) {
    json::Value d;
    try {
        d = json::parse_object(device_json, "runner device line");
    } catch (const parse_error&) {
        return;
    }
    const auto text = [&](const char* key) {
        const auto* v = d.find(key);
        return v && v->is_string() ? v->string : std::string();
    };
    const auto runtime = text("runtime"), version = text("version");
    fp.runtime = detail::trim(runtime + " " + version);
    fp.node = text("node");
}

/// The fingerprint of this machine (CPU, caches, kernel, hostname); the runtime fields come from
/// the runner (add_runner_device).
inline HostFingerprint local_host() {
    HostFingerprint fp;
    parse_cpuinfo(detail::read_text("/proc/cpuinfo"), fp);
    utsname u{};
    if (::uname(&u) == 0) {
        fp.kernel = u.release;
        fp.hostname = u.nodename;
        if (fp.isa_level.empty()) fp.isa_level = u.machine;
    }
    const long n = ::sysconf(_SC_NPROCESSORS_ONLN);
    fp.logical_cpus = n > 0 ? static_cast<int>(n) : 0;
    const std::filesystem::path cache_dir = "/sys/devices/system/cpu/cpu0/cache";
    std::vector<std::string> caches;
    for (int i = 0; i < 16; ++i) {
        const auto d = cache_dir / ("index" + std::to_string(i));
        const auto level = detail::trim(detail::read_text(d / "level"));
        if (level.empty()) break;
        const auto type = detail::trim(detail::read_text(d / "type"));
        const auto size = detail::trim(detail::read_text(d / "size"));
        const std::string suffix = type == "Data" ? "d" : type == "Instruction" ? "i" : "";
        caches.push_back("L" + level + suffix + " " + size);
    }
    for (const auto& c : caches) fp.caches += (fp.caches.empty() ? "" : ", ") + c;
    return fp;
}

inline json::Value to_json(const HostFingerprint& fp) {
    auto v = json::Value::object();
    const auto text = [&](const char* key, const std::string& s) {
        v.set(key, s.empty() ? json::Value{} : json::Value::of(s));
    };
    const auto integer = [&](const char* key, int x) {
        v.set(key, x < 0 ? json::Value{} : json::Value::of(static_cast<double>(x)));
    };
    text("cpu", fp.cpu);
    integer("cpu_family", fp.cpu_family);
    integer("cpu_model", fp.cpu_model);
    integer("stepping", fp.stepping);
    text("isa_level", fp.isa_level);
    text("flags_digest", fp.flags_digest);
    integer("logical_cpus", fp.logical_cpus > 0 ? fp.logical_cpus : -1);
    text("caches", fp.caches);
    text("kernel", fp.kernel);
    text("runtime", fp.runtime);
    text("node", fp.node);
    text("hostname", fp.hostname);
    return v;
}

/// A fingerprint from its JSON object; fields absent or of another type stay unknown.
inline HostFingerprint host_from_json(const json::Value& v) {
    HostFingerprint fp;
    const auto text = [&](const char* key, std::string& out) {
        if (const auto* x = v.find(key); x && x->is_string()) out = x->string;
    };
    const auto integer = [&](const char* key, int& out) {
        if (const auto* x = v.find(key); x && x->is_number() && x->number >= 0 && x->number < 1e9)
            out = static_cast<int>(x->number);
    };
    text("cpu", fp.cpu);
    integer("cpu_family", fp.cpu_family);
    integer("cpu_model", fp.cpu_model);
    integer("stepping", fp.stepping);
    text("isa_level", fp.isa_level);
    text("flags_digest", fp.flags_digest);
    integer("logical_cpus", fp.logical_cpus);
    text("caches", fp.caches);
    text("kernel", fp.kernel);
    text("runtime", fp.runtime);
    text("node", fp.node);
    text("hostname", fp.hostname);
    return fp;
}

/// The fields in which two fingerprints differ, as "field: A vs B"; a field unknown on either
/// side is not compared, nor is the hostname.
inline std::vector<std::string> host_differences(const HostFingerprint& a, const HostFingerprint& b) {
    std::vector<std::string> out;
    const auto text = [&](const char* name, const std::string& x, const std::string& y) {
        if (!x.empty() && !y.empty() && x != y) out.push_back(std::string(name) + ": '" + x + "' vs '" + y + "'");
    };
    const auto integer = [&](const char* name, int x, int y) {
        if (x >= 0 && y >= 0 && x != y)
            out.push_back(std::string(name) + ": " + std::to_string(x) + " vs " + std::to_string(y));
    };
    text("cpu", a.cpu, b.cpu);
    integer("cpu_family", a.cpu_family, b.cpu_family);
    integer("cpu_model", a.cpu_model, b.cpu_model);
    integer("stepping", a.stepping, b.stepping);
    text("isa_level", a.isa_level, b.isa_level);
    text("flags_digest", a.flags_digest, b.flags_digest);
    integer("logical_cpus", a.logical_cpus > 0 ? a.logical_cpus : -1, b.logical_cpus > 0 ? b.logical_cpus : -1);
    text("caches", a.caches, b.caches);
    text("kernel", a.kernel, b.kernel);
    text("runtime", a.runtime, b.runtime);
    text("node", a.node, b.node);
    return out;
}

}  // namespace dnncost::measure
