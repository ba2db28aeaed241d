#pragma once
/// @file options.hpp
/// What a caller can choose when reading (OnnxImportOptions) and writing (OnnxExportOptions) an
/// ONNX model: among others whether weights travel with values (WeightData, WeightValues), and
/// the doc string that marks a weight written without values.
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <dnncost/graph/graph.hpp>

namespace dnncost::io {

/// The values of one weight tensor, row-major: `reals` for floating-point tensors (kept as
/// float32 whatever the file's float type), `integers` for integer and boolean tensors.
struct TensorValues {
    std::vector<float> reals;
    std::vector<std::int64_t> integers;
    std::size_t size() const { return reals.size() + integers.size(); }
    friend bool operator==(const TensorValues&, const TensorValues&) = default;
};

/// Weight values by tensor name.
using WeightValues = std::unordered_map<std::string, TensorValues>;

/// What export_onnx writes for the weights of a graph.
enum class WeightData {
    /// Shapes only: weights are typed graph inputs marked onnx_weight_marker (small constants
    /// whose values the graph knows are initializers). Cheap; enough for cost analyses.
    none,
    /// Every weight is an initializer with values, so that a runtime folds and fuses constants as
    /// it does for a trained model: seeded random values of a trained network's scale (He-uniform
    /// for Conv/Gemm/MatMul weights by fan-in, BatchNormalization scale near 1, mean near 0,
    /// variance positive, small biases). Values the graph knows (graph::Tensor::data) and integer
    /// constants are never random: they are written exactly (see OnnxExportOptions).
    random,
    /// As `random`, but a weight listed in OnnxExportOptions::weight_values with the right element
    /// count is written with those values (e.g. the imported model's own weights).
    model,
};

/// How to read an ONNX model.
struct OnnxImportOptions {
    /// Value for a symbolic or unknown leading (batch) dimension of a graph input.
    std::int64_t batch_size = 1;
    /// Explicit shapes for graph inputs by name (override the file; needed when an input has
    /// symbolic dimensions other than the batch).
    std::map<std::string, graph::Shape> input_shapes;
    /// Largest constant (elements) the shape folder evaluates; bigger constants stay opaque.
    std::int64_t max_fold_elements = 1 << 16;
    /// When set, import also stores here the values of every weight of the resulting graph that
    /// the file holds (initializers with data, of any size, followed through folded layout
    /// operators such as Identity and Transpose), by tensor name; weights the file gives no
    /// values for are absent. Off by default: values cost memory, and graphs are often imported
    /// in bulk for their structure only.
    WeightValues* weight_values = nullptr;
};

/// How to write an ONNX model.
struct OnnxExportOptions {
    /// Opset of the default domain. 13 suits NB201 graphs and opset 13-17 imports; a graph imported
    /// from an older file whose attributes changed meaning since (e.g. BatchNormalization's
    /// `spatial` in opset 7-8) must be written with its own opset (see onnx_opset()).
    int opset = 13;
    std::string producer = "dnncost";
    /// Whether weights are written with values (see WeightData). The default writes shapes only.
    WeightData weights = WeightData::none;
    /// Seed of the random weight values: the same seed gives the same file, byte for byte. A
    /// weight's values depend on the seed, its name, its shape and the operator reading it only.
    std::uint64_t seed = 0;
    /// Known weight values by tensor name (e.g. filled by OnnxImportOptions::weight_values).
    /// WeightData::model writes them for every weight they cover with the right element count;
    /// integer constants take their values from here under WeightData::random as well.
    const WeightValues* weight_values = nullptr;
};

/// The doc string that marks a graph input as a weight: a weight written without values (the
/// graph carries its shape only) travels as a typed graph input so that the file still passes
/// onnx::checker, and import turns such inputs back into weights.
inline constexpr std::string_view onnx_weight_marker = "dnncost:weight";

}  // namespace dnncost::io
