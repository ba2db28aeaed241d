#pragma once
/// @file runner.hpp
/// One runner: the runner protocol (runner_protocol.hpp) spoken with one child process
/// (process.hpp), started on demand and restarted after it exits or fails.
///
/// Exactly one request is in flight per runner. A runner that exits after answering is started
/// again for the next request; a runner must exit when its stdin is closed. Every failure
/// becomes an Outcome with a reason, never an exception. After any failure but runner_error the
/// process group is killed, so the next request starts from a fresh runner.
///
/// The larger functions are defined in runner_impl.hpp: compiled into dnncost::compiled in compiled
/// mode (core/config.hpp), included at the end of this header otherwise.
#include <algorithm>
#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include <dnncost/core/config.hpp>
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
    Outcome measure(const Request& request, Millis timeout);

    /// Close the runner's stdin, give it `shutdown_grace` to exit, then kill its process group;
    /// always reaps. Safe to call repeatedly.
    void stop();

private:
    /// Start the process; on the first start also wait for the device line. nullopt on success.
    std::optional<Outcome> start();

    /// Read lines until the first device line, any other line (kept for the request), EOF or
    /// the startup timeout.
    void wait_for_device_line();

    static std::string seconds(Millis t) {
        const double s = static_cast<double>(t.count()) / 1000.0;
        return json::number(s) + " s";
    }

    Outcome exchange(const Request& request, Clock::time_point deadline, Millis timeout);

    /// The runner's stdout or stdin is gone: it is exiting. Wait for its exit status (until the
    /// request's deadline: a runner that closes its output and lives on is a hang), then make
    /// sure the group is dead and reaped; the failure names the exit.
    Outcome ended(const std::string& what, Clock::time_point deadline);

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

#if !defined(DNNCOST_COMPILED)
#include <dnncost/measure/runner_impl.hpp>
#endif
