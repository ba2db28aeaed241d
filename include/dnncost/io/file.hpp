#pragma once
/// @file file.hpp
/// Whole-file reading and atomic writing (write a short-named temporary beside the target,
/// fsync, rename, fsync the directory), so that a crash, a full disk, a power loss or a
/// SIGINT/SIGTERM never leaves a half-written model, report or ONNX file, nor a stray temporary.
///
/// Reading accepts regular files only (a FIFO would block, /dev/zero never ends) up to a size
/// limit. Writing follows a symbolic link to its target (the link stays a link) and writes
/// straight into special files (/dev/null, /dev/stdout, a terminal, a pipe or FIFO that has a
/// reader) instead of renaming over them; a socket or a FIFO without a reader is an io_error.
#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>

#include <dnncost/core/config.hpp>
#include <dnncost/core/error.hpp>

namespace dnncost::io {

/// Largest file read_file accepts by default: protobuf's own limit for a serialized message.
inline constexpr std::uintmax_t max_read_bytes = std::uintmax_t{2} << 30;

/// Read a whole regular file as bytes. Throws io_error naming the file when it is missing, not
/// a regular file (directory, device, FIFO, socket), larger than `limit` or unreadable.
DNNCOST_FUNC std::string read_file(const std::filesystem::path& path, std::uintmax_t limit = max_read_bytes);

/// Fail early, before a long computation, if `path` cannot be written: empty, a directory, a
/// socket, a name longer than the file system allows, or in a directory that does not exist
/// or is not writable. Throws io_error naming the path.
DNNCOST_FUNC void check_writable(const std::filesystem::path& path);

/// Two outputs of one command must not be the same file (the second would replace the first).
/// `outputs` pairs an option name with its path; empty paths and directories are skipped (the
/// command's read or write of a directory names it). Throws config_error.
DNNCOST_FUNC void check_distinct_outputs(
    std::initializer_list<std::pair<std::string_view, std::filesystem::path>> outputs);

/// Write `data` to `path` atomically: readers see the old file or the new one, never a mix; the
/// new one is on disk (file and directory synced) when this returns.
DNNCOST_FUNC void write_file_atomic(const std::filesystem::path& path, std::string_view data);

}  // namespace dnncost::io

#if !defined(DNNCOST_COMPILED)
#include <dnncost/io/file_impl.hpp>
#endif
