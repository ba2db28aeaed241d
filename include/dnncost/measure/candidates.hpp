#pragma once
/// @file candidates.hpp
/// The networks `dnncost measure` is asked for, as graphs with the ids a results store keeps:
/// sampled from a search space, read from a file of architecture strings, or ONNX files.
/// Networks of a space are named `SPACE:ARCH` (NB201 strings stay bare), so that one store can
/// hold several spaces and loads back as a data set; an ONNX file's id is its path relative to
/// the store's directory, as `dnncost train --data` resolves it.
#include <filesystem>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <dnncost/core/config.hpp>
#include <dnncost/core/error.hpp>
#include <dnncost/core/rng.hpp>
#include <dnncost/graph/graph.hpp>
#include <dnncost/io/file.hpp>
#include <dnncost/io/onnx.hpp>
#include <dnncost/spaces/network_name.hpp>
#include <dnncost/spaces/registry.hpp>
#include <dnncost/spaces/sample.hpp>
#include <dnncost/spaces/synthetic.hpp>

namespace dnncost::measure {

/// A network before export: its id, its graph, and the opset to write it with.
struct Candidate {
    std::string id;
    graph::Graph graph;
    int opset = 13;
};

/// A network of a search space, named `SPACE:ARCH` with its build options as `@KEY=VALUE`, so that
/// its store id builds the network measured whatever options a reader of the store gives.
inline Candidate space_candidate(const spaces::SpaceInfo& space, std::string_view arch,
                                 const spaces::SpaceOptions& options) {
    const auto canonical = space.canonical(arch);
    return {spaces::network_name(space.name, canonical, options), space.build_graph(canonical, options),
            space.onnx_opset};
}

/// The network a network name (spaces/network_name.hpp; its own options over `options`) or an
/// architecture string of `space` names. @throws parse_error for text that names none, or a bad
/// string; config_error for options its space does not take
inline Candidate named_candidate(std::string_view text, std::string_view space, const spaces::SpaceOptions& options) {
    auto n = spaces::parse_network_name(text);
    if (!n && !space.empty()) n = spaces::parse_network_name(spaces::qualified_arch(space, text));
    if (!n && !space.empty()) return space_candidate(spaces::find_space(space), text, options);  // its space says why
    if (!n)
        raise<parse_error>("'", text,
                           "' names no search space (write SPACE:ARCH or a synthesised network's name, or "
                           "give the space)");
    if (!n->space) return {n->arch, synthetic::build_from_name(n->arch), synthetic::onnx_opset};
    auto merged = n->options;
    merged.insert(options.begin(), options.end());
    return space_candidate(*n->space, n->arch, merged);
}

/// `n` distinct architectures of `space` drawn with `seed` (NB201: without replacement by index;
/// the larger spaces: their own sampler, repeats drawn again).
DNNCOST_FUNC std::vector<Candidate> sample_candidates(const spaces::SpaceInfo& space, std::size_t n, std::uint64_t seed,
                                                const spaces::SpaceOptions& options);

/// One network per line: an architecture string of `space` (may be empty) or a network name
/// (named_candidate); empty lines and lines starting with '#' are skipped.
/// @throws parse_error naming the file and line
DNNCOST_FUNC std::vector<Candidate> read_arch_file(const std::string& file, const std::string& space,
                                             const spaces::SpaceOptions& options);

/// ONNX files, each with its path relative to `store_dir` as its id.
DNNCOST_FUNC std::vector<Candidate> onnx_candidates(const std::vector<std::string>& files,
                                              const std::filesystem::path& store_dir);

/// The network a store id names again: a network name (`SPACE:ARCH` or a bare NB201 string,
/// with `@KEY=VALUE` options of its own over `options`; a synthesised network's name), otherwise
/// an ONNX file relative to `store_dir`.
inline Candidate candidate_from_id(const std::string& id, const std::filesystem::path& store_dir,
                                   const spaces::SpaceOptions& options) {
    if (const auto n = spaces::parse_network_name(id))
        return {id, n->build(options), n->space ? n->space->onnx_opset : synthetic::onnx_opset};
    const auto file = store_dir / id;
    return {id, io::import_onnx(file), io::onnx_opset(io::read_file(file))};
}

}  // namespace dnncost::measure

#if !defined(DNNCOST_COMPILED)
#include <dnncost/measure/candidates_impl.hpp>
#endif
