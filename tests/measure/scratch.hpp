#pragma once
// A scratch directory for the measuring tests and the fake runner's commands writing into it
// (tests/measure/fake_runner.sh logs each request's model to requests.log there).
#include <unistd.h>

#include <cstddef>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>

namespace measure_tests {

inline const std::string fake_runner = std::string(DNNCOST_TESTS_DIR) + "/measure/fake_runner.sh";

/// Lines in a file (0 when it does not exist).
inline std::size_t lines_of(const std::filesystem::path& p) {
    std::ifstream in(p);
    std::size_t n = 0;
    for (std::string line; std::getline(in, line);) ++n;
    return n;
}

/// A fresh directory per test, removed afterwards; `prefix` names the test program.
struct Scratch {
    std::filesystem::path dir;
    Scratch(const std::string& prefix, const std::string& name) {
        dir = std::filesystem::temp_directory_path() / (prefix + "_" + name + "_" + std::to_string(::getpid()));
        std::filesystem::remove_all(dir);
        std::filesystem::create_directories(dir);
    }
    ~Scratch() {
        std::error_code ec;
        std::filesystem::remove_all(dir, ec);
    }
    Scratch(const Scratch&) = delete;
    Scratch& operator=(const Scratch&) = delete;
    /// The fake runner in `mode`, keeping its logs here.
    std::string runner(const std::string& mode) const {
        return "bash '" + fake_runner + "' " + mode + " '" + dir.string() + "'";
    }
    /// Requests the fake runners received (the reference network's are logged apart).
    std::size_t requests() const { return lines_of(dir / "requests.log"); }
    /// How many requests named `model` the fake runners received.
    std::size_t requests_of(const std::string& model) const {
        std::ifstream in(dir / "requests.log");
        std::size_t n = 0;
        for (std::string line; std::getline(in, line);) n += std::filesystem::path(line).filename() == model;
        return n;
    }
};

}  // namespace measure_tests
