// kernel graphs and prices of many networks, for comparing two versions of the pass
#include <cstdio>
#include <functional>
#include <string>
#include <vector>
#include <dnncost/core/rng.hpp>
#include <dnncost/device/device_model.hpp>
#include <dnncost/device/device_build.hpp>
#include <dnncost/device/kernel_graph.hpp>
#include <dnncost/io/file.hpp>
#include <dnncost/io/onnx.hpp>
#include <dnncost/spaces/registry.hpp>
using namespace dnncost;
int main() {
    std::vector<graph::Graph> gs;
    for (const auto& sp : spaces::all_spaces()) {
        Rng rng(11);
        const int n = sp.name == "nb201" ? 3000 : 400;
        for (int i = 0; i < n; ++i) gs.push_back(sp.build_graph(sp.sample(rng), {}));
        Rng rng2(12);
        if (sp.name != "nb201")
            for (int i = 0; i < 50; ++i) gs.push_back(sp.build_graph(sp.sample(rng2), spaces::space_options("batch=4")));
    }
    for (auto& g : device::context_networks(120, 777)) gs.push_back(std::move(g));
    for (const char* f : {"data/onnx/inception_v3.onnx", "data/onnx/mobilenet_v2.onnx", "data/onnx/resnet18-v1-7-no-weight.onnx",
                          "data/onnx/resnet50.onnx", "data/onnx/squeezenet1_1.onnx"})
        gs.push_back(io::import_onnx(f));
    std::fprintf(stderr, "%zu graphs\n", gs.size());
    std::vector<device::FusionRules> rules;
    for (const char* f : {"data/devices/rules/ort-cpu-all.rules", "data/devices/rules/ort-cpu-basic.rules",
                          "data/devices/rules/ort-cpu-disabled.rules", "bench/results/kernel_check/rules_all_fixed.txt"})
        rules.push_back(device::FusionRules::parse(io::read_file(f)));
    std::hash<std::string> h;
    for (std::size_t r = 0; r < rules.size(); ++r)
        for (std::size_t i = 0; i < gs.size(); ++i) {
            try {
                const auto kg = device::kernel_graph(gs[i], rules[r]);
                std::printf("r%zu g%zu %zu %zx\n", r, i, kg.kernels.size(), h(kg.to_json(gs[i])));
            } catch (const error& e) { std::printf("r%zu g%zu error %s\n", r, i, e.what()); }
        }
    for (const char* m : {"data/devices/ort-cpu-all-1t.dnnc", "data/devices/ort-cpu-basic-1t.dnnc", "data/devices/ort-cpu-disabled-1t.dnnc"}) {
        auto model = device::DeviceModel::deserialize(io::read_file(m), m);
        std::vector<const graph::Graph*> ptrs;
        for (auto& g : gs) ptrs.push_back(&g);
        const auto p = model->predict_mean(ptrs);
        for (std::size_t i = 0; i < p.size(); ++i) std::printf("%s g%zu %.17g\n", m, i, p[i]);
        for (std::size_t i = 0; i < gs.size(); i += 7) { const graph::Graph* one[] = {&gs[i]}; std::printf("%s one g%zu %.17g\n", m, i, model->predict_mean(one)[0]); }
    }
}
