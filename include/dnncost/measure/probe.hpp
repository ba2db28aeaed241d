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

#include <dnncost/measure/json.hpp>
#include <dnncost/train/metrics.hpp>

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
inline std::vector<Kernel> kernels() {
    constexpr int c = 32, hw = 16;
    auto in = std::make_shared<std::vector<float>>(static_cast<std::size_t>(c * (hw + 2) * (hw + 2)), 0.5f);
    auto out = std::make_shared<std::vector<float>>(static_cast<std::size_t>(c * hw * hw), 0.0f);
    auto w = std::make_shared<std::vector<float>>(static_cast<std::size_t>(c * c * 9), 0.01f);
    const int p = hw + 2;
    auto at = [p](int ch, int y, int x) { return static_cast<std::size_t>((ch * p + y) * p + x); };
    auto o_at = [](int ch, int y, int x) { return static_cast<std::size_t>((ch * hw + y) * hw + x); };
    std::vector<Kernel> k;
    k.push_back({"conv3x3", [=] {
                     for (int co = 0; co < c; ++co)
                         for (int y = 0; y < hw; ++y)
                             for (int x = 0; x < hw; ++x) {
                                 float s = 0;
                                 for (int ci = 0; ci < c; ++ci)
                                     for (int dy = 0; dy < 3; ++dy)
                                         for (int dx = 0; dx < 3; ++dx)
                                             s += (*in)[at(ci, y + dy, x + dx)] *
                                                  (*w)[static_cast<std::size_t>(((co * c + ci) * 3 + dy) * 3 + dx)];
                                 (*out)[o_at(co, y, x)] = s;
                             }
                 }});
    k.push_back({"conv1x1", [=] {
                     for (int co = 0; co < c; ++co)
                         for (int y = 0; y < hw; ++y)
                             for (int x = 0; x < hw; ++x) {
                                 float s = 0;
                                 for (int ci = 0; ci < c; ++ci)
                                     s += (*in)[at(ci, y + 1, x + 1)] * (*w)[static_cast<std::size_t>(co * c + ci)];
                                 (*out)[o_at(co, y, x)] = s;
                             }
                 }});
    k.push_back({"depthwise3x3", [=] {
                     for (int ch = 0; ch < c; ++ch)
                         for (int y = 0; y < hw; ++y)
                             for (int x = 0; x < hw; ++x) {
                                 float s = 0;
                                 for (int dy = 0; dy < 3; ++dy)
                                     for (int dx = 0; dx < 3; ++dx)
                                         s += (*in)[at(ch, y + dy, x + dx)] *
                                              (*w)[static_cast<std::size_t>(ch * 9 + dy * 3 + dx)];
                                 (*out)[o_at(ch, y, x)] = s;
                             }
                 }});
    k.push_back({"avgpool3x3", [=] {
                     for (int ch = 0; ch < c; ++ch)
                         for (int y = 0; y < hw; ++y)
                             for (int x = 0; x < hw; ++x) {
                                 float s = 0;
                                 for (int dy = 0; dy < 3; ++dy)
                                     for (int dx = 0; dx < 3; ++dx) s += (*in)[at(ch, y + dy, x + dx)];
                                 (*out)[o_at(ch, y, x)] = s / 9.0f;
                             }
                 }});
    k.push_back({"fully_connected", [=] {
                     const int n_in = c * 9, n_out = c * c * 9 / n_in;
                     for (int r = 0; r < 64; ++r)
                         for (int o = 0; o < n_out; ++o) {
                             float s = 0;
                             for (int i = 0; i < n_in; ++i)
                                 s += (*in)[static_cast<std::size_t>((r * 7 + i) % static_cast<int>(in->size()))] *
                                      (*w)[static_cast<std::size_t>(o * n_in + i)];
                             (*out)[static_cast<std::size_t>((r * n_out + o) % static_cast<int>(out->size()))] = s;
                         }
                 }});
    k.push_back({"add_relu", [=] {
                     for (int r = 0; r < 16; ++r)
                         for (std::size_t i = 0; i < out->size(); ++i)
                             (*out)[i] = std::max(0.0f, (*out)[i] + (*in)[i] - 0.25f);
                 }});
    return k;
}

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
inline Descriptor run(int repetitions = 15) {
    Descriptor d;
    std::vector<std::unique_ptr<Counter>> cs;
    for (const auto& spec : counters()) {
        cs.push_back(std::make_unique<Counter>(spec));
        if (!cs.back()->available()) d.missing.push_back(std::string(spec.name) + ": " + cs.back()->why());
    }
    for (const auto& k : kernels()) {
        k.run();  // warm-up: caches and page faults out of the measurement
        std::vector<double> ms;
        std::vector<std::vector<double>> counts(cs.size());
        for (int r = 0; r < repetitions; ++r) {
            for (auto& c : cs) c->start();
            const auto t0 = std::chrono::steady_clock::now();
            k.run();
            const auto t1 = std::chrono::steady_clock::now();
            for (std::size_t c = 0; c < cs.size(); ++c)
                if (const auto v = cs[c]->stop()) counts[c].push_back(static_cast<double>(*v));
            ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
        }
        const auto median = [](const std::vector<double>& v) { return train::median(v); };
        KernelResult kr{k.name, median(ms), {}};
        for (const auto& c : counts)
            kr.per_second.push_back(c.size() == ms.size() && kr.latency_ms > 0
                                        ? std::optional<double>(median(c) / (kr.latency_ms * 1e-3))
                                        : std::nullopt);
        d.kernels.push_back(std::move(kr));
    }
    return d;
}

/// The descriptor as JSON: per kernel its latency and each counter per second (null when missing).
inline std::string to_json(const Descriptor& d) {
    using measure::json::Value;
    auto v = Value::object();
    v.set("descriptor", Value::of("dnncost probe v1"));
    auto names = Value::array();
    for (const auto& c : counters()) names.push(Value::of(c.name));
    v.set("counters", std::move(names));
    auto missing = Value::array();
    for (const auto& m : d.missing) missing.push(Value::of(m));
    v.set("missing_counters", std::move(missing));
    v.set("timing_only", Value::of(d.missing.size() == counters().size()));
    auto kernels = Value::array();
    for (const auto& r : d.kernels) {
        auto k = Value::object();
        k.set("name", Value::of(r.name));
        k.set("latency_ms", Value::of(r.latency_ms));
        for (std::size_t c = 0; c < r.per_second.size(); ++c)
            k.set(std::string(counters()[c].name) + "_per_s", r.per_second[c] ? Value::of(*r.per_second[c]) : Value{});
        kernels.push(std::move(k));
    }
    v.set("kernels", std::move(kernels));
    return measure::json::dump_lines(v);
}

}  // namespace dnncost::probe
