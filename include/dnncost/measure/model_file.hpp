#pragma once
/// @file model_file.hpp
/// What a runner is given to measure: the ONNX file of a graph, and the store key of the graph.
/// Needs the `dnncost::onnx` target.
///
/// Every weight is written as an initializer with seeded random values of a sensible scale
/// (io::WeightData::random): runtimes fold and fuse constants (BatchNorm into Conv, activations
/// into kernels) only when weights are initializers, as they are in a deployed model.
#include <cstdint>
#include <filesystem>
#include <string>

#include <dnncost/core/config.hpp>
#include <dnncost/graph/graph.hpp>
#include <dnncost/graph/hash.hpp>
#include <dnncost/io/onnx.hpp>

namespace dnncost::measure {

/// The store key of a graph: its canonical hash in hexadecimal.
inline std::string network_key(const graph::Graph& g) { return graph::canonical_hash(g).hex(); }

/// Write `g` as the ONNX file a runner measures. `seed` is the seed of the random weight values;
/// `opset` as in io::OnnxExportOptions (a graph imported from an
/// older file keeps its own, see io::onnx_opset).
/// @throws config_error, io_error as io::export_onnx
DNNCOST_FUNC void write_model_for_runner(const graph::Graph& g, const std::filesystem::path& path, std::uint64_t seed,
                                   int opset = 13);

}  // namespace dnncost::measure

#if !defined(DNNCOST_COMPILED)
#include <dnncost/measure/model_file_impl.hpp>
#endif
