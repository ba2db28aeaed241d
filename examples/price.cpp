// Price ONNX networks with a saved estimator, a device model of data/devices/ for example: the
// smallest program that uses dnncost, and the one whose compile time the library is judged by
// (bench/compile_times/run.py).
//
//   dnncost_price MODEL.dnnc NETWORK.onnx...    one line per network: its file and the latency in ms
#include <cstdio>
#include <exception>
#include <vector>

#include <dnncost/estimators/preset_registry.hpp>
#include <dnncost/io/onnx.hpp>
#if !defined(DNNCOST_COMPILED)
// Header-only mode: a preset registers from its own header, so this program prices with device
// models and compiles no other estimator (estimators/registry.hpp would bring every built-in one).
// The compiled library registers every built-in preset itself.
#include <dnncost/device/device_model.hpp>
#endif

int main(int argc, char** argv) try {
    if (argc < 3) {
        std::fprintf(stderr, "usage: %s MODEL.dnnc NETWORK.onnx...\n", argv[0]);
        return 2;
    }
    const auto model = dnncost::estimators::load_estimator_file(argv[1]);
    std::vector<dnncost::graph::Graph> networks;
    for (int i = 2; i < argc; ++i) networks.push_back(dnncost::io::import_onnx(argv[i]));
    std::vector<const dnncost::graph::Graph*> batch;
    for (const auto& g : networks) batch.push_back(&g);
    const auto predicted = model->predict(batch);  // one call prices the whole batch
    for (std::size_t i = 0; i < networks.size(); ++i)
        std::printf("%s\t%.6g\n", argv[i + 2], predicted[i].mean);
    return 0;
} catch (const std::exception& e) {
    std::fprintf(stderr, "dnncost_price: error: %s\n", e.what());
    return 1;
}
