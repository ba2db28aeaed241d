#pragma once
/// @file onnx.hpp
/// ONNX import and export for the operator graph: the header users include (target
/// `dnncost::onnx`, or `dnncost::compiled`; not part of the umbrella header because in
/// header-only mode it pulls in protobuf and libonnx).
///
/// - io::import_onnx / io::import_onnx_bytes read a model, folding its shape computations
///   (onnx/import.hpp, onnx/fold.hpp);
/// - io::export_onnx / io::export_onnx_bytes write a graph that passes onnx::checker and imports
///   back to the same graph (onnx/export.hpp);
/// - io::onnx_opset reads the opset a model was written for.
///
/// In compiled mode (core/config.hpp) this header declares them only: no protobuf is parsed.
/// Code that reads ONNX protobuf messages itself includes <dnncost/io/onnx/proto.hpp>.
#include <dnncost/core/config.hpp>
#include <dnncost/io/onnx/api.hpp>
#include <dnncost/io/onnx/options.hpp>
#if !defined(DNNCOST_COMPILED)
#include <dnncost/io/onnx/export.hpp>
#include <dnncost/io/onnx/import.hpp>
#endif
