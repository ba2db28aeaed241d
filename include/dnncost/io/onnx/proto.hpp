#pragma once
/// @file proto.hpp
/// The libonnx and protobuf headers the ONNX reader and writer need (ModelProto, the checker,
/// the schema registry, shape inference), included with their own warnings silenced.
// protobuf's generated headers are not -Wpedantic/-Wextra clean; they are third-party code.
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpedantic"
#pragma GCC diagnostic ignored "-Wextra"
#pragma GCC diagnostic ignored "-Wunused-parameter"
#pragma GCC diagnostic ignored "-Wshadow"
#endif
#include <onnx/checker.h>
#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif
