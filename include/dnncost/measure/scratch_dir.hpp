#pragma once
/// @file scratch_dir.hpp
/// A private temporary directory for the model files handed to runners, removed with its owner.
#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>

#include <dnncost/core/error.hpp>

namespace dnncost::measure {

class ScratchDir {
public:
    /// @param prefix start of the directory's name under the system's temporary directory
    explicit ScratchDir(const std::string& prefix = "dnncost-measure") {
        namespace fs = std::filesystem;
        auto pattern = (fs::temp_directory_path() / (prefix + "-XXXXXX")).string();
        if (!::mkdtemp(pattern.data()))
            raise<io_error>("cannot create a temporary directory in ", fs::temp_directory_path().string());
        m_path = pattern;
    }
    ~ScratchDir() {
        std::error_code ec;
        std::filesystem::remove_all(m_path, ec);
    }
    ScratchDir(const ScratchDir&) = delete;
    ScratchDir& operator=(const ScratchDir&) = delete;
    const std::filesystem::path& path() const { return m_path; }

private:
    std::filesystem::path m_path;
};

}  // namespace dnncost::measure
