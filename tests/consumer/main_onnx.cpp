// Header-only mode, everything included: the umbrella header, the ONNX importer, every estimator
// preset, device models, the measuring harness, device builds and the compression search, built
// against the headers alone (no dnncost::compiled). It prices a real network with a committed
// device model, as a program of the compiled mode would.
#include <cmath>
#include <cstdio>
#include <string>

#include <dnncost/device/device_build.hpp>
#include <dnncost/device/device_model.hpp>
#include <dnncost/dnncost.hpp>
#include <dnncost/estimators/registry.hpp>
#include <dnncost/io/onnx.hpp>
#include <dnncost/search/compression/measured_compression.hpp>

int main(int argc, char** argv) try {
    if (argc < 2) {
        std::fprintf(stderr, "usage: consumer_onnx DATA_DIR\n");
        return 2;
    }
    const std::string data = argv[1];
    const auto model = dnncost::estimators::load_estimator_file(data + "/devices/ort-cpu-all-1t.dnnc");
    const auto g = dnncost::io::import_onnx(data + "/onnx/squeezenet1_1.onnx");
    const dnncost::graph::Graph* batch[] = {&g};
    const double ms = model->predict(batch).front().mean;
    std::printf("squeezenet1_1: %.4g ms\n", ms);
    return std::isfinite(ms) && ms > 0.1 && ms < 1000 ? 0 : 1;
} catch (const std::exception& e) {
    std::fprintf(stderr, "consumer_onnx: %s\n", e.what());
    return 1;
}
