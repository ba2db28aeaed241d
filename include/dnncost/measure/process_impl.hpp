#pragma once
/// @file process_impl.hpp
/// The definitions of process.hpp: compiled once into dnncost::compiled in compiled mode
/// (core/config.hpp), included by process.hpp in header-only mode.
#include <dnncost/measure/process.hpp>

DNNCOST_FUNC auto dnncost::measure::allowed_cpus() -> std::vector<int> {
    std::vector<int> out;
    cpu_set_t set;
    CPU_ZERO(&set);
    if (::sched_getaffinity(0, sizeof set, &set) != 0) return out;
    for (int c = 0; c < CPU_SETSIZE; ++c)
        if (CPU_ISSET(c, &set)) out.push_back(c);
    return out;
}

DNNCOST_FUNC auto dnncost::measure::realtime_permitted(std::string* why) -> bool {
    int rc = 0;
    std::thread probe([&rc] {
        sched_param p{};
        p.sched_priority = 1;
        rc = ::pthread_setschedparam(::pthread_self(), SCHED_FIFO, &p);
    });
    probe.join();
    if (rc != 0 && why)
        *why = std::string("SCHED_FIFO is not permitted (") + std::strerror(rc) +
               "): it needs root, CAP_SYS_NICE or an RLIMIT_RTPRIO above 0 (ulimit -r)";
    return rc == 0;
}
