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

#include <dnncost/graph/graph.hpp>
#include <dnncost/measure/model_file.hpp>
#include <dnncost/spaces/builder.hpp>

namespace dnncost::measure {

/// The seed of the reference network's weight values.
inline constexpr std::uint64_t reference_seed = 20261126;

/// The reference network's graph (always the same).
inline graph::Graph reference_graph() {
    spaces::NetworkBuilder b("dnncost-reference-1");
    int x = b.input("input", {1, 16, 32, 32});
    x = b.unary("Relu", b.conv(x, 32, 3, 1, 1, "conv1"), "relu1");
    x = b.unary("Relu", b.conv(x, 64, 3, 2, 1, "conv2"), "relu2");
    x = b.unary("Relu", b.conv(x, 64, 3, 1, 1, "conv3"), "relu3");
    x = b.flatten(x, "flatten");
    x = b.gemm(x, 64, "fc");
    return b.finish({x});
}

/// Write the reference network for a runner. @throws io_error
inline void write_reference_model(const std::filesystem::path& path) {
    write_model_for_runner(reference_graph(), path, reference_seed);
}

}  // namespace dnncost::measure
