// The ONNX importer, compiled once.
#include <dnncost/io/onnx/import.hpp>
