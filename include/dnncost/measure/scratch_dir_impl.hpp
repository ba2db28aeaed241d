#pragma once
/// @file scratch_dir_impl.hpp
/// The definitions of scratch_dir.hpp: compiled once into dnncost::compiled in compiled mode
/// (core/config.hpp), included by scratch_dir.hpp in header-only mode.
#include <dnncost/measure/scratch_dir.hpp>

namespace dnncost::measure {

DNNCOST_FUNC ScratchDir::ScratchDir(const std::string& prefix) {
    namespace fs = std::filesystem;
    auto pattern = (fs::temp_directory_path() / (prefix + "-XXXXXX")).string();
    if (!::mkdtemp(pattern.data()))
        raise<io_error>("cannot create a temporary directory in ", fs::temp_directory_path().string());
    m_path = pattern;
}

}  // namespace dnncost::measure
