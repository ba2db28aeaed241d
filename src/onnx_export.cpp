// The ONNX exporter, compiled once.
#include <dnncost/io/onnx/export.hpp>
