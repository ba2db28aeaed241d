#pragma once
/// @file probe.hpp
/// Hardware descriptor (b) of MAPLE-Edge: fixed operator micro-kernels run on the device while
/// CPU performance counters are read with perf_event_open; each counter is divided by the
/// kernel's latency. Standard C++, Linux and dnncost's own JSON writer only, and no ISA-specific code, so that the
/// probe cross-compiles for any board (examples/probe/ builds it alone). Where the kernel
/// exposes no counter (most VMs, other OSes), the descriptor keeps the latencies alone and says
/// which counters are missing.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <dnncost/core/config.hpp>
#include <dnncost/core/robust_statistics.hpp>
#include <dnncost/measure/json.hpp>

#if defined(__linux__)
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#endif

namespace dnncost::probe {

/// The counters of the descriptor, in its order.
struct CounterSpec {
    const char* name;
    std::uint32_t type;
    std::uint64_t config;
};

#if defined(__linux__)
inline constexpr std::uint64_t l1d_read(std::uint64_t result) {
    return PERF_COUNT_HW_CACHE_L1D | (PERF_COUNT_HW_CACHE_OP_READ << 8) | (result << 16);
}
inline const std::vector<CounterSpec>& counters() {
    static const std::vector<CounterSpec> c{
        {"cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES},
        {"instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS},
        {"cache_references", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_REFERENCES},
        {"cache_misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES},
        {"l1d_loads", PERF_TYPE_HW_CACHE, l1d_read(PERF_COUNT_HW_CACHE_RESULT_ACCESS)},
        {"l1d_load_misses", PERF_TYPE_HW_CACHE, l1d_read(PERF_COUNT_HW_CACHE_RESULT_MISS)},
    };
    return c;
}

/// One counter of this thread, user space only. Empty when the kernel refuses it; `why` says why.
class Counter {
public:
    explicit Counter(const CounterSpec& spec) {
        perf_event_attr attr;
        std::memset(&attr, 0, sizeof attr);
        attr.size = sizeof attr;
        attr.type = spec.type;
        attr.config = spec.config;
        attr.disabled = 1;
        attr.exclude_kernel = 1;
        attr.exclude_hv = 1;
        m_fd = static_cast<int>(syscall(SYS_perf_event_open, &attr, 0, -1, -1, 0));
        if (m_fd < 0) {
            const int e = errno;
            m_why = e == ENOENT || e == EOPNOTSUPP || e == ENODEV
                        ? "not supported here (no such hardware event; virtual machines usually expose none)"
                    : e == EACCES || e == EPERM ? "not permitted (see /proc/sys/kernel/perf_event_paranoid)"
                                                : std::string(std::strerror(e));
        }
    }
    Counter(const Counter&) = delete;
    Counter& operator=(const Counter&) = delete;
    ~Counter() {
        if (m_fd >= 0) close(m_fd);
    }
    bool available() const { return m_fd >= 0; }
    const std::string& why() const { return m_why; }
    void start() {
        if (m_fd < 0) return;
        ioctl(m_fd, PERF_EVENT_IOC_RESET, 0);
        ioctl(m_fd, PERF_EVENT_IOC_ENABLE, 0);
    }
    /// The count since start(); nullopt if the read fails.
    std::optional<std::uint64_t> stop() {
        if (m_fd < 0) return std::nullopt;
        ioctl(m_fd, PERF_EVENT_IOC_DISABLE, 0);
        std::uint64_t v = 0;
        if (read(m_fd, &v, sizeof v) != static_cast<ssize_t>(sizeof v)) return std::nullopt;
        return v;
    }

private:
    int m_fd = -1;
    std::string m_why;
};
#else
inline const std::vector<CounterSpec>& counters() {
    static const std::vector<CounterSpec> c{{"cycles", 0, 0},       {"instructions", 0, 0}, {"cache_references", 0, 0},
                                            {"cache_misses", 0, 0}, {"l1d_loads", 0, 0},    {"l1d_load_misses", 0, 0}};
    return c;
}
class Counter {
public:
    explicit Counter(const CounterSpec&) {}
    bool available() const { return false; }
    const std::string& why() const { return m_why; }
    void start() {}
    std::optional<std::uint64_t> stop() { return std::nullopt; }

private:
    std::string m_why = "perf_event_open exists on Linux only";
};
#endif

/// A fixed operator micro-kernel: plain loops over float buffers, sized so that each run takes
/// around a millisecond on a phone-class core.
struct Kernel {
    std::string name;
    std::function<void()> run;
};

/// The kernels of the descriptor: convolutions 3x3 and 1x1, depthwise 3x3, average pooling,
/// a fully connected layer and an element-wise add + ReLU (the operator families of the search
/// spaces). Buffers live in the returned closures.
DNNCOST_FUNC std::vector<Kernel> kernels();

/// One kernel's entry of the descriptor.
struct KernelResult {
    std::string name;
    double latency_ms = 0.0;                        ///< median over the repetitions
    std::vector<std::optional<double>> per_second;  ///< each counter / latency, in counters() order
};

struct Descriptor {
    std::vector<KernelResult> kernels;
    std::vector<std::string> missing;  ///< counters the kernel does not expose, with the reason
};

/// Run every kernel `repetitions` times (after one warm-up run) with the counters on.
DNNCOST_FUNC Descriptor run(int repetitions = 15);

/// The descriptor as JSON: per kernel its latency and each counter per second (null when missing).
DNNCOST_FUNC std::string to_json(const Descriptor& d);

}  // namespace dnncost::probe

#if !defined(DNNCOST_COMPILED)
#include <dnncost/measure/probe_impl.hpp>
#endif
