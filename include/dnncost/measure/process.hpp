#pragma once
/// @file process.hpp
/// Control of one child process (POSIX), for runners: started as `/bin/sh -c COMMAND` in its own
/// process group (so that a hang is ended by killing the group, grandchildren included), its
/// pipes read without blocking under poll(), every child reaped (waitpid) before its pipes are
/// dropped, and a write to a process that has gone away reporting EPIPE instead of raising
/// SIGPIPE in the caller. Optionally the process is pinned to one CPU and run under SCHED_FIFO;
/// both are inherited by everything it starts.
///
/// Nothing here knows the runner protocol (runner_protocol.hpp): it moves lines.
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

#include <dnncost/core/config.hpp>
namespace dnncost::measure {

using Clock = std::chrono::steady_clock;
using Millis = std::chrono::milliseconds;

/// Where and how a child process runs. Defaults need no privilege.
struct ProcessOptions {
    /// Pin the process (and what it starts) to this CPU; nullopt: wherever the kernel likes.
    std::optional<int> cpu;
    /// Run it under the real-time FIFO policy (priority 1): timed runs are not preempted by
    /// ordinary processes. Needs CAP_SYS_NICE or an RLIMIT_RTPRIO above 0 (see realtime_permitted).
    bool realtime = false;
};

/// The CPUs this process may run on (its affinity mask), ascending.
DNNCOST_FUNC std::vector<int> allowed_cpus();

/// Whether this process may start children under SCHED_FIFO; when not, `why` says why. Tried on a
/// short-lived thread of its own, so the caller's scheduling is never changed.
DNNCOST_FUNC bool realtime_permitted(std::string* why = nullptr);

/// How a write of a whole line ended.
enum class WriteStatus { done, timeout, closed };

/// How a child ended, once known.
struct ExitStatus {
    enum class Kind { unknown, exited, signaled } kind = Kind::unknown;
    int code = 0;  ///< exit code, or the signal number
};

/// One child process with its three pipes. Not thread-safe.
class ChildProcess {
public:
    ChildProcess() = default;
    ~ChildProcess() { kill_and_reap(); }
    ChildProcess(const ChildProcess&) = delete;
    ChildProcess& operator=(const ChildProcess&) = delete;

    bool running() const { return m_pid > 0; }
    pid_t pid() const { return m_pid; }
    bool output_open() const { return m_out >= 0; }
    bool input_open() const { return m_in >= 0; }
    /// Stdout received and not yet taken as lines.
    std::string& buffer() { return m_buffer; }

    /// Start `/bin/sh -c command`. nullopt on success, else why it could not be started.
    std::optional<std::string> start(const std::string& command, const ProcessOptions& options);

    /// Wait up to `wait` for output; append stdout to buffer() and stderr to its tail. Returns
    /// false once stdout has reached end of file.
    bool pump(Millis wait);

    /// Read whatever output comes within `wait` (stdout beyond `max_buffer` bytes is dropped);
    /// sleeps when both pipes are closed.
    void drain(Millis wait, std::size_t max_buffer);

    /// Write the whole line before the deadline. SIGPIPE is blocked for this thread while
    /// writing and a pending one is consumed, so a dead child gives `closed`, not a dead caller.
    /// While the pipe is full the child's output is drained (a child blocked on its own output
    /// would never read). `why` says why a write was `closed`.
    WriteStatus write_line(const std::string& line, Clock::time_point deadline, std::size_t max_buffer,
                           std::string& why);

    void close_input() { close_fd(m_in); }

    /// Whether the process has exited (recorded, not reaped: the zombie keeps the process group
    /// id reserved until kill_and_reap has signalled the rest of the group).
    bool exited();
    /// How the process ended, when exited() has seen it.
    ExitStatus exit_status() const { return m_exit; }

    /// SIGKILL the whole process group, reap the child, close the pipes.
    void kill_and_reap();

    /// The last non-empty line the child wrote to stderr (empty if none).
    std::string stderr_last_line() const;

private:
    static void close_fd(int& fd) {
        if (fd >= 0) ::close(fd);
        fd = -1;
    }
    static std::string cpu_list();
    void read_stderr(char* buf, std::size_t size);

    pid_t m_pid = -1;
    int m_in = -1, m_out = -1, m_err = -1;
    std::string m_buffer, m_stderr_tail;
    ExitStatus m_exit;
};

}  // namespace dnncost::measure

#if !defined(DNNCOST_COMPILED)
#include <dnncost/measure/process_impl.hpp>
#endif
