#pragma once
/// @file process_impl.hpp
/// The definitions of process.hpp: compiled once into dnncost::compiled in compiled mode
/// (core/config.hpp), included by process.hpp in header-only mode.
#include <dnncost/measure/process.hpp>

DNNCOST_FUNC auto dnncost::measure::allowed_cpus() -> std::vector<int> {
    std::vector<int> out;
    cpu_set_t set;
    CPU_ZERO(&set);
    if (::sched_getaffinity(0, sizeof set, &set) != 0) return out;
    for (int c = 0; c < CPU_SETSIZE; ++c)
        if (CPU_ISSET(c, &set)) out.push_back(c);
    return out;
}

DNNCOST_FUNC bool dnncost::measure::realtime_permitted(std::string* why) {
    int rc = 0;
    std::thread probe([&rc] {
        sched_param p{};
        p.sched_priority = 1;
        rc = ::pthread_setschedparam(::pthread_self(), SCHED_FIFO, &p);
    });
    probe.join();
    if (rc != 0 && why)
        *why = std::string("SCHED_FIFO is not permitted (") + std::strerror(rc) +
               "): it needs root, CAP_SYS_NICE or an RLIMIT_RTPRIO above 0 (ulimit -r)";
    return rc == 0;
}

namespace dnncost::measure {

DNNCOST_FUNC auto ChildProcess::start(const std::string& command, const ProcessOptions& options)
    -> std::optional<std::string> {
    kill_and_reap();
    int in[2], out[2], err[2];
    if (::pipe2(in, O_CLOEXEC) != 0) return std::string("pipe: ") + std::strerror(errno);
    if (::pipe2(out, O_CLOEXEC) != 0) {
        ::close(in[0]), ::close(in[1]);
        return std::string("pipe: ") + std::strerror(errno);
    }
    if (::pipe2(err, O_CLOEXEC) != 0) {
        ::close(in[0]), ::close(in[1]), ::close(out[0]), ::close(out[1]);
        return std::string("pipe: ") + std::strerror(errno);
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
    short flags = POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK;
    if (options.realtime) {
        sched_param p{};
        p.sched_priority = 1;
        posix_spawnattr_setschedpolicy(&attr, SCHED_FIFO);
        posix_spawnattr_setschedparam(&attr, &p);
        flags |= POSIX_SPAWN_SETSCHEDULER;
    }
    posix_spawnattr_setflags(&attr, flags);
    // posix_spawn has no affinity attribute; the child inherits the mask of the thread that
    // starts it, so this thread holds the one CPU for the moment of the spawn.
    cpu_set_t before;
    bool pinned = false;
    std::optional<std::string> problem;
    if (options.cpu) {
        cpu_set_t one;
        CPU_ZERO(&one);
        const int cpu = *options.cpu;
        if (cpu < 0 || cpu >= CPU_SETSIZE) {
            problem = "CPU " + std::to_string(cpu) + " does not exist";
        } else {
            CPU_SET(cpu, &one);
            if (::pthread_getaffinity_np(::pthread_self(), sizeof before, &before) != 0)
                problem = "cannot read this thread's CPU affinity";
            else if (const int rc = ::pthread_setaffinity_np(::pthread_self(), sizeof one, &one); rc != 0)
                problem = "cannot pin to CPU " + std::to_string(cpu) + " (" + std::strerror(rc) +
                          "; allowed: " + cpu_list() + ")";
            else
                pinned = true;
        }
    }
    pid_t pid = -1;
    int rc = 0;
    if (!problem) {
        std::string sh = "/bin/sh", dash_c = "-c", cmd = command;
        char* argv[] = {sh.data(), dash_c.data(), cmd.data(), nullptr};
        rc = ::posix_spawn(&pid, "/bin/sh", &fa, &attr, argv, environ);
    }
    if (pinned) ::pthread_setaffinity_np(::pthread_self(), sizeof before, &before);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    ::close(in[0]), ::close(out[1]), ::close(err[1]);
    if (problem || rc != 0) {
        ::close(in[1]), ::close(out[0]), ::close(err[0]);
        if (problem) return problem;
        if (rc == EPERM && options.realtime)
            return "cannot start '" + command + "' under SCHED_FIFO: not permitted (needs root or CAP_SYS_NICE)";
        return "cannot start '" + command + "': " + std::strerror(rc);
    }
    m_pid = pid;
    m_in = in[1], m_out = out[0], m_err = err[0];
    for (int fd : {m_in, m_out, m_err}) ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
    m_buffer.clear();
    m_stderr_tail.clear();
    return std::nullopt;
}

DNNCOST_FUNC bool ChildProcess::pump(Millis wait) {
    if (m_out < 0) return false;
    pollfd fds[2] = {{m_out, POLLIN, 0}, {m_err, POLLIN, 0}};
    const nfds_t n = m_err >= 0 ? 2 : 1;
    const int waited = static_cast<int>(std::min<std::int64_t>(wait.count(), 1000 * 60 * 60));
    const int rc = ::poll(fds, n, waited);
    if (rc < 0) return errno == EINTR;  // interrupted: the caller checks its deadline
    char buf[65536];
    if (n == 2 && (fds[1].revents & (POLLIN | POLLHUP | POLLERR))) read_stderr(buf, sizeof buf);
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

DNNCOST_FUNC void ChildProcess::drain(Millis wait, std::size_t max_buffer) {
    if (m_out >= 0) {
        pump(wait);
    } else if (m_err >= 0) {  // only stderr left: poll it alone
        pollfd p{m_err, POLLIN, 0};
        char buf[4096];
        if (::poll(&p, 1, static_cast<int>(wait.count())) > 0) read_stderr(buf, sizeof buf);
    } else {
        std::this_thread::sleep_for(wait);
    }
    if (m_buffer.size() > max_buffer) m_buffer.clear();
}

DNNCOST_FUNC auto ChildProcess::write_line(const std::string& line, Clock::time_point deadline, std::size_t max_buffer,
                                           std::string& why) -> WriteStatus {
    if (m_in < 0) {
        why = "stdin closed";
        return WriteStatus::closed;
    }
    sigset_t pipe_set, old;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
    std::size_t done = 0;
    WriteStatus status = WriteStatus::done;
    while (done < line.size()) {
        const auto w = ::write(m_in, line.data() + done, line.size() - done);
        if (w > 0) {
            done += static_cast<std::size_t>(w);
            continue;
        }
        if (w < 0 && errno == EINTR) continue;
        if (w < 0 && errno == EAGAIN) {
            if (Clock::now() >= deadline) {
                status = WriteStatus::timeout;
                break;
            }
            pollfd p{m_in, POLLOUT, 0};
            ::poll(&p, 1, 50);
            drain(Millis(0), max_buffer);
            continue;
        }
        why = w < 0 ? std::strerror(errno) : "write returned 0";
        status = WriteStatus::closed;
        break;
    }
    if (status == WriteStatus::closed) {
        timespec zero{0, 0};
        while (sigtimedwait(&pipe_set, nullptr, &zero) > 0) {}
    }
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
    return status;
}

DNNCOST_FUNC bool ChildProcess::exited() {
    if (m_pid <= 0) return true;
    if (m_exit.kind != ExitStatus::Kind::unknown) return true;
    siginfo_t info{};
    info.si_pid = 0;
    if (::waitid(P_PID, static_cast<id_t>(m_pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == m_pid) {
        if (info.si_code == CLD_EXITED)
            m_exit = {ExitStatus::Kind::exited, info.si_status & 0xff};
        else
            m_exit = {ExitStatus::Kind::signaled, info.si_status & 0x7f};
        return true;
    }
    return false;
}

DNNCOST_FUNC void ChildProcess::kill_and_reap() {
    if (m_pid > 0) {
        ::kill(-m_pid, SIGKILL);
        int status = 0;
        while (::waitpid(m_pid, &status, 0) < 0 && errno == EINTR) {}
    }
    m_pid = -1;
    m_exit = {};
    close_fd(m_in);
    close_fd(m_out);
    close_fd(m_err);
    m_buffer.clear();
}

DNNCOST_FUNC std::string ChildProcess::stderr_last_line() const {
    auto s = m_stderr_tail;
    while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
    const auto nl = s.find_last_of('\n');
    return nl == std::string::npos ? s : s.substr(nl + 1);
}

DNNCOST_FUNC std::string ChildProcess::cpu_list() {
    std::string s;
    for (const int c : allowed_cpus()) s += (s.empty() ? "" : ",") + std::to_string(c);
    return s.empty() ? "unknown" : s;
}

DNNCOST_FUNC void ChildProcess::read_stderr(char* buf, std::size_t size) {
    const auto got = ::read(m_err, buf, size);
    if (got > 0) {
        m_stderr_tail.append(buf, static_cast<std::size_t>(got));
        if (m_stderr_tail.size() > 8192) m_stderr_tail.erase(0, m_stderr_tail.size() - 4096);
    } else if (got == 0 || (errno != EAGAIN && errno != EINTR)) {
        close_fd(m_err);
    }
}

}  // namespace dnncost::measure
