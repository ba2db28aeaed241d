#pragma once
/// @file machine_load_impl.hpp
/// The definitions of machine_load.hpp: compiled once into dnncost::compiled in compiled mode
/// (core/config.hpp), included by machine_load.hpp in header-only mode.
#include <dnncost/measure/machine_load.hpp>

DNNCOST_FUNC auto dnncost::measure::parse_proc_stat(std::string_view text) -> std::vector<std::uint64_t> {
    std::vector<std::uint64_t> busy;
    std::istringstream in{std::string(text)};
    for (std::string line; std::getline(in, line);) {
        if (line.rfind("cpu", 0) != 0 || line.size() < 4 || line[3] < '0' || line[3] > '9') continue;
        std::istringstream f(line);
        std::string name;
        f >> name;
        const auto cpu = static_cast<std::size_t>(std::stoul(name.substr(3)));
        // user nice system idle iowait irq softirq steal (guest time is already in user)
        std::uint64_t v[8] = {};
        for (auto& x : v) f >> x;
        if (busy.size() <= cpu) busy.resize(cpu + 1, 0);
        busy[cpu] = v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
    }
    return busy;
}

DNNCOST_FUNC auto dnncost::measure::parse_pid_stat(std::string_view text, bool children)
    -> std::optional<std::pair<long, std::uint64_t>> {
    const auto close = text.rfind(')');
    if (close == std::string_view::npos) return std::nullopt;
    std::istringstream f{std::string(text.substr(close + 1))};
    std::string field;
    std::vector<std::string> fields;
    for (int i = 0; i < 15 && f >> field; ++i) fields.push_back(field);
    // after ")": state(0) ppid(1) pgrp(2) ... utime(11) stime(12) cutime(13) cstime(14)
    if (fields.size() < 15) return std::nullopt;
    try {
        std::uint64_t t = std::stoull(fields[11]) + std::stoull(fields[12]);
        if (children) t += std::stoull(fields[13]) + std::stoull(fields[14]);
        return std::make_pair(std::stol(fields[2]), t);
    } catch (const std::exception&) {
        return std::nullopt;
    }
}

DNNCOST_FUNC auto dnncost::measure::sample_machine(const std::set<pid_t>& groups) -> LoadSample {
    LoadSample s;
    s.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
    s.busy = parse_proc_stat(detail::read_text("/proc/stat"));
    if (s.busy.empty()) return s;
    if (const auto self = parse_pid_stat(detail::read_text("/proc/self/stat"), true)) s.own = self->second;
    if (!groups.empty()) {
        std::error_code ec;
        for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
            const auto name = entry.path().filename().string();
            if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
            // with the children each has waited for: a runner that starts a process per request (a
            // shell script, ssh to a board) keeps that time as its own once the child is gone
            const auto p = parse_pid_stat(detail::read_text(entry.path() / "stat"), true);
            if (p && groups.count(static_cast<pid_t>(p->first))) s.own += p->second;
        }
    }
    std::istringstream load(detail::read_text("/proc/loadavg"));
    double one = std::nan("");
    if (load >> one) s.load_average = one;
    return s;
}

DNNCOST_FUNC auto dnncost::measure::load_between(const LoadSample& a, const LoadSample& b, double ticks_per_second,
                                                 std::optional<int> cpu) -> MachineLoad {
    MachineLoad m;
    m.seconds = b.seconds - a.seconds;
    m.load_average = std::isnan(a.load_average)   ? b.load_average
                     : std::isnan(b.load_average) ? a.load_average
                                                  : std::max(a.load_average, b.load_average);
    if (!a.valid() || !b.valid() || !(m.seconds > 0) || !(ticks_per_second > 0)) return m;
    std::uint64_t busy = 0;
    for (std::size_t c = 0; c < std::min(a.busy.size(), b.busy.size()); ++c)
        busy += b.busy[c] >= a.busy[c] ? b.busy[c] - a.busy[c] : 0;
    const double own = b.own >= a.own ? static_cast<double>(b.own - a.own) : 0.0;
    m.other_cpus = std::max(0.0, static_cast<double>(busy) - own) / ticks_per_second / m.seconds;
    if (cpu && *cpu >= 0) {
        const auto c = static_cast<std::size_t>(*cpu);
        if (c < a.busy.size() && c < b.busy.size() && b.busy[c] >= a.busy[c])
            m.other_share_of_cpu =
                std::clamp((static_cast<double>(b.busy[c] - a.busy[c]) - own) / ticks_per_second / m.seconds, 0.0, 1.0);
    }
    return m;
}
