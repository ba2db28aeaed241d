#pragma once
/// @file onnx.hpp
/// ONNX import and export for the operator graph: the header users include (target
/// `dnncost::onnx`; not part of the umbrella header because it pulls in protobuf and libonnx).
///
/// - io::import_onnx / io::import_onnx_bytes read a model, folding its shape computations
///   (onnx/import.hpp, onnx/fold.hpp);
/// - io::export_onnx / io::export_onnx_bytes write a graph that passes onnx::checker and imports
///   back to the same graph (onnx/export.hpp);
/// - io::onnx_opset reads the opset a model was written for.
#include <dnncost/io/onnx/export.hpp>
#include <dnncost/io/onnx/import.hpp>
#include <dnncost/io/onnx/options.hpp>
