// The ONNX target links on its own: the importer is reachable through dnncost::onnx.
#include <dnncost/io/onnx.hpp>

int main() { return 0; }
