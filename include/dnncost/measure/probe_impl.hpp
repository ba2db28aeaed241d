#pragma once
/// @file probe_impl.hpp
/// The definitions of probe.hpp: compiled once into dnncost::compiled in compiled mode
/// (core/config.hpp), included by probe.hpp in header-only mode.
#include <dnncost/measure/probe.hpp>

DNNCOST_FUNC auto dnncost::probe::kernels() -> std::vector<Kernel> {
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

DNNCOST_FUNC auto dnncost::probe::run(int repetitions) -> Descriptor {
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
        KernelResult kr{k.name, median(ms), {}};
        for (const auto& c : counts)
            kr.per_second.push_back(c.size() == ms.size() && kr.latency_ms > 0
                                        ? std::optional<double>(median(c) / (kr.latency_ms * 1e-3))
                                        : std::nullopt);
        d.kernels.push_back(std::move(kr));
    }
    return d;
}

DNNCOST_FUNC auto dnncost::probe::to_json(const Descriptor& d) -> std::string {
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
