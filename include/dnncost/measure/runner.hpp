#pragma once
/// @file runner.hpp
/// The runner protocol and the control of one runner process (POSIX).
///
/// A runner is any executable (started as `/bin/sh -c COMMAND`) that measures ONNX models on a
/// device and talks JSON Lines over stdin/stdout (docs/measure.md):
///   request  {"id": 7, "model": "/abs/path.onnx", "warmup": W, "repeats": N}
///   answer   {"id": 7, "latency_ms": [t1, ..., tN]}  (+ optional "peak_memory_bytes", "energy_mj")
///   or       {"id": 7, "error": "why"}
///   device   {"device": {...}}  a line without "id", normally the first; stored with the results
/// Exactly one request is in flight per runner. A runner that exits after answering is started
/// again for the next request; a runner must exit when its stdin is closed.
///
/// Process control: the runner runs in its own process group (so a hang is ended by killing the
/// group, grandchildren included), its pipes are read without blocking under poll() with a
/// deadline per request, every child is reaped (waitpid) before its pipes are dropped, and a
/// write to a runner that has gone away reports EPIPE instead of raising SIGPIPE in the caller.
/// Every failure becomes an Outcome with a reason, never an exception: the failure kinds are
/// timeout, crash (exited or killed without answering), garbage (a line that is not a JSON
/// object, or too long), partial_line (output ended inside a line), bad_latency (missing, empty,
/// non-finite, zero or negative latencies), bad_answer (wrong id or a malformed optional value),
/// runner_error (the runner answered with "error"), start_failed (the command cannot be run:
/// exit status 126 or 127 before any output). After any failure but runner_error the process
/// group is killed, so the next request starts from a fresh runner.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <dnncost/core/error.hpp>
#include <dnncost/measure/json.hpp>

extern char** environ;

namespace dnncost::measure {

using Clock = std::chrono::steady_clock;
using Millis = std::chrono::milliseconds;

/// One measurement request: run `model` `warmup` times untimed, then `repeats` times timed.
struct Request {
    std::uint64_t id = 0;
    std::string model;
    int warmup = 0;
    int repeats = 1;
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
    return "{\"id\":" + std::to_string(r.id) + ",\"model\":" + json::quote(r.model) +
           ",\"warmup\":" + std::to_string(r.warmup) + ",\"repeats\":" + std::to_string(r.repeats) + "}\n";
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

struct RunnerOptions {
    /// How long the first start waits for the optional device line before the first request.
    Millis startup_timeout{5000};
    /// Longest accepted output line; a longer one is garbage.
    std::size_t max_line_bytes = std::size_t{1} << 20;
    /// How long a runner may take to exit after its stdin is closed before it is killed.
    Millis shutdown_grace{2000};
    /// What the command answers.
    AnswerKind answers = AnswerKind::latency;
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
    bool running() const { return m_pid > 0; }

    /// Send one request and wait at most `timeout` for its answer.
    Outcome measure(const Request& request, Millis timeout) {
        const auto deadline = Clock::now() + timeout;
        for (int attempt = 0;; ++attempt) {
            reap_if_exited();
            if (m_pid <= 0) {
                if (auto bad = start()) return *bad;
            }
            const bool answered_before = m_answered > 0;
            auto o = exchange(request, deadline, timeout);
            // A runner that answers one request and exits is restarted transparently, once.
            if (o.failure == Failure::crash && answered_before && m_last_exit_clean && attempt == 0) continue;
            if (!o.ok() && o.failure != Failure::runner_error) kill_and_reap();
            if (o.ok()) ++m_answered;
            return o;
        }
    }

    /// Close the runner's stdin, give it `shutdown_grace` to exit, then kill its process group;
    /// always reaps. Safe to call repeatedly.
    void stop() {
        if (m_pid <= 0) return;
        close_fd(m_in);
        const auto until = Clock::now() + m_options.shutdown_grace;
        while (Clock::now() < until && !exited()) {
            drain_output(Millis(10));
        }
        kill_and_reap();
    }

private:
    static void close_fd(int& fd) {
        if (fd >= 0) ::close(fd);
        fd = -1;
    }

    /// Start the process; on the first start also wait for the device line. nullopt on success.
    std::optional<Outcome> start() {
        int in[2], out[2], err[2];
        if (::pipe2(in, O_CLOEXEC) != 0)
            return detail::failed(Failure::start_failed, std::string("pipe: ") + std::strerror(errno));
        if (::pipe2(out, O_CLOEXEC) != 0) {
            ::close(in[0]), ::close(in[1]);
            return detail::failed(Failure::start_failed, std::string("pipe: ") + std::strerror(errno));
        }
        if (::pipe2(err, O_CLOEXEC) != 0) {
            ::close(in[0]), ::close(in[1]), ::close(out[0]), ::close(out[1]);
            return detail::failed(Failure::start_failed, std::string("pipe: ") + std::strerror(errno));
        }
        posix_spawn_file_actions_t fa;
        posix_spawnattr_t attr;
        posix_spawn_file_actions_init(&fa);
        posix_spawnattr_init(&attr);
        posix_spawn_file_actions_adddup2(&fa, in[0], 0);
        posix_spawn_file_actions_adddup2(&fa, out[1], 1);
        posix_spawn_file_actions_adddup2(&fa, err[1], 2);
        sigset_t defaults, empty;
        sigemptyset(&defaults);
        sigaddset(&defaults, SIGPIPE);
        sigaddset(&defaults, SIGINT);
        sigaddset(&defaults, SIGTERM);
        sigemptyset(&empty);
        posix_spawnattr_setsigdefault(&attr, &defaults);
        posix_spawnattr_setsigmask(&attr, &empty);
        posix_spawnattr_setpgroup(&attr, 0);  // its own process group: a hang is ended group-wide
        posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
        std::string sh = "/bin/sh", dash_c = "-c", cmd = m_command;
        char* argv[] = {sh.data(), dash_c.data(), cmd.data(), nullptr};
        pid_t pid = -1;
        const int rc = ::posix_spawn(&pid, "/bin/sh", &fa, &attr, argv, environ);
        posix_spawn_file_actions_destroy(&fa);
        posix_spawnattr_destroy(&attr);
        ::close(in[0]), ::close(out[1]), ::close(err[1]);
        if (rc != 0) {
            ::close(in[1]), ::close(out[0]), ::close(err[0]);
            return detail::failed(Failure::start_failed, "cannot start '" + m_command + "': " + std::strerror(rc));
        }
        m_pid = pid;
        m_in = in[1], m_out = out[0], m_err = err[0];
        for (int fd : {m_in, m_out, m_err}) ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
        m_buffer.clear();
        m_stderr_tail.clear();
        m_answered = 0;
        m_last_exit_clean = false;
        if (m_starts++ == 0 && m_options.startup_timeout.count() > 0) wait_for_device_line();
        return std::nullopt;
    }

    /// Read lines until the first device line, any other line (kept for the request), EOF or
    /// the startup timeout.
    void wait_for_device_line() {
        const auto deadline = Clock::now() + m_options.startup_timeout;
        while (m_device.empty()) {
            const auto pos = m_buffer.find('\n');
            if (pos != std::string::npos) {
                const auto r = decode_reply(std::string_view(m_buffer).substr(0, pos), 0);
                if (r.kind != Reply::Kind::device) return;  // not ours to judge here: the request will
                m_device = r.device;
                m_buffer.erase(0, pos + 1);
                return;
            }
            if (m_out < 0 || Clock::now() >= deadline) return;
            const auto left = std::chrono::duration_cast<Millis>(deadline - Clock::now());
            if (!pump(std::max(Millis(1), left))) return;
        }
    }

    /// Wait up to `wait` for output; append stdout to m_buffer and stderr to the tail. Returns
    /// false once stdout has reached end of file.
    bool pump(Millis wait) {
        if (m_out < 0) return false;
        pollfd fds[2] = {{m_out, POLLIN, 0}, {m_err, POLLIN, 0}};
        const nfds_t n = m_err >= 0 ? 2 : 1;
        const int waited = static_cast<int>(std::min<std::int64_t>(wait.count(), 1000 * 60 * 60));
        const int rc = ::poll(fds, n, waited);
        if (rc < 0) return errno == EINTR;  // interrupted: the caller checks its deadline
        char buf[65536];
        if (n == 2 && (fds[1].revents & (POLLIN | POLLHUP | POLLERR))) {
            const auto got = ::read(m_err, buf, sizeof buf);
            if (got > 0) {
                m_stderr_tail.append(buf, static_cast<std::size_t>(got));
                if (m_stderr_tail.size() > 8192) m_stderr_tail.erase(0, m_stderr_tail.size() - 4096);
            } else if (got == 0 || (errno != EAGAIN && errno != EINTR)) {
                close_fd(m_err);
            }
        }
        if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
            const auto got = ::read(m_out, buf, sizeof buf);
            if (got > 0) {
                m_buffer.append(buf, static_cast<std::size_t>(got));
            } else if (got == 0 || (errno != EAGAIN && errno != EINTR)) {
                close_fd(m_out);
                return false;
            }
        }
        return true;
    }

    void drain_output(Millis wait) {
        if (m_out >= 0 || m_err >= 0) {
            if (m_out < 0) {  // only stderr left: poll it alone
                pollfd p{m_err, POLLIN, 0};
                if (::poll(&p, 1, static_cast<int>(wait.count())) > 0) {
                    char buf[4096];
                    const auto got = ::read(m_err, buf, sizeof buf);
                    if (got == 0 || (got < 0 && errno != EAGAIN && errno != EINTR)) close_fd(m_err);
                }
            } else {
                pump(wait);
            }
            if (m_buffer.size() > m_options.max_line_bytes) m_buffer.clear();
        } else {
            std::this_thread::sleep_for(wait);
        }
    }

    /// Write the whole line before the deadline. SIGPIPE is blocked for this thread while
    /// writing and a pending one is consumed, so a dead runner gives EPIPE, not a dead caller.
    bool write_line(const std::string& line, Clock::time_point deadline, std::string& problem) {
        sigset_t pipe_set, old;
        sigemptyset(&pipe_set);
        sigaddset(&pipe_set, SIGPIPE);
        pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
        std::size_t done = 0;
        bool ok = true;
        while (done < line.size()) {
            const auto w = ::write(m_in, line.data() + done, line.size() - done);
            if (w > 0) {
                done += static_cast<std::size_t>(w);
                continue;
            }
            if (w < 0 && errno == EINTR) continue;
            if (w < 0 && errno == EAGAIN) {
                if (Clock::now() >= deadline) {
                    problem = "timeout";
                    ok = false;
                    break;
                }
                pollfd p{m_in, POLLOUT, 0};
                ::poll(&p, 1, 50);
                drain_output(Millis(0));  // a runner blocked on its own output would never read
                continue;
            }
            problem = w < 0 ? std::strerror(errno) : "write returned 0";
            ok = false;
            break;
        }
        if (!ok && problem != "timeout") {
            timespec zero{0, 0};
            while (sigtimedwait(&pipe_set, nullptr, &zero) > 0) {}
        }
        pthread_sigmask(SIG_SETMASK, &old, nullptr);
        return ok;
    }

    static std::string seconds(Millis t) {
        const double s = static_cast<double>(t.count()) / 1000.0;
        return json::number(s) + " s";
    }

    Outcome exchange(const Request& request, Clock::time_point deadline, Millis timeout) {
        std::string problem;
        if (m_in < 0 || !write_line(encode_request(request), deadline, problem)) {
            if (problem == "timeout")
                return detail::failed(Failure::timeout,
                                      "the runner did not read the request within " + seconds(timeout));
            return ended("the runner closed its input (" + (problem.empty() ? std::string("stdin closed") : problem) +
                         ")");
        }
        for (;;) {
            for (auto pos = m_buffer.find('\n'); pos != std::string::npos; pos = m_buffer.find('\n')) {
                std::string line = m_buffer.substr(0, pos);
                m_buffer.erase(0, pos + 1);
                if (!line.empty() && line.back() == '\r') line.pop_back();
                if (line.find_first_not_of(" \t") == std::string::npos) continue;
                auto r = decode_reply(line, request.id, m_options.answers);
                if (r.kind == Reply::Kind::device) {
                    if (m_device.empty()) m_device = std::move(r.device);
                    continue;
                }
                return std::move(r.outcome);
            }
            if (m_buffer.size() > m_options.max_line_bytes)
                return detail::failed(Failure::garbage, "an output line longer than " +
                                                            std::to_string(m_options.max_line_bytes) + " bytes: '" +
                                                            detail::clip(m_buffer, 80) + "'");
            const auto now = Clock::now();
            if (now >= deadline)
                return detail::failed(Failure::timeout,
                                      "no answer within " + seconds(timeout) + " (runner killed)" + stderr_note());
            if (!pump(std::chrono::duration_cast<Millis>(deadline - now) + Millis(1))) {
                if (!m_buffer.empty()) {
                    auto o = ended("");
                    o.failure = Failure::partial_line;
                    o.detail = "output ended inside a line: '" + detail::clip(m_buffer, 120) + "'; " + o.detail;
                    return o;
                }
                return ended("the runner closed its output without answering");
            }
        }
    }

    /// The runner's stdout or stdin is gone: wait briefly for its exit status, then make sure
    /// the group is dead and reaped; the failure names the exit.
    Outcome ended(const std::string& what) {
        const auto until = Clock::now() + Millis(500);
        while (!exited() && Clock::now() < until) drain_output(Millis(5));
        drain_output(Millis(0));
        const int status = m_exit_status;
        const bool known = m_exit_known;
        kill_and_reap();
        std::string how = "runner ended";
        Failure f = Failure::crash;
        if (known && WIFEXITED(status)) {
            const int code = WEXITSTATUS(status);
            how = "runner exited with status " + std::to_string(code);
            if (code > 128 && code < 128 + 32)  // how a shell reports a command killed by a signal
                how += " (killed by signal " + std::to_string(code - 128) + ", " + strsignal(code - 128) + ")";
            m_last_exit_clean = code == 0;
            if ((code == 126 || code == 127) && m_answered == 0) {
                f = Failure::start_failed;
                how = "the command was not found or is not executable (" + how + ")";
            }
        } else if (known && WIFSIGNALED(status)) {
            how = "runner killed by signal " + std::to_string(WTERMSIG(status)) + " (" + strsignal(WTERMSIG(status)) +
                  ")";
            m_last_exit_clean = false;
        } else {
            how = "runner still running with its output closed (killed)";
            m_last_exit_clean = false;
        }
        return detail::failed(f, (what.empty() ? how : what + "; " + how) + stderr_note());
    }

    /// ", stderr: <last line>" when the runner wrote something to stderr.
    std::string stderr_note() const {
        auto s = m_stderr_tail;
        while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
        if (s.empty()) return "";
        const auto nl = s.find_last_of('\n');
        return "; stderr: " + detail::clip(nl == std::string::npos ? s : s.substr(nl + 1), 200);
    }

    /// Whether the process has exited (recorded, not reaped: the zombie keeps the process group
    /// id reserved until kill_and_reap has signalled the rest of the group).
    bool exited() {
        if (m_pid <= 0) return true;
        if (m_exit_known) return true;
        siginfo_t info{};
        info.si_pid = 0;
        if (::waitid(P_PID, static_cast<id_t>(m_pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
            info.si_pid == m_pid) {
            m_exit_known = true;
            m_exit_status = info.si_code == CLD_EXITED ? (info.si_status & 0xff) << 8 : info.si_status & 0x7f;
            return true;
        }
        return false;
    }

    void reap_if_exited() {
        if (m_pid > 0 && exited()) kill_and_reap();
    }

    /// SIGKILL the whole process group, reap the runner, close the pipes.
    void kill_and_reap() {
        if (m_pid > 0) {
            ::kill(-m_pid, SIGKILL);
            int status = 0;
            while (::waitpid(m_pid, &status, 0) < 0 && errno == EINTR) {}
        }
        m_pid = -1;
        m_exit_known = false;
        m_exit_status = 0;
        close_fd(m_in);
        close_fd(m_out);
        close_fd(m_err);
        m_buffer.clear();
    }

    std::string m_command;
    RunnerOptions m_options;
    pid_t m_pid = -1;
    int m_in = -1, m_out = -1, m_err = -1;
    std::string m_buffer, m_stderr_tail, m_device;
    std::size_t m_starts = 0, m_answered = 0;
    bool m_exit_known = false, m_last_exit_clean = false;
    int m_exit_status = 0;
};

}  // namespace dnncost::measure
