// Header-only mode, everything included, in four translation units linked into one program (no
// dnncost::compiled), each under 2 GB of compiler memory: this one prices a real network with a
// committed device model through the ONNX importer and writes it back; umbrella.cpp includes the
// umbrella header and every estimator preset; device_build.cpp device builds; compression.cpp the
// compression search with the measuring harness. TUs that include the same headers also check at
// link time that every function a header defines is inline, and that the estimator registry the
// headers fill is one table.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include <dnncost/device/device_model.hpp>
#include <dnncost/estimators/preset_registry.hpp>
#include <dnncost/io/onnx.hpp>

std::vector<std::string> umbrella_estimator_names();     // umbrella.cpp
std::string device_build_check();                        // device_build.cpp
std::string compression_check(const std::string& data);  // compression.cpp

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
    if (!(std::isfinite(ms) && ms > 0.1 && ms < 1000)) return 1;
    const auto back = dnncost::io::import_onnx_bytes(dnncost::io::export_onnx_bytes(g), "written back");
    if (back.num_nodes() != g.num_nodes()) {
        std::fprintf(stderr, "consumer_onnx: squeezenet1_1 did not survive the ONNX round trip\n");
        return 1;
    }

    // The presets registered in umbrella.cpp and the device model registered here fill one table.
    const auto names = umbrella_estimator_names();
    for (const char* want : {"additive", "brpnas", "device", "hifisage", "perfsage"}) {
        if (std::find(names.begin(), names.end(), want) == names.end()) {
            std::fprintf(stderr, "consumer_onnx: estimator \"%s\" is not registered\n", want);
            return 1;
        }
    }
    for (const auto& failure : {device_build_check(), compression_check(data)}) {
        if (!failure.empty()) {
            std::fprintf(stderr, "consumer_onnx: %s\n", failure.c_str());
            return 1;
        }
    }
    return 0;
} catch (const std::exception& e) {
    std::fprintf(stderr, "consumer_onnx: %s\n", e.what());
    return 1;
}
