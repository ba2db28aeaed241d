#pragma once
// Hand-built operator graphs for the kernel pass and the fusion discovery tests.
#include <cstdint>
#include <string>
#include <vector>

#include <dnncost/graph/graph.hpp>

namespace kg_fixtures {

using dnncost::graph::Graph;
using Ints = std::vector<std::int64_t>;

/// A k x k convolution with "same" padding, `group` groups, no bias unless asked.
inline int conv(Graph& g, const std::string& name, int x, std::int64_t out_channels, std::int64_t k,
                std::int64_t stride = 1, std::int64_t group = 1, bool bias = false) {
    const auto s = g.tensor(x).shape;
    const std::int64_t pad = k / 2;
    const std::int64_t oh = (s[2] + 2 * pad - k) / stride + 1, ow = (s[3] + 2 * pad - k) / stride + 1;
    std::vector<int> in{x, g.add_weight(name + ".w", {out_channels, s[1] / group, k, k})};
    if (bias) in.push_back(g.add_weight(name + ".b", {out_channels}));
    return g.add_op("Conv", name, in, {s[0], out_channels, oh, ow},
                    {{"kernel_shape", Ints{k, k}},
                     {"strides", Ints{stride, stride}},
                     {"pads", Ints{pad, pad, pad, pad}},
                     {"group", group}});
}

/// Inference BatchNormalization: four per-channel constants.
inline int batch_norm(Graph& g, const std::string& name, int x) {
    const auto s = g.tensor(x).shape;
    std::vector<int> in{x};
    for (const char* p : {".scale", ".bias", ".mean", ".var"}) in.push_back(g.add_weight(name + p, {s[1]}));
    return g.add_op("BatchNormalization", name, in, s);
}

/// An operator whose output has the shape of its first input.
inline int same(Graph& g, const std::string& op, const std::string& name, std::vector<int> inputs) {
    const auto s = g.tensor(inputs.front()).shape;
    return g.add_op(op, name, std::move(inputs), s);
}

/// A scalar constant (known value) named `name`.
inline int scalar(Graph& g, const std::string& name, double value) {
    const int t = g.add_weight(name, {});
    g.set_data(t, {value});
    return t;
}

/// LayerNorm over the last axis written out as ONNX exporters of older opsets do:
/// ReduceMean Sub Pow ReduceMean Add Sqrt Div Mul Add.
inline int layer_norm_decomposed(Graph& g, const std::string& p, int x) {
    auto s = g.tensor(x).shape;
    auto reduced = s;
    reduced.back() = 1;
    const Ints axes{-1};
    const int mean = g.add_op("ReduceMean", p + ".mean", {x}, reduced, {{"axes", axes}});
    const int d = g.add_op("Sub", p + ".sub", {x, mean}, s);
    const int sq = g.add_op("Pow", p + ".pow", {d, scalar(g, p + ".two", 2.0)}, s);
    const int var = g.add_op("ReduceMean", p + ".var", {sq}, reduced, {{"axes", axes}});
    const int ve = g.add_op("Add", p + ".eps", {var, scalar(g, p + ".epsilon", 1e-5)}, reduced);
    const int sd = g.add_op("Sqrt", p + ".sqrt", {ve}, reduced);
    const int nrm = g.add_op("Div", p + ".div", {d, sd}, s);
    const int sc = g.add_op("Mul", p + ".scale", {nrm, g.add_weight(p + ".gamma", {s.back()})}, s);
    return g.add_op("Add", p + ".shift", {sc, g.add_weight(p + ".beta", {s.back()})}, s);
}

}  // namespace kg_fixtures
