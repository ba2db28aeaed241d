#pragma once
/// @file scratch_dir.hpp
/// A private temporary directory for the model files handed to runners, removed with its owner.
///
/// The larger functions are defined in scratch_dir_impl.hpp: compiled into dnncost::compiled in compiled
/// mode (core/config.hpp), included at the end of this header otherwise.
#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>

#include <dnncost/core/config.hpp>
#include <dnncost/core/error.hpp>

namespace dnncost::measure {

class ScratchDir {
public:
    /// @param prefix start of the directory's name under the system's temporary directory
    explicit ScratchDir(const std::string& prefix = "dnncost-measure");
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

#if !defined(DNNCOST_COMPILED)
#include <dnncost/measure/scratch_dir_impl.hpp>
#endif
