// Every search space's graphs written as ONNX: the checker accepts them, ONNX's own strict shape
// inference (with the builder's shapes removed from the file) finds the builder's shape for
// every tensor, and the file imports back to the identical graph.
#include <doctest/doctest.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <dnncost/core/rng.hpp>
#include <dnncost/io/file.hpp>
#include <dnncost/io/onnx.hpp>
#include <dnncost/io/onnx/proto.hpp>  // ONNX messages, built and read here
#include <dnncost/spaces/registry.hpp>

using namespace dnncost;
namespace fs = std::filesystem;

namespace {

fs::path temp_dir() {
    auto d = fs::path(DNNCOST_BINARY_DIR) / "test_spaces_onnx_tmp";
    fs::create_directories(d);
    return d;
}

graph::Shape shape_of(const onnx::ValueInfoProto& v) {
    graph::Shape s;
    for (const auto& d : v.type().tensor_type().shape().dim()) s.push_back(d.has_dim_value() ? d.dim_value() : -1);
    return s;
}

// Export, check, infer, import; `file` is written for a later run in a runtime.
void check_export(const graph::Graph& g, int opset, const fs::path& file) {
    CAPTURE(g.name());
    io::OnnxExportOptions eo;
    eo.opset = opset;
    io::export_onnx(g, file, eo);
    const auto bytes = io::read_file(file);
    onnx::ModelProto m;
    REQUIRE(m.ParseFromString(bytes));
    CHECK_NOTHROW(onnx::checker::check_model(m));
    // Full check: drop every recorded activation shape and let ONNX infer them all, strictly.
    onnx::ModelProto bare = m;
    bare.mutable_graph()->clear_value_info();
    for (auto& o : *bare.mutable_graph()->mutable_output()) o.mutable_type()->mutable_tensor_type()->clear_shape();
    REQUIRE_NOTHROW(onnx::shape_inference::InferShapes(bare, onnx::OpSchemaRegistry::Instance(),
                                                       onnx::ShapeInferenceOptions(true, 1, false)));
    std::map<std::string, graph::Shape> inferred;
    for (const auto& v : bare.graph().value_info()) inferred[v.name()] = shape_of(v);
    for (const auto& v : bare.graph().output()) inferred[v.name()] = shape_of(v);
    int compared = 0;
    for (const auto& t : g.tensors()) {
        if (t.kind != graph::TensorKind::activation) continue;
        CAPTURE(t.name);
        const auto it = inferred.find(t.name);
        REQUIRE(it != inferred.end());
        CHECK(it->second == t.shape);
        ++compared;
    }
    CHECK(compared == static_cast<int>(g.num_tensors() - g.inputs().size() - g.weights().size()));
    const auto back = io::import_onnx(file);
    CHECK(back == g);
}

}  // namespace

TEST_CASE("spaces onnx: sampled architectures of every space export, infer and re-import exactly") {
    const auto dir = temp_dir();
    Rng rng(2025);
    for (const auto& space : spaces::all_spaces()) {
        for (int i = 0; i < 4; ++i) {
            const std::string arch = space.sample(rng);
            CAPTURE(arch);
            check_export(space.build_graph(arch, {}), space.onnx_opset,
                         dir / (std::string(space.name) + "_" + std::to_string(i) + ".onnx"));
        }
    }
}

TEST_CASE("spaces onnx: options and variants export too") {
    const auto dir = temp_dir();
    Rng rng(7);
    // OFA at width 1.0 and a lowered resolution, ViT with a decomposed layer norm at opset 13,
    // and a batch of 2 in every space
    const auto& ofa = spaces::find_space("ofa");
    check_export(ofa.build_graph(ofa.sample(rng), spaces::space_options("width=1.0,resolution=160")), ofa.onnx_opset,
                 dir / "ofa_w10_r160.onnx");
    const auto& vit = spaces::find_space("vit");
    check_export(vit.build_graph(vit.sample(rng), spaces::space_options("layer_norm=decomposed")), 13,
                 dir / "vit_decomposed.onnx");
    for (const auto& space : spaces::all_spaces())
        check_export(space.build_graph(space.sample(rng), spaces::space_options("batch=2")), space.onnx_opset,
                     dir / (std::string(space.name) + "_batch2.onnx"));
}

TEST_CASE("spaces onnx: the opset a space declares is needed") {
    // HardSwish is opset 14, LayerNormalization opset 17: older opsets are refused by name
    const auto& ofa = spaces::find_space("ofa");
    Rng rng(1);
    CHECK_THROWS_WITH_AS(io::export_onnx_bytes(ofa.build_graph(ofa.sample(rng), {}), io::OnnxExportOptions{13, "t"}),
                         doctest::Contains("HardSwish"), config_error);
    const auto& vit = spaces::find_space("vit");
    CHECK_THROWS_WITH_AS(io::export_onnx_bytes(vit.build_graph(vit.sample(rng), {}), io::OnnxExportOptions{16, "t"}),
                         doctest::Contains("LayerNormalization"), config_error);
}
