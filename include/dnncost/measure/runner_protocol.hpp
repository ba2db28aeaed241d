#pragma once
/// @file runner_protocol.hpp
/// The runner protocol: what dnncost sends a runner and how each line a runner prints is judged.
/// No process control here (see process.hpp); runner.hpp puts the two together.
///
/// A runner is any executable that measures ONNX models on a device and talks JSON Lines over
/// stdin/stdout (docs/measure.md):
///   request  {"id": 7, "model": "/abs/path.onnx", "warmup": W, "repeats": N}  (+ optional "keep": true,
///            "profile": true)
///   answer   {"id": 7, "latency_ms": [t1, ..., tN]}  (+ optional "peak_memory_bytes", "energy_mj", and for
///            a profiled request "kernels": [{"name", "op", "ms"}, ...], "optimized_model": "/path")
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

#include <dnncost/core/config.hpp>
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
    /// Ask for the kernels the runtime executed (RuntimeKernel) and its optimised graph; a
    /// runner that cannot profile answers as without it.
    bool profile = false;
};

/// One kernel the runtime executed, as its profiler names it: the node of the runtime's
/// optimised graph, its operator, and its time per run averaged over the timed runs.
struct RuntimeKernel {
    std::string name;
    std::string op;
    double ms = 0;
};

/// A node of a runtime's optimised graph, as its ONNX file has it (device/kernel_check.hpp reads
/// them): the names of the values it reads and writes say which network values a kernel computes.
struct RuntimeNode {
    std::string name, op, domain;
    std::vector<std::string> inputs, outputs;
};

/// A successful answer.
struct Answer {
    std::vector<double> latency_ms;
    std::optional<double> peak_memory_bytes;
    std::optional<double> energy_mj;
    std::optional<double> accuracy;  ///< the answer of an accuracy command (AnswerKind::accuracy)
    /// The runtime's kernels in execution order (a profiled request to a runner that profiles).
    std::vector<RuntimeKernel> kernels;
    /// The runtime's optimised graph as an ONNX file the runner wrote; empty: none.
    std::string optimized_model;
};

/// What a command answers: latencies (a runner), or one accuracy figure per model (an accuracy
/// command of the compression search: {"id": 7, "accuracy": 0.71}, any finite number).
enum class AnswerKind { latency, accuracy };

/// Why a request failed; `none` for success.
enum class Failure { none, timeout, crash, garbage, partial_line, bad_latency, bad_answer, runner_error, start_failed };

/// The failure's name as written in a results store's status column and in reports.
DNNCOST_FUNC std::string_view to_string(Failure f);

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
DNNCOST_FUNC std::string encode_request(const Request& r);

/// What one line of runner output is.
struct Reply {
    enum class Kind { device, answer, failure } kind = Kind::failure;
    std::string device;  ///< the device object, serialised (Kind::device)
    Outcome outcome;     ///< Kind::answer and Kind::failure
};

namespace detail {
DNNCOST_FUNC std::string clip(std::string_view s, std::size_t n = 200);
inline Outcome failed(Failure f, std::string detail) {
    Outcome o;
    o.failure = f;
    o.detail = std::move(detail);
    return o;
}
/// An optional non-negative finite quantity of an answer.
DNNCOST_FUNC bool optional_quantity(const json::Value& answer, std::string_view key, std::optional<double>& out,
                              std::string& problem);
/// The optional "kernels" and "optimized_model" of an answer.
DNNCOST_FUNC bool optional_kernels(const json::Value& answer, Answer& out, std::string& problem);
}  // namespace detail

/// Classify one line of runner output (without its newline) in answer to request `expected_id`.
DNNCOST_FUNC Reply decode_reply(std::string_view line, std::uint64_t expected_id, AnswerKind kind = AnswerKind::latency);

}  // namespace dnncost::measure

#if !defined(DNNCOST_COMPILED)
#include <dnncost/measure/runner_protocol_impl.hpp>
#endif
