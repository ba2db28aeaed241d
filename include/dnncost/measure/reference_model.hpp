#pragma once
/// @file reference_model.hpp
/// The reference network measured with every run (reference.hpp): a small fixed graph built
/// here, so that every version of dnncost measures the same one. Three 3x3 convolutions with
/// ReLU (the second strided) and a fully connected layer over the flattened features, on a
/// 1x16x32x32 input: about 20 M multiply-accumulates, around a millisecond on one core of a
/// current server CPU, so measuring it a few times costs a run little. Exported with fixed
/// weights (reference_seed). Needs the `dnncost::onnx` target.
#include <cstdint>
#include <filesystem>

#include <dnncost/core/config.hpp>
#include <dnncost/graph/graph.hpp>
#include <dnncost/measure/model_file.hpp>
#include <dnncost/spaces/builder.hpp>

namespace dnncost::measure {

/// The seed of the reference network's weight values.
inline constexpr std::uint64_t reference_seed = 20261126;

/// The reference network's graph (always the same).
DNNCOST_FUNC graph::Graph reference_graph();

/// Write the reference network for a runner. @throws io_error
inline void write_reference_model(const std::filesystem::path& path) {
    write_model_for_runner(reference_graph(), path, reference_seed);
}

}  // namespace dnncost::measure

#if !defined(DNNCOST_COMPILED)
#include <dnncost/measure/reference_model_impl.hpp>
#endif
