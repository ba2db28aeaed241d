#pragma once
/// @file reference_impl.hpp
/// The definitions of reference.hpp: compiled once into dnncost::compiled in compiled mode
/// (core/config.hpp), included by reference.hpp in header-only mode.
#include <dnncost/measure/reference.hpp>

DNNCOST_FUNC auto dnncost::measure::to_json(const ReferenceLatency& r) -> json::Value {
    auto v = json::Value::object();
    v.set("key", json::Value::of(r.key));
    v.set("latency_ms", json::Value::of(r.latency_ms));
    v.set("spread", json::Value::of(r.spread));
    auto values = json::Value::array();
    for (const double x : r.values_ms) values.push(json::Value::of(x));
    v.set("values_ms", std::move(values));
    v.set("drift", json::Value::of(r.drift()));
    if (!r.time.empty()) v.set("time", json::Value::of(r.time));
    if (r.slow_spans_covered) v.set("slow_spans_covered", json::Value::of(true));
    return v;
}

DNNCOST_FUNC auto dnncost::measure::reference_from_json(const json::Value& v) -> ReferenceLatency {
    ReferenceLatency r;
    if (const auto* k = v.find("key"); k && k->is_string()) r.key = k->string;
    if (const auto* l = v.find("latency_ms"); l && l->is_number() && std::isfinite(l->number) && l->number > 0)
        r.latency_ms = l->number;
    if (const auto* s = v.find("spread"); s && s->is_number() && std::isfinite(s->number) && s->number >= 0)
        r.spread = s->number;
    if (const auto* a = v.find("values_ms"); a && a->is_array())
        for (const auto& x : a->items)
            if (x.is_number() && std::isfinite(x.number) && x.number > 0) r.values_ms.push_back(x.number);
    if (const auto* t = v.find("time"); t && t->is_string()) r.time = t->string;
    if (const auto* c = v.find("slow_spans_covered"); c && c->kind == json::Value::Kind::boolean)
        r.slow_spans_covered = c->boolean;
    return r;
}
