#pragma once
/// @file candidates_impl.hpp
/// The definitions of candidates.hpp: compiled once into dnncost::compiled in compiled mode
/// (core/config.hpp), included by candidates.hpp in header-only mode.
#include <dnncost/measure/candidates.hpp>

DNNCOST_FUNC auto dnncost::measure::sample_candidates(const spaces::SpaceInfo& space, std::size_t n, std::uint64_t seed,
                                                      const spaces::SpaceOptions& options) -> std::vector<Candidate> {
    Rng rng(seed);
    const auto archs =
        space.name == "nb201" ? spaces::sample_nb201_by_index(n, rng) : spaces::sample_distinct(space, n, rng);
    std::vector<Candidate> out;
    for (const auto& a : archs) out.push_back(space_candidate(space, a, options));
    return out;
}

DNNCOST_FUNC auto dnncost::measure::read_arch_file(const std::string& file, const std::string& space,
                                                   const spaces::SpaceOptions& options) -> std::vector<Candidate> {
    std::istringstream in(io::read_file(file));
    std::vector<Candidate> out;
    std::size_t line_no = 0;
    for (std::string line; std::getline(in, line);) {
        ++line_no;
        if (!line.empty() && line.back() == '\r') line.pop_back();
        const auto first = line.find_first_not_of(" \t");
        if (first == std::string::npos || line[first] == '#') continue;
        line = line.substr(first, line.find_last_not_of(" \t") - first + 1);
        try {
            out.push_back(named_candidate(line, space, options));
        } catch (const error& e) {
            raise<parse_error>(file, ":", line_no, ": ", e.what());
        }
    }
    if (out.empty()) raise<parse_error>(file, ": no architecture strings");
    return out;
}

DNNCOST_FUNC auto dnncost::measure::onnx_candidates(const std::vector<std::string>& files,
                                                    const std::filesystem::path& store_dir) -> std::vector<Candidate> {
    namespace fs = std::filesystem;
    std::vector<Candidate> out;
    for (const auto& m : files) {
        const auto bytes = io::read_file(m);
        out.push_back(
            {fs::proximate(fs::absolute(m), store_dir).string(), io::import_onnx(m), io::onnx_opset(bytes, m)});
    }
    return out;
}
