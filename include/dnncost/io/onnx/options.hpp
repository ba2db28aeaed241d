#pragma once
/// @file options.hpp
/// What a caller can choose when reading (OnnxImportOptions) and writing (OnnxExportOptions) an
/// ONNX model, and the doc string that marks a weight written without values.
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include <dnncost/graph/graph.hpp>

namespace dnncost::io {

/// How to read an ONNX model.
struct OnnxImportOptions {
    /// Value for a symbolic or unknown leading (batch) dimension of a graph input.
    std::int64_t batch_size = 1;
    /// Explicit shapes for graph inputs by name (override the file; needed when an input has
    /// symbolic dimensions other than the batch).
    std::map<std::string, graph::Shape> input_shapes;
    /// Largest constant (elements) the shape folder evaluates; bigger constants stay opaque.
    std::int64_t max_fold_elements = 1 << 16;
};

/// How to write an ONNX model.
struct OnnxExportOptions {
    /// Opset of the default domain. 13 suits NB201 graphs and opset 13-17 imports; a graph imported
    /// from an older file whose attributes changed meaning since (e.g. BatchNormalization's
    /// `spatial` in opset 7-8) must be written with its own opset (see onnx_opset()).
    int opset = 13;
    std::string producer = "dnncost";
};

/// The doc string that marks a graph input as a weight: a weight written without values (the
/// graph carries its shape only) travels as a typed graph input so that the file still passes
/// onnx::checker, and import turns such inputs back into weights.
inline constexpr std::string_view onnx_weight_marker = "dnncost:weight";

}  // namespace dnncost::io
