#pragma once
/// @file runner_impl.hpp
/// The definitions of runner.hpp: compiled once into dnncost::compiled in compiled mode
/// (core/config.hpp), included by runner.hpp in header-only mode.
#include <dnncost/measure/runner.hpp>

namespace dnncost::measure {

DNNCOST_FUNC auto Runner::measure(const Request& request, Millis timeout) -> Outcome {
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

DNNCOST_FUNC void Runner::stop() {
    if (!m_process.running()) return;
    m_process.close_input();
    const auto until = Clock::now() + m_options.shutdown_grace;
    while (Clock::now() < until && !m_process.exited()) m_process.drain(Millis(10), m_options.max_line_bytes);
    m_process.kill_and_reap();
}

DNNCOST_FUNC auto Runner::start() -> std::optional<Outcome> {
    if (auto problem = m_process.start(m_command, m_options.process))
        return detail::failed(Failure::start_failed, *problem);
    m_answered = 0;
    m_last_exit_clean = false;
    if (m_starts++ == 0 && m_options.startup_timeout.count() > 0) wait_for_device_line();
    return std::nullopt;
}

DNNCOST_FUNC void Runner::wait_for_device_line() {
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

DNNCOST_FUNC auto Runner::exchange(const Request& request, Clock::time_point deadline, Millis timeout) -> Outcome {
    std::string why;
    switch (m_process.write_line(encode_request(request), deadline, m_options.max_line_bytes, why)) {
        case WriteStatus::done:
            break;
        case WriteStatus::timeout:
            return detail::failed(Failure::timeout, "the runner did not read the request within " + seconds(timeout));
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

DNNCOST_FUNC auto Runner::ended(const std::string& what, Clock::time_point deadline) -> Outcome {
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

}  // namespace dnncost::measure
