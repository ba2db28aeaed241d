#pragma once
/// @file runner_protocol.hpp
/// The runner protocol: what dnncost sends a runner and how each line a runner prints is judged.
/// No process control here (see process.hpp); runner.hpp puts the two together.
///
/// A runner is any executable that measures ONNX models on a device and talks JSON Lines over
/// stdin/stdout (docs/measure.md):
///   request  {"id": 7, "model": "/abs/path.onnx", "warmup": W, "repeats": N}  (+ optional "keep": true)
///   answer   {"id": 7, "latency_ms": [t1, ..., tN]}  (+ optional "peak_memory_bytes", "energy_mj")
///   or       {"id": 7, "error": "why"}
///   device   {"device": {...}}  a line without "id", normally the first; stored with the results
/// The failure kinds: timeout, crash (exited or killed without answering), garbage (a line that
/// is not a JSON object, or too long), partial_line (output ended inside a line), bad_latency
/// (missing, empty, non-finite, zero or negative latencies), bad_answer (wrong id or a malformed
/// optional value), runner_error (the runner answered with "error"), start_failed (the command
/// cannot be run). Their names are the status strings of a results store.
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <dnncost/core/error.hpp>
#include <dnncost/measure/json.hpp>

namespace dnncost::measure {

/// One measurement request: run `model` `warmup` times untimed, then `repeats` times timed.
struct Request {
    std::uint64_t id = 0;
    std::string model;
    int warmup = 0;
    int repeats = 1;
    /// The same model comes again soon: a runner may keep what it loaded for it (a session)
    /// instead of loading it again; a request without it may release what was kept.
    bool keep = false;
};

/// A successful answer.
struct Answer {
    std::vector<double> latency_ms;
    std::optional<double> peak_memory_bytes;
    std::optional<double> energy_mj;
    std::optional<double> accuracy;  ///< the answer of an accuracy command (AnswerKind::accuracy)
};

/// What a command answers: latencies (a runner), or one accuracy figure per model (an accuracy
/// command of the compression search: {"id": 7, "accuracy": 0.71}, any finite number).
enum class AnswerKind { latency, accuracy };

/// Why a request failed; `none` for success.
enum class Failure { none, timeout, crash, garbage, partial_line, bad_latency, bad_answer, runner_error, start_failed };

/// The failure's name as written in a results store's status column and in reports.
inline std::string_view to_string(Failure f) {
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

/// The failure named `name` (a results store's status column; "ok" is Failure::none), or nullopt.
inline std::optional<Failure> parse_failure(std::string_view name) {
    for (const auto f : {Failure::none, Failure::timeout, Failure::crash, Failure::garbage, Failure::partial_line,
                         Failure::bad_latency, Failure::bad_answer, Failure::runner_error, Failure::start_failed})
        if (to_string(f) == name) return f;
    return std::nullopt;
}

/// The result of one request: an answer, or a failure with a human-readable detail.
struct Outcome {
    Failure failure = Failure::none;
    std::string detail;
    Answer answer;
    int attempts = 1;  ///< requests sent, retries included (set by RunnerPool)
    bool ok() const { return failure == Failure::none; }
};

/// The request as one protocol line (with the newline).
inline std::string encode_request(const Request& r) {
    auto v = json::Value::object();
    v.set("id", json::Value::of(static_cast<double>(r.id)));
    v.set("model", json::Value::of(r.model));
    v.set("warmup", json::Value::of(static_cast<double>(r.warmup)));
    v.set("repeats", json::Value::of(static_cast<double>(r.repeats)));
    if (r.keep) v.set("keep", json::Value::of(true));
    return json::dump(v) + "\n";
}

/// What one line of runner output is.
struct Reply {
    enum class Kind { device, answer, failure } kind = Kind::failure;
    std::string device;  ///< the device object, serialised (Kind::device)
    Outcome outcome;     ///< Kind::answer and Kind::failure
};

namespace detail {
inline std::string clip(std::string_view s, std::size_t n = 200) {
    std::string out(s.substr(0, n));
    for (auto& c : out)
        if (static_cast<unsigned char>(c) < 0x20) c = ' ';
    if (s.size() > n) out += "...";
    return out;
}
inline Outcome failed(Failure f, std::string detail) {
    Outcome o;
    o.failure = f;
    o.detail = std::move(detail);
    return o;
}
/// An optional non-negative finite quantity of an answer.
inline bool optional_quantity(const json::Value& answer, std::string_view key, std::optional<double>& out,
                              std::string& problem) {
    const auto* v = answer.find(key);
    if (!v || v->is_null()) return true;
    if (!v->is_number() || !std::isfinite(v->number) || v->number < 0) {
        problem = "\"" + std::string(key) + "\" is not a finite non-negative number: " + json::dump(*v);
        return false;
    }
    out = v->number;
    return true;
}
}  // namespace detail

/// Classify one line of runner output (without its newline) in answer to request `expected_id`.
inline Reply decode_reply(std::string_view line, std::uint64_t expected_id, AnswerKind kind = AnswerKind::latency) {
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
        a.latency_ms.push_back(x.number);
    }
    std::string problem;
    if (!detail::optional_quantity(v, "peak_memory_bytes", a.peak_memory_bytes, problem) ||
        !detail::optional_quantity(v, "energy_mj", a.energy_mj, problem)) {
        r.outcome = detail::failed(Failure::bad_answer, problem);
        return r;
    }
    r.kind = Reply::Kind::answer;
    r.outcome.answer = std::move(a);
    return r;
}

}  // namespace dnncost::measure
