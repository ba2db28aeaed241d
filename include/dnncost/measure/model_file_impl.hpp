#pragma once
/// @file model_file_impl.hpp
/// The definitions of model_file.hpp: compiled once into dnncost::compiled in compiled mode
/// (core/config.hpp), included by model_file.hpp in header-only mode.
#include <dnncost/measure/model_file.hpp>

DNNCOST_FUNC auto dnncost::measure::write_model_for_runner(const graph::Graph& g, const std::filesystem::path& path,
                                                           std::uint64_t seed, int opset) -> void {
    io::OnnxExportOptions options;
    options.opset = opset;
    options.weights = io::WeightData::random;
    options.seed = seed;
    io::export_onnx(g, path, options);
}
