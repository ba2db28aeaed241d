#pragma once
/// @file file_impl.hpp
/// The definitions of file.hpp: compiled once into dnncost::compiled (src/io.cpp), or included by
/// file.hpp in header-only mode.
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <iterator>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <sys/stat.h>
#include <unistd.h>

#include <dnncost/core/error.hpp>
#include <dnncost/io/atomic_write.hpp>
#include <dnncost/io/file.hpp>

namespace dnncost::io {

/// Read a whole regular file as bytes. Throws io_error naming the file when it is missing, not
/// a regular file (directory, device, FIFO, socket), larger than `limit` or unreadable.
DNNCOST_FUNC std::string read_file(const std::filesystem::path& path, std::uintmax_t limit) {
    std::error_code ec;
    const auto st = std::filesystem::status(path, ec);
    if (ec && ec != std::errc::no_such_file_or_directory)
        raise<io_error>("cannot open '", path.string(), "': ", ec.message());
    if (!std::filesystem::exists(st)) raise<io_error>("cannot open '", path.string(), "': no such file");
    if (std::filesystem::is_directory(st)) raise<io_error>("cannot read '", path.string(), "': is a directory");
    if (!std::filesystem::is_regular_file(st))
        raise<io_error>("cannot read '", path.string(), "': not a regular file (device, FIFO or socket)");
    const auto size = std::filesystem::file_size(path, ec);
    if (!ec && size > limit)
        raise<io_error>("cannot read '", path.string(), "': ", size, " bytes, more than the limit of ", limit);
    std::ifstream in(path, std::ios::binary);
    if (!in) raise<io_error>("cannot open '", path.string(), "' for reading");
    std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (in.bad()) raise<io_error>("error while reading '", path.string(), "'");
    return data;
}



/// Fail early, before a long computation, if `path` cannot be written: empty, a directory, a
/// socket, a name longer than the file system allows, or in a directory that does not exist
/// or is not writable. Throws io_error naming the path.
DNNCOST_FUNC void check_writable(const std::filesystem::path& path) {
    if (detail::write_kind(path) == detail::WriteKind::special) return;  // written through
    const auto target = detail::write_target(path);
    const auto dir = detail::directory_of(target);
    std::error_code ec;
    if (!std::filesystem::is_directory(dir, ec))
        raise<io_error>("cannot write '", path.string(), "': directory '", dir.string(), "' does not exist");
    const auto name = target.filename().string();
    if (name.empty() || name == "." || name == "..")
        raise<io_error>("cannot write '", path.string(), "': not a file name");
    if (static_cast<long>(name.size()) > detail::name_max(dir))
        raise<io_error>("cannot write '", path.string(), "': the file name is ", name.size(),
                        " bytes, more than the file system's limit of ", detail::name_max(dir));
    if (::access(dir.c_str(), W_OK | X_OK) != 0)
        raise<io_error>("cannot write '", path.string(), "': directory '", dir.string(), "' is not writable");
}

/// Two outputs of one command must not be the same file (the second would replace the first).
DNNCOST_FUNC void check_distinct_outputs(std::initializer_list<std::pair<std::string_view, std::filesystem::path>> outputs) {
    std::vector<std::pair<std::string_view, std::filesystem::path>> seen;
    for (const auto& [what, path] : outputs) {
        std::error_code ec;
        // a directory is no file of either option: the command's own read or write names it
        // as an input or an output, which this check cannot tell apart
        if (path.empty() || std::filesystem::is_directory(path, ec)) continue;
        if (detail::write_kind(path) == detail::WriteKind::special) continue;
        const auto absolute = std::filesystem::absolute(detail::write_target(path), ec).lexically_normal();
        auto resolved = std::filesystem::weakly_canonical(absolute, ec);
        if (ec) resolved = absolute;
        for (const auto& [other, other_path] : seen)
            if (other_path == resolved)
                raise<config_error>(other, " and ", what, " name the same file '", path.string(), "'");
        seen.emplace_back(what, resolved);
    }
}

/// Write `data` to `path` atomically: readers see the old file or the new one, never a mix; the
/// new one is on disk (file and directory synced) when this returns.
DNNCOST_FUNC void write_file_atomic(const std::filesystem::path& path, std::string_view data) {
    if (detail::write_kind(path) == detail::WriteKind::special) {  // never rename over /dev/null or a pipe
        detail::write_special(path, data);
        return;
    }
    const auto target = detail::write_target(path);
    const auto dir = detail::directory_of(target);
    // A short name: the target's own name may already be at the file system's length limit.
    auto pattern = (dir / ".dnncost-XXXXXX").string();
    const int fd = ::mkstemp(pattern.data());
    if (fd < 0)
        raise<io_error>("cannot write '", path.string(), "': cannot create a temporary file in '", dir.string(),
                        "': ", std::strerror(errno));
    const std::filesystem::path tmp = pattern;
    detail::TempGuard guard(tmp);
    auto give_up = [&](const char* what, int err) {
        ::close(fd);
        ::unlink(tmp.c_str());
        raise<io_error>("cannot write '", path.string(), "': ", what, ": ", std::strerror(err));
    };
    // mkstemp creates mode 0600; give the file the mode an ordinary create would (or the old file's)
    struct stat old {};
    mode_t mode;
    if (::stat(target.c_str(), &old) == 0) {
        mode = old.st_mode & 07777;
    } else {
        const mode_t mask = ::umask(0);
        ::umask(mask);
        mode = 0666 & ~mask;
    }
    ::fchmod(fd, mode);
    if (!detail::write_all(fd, data)) give_up("write failed (disk full?)", errno);
    if (::fsync(fd) != 0 && errno != EINVAL && errno != EROFS) give_up("fsync failed", errno);
    if (::close(fd) != 0) {
        const int err = errno;
        ::unlink(tmp.c_str());
        raise<io_error>("cannot write '", path.string(), "': close failed: ", std::strerror(err));
    }
    if (::rename(tmp.c_str(), target.c_str()) != 0) {
        const int err = errno;
        ::unlink(tmp.c_str());
        raise<io_error>("cannot write '", path.string(), "': rename failed: ", std::strerror(err));
    }
    detail::fsync_directory(dir);
}

}  // namespace dnncost::io
