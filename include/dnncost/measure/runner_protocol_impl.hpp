#pragma once
/// @file runner_protocol_impl.hpp
/// The definitions of runner_protocol.hpp: compiled once into dnncost::compiled in compiled mode
/// (core/config.hpp), included by runner_protocol.hpp in header-only mode.
#include <dnncost/measure/runner_protocol.hpp>

DNNCOST_FUNC auto dnncost::measure::to_string(Failure f) -> std::string_view {
    switch (f) {
        case Failure::none:
            return "ok";
        case Failure::timeout:
            return "timeout";
        case Failure::crash:
            return "crash";
        case Failure::garbage:
            return "garbage";
        case Failure::partial_line:
            return "partial_line";
        case Failure::bad_latency:
            return "bad_latency";
        case Failure::bad_answer:
            return "bad_answer";
        case Failure::runner_error:
            return "runner_error";
        case Failure::start_failed:
            return "start_failed";
    }
    return "?";
}

DNNCOST_FUNC auto dnncost::measure::encode_request(const Request& r) -> std::string {
    auto v = json::Value::object();
    v.set("id", json::Value::of(static_cast<double>(r.id)));
    v.set("model", json::Value::of(r.model));
    v.set("warmup", json::Value::of(static_cast<double>(r.warmup)));
    v.set("repeats", json::Value::of(static_cast<double>(r.repeats)));
    if (r.keep) v.set("keep", json::Value::of(true));
    if (r.profile) v.set("profile", json::Value::of(true));
    return json::dump(v) + "\n";
}

DNNCOST_FUNC auto dnncost::measure::detail::clip(std::string_view s, std::size_t n) -> std::string {
    std::string out(s.substr(0, n));
    for (auto& c : out)
        if (static_cast<unsigned char>(c) < 0x20) c = ' ';
    if (s.size() > n) out += "...";
    return out;
}

DNNCOST_FUNC auto dnncost::measure::detail::optional_quantity(const json::Value& answer, std::string_view key,
                                                              std::optional<double>& out, std::string& problem)
    -> bool {
    const auto* v = answer.find(key);
    if (!v || v->is_null()) return true;
    if (!v->is_number() || !std::isfinite(v->number) || v->number < 0) {
        problem = "\"" + std::string(key) + "\" is not a finite non-negative number: " + json::dump(*v);
        return false;
    }
    // a petabyte, or a terajoule: beyond it no board reports, and a data set leaves it out
    // (train::max_measured_value; this layer does not include train)
    if (v->number > 1e15) {
        problem = "\"" + std::string(key) + "\" " + json::number(v->number) + " is beyond the plausible 1e15";
        return false;
    }
    out = v->number;
    return true;
}

DNNCOST_FUNC auto dnncost::measure::detail::optional_kernels(const json::Value& answer, Answer& out,
                                                             std::string& problem) -> bool {
    if (const auto* m = answer.find("optimized_model"); m && !m->is_null()) {
        if (!m->is_string() || m->string.empty()) {
            problem = "\"optimized_model\" is not a file path: " + clip(json::dump(*m));
            return false;
        }
        out.optimized_model = m->string;
    }
    const auto* ks = answer.find("kernels");
    if (!ks || ks->is_null()) return true;
    if (!ks->is_array()) {
        problem = "\"kernels\" is not an array: " + clip(json::dump(*ks));
        return false;
    }
    for (std::size_t i = 0; i < ks->items.size(); ++i) {
        const auto& k = ks->items[i];
        const auto bad = [&](const std::string& why) {
            problem = "kernel " + std::to_string(i) + " " + why + ": " + clip(json::dump(k));
            return false;
        };
        if (!k.is_object()) return bad("is not an object");
        const auto* name = k.find("name");
        const auto* op = k.find("op");
        const auto* ms = k.find("ms");
        if (!name || !name->is_string() || name->string.empty()) return bad("has no \"name\" string");
        if (op && !op->is_null() && !op->is_string()) return bad("has an \"op\" that is not a string");
        if (!ms || !ms->is_number() || !std::isfinite(ms->number) || ms->number < 0)
            return bad("has no finite non-negative \"ms\"");
        out.kernels.push_back({name->string, op && op->is_string() ? op->string : std::string(), ms->number});
    }
    return true;
}

DNNCOST_FUNC auto dnncost::measure::decode_reply(std::string_view line, std::uint64_t expected_id, AnswerKind kind)
    -> Reply {
    Reply r;
    json::Value v;
    try {
        v = json::parse(line);
    } catch (const parse_error& e) {
        r.outcome =
            detail::failed(Failure::garbage, "not JSON (" + std::string(e.what()) + "): '" + detail::clip(line) + "'");
        return r;
    }
    if (!v.is_object()) {
        r.outcome = detail::failed(Failure::garbage, "not a JSON object: '" + detail::clip(line) + "'");
        return r;
    }
    const auto* id = v.find("id");
    if (!id) {
        if (const auto* dev = v.find("device")) {
            r.kind = Reply::Kind::device;
            r.device = json::dump(*dev);
            return r;
        }
        r.outcome = detail::failed(Failure::bad_answer, "answer without \"id\": '" + detail::clip(line) + "'");
        return r;
    }
    if (!id->is_number() || id->number != static_cast<double>(expected_id)) {
        r.outcome = detail::failed(Failure::bad_answer, "answer for id " + json::dump(*id) + " while waiting for id " +
                                                            std::to_string(expected_id));
        return r;
    }
    if (const auto* err = v.find("error")) {
        r.outcome = detail::failed(Failure::runner_error, err->is_string() ? detail::clip(err->string, 300)
                                                                           : detail::clip(json::dump(*err), 300));
        return r;
    }
    if (kind == AnswerKind::accuracy) {
        const auto* acc = v.find("accuracy");
        if (!acc || !acc->is_number() || !std::isfinite(acc->number)) {
            r.outcome = detail::failed(Failure::bad_answer,
                                       acc ? "\"accuracy\" is not a finite number: " + detail::clip(json::dump(*acc))
                                           : "answer has neither \"accuracy\" nor \"error\"");
            return r;
        }
        r.kind = Reply::Kind::answer;
        r.outcome.answer.accuracy = acc->number;
        return r;
    }
    const auto* lat = v.find("latency_ms");
    if (!lat) {
        r.outcome = detail::failed(Failure::bad_latency, "answer has neither \"latency_ms\" nor \"error\"");
        return r;
    }
    if (!lat->is_array() || lat->items.empty()) {
        r.outcome = detail::failed(Failure::bad_latency,
                                   "\"latency_ms\" is not a non-empty array: " + detail::clip(json::dump(*lat)));
        return r;
    }
    Answer a;
    for (std::size_t i = 0; i < lat->items.size(); ++i) {
        const auto& x = lat->items[i];
        if (!x.is_number()) {
            r.outcome = detail::failed(Failure::bad_latency, "latency " + std::to_string(i) +
                                                                 " is not a number: " + detail::clip(json::dump(x)));
            return r;
        }
        if (!std::isfinite(x.number)) {
            r.outcome = detail::failed(Failure::bad_latency, "latency " + std::to_string(i) + " is not finite (" +
                                                                 (std::isnan(x.number) ? "NaN" : "infinite") + ")");
            return r;
        }
        if (!(x.number > 0)) {
            r.outcome = detail::failed(Failure::bad_latency, "latency " + std::to_string(i) + " is not positive (" +
                                                                 json::number(x.number) + ")");
            return r;
        }
        // 1e-9 ms to 1e9 ms (11 days): nothing a runner times lies outside, and a data set would
        // leave out what lies below (train::min_measured_value)
        if (x.number < 1e-9 || x.number > 1e9) {
            r.outcome = detail::failed(Failure::bad_latency, "latency " + std::to_string(i) + " (" +
                                                                 json::number(x.number) +
                                                                 " ms) is outside the plausible range [1e-9, 1e9] ms");
            return r;
        }
        a.latency_ms.push_back(x.number);
    }
    std::string problem;
    if (!detail::optional_quantity(v, "peak_memory_bytes", a.peak_memory_bytes, problem) ||
        !detail::optional_quantity(v, "energy_mj", a.energy_mj, problem) ||
        !detail::optional_kernels(v, a, problem)) {
        r.outcome = detail::failed(Failure::bad_answer, problem);
        return r;
    }
    r.kind = Reply::Kind::answer;
    r.outcome.answer = std::move(a);
    return r;
}
