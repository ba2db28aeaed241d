#pragma once
/// @file api.hpp
/// The ONNX entry points, declared without protobuf: what a program needs to read and write ONNX
/// models. Their definitions are in import.hpp and export.hpp, compiled into dnncost::compiled in
/// compiled mode (core/config.hpp) and included by io/onnx.hpp in header-only mode.
#include <filesystem>
#include <string>

#include <dnncost/core/config.hpp>
#include <dnncost/graph/graph.hpp>
#include <dnncost/io/onnx/options.hpp>

namespace dnncost::io {

/// Import an ONNX model held in memory.
/// @param bytes serialised ModelProto
/// @param name  what error messages call the model (usually its file name)
/// @throws onnx_import_error for anything that is not an importable ONNX model, naming `name` and
///         the offending node
DNNCOST_FUNC graph::Graph import_onnx_bytes(const std::string& bytes, const std::string& name,
                                            const OnnxImportOptions& options = {});

/// Import an ONNX file.
/// @throws io_error when the file cannot be read, onnx_import_error when it is not importable
DNNCOST_FUNC graph::Graph import_onnx(const std::filesystem::path& path, const OnnxImportOptions& options = {});

/// Opset of the default domain of a serialised model (e.g. to export an imported graph again
/// with the opset its attributes belong to).
DNNCOST_FUNC int onnx_opset(const std::string& bytes, const std::string& name = "<memory>");

/// Serialise a graph as an ONNX model that passes onnx::checker::check_model. Weights are typed
/// graph inputs marked onnx_weight_marker, or initializers with values (OnnxExportOptions::weights;
/// see export.hpp).
/// @throws config_error if the graph cannot be written (e.g. an attribute the checker rejects for
///         the chosen opset, an integer constant without known values when weights are written);
///         the message names the graph and the reason.
DNNCOST_FUNC std::string export_onnx_bytes(const graph::Graph& g, const OnnxExportOptions& options = {});

/// Write a graph as an ONNX file, atomically (io::write_file_atomic).
/// @throws config_error (see export_onnx_bytes), io_error when the file cannot be written
DNNCOST_FUNC void export_onnx(const graph::Graph& g, const std::filesystem::path& path,
                              const OnnxExportOptions& options = {});

}  // namespace dnncost::io
