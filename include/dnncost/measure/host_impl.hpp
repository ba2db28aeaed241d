#pragma once
/// @file host_impl.hpp
/// The definitions of host.hpp: compiled once into dnncost::compiled in compiled mode
/// (core/config.hpp), included by host.hpp in header-only mode.
#include <dnncost/measure/host.hpp>

DNNCOST_FUNC auto dnncost::measure::detail::read_text(const std::filesystem::path& p) -> std::string {
    std::ifstream in(p);
    if (!in) return {};
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

DNNCOST_FUNC auto dnncost::measure::detail::fnv1a_hex(std::string_view s) -> std::string {
    std::uint64_t h = 0xcbf29ce484222325ULL;
    for (const char c : s) {
        h ^= static_cast<unsigned char>(c);
        h *= 0x100000001b3ULL;
    }
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
    return buf;
}

DNNCOST_FUNC auto dnncost::measure::x86_isa_level(const std::set<std::string>& flags) -> std::string {
    const auto all = [&](std::initializer_list<const char*> need) {
        return std::all_of(need.begin(), need.end(), [&](const char* f) { return flags.count(f) > 0; });
    };
    if (!all({"cmov", "cx8", "fpu", "fxsr", "mmx", "sse", "sse2"})) return {};
    if (!all({"cx16", "lahf_lm", "popcnt", "pni", "sse4_1", "sse4_2", "ssse3"})) return "x86-64-v1";
    if (!all({"avx", "avx2", "bmi1", "bmi2", "f16c", "fma", "abm", "movbe", "xsave"})) return "x86-64-v2";
    if (!all({"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"})) return "x86-64-v3";
    return "x86-64-v4";
}

DNNCOST_FUNC auto dnncost::measure::parse_cpuinfo(std::string_view text, HostFingerprint& fp) -> void {
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

DNNCOST_FUNC auto dnncost::measure::add_runner_device(HostFingerprint& fp, std::string_view device_json) -> void {
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

DNNCOST_FUNC auto dnncost::measure::local_host() -> HostFingerprint {
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

DNNCOST_FUNC auto dnncost::measure::to_json(const HostFingerprint& fp) -> json::Value {
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

DNNCOST_FUNC auto dnncost::measure::host_from_json(const json::Value& v) -> HostFingerprint {
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

DNNCOST_FUNC auto dnncost::measure::host_differences(const HostFingerprint& a, const HostFingerprint& b)
    -> std::vector<std::string> {
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
