#pragma once
/// @file atomic_write.hpp
/// The machinery under io::write_file_atomic (file.hpp): where a write lands, what it meets, the
/// temporaries removed on SIGINT/SIGTERM, and writes that retry short writes and EINTR.
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstddef>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <string>
#include <string_view>

#include <fcntl.h>
#include <unistd.h>

#include <dnncost/core/error.hpp>

namespace dnncost::io {

namespace detail {
/// Where a write to `path` lands: the end of its chain of symbolic links, which need not exist
/// yet (a link to a file still to be created is followed, not replaced).
inline std::filesystem::path write_target(const std::filesystem::path& path) {
    if (path.empty()) raise<io_error>("cannot write: empty output path");
    std::filesystem::path p = path;
    for (int hops = 0;; ++hops) {
        std::error_code ec;
        if (!std::filesystem::is_symlink(std::filesystem::symlink_status(p, ec))) return p;
        if (hops == 40) raise<io_error>("cannot write '", path.string(), "': too many levels of symbolic links");
        const auto next = std::filesystem::read_symlink(p, ec);
        if (ec) raise<io_error>("cannot write '", path.string(), "': cannot read the symbolic link: ", ec.message());
        p = next.is_absolute() ? next : p.parent_path() / next;
    }
}
/// What a write to `path` meets: nothing or a regular file (written atomically), a device or a
/// FIFO (written through, opened by `path` itself so that the kernel resolves links such as
/// /dev/stdout -> /proc/self/fd/1 -> pipe:[n]). A directory or a socket is an io_error.
enum class WriteKind { file, special };
inline WriteKind write_kind(const std::filesystem::path& path) {
    if (path.empty()) raise<io_error>("cannot write: empty output path");
    std::error_code ec;
    const auto st = std::filesystem::status(path, ec);
    if (std::filesystem::is_directory(st)) raise<io_error>("cannot write '", path.string(), "': is a directory");
    if (std::filesystem::is_socket(st)) raise<io_error>("cannot write '", path.string(), "': is a socket, not a file");
    return std::filesystem::exists(st) && !std::filesystem::is_regular_file(st) ? WriteKind::special : WriteKind::file;
}
inline std::filesystem::path directory_of(const std::filesystem::path& target) {
    return target.has_parent_path() ? target.parent_path() : std::filesystem::path(".");
}
/// The file system's limit on one name in `dir` (255 on most).
inline long name_max(const std::filesystem::path& dir) {
    const long n = ::pathconf(dir.c_str(), _PC_NAME_MAX);
    return n > 0 ? n : 255;
}

/// Temporaries being written, removed by the SIGINT/SIGTERM handler below. Fixed slots of
/// fixed-size buffers: the handler may only read memory and call async-signal-safe functions.
struct TempRegistry {
    static constexpr int slots = 16;
    static constexpr std::size_t max_path = 4096;
    std::atomic<int> state[slots] = {};  ///< 0 free, 1 being filled in, 2 registered
    char path[slots][max_path] = {};
    std::mutex mutex;  ///< guards installing and restoring the handlers
    int active = 0;
    struct sigaction previous[2] = {};
};
inline TempRegistry& temp_registry() {
    static TempRegistry r;
    return r;
}
inline constexpr int cleanup_signals[2] = {SIGINT, SIGTERM};

extern "C" inline void remove_temps_on_signal(int sig) {
    auto& r = temp_registry();
    const int k = sig == SIGINT ? 0 : 1;
    const struct sigaction& before = r.previous[k];
    // A handler the program installed itself decides what the signal means; temporaries are
    // removed only when the signal will end the process.
    if (!(before.sa_flags & SA_SIGINFO) && before.sa_handler == SIG_IGN) return;
    if ((before.sa_flags & SA_SIGINFO) || before.sa_handler != SIG_DFL) {
        if (before.sa_flags & SA_SIGINFO)
            before.sa_sigaction(sig, nullptr, nullptr);
        else
            before.sa_handler(sig);
        return;
    }
    for (int i = 0; i < TempRegistry::slots; ++i)
        if (r.state[i].load() == 2) ::unlink(r.path[i]);
    ::signal(sig, SIG_DFL);
    ::raise(sig);
}

/// A temporary file registered for removal on SIGINT/SIGTERM while it exists.
class TempGuard {
public:
    explicit TempGuard(const std::filesystem::path& tmp) {
        auto& r = temp_registry();
        const std::string s = tmp.string();
        if (s.size() >= TempRegistry::max_path) return;  // not removable on a signal; still removed on errors
        for (int i = 0; i < TempRegistry::slots && m_slot < 0; ++i) {
            int expected = 0;
            if (r.state[i].compare_exchange_strong(expected, 1)) m_slot = i;
        }
        if (m_slot < 0) return;
        std::memcpy(r.path[m_slot], s.c_str(), s.size() + 1);
        std::lock_guard lock(r.mutex);
        if (r.active++ == 0) {
            struct sigaction action = {};
            action.sa_handler = remove_temps_on_signal;
            sigemptyset(&action.sa_mask);
            for (int k = 0; k < 2; ++k) ::sigaction(cleanup_signals[k], &action, &r.previous[k]);
        }
        r.state[m_slot].store(2);
    }
    TempGuard(const TempGuard&) = delete;
    TempGuard& operator=(const TempGuard&) = delete;
    ~TempGuard() {
        if (m_slot < 0) return;
        auto& r = temp_registry();
        r.state[m_slot].store(0);
        std::lock_guard lock(r.mutex);
        if (--r.active == 0)
            for (int k = 0; k < 2; ++k) ::sigaction(cleanup_signals[k], &r.previous[k], nullptr);
    }

private:
    int m_slot = -1;
};

/// Write all of `data` to `fd`, retrying short writes and EINTR.
inline bool write_all(int fd, std::string_view data) {
    std::size_t done = 0;
    while (done < data.size()) {
        const auto n = ::write(fd, data.data() + done, data.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        done += static_cast<std::size_t>(n);
    }
    return true;
}
inline void fsync_directory(const std::filesystem::path& dir) {
    const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return;  // some file systems do not open directories; the rename itself is done
    ::fsync(fd);
    ::close(fd);
}
/// Write into a device or FIFO. A FIFO is opened without blocking: no reader is an error, not a hang.
inline void write_special(const std::filesystem::path& path, std::string_view data) {
    int fd = ::open(path.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0 && errno == ENXIO) raise<io_error>("cannot write '", path.string(), "': a FIFO with no reader");
    if (fd < 0) raise<io_error>("cannot write '", path.string(), "': ", std::strerror(errno));
    const int flags = ::fcntl(fd, F_GETFL);
    if (flags >= 0) ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
    const bool ok = write_all(fd, data);
    const int saved = errno;
    if (::close(fd) != 0 || !ok)
        raise<io_error>("cannot write '", path.string(), "': write failed: ", std::strerror(ok ? errno : saved));
}
}  // namespace detail

}  // namespace dnncost::io
