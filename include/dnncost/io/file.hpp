#pragma once
/// @file file.hpp
/// Whole-file reading and atomic writing (write a temporary beside the target, flush, rename),
/// so that a crash or a full disk never leaves a half-written model, report or ONNX file.
///
/// Reading accepts regular files only (a FIFO would block, /dev/zero never ends) up to a size
/// limit. Writing follows a symbolic link to its target (the link stays a link), writes
/// straight into an existing device (e.g. /dev/null) instead of renaming over it, and refuses
/// a FIFO or socket (opening one would block until a reader appears).
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <string_view>

#include <dnncost/core/error.hpp>

namespace dnncost::io {

/// Largest file read_file accepts by default: protobuf's own limit for a serialized message.
inline constexpr std::uintmax_t max_read_bytes = std::uintmax_t{2} << 30;

/// Read a whole regular file as bytes. Throws io_error naming the file when it is missing, not
/// a regular file (directory, device, FIFO, socket), larger than `limit` or unreadable.
inline std::string read_file(const std::filesystem::path& path, std::uintmax_t limit = max_read_bytes) {
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
/// What a write to `path` (whose link chain ends at `target`) meets there: nothing or a regular
/// file (written atomically), or a device (written through). A directory, a FIFO or a socket
/// is an io_error: opening a FIFO would block until a reader appears.
enum class WriteKind { file, device };
inline WriteKind write_kind(const std::filesystem::path& path, const std::filesystem::path& target) {
    std::error_code ec;
    const auto st = std::filesystem::status(target, ec);
    if (std::filesystem::is_directory(st)) raise<io_error>("cannot write '", path.string(), "': is a directory");
    if (std::filesystem::is_fifo(st) || std::filesystem::is_socket(st))
        raise<io_error>("cannot write '", path.string(), "': is a FIFO or socket, not a file");
    return std::filesystem::exists(st) && !std::filesystem::is_regular_file(st) ? WriteKind::device : WriteKind::file;
}
}  // namespace detail

/// Fail early, before a long computation, if `path` cannot be written: empty, a directory, or
/// in a directory that does not exist or is not writable. Throws io_error naming the path.
inline void check_writable(const std::filesystem::path& path) {
    const auto target = detail::write_target(path);
    if (detail::write_kind(path, target) == detail::WriteKind::device) return;  // written through
    std::error_code ec;
    const auto dir = target.has_parent_path() ? target.parent_path() : std::filesystem::path(".");
    if (!std::filesystem::is_directory(dir, ec))
        raise<io_error>("cannot write '", path.string(), "': directory '", dir.string(), "' does not exist");
    std::random_device rd;
    const auto probe = dir / (".dnncost-probe" + std::to_string(rd()));
    std::FILE* f = std::fopen(probe.string().c_str(), "wb");
    if (!f) raise<io_error>("cannot write '", path.string(), "': directory '", dir.string(), "' is not writable");
    std::fclose(f);
    std::filesystem::remove(probe, ec);
}

/// Write `data` to `path` atomically: readers see the old file or the new one, never a mix.
inline void write_file_atomic(const std::filesystem::path& path, std::string_view data) {
    const auto target = detail::write_target(path);
    if (detail::write_kind(path, target) == detail::WriteKind::device) {  // never rename over /dev/null
        std::FILE* f = std::fopen(target.string().c_str(), "wb");
        if (!f) raise<io_error>("cannot write '", path.string(), "': cannot open for writing");
        const bool ok = std::fwrite(data.data(), 1, data.size(), f) == data.size();
        if (std::fclose(f) != 0 || !ok) raise<io_error>("cannot write '", path.string(), "': write failed");
        return;
    }
    const auto dir = target.has_parent_path() ? target.parent_path() : std::filesystem::path(".");
    std::random_device rd;
    const auto tmp = dir / ("." + target.filename().string() + ".tmp" + std::to_string(rd()));
    {
        std::FILE* f = std::fopen(tmp.string().c_str(), "wb");
        if (!f)
            raise<io_error>("cannot write '", path.string(), "': cannot create temporary file in '", dir.string(), "'");
        const bool ok = std::fwrite(data.data(), 1, data.size(), f) == data.size() && std::fflush(f) == 0;
        const bool closed = std::fclose(f) == 0;
        if (!ok || !closed) {
            std::error_code ec;
            std::filesystem::remove(tmp, ec);
            raise<io_error>("cannot write '", path.string(), "': write failed (disk full?)");
        }
    }
    std::error_code ec;
    std::filesystem::rename(tmp, target, ec);
    if (ec) {
        const std::string reason = ec.message();  // remove() below overwrites ec
        std::filesystem::remove(tmp, ec);
        raise<io_error>("cannot write '", path.string(), "': rename failed: ", reason);
    }
}

}  // namespace dnncost::io
