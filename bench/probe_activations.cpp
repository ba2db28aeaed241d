// Fusion evidence for activation patterns that real networks use and the search spaces do not:
// SiLU (Sigmoid -> Mul with the Sigmoid's own input), GELU as exporters write it with erf
// (Div -> Erf -> Add -> Mul -> Mul) behind a MatMul with its bias, a squeeze-and-excitation gate,
// and Conv -> Clip (ReLU6). Two synthetic graphs carry them; the rule discovery measures the
// candidate patterns and every adjacent pair through the runner, as `dnncost device build` does.
//   dnncost_probe_activations --runner CMD --device NAME --out DIR
// writes DIR/fusion.csv (the store; resumable), DIR/fusion.rules and DIR/fusion.json (evidence),
// and the two graphs as ONNX models (DIR/probe-*.onnx), to be measured and priced whole.
#include <cstdio>
#include <exception>
#include <filesystem>
#include <string>
#include <vector>

#include <dnncost/device/fusion_probe.hpp>
#include <dnncost/device/fusion_rules.hpp>
#include <dnncost/measure/model_file.hpp>
#include <dnncost/spaces/builder.hpp>

using namespace dnncost;

namespace {

// x * sigmoid(x)
int silu(spaces::NetworkBuilder& b, int x, const std::string& name) {
    return b.mul(x, b.unary("Sigmoid", x, name + ".sigmoid"), name + ".mul");
}

// A mobile-network stage: convolutions with SiLU, a depthwise convolution, a squeeze-and-excitation
// gate, and a ReLU6 written as Clip with constant bounds.
graph::Graph conv_network() {
    spaces::NetworkBuilder b("probe-conv-activations");
    int x = b.input("input", {1, 32, 56, 56});
    x = silu(b, b.batch_norm(b.conv(x, 64, 3, 1, 1, "c1"), "c1.bn"), "c1.act");
    x = silu(b, b.batch_norm(b.conv(x, 64, 3, 1, 64, "dw"), "dw.bn"), "dw.act");
    int s = b.global_average_pool(x, "se.pool");
    s = silu(b, b.conv(s, 16, 1, 1, 1, "se.reduce"), "se.act");
    s = b.unary("Sigmoid", b.conv(s, 64, 1, 1, 1, "se.expand"), "se.gate");
    x = b.mul(x, s, "se.scale");
    x = b.batch_norm(b.conv(x, 96, 1, 1, 1, "c2"), "c2.bn");
    const auto shape = b.shape(x);
    x = b.op("Clip", "c2.relu6", {x, b.scalar("zero", 0.0), b.scalar("six", 6.0)}, shape);
    x = b.conv(x, 96, 3, 1, 1, "c3");
    return b.finish({x});
}

// A transformer block's MLP: MatMul + bias, GELU with erf, MatMul + bias.
graph::Graph mlp_network() {
    spaces::NetworkBuilder b("probe-gelu-erf");
    const int x = b.input("input", {1, 196, 192});
    const int h = b.add(b.matmul(x, b.weight("fc1.weight", {192, 768}), "fc1"), b.weight("fc1.bias", {768}), "fc1.bias_add");
    const int e = b.unary("Erf", b.binary("Div", h, b.scalar("sqrt2", 1.4142135623730951), "gelu.div"), "gelu.erf");
    const int g = b.mul(b.mul(h, b.add(e, b.scalar("one", 1.0), "gelu.add"), "gelu.mul"), b.scalar("half", 0.5), "gelu.half");
    const int y = b.add(b.matmul(g, b.weight("fc2.weight", {768, 192}), "fc2"), b.weight("fc2.bias", {192}), "fc2.bias_add");
    return b.finish({y});
}

}  // namespace

int main(int argc, char** argv) {
    std::string runner, device = "device", out;
    for (int i = 1; i < argc; i += 2) {
        const std::string a = argv[i];
        if (i + 1 == argc) {
            std::fprintf(stderr, "option %s needs a value\n", a.c_str());
            return 2;
        }
        if (a == "--runner") runner = argv[i + 1];
        else if (a == "--device") device = argv[i + 1];
        else if (a == "--out") out = argv[i + 1];
        else {
            std::fprintf(stderr, "unknown option %s\n", a.c_str());
            return 2;
        }
    }
    if (runner.empty() || out.empty()) {
        std::fprintf(stderr, "usage: dnncost_probe_activations --runner CMD --device NAME --out DIR\n");
        return 2;
    }
    try {
        const std::filesystem::path dir(out);
        std::filesystem::create_directories(dir);
        device::FusionProbeSetup s;
        s.runners = {runner};
        s.device = device;
        s.store = dir / "fusion.csv";
        s.rules_out = dir / "fusion.rules";
        s.evidence_out = dir / "fusion.json";
        s.discovery.candidate_patterns = device::FusionRules::parse(
                                             "dnncost-fusion-rules 1\n"
                                             "pattern Gelu Div Erf Add Mul Mul\n"
                                             "pattern Swish Sigmoid Mul\n",
                                             "probe_activations")
                                             .patterns;
        const std::vector<graph::Graph> graphs{conv_network(), mlp_network()};
        for (const auto& g : graphs) measure::write_model_for_runner(g, dir / (g.name() + ".onnx"), 1, 17);
        const auto r = device::probe_fusion_rules(graphs, s);
        std::printf("%s", r.discovery.rules.to_text().c_str());
        std::fprintf(stderr, "%zu failed measurements\n", r.failed);
        for (const auto& e : r.model_errors) std::fprintf(stderr, "model error: %s\n", e.c_str());
        return r.failed == 0 && r.model_errors.empty() ? 0 : 1;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "dnncost_probe_activations: %s\n", e.what());
        return 1;
    }
}
