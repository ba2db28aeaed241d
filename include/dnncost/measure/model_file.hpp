#pragma once
/// @file model_file.hpp
/// What a runner is given to measure: the ONNX file of a graph, and the store key of the graph.
/// Needs the `dnncost::onnx` target.
///
/// The file comes from io::export_onnx, which today writes weights as graph inputs without
/// values (see io/onnx.hpp): a runner must feed data to every graph input, weights included
/// (the bundled ONNX Runtime runner does, with seeded random values of a sensible scale).
/// Runtimes fold and fuse constants only when weights are initializers, so this is the one
/// place to switch to an export that writes seeded random weights as initializers.
#include <cstdint>
#include <filesystem>
#include <string>

#include <dnncost/graph/graph.hpp>
#include <dnncost/graph/hash.hpp>
#include <dnncost/io/onnx.hpp>

namespace dnncost::measure {

/// The store key of a graph: its canonical hash in hexadecimal.
inline std::string network_key(const graph::Graph& g) { return graph::canonical_hash(g).hex(); }

/// Write `g` as the ONNX file a runner measures. `seed` is the seed of the random weight values
/// once the export writes them; `opset` as in io::OnnxExportOptions (a graph imported from an
/// older file keeps its own, see io::onnx_opset).
/// @throws config_error, io_error as io::export_onnx
inline void write_model_for_runner(const graph::Graph& g, const std::filesystem::path& path,
                                   [[maybe_unused]] std::uint64_t seed, int opset = 13) {
    io::OnnxExportOptions options;
    options.opset = opset;
    io::export_onnx(g, path, options);
}

}  // namespace dnncost::measure
