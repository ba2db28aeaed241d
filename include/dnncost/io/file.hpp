#pragma once
/// @file file.hpp
/// Whole-file reading and atomic writing (write a temporary beside the target, flush, rename),
/// so that a crash or a full disk never leaves a half-written model, report or ONNX file.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <string_view>

#include <dnncost/core/error.hpp>

namespace dnncost::io {

/// Read a whole file as bytes. Throws io_error naming the file.
inline std::string read_file(const std::filesystem::path& path) {
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) raise<io_error>("cannot open '", path.string(), "': no such file");
    if (std::filesystem::is_directory(path, ec)) raise<io_error>("cannot read '", path.string(), "': is a directory");
    std::ifstream in(path, std::ios::binary);
    if (!in) raise<io_error>("cannot open '", path.string(), "' for reading");
    std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (in.bad()) raise<io_error>("error while reading '", path.string(), "'");
    return data;
}

/// Write `data` to `path` atomically: readers see the old file or the new one, never a mix.
inline void write_file_atomic(const std::filesystem::path& path, std::string_view data) {
    const auto dir = path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
    std::random_device rd;
    const auto tmp = dir / ("." + path.filename().string() + ".tmp" + std::to_string(rd()));
    {
        std::FILE* f = std::fopen(tmp.string().c_str(), "wb");
        if (!f) raise<io_error>("cannot write '", path.string(), "': cannot create temporary file in '", dir.string(), "'");
        const bool ok = std::fwrite(data.data(), 1, data.size(), f) == data.size() && std::fflush(f) == 0;
        const bool closed = std::fclose(f) == 0;
        if (!ok || !closed) {
            std::error_code ec;
            std::filesystem::remove(tmp, ec);
            raise<io_error>("cannot write '", path.string(), "': write failed (disk full?)");
        }
    }
    std::error_code ec;
    std::filesystem::rename(tmp, path, ec);
    if (ec) {
        std::filesystem::remove(tmp, ec);
        raise<io_error>("cannot write '", path.string(), "': rename failed: ", ec.message());
    }
}

}  // namespace dnncost::io
