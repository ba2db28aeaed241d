#pragma once
/// @file runner.hpp
/// One runner: the runner protocol (runner_protocol.hpp) spoken with one child process
/// (process.hpp), started on demand and restarted after it exits or fails.
///
/// Exactly one request is in flight per runner. A runner that exits after answering is started
/// again for the next request; a runner must exit when its stdin is closed. Every failure
/// becomes an Outcome with a reason, never an exception. After any failure but runner_error the
/// process group is killed, so the next request starts from a fresh runner.
#include <algorithm>
#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include <dnncost/core/error.hpp>
#include <dnncost/measure/json.hpp>
#include <dnncost/measure/process.hpp>
#include <dnncost/measure/runner_protocol.hpp>

namespace dnncost::measure {

struct RunnerOptions {
    /// How long the first start waits for the optional device line before the first request.
    Millis startup_timeout{5000};
    /// Longest accepted output line; a longer one is garbage.
    std::size_t max_line_bytes = std::size_t{1} << 20;
    /// How long a runner may take to exit after its stdin is closed before it is killed.
    Millis shutdown_grace{2000};
    /// What the command answers.
    AnswerKind answers = AnswerKind::latency;
    /// CPU pinning and scheduling of the runner process.
    ProcessOptions process{};
};

/// One runner process, started on demand and restarted after it exits or fails.
/// Not thread-safe: one thread drives one Runner (RunnerPool gives each runner its thread).
class Runner {
public:
    explicit Runner(std::string command, RunnerOptions options = {})
        : m_command(std::move(command)), m_options(options) {
        if (m_command.empty()) raise<config_error>("runner: empty command");
    }
    ~Runner() { stop(); }
    Runner(const Runner&) = delete;
    Runner& operator=(const Runner&) = delete;

    const std::string& command() const { return m_command; }
    /// The device object of the first device line seen, serialised; empty if none yet.
    const std::string& device() const { return m_device; }
    /// Number of times the process was started.
    std::size_t starts() const { return m_starts; }
    bool running() const { return m_process.running(); }
    /// The process id of the running runner (its process group id too); -1 when none runs.
    pid_t pid() const { return m_process.pid(); }

    /// Send one request and wait at most `timeout` for its answer.
    Outcome measure(const Request& request, Millis timeout) {
        const auto deadline = Clock::now() + timeout;
        for (int attempt = 0;; ++attempt) {
            if (m_process.running() && m_process.exited()) m_process.kill_and_reap();
            if (!m_process.running()) {
                if (auto bad = start()) return *bad;
            }
            const bool answered_before = m_answered > 0;
            auto o = exchange(request, deadline, timeout);
            // A runner that answers one request and exits is restarted transparently, once.
            if (o.failure == Failure::crash && answered_before && m_last_exit_clean && attempt == 0) continue;
            if (!o.ok() && o.failure != Failure::runner_error) m_process.kill_and_reap();
            if (o.ok()) ++m_answered;
            return o;
        }
    }

    /// Close the runner's stdin, give it `shutdown_grace` to exit, then kill its process group;
    /// always reaps. Safe to call repeatedly.
    void stop() {
        if (!m_process.running()) return;
        m_process.close_input();
        const auto until = Clock::now() + m_options.shutdown_grace;
        while (Clock::now() < until && !m_process.exited()) m_process.drain(Millis(10), m_options.max_line_bytes);
        m_process.kill_and_reap();
    }

private:
    /// Start the process; on the first start also wait for the device line. nullopt on success.
    std::optional<Outcome> start() {
        if (auto problem = m_process.start(m_command, m_options.process))
            return detail::failed(Failure::start_failed, *problem);
        m_answered = 0;
        m_last_exit_clean = false;
        if (m_starts++ == 0 && m_options.startup_timeout.count() > 0) wait_for_device_line();
        return std::nullopt;
    }

    /// Read lines until the first device line, any other line (kept for the request), EOF or
    /// the startup timeout.
    void wait_for_device_line() {
        const auto deadline = Clock::now() + m_options.startup_timeout;
        auto& buffer = m_process.buffer();
        while (m_device.empty()) {
            const auto pos = buffer.find('\n');
            if (pos != std::string::npos) {
                const auto r = decode_reply(std::string_view(buffer).substr(0, pos), 0);
                if (r.kind != Reply::Kind::device) return;  // not ours to judge here: the request will
                m_device = r.device;
                buffer.erase(0, pos + 1);
                return;
            }
            if (!m_process.output_open() || Clock::now() >= deadline) return;
            const auto left = std::chrono::duration_cast<Millis>(deadline - Clock::now());
            if (!m_process.pump(std::max(Millis(1), left))) return;
        }
    }

    static std::string seconds(Millis t) {
        const double s = static_cast<double>(t.count()) / 1000.0;
        return json::number(s) + " s";
    }

    Outcome exchange(const Request& request, Clock::time_point deadline, Millis timeout) {
        std::string why;
        switch (m_process.write_line(encode_request(request), deadline, m_options.max_line_bytes, why)) {
            case WriteStatus::done:
                break;
            case WriteStatus::timeout:
                return detail::failed(Failure::timeout,
                                      "the runner did not read the request within " + seconds(timeout));
            case WriteStatus::closed:
                return ended("the runner closed its input (" + why + ")", deadline);
        }
        auto& buffer = m_process.buffer();
        for (;;) {
            for (auto pos = buffer.find('\n'); pos != std::string::npos; pos = buffer.find('\n')) {
                std::string line = buffer.substr(0, pos);
                buffer.erase(0, pos + 1);
                if (!line.empty() && line.back() == '\r') line.pop_back();
                if (line.find_first_not_of(" \t") == std::string::npos) continue;
                auto r = decode_reply(line, request.id, m_options.answers);
                if (r.kind == Reply::Kind::device) {
                    if (m_device.empty()) m_device = std::move(r.device);
                    continue;
                }
                return std::move(r.outcome);
            }
            if (buffer.size() > m_options.max_line_bytes)
                return detail::failed(Failure::garbage, "an output line longer than " +
                                                            std::to_string(m_options.max_line_bytes) + " bytes: '" +
                                                            detail::clip(buffer, 80) + "'");
            const auto now = Clock::now();
            if (now >= deadline)
                return detail::failed(Failure::timeout,
                                      "no answer within " + seconds(timeout) + " (runner killed)" + stderr_note());
            if (!m_process.pump(std::chrono::duration_cast<Millis>(deadline - now) + Millis(1))) {
                if (!buffer.empty()) {
                    const std::string partial = detail::clip(buffer, 120);
                    auto o = ended("", deadline);
                    o.failure = Failure::partial_line;
                    o.detail = "output ended inside a line: '" + partial + "'; " + o.detail;
                    return o;
                }
                return ended("the runner closed its output without answering", deadline);
            }
        }
    }

    /// The runner's stdout or stdin is gone: it is exiting. Wait for its exit status (until the
    /// request's deadline: a runner that closes its output and lives on is a hang), then make
    /// sure the group is dead and reaped; the failure names the exit.
    Outcome ended(const std::string& what, Clock::time_point deadline) {
        const auto until = std::max(deadline, Clock::now() + Millis(500));
        while (!m_process.exited() && Clock::now() < until) m_process.drain(Millis(5), m_options.max_line_bytes);
        m_process.drain(Millis(0), m_options.max_line_bytes);
        const auto exit = m_process.exit_status();
        const auto note = stderr_note();
        m_process.kill_and_reap();
        std::string how;
        Failure f = Failure::crash;
        m_last_exit_clean = false;
        if (exit.kind == ExitStatus::Kind::exited) {
            const int code = exit.code;
            how = "runner exited with status " + std::to_string(code);
            if (code > 128 && code < 128 + 32)  // how a shell reports a command killed by a signal
                how += " (killed by signal " + std::to_string(code - 128) + ", " + strsignal(code - 128) + ")";
            m_last_exit_clean = code == 0;
            if ((code == 126 || code == 127) && m_answered == 0) {
                f = Failure::start_failed;
                how = "the command was not found or is not executable (" + how + ")";
            }
        } else if (exit.kind == ExitStatus::Kind::signaled) {
            how = "runner killed by signal " + std::to_string(exit.code) + " (" + strsignal(exit.code) + ")";
        } else {
            how = "runner still running with its output closed (killed)";
        }
        return detail::failed(f, (what.empty() ? how : what + "; " + how) + note);
    }

    /// "; stderr: <last line>" when the runner wrote something to stderr.
    std::string stderr_note() const {
        const auto last = m_process.stderr_last_line();
        return last.empty() ? "" : "; stderr: " + detail::clip(last, 200);
    }

    std::string m_command;
    RunnerOptions m_options;
    ChildProcess m_process;
    std::string m_device;
    std::size_t m_starts = 0, m_answered = 0;
    bool m_last_exit_clean = false;
};

}  // namespace dnncost::measure
