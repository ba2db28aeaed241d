#pragma once
/// @file reference_model_impl.hpp
/// The definitions of reference_model.hpp: compiled once into dnncost::compiled in compiled mode
/// (core/config.hpp), included by reference_model.hpp in header-only mode.
#include <dnncost/measure/reference_model.hpp>

DNNCOST_FUNC auto dnncost::measure::reference_graph() -> graph::Graph {
    spaces::NetworkBuilder b("dnncost-reference-1");
    int x = b.input("input", {1, 16, 32, 32});
    x = b.unary("Relu", b.conv(x, 32, 3, 1, 1, "conv1"), "relu1");
    x = b.unary("Relu", b.conv(x, 64, 3, 2, 1, "conv2"), "relu2");
    x = b.unary("Relu", b.conv(x, 64, 3, 1, 1, "conv3"), "relu3");
    x = b.flatten(x, "flatten");
    x = b.gemm(x, 64, "fc");
    return b.finish({x});
}
