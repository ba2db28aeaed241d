#pragma once
/// @file weight_init.hpp
/// Values for weights a graph has only the shapes of, so that an exported model runs (and a
/// runtime folds and fuses its constants) like a trained one:
/// - random values at the scale training leaves them, chosen by the operator and input slot that
///   read the weight: He-uniform by fan-in for Conv, ConvTranspose, Gemm and MatMul weights,
///   BatchNormalization scale near 1, mean near 0 and variance positive, small biases, factors
///   near 1 for Mul and Div;
/// - exact values for constants the graph's shapes determine (the target of a Reshape or Expand,
///   the scales or sizes of a Resize, the repeats of a Tile).
/// Each weight draws from its own stream, seeded by the export seed and the weight's name, so its
/// values do not depend on the other weights.
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <dnncost/graph/graph.hpp>
#include <dnncost/io/onnx/options.hpp>

namespace dnncost::io::detail::onnx_impl {

/// The node and input slot that first read a tensor.
struct WeightUse {
    const graph::Node* node = nullptr;
    std::size_t slot = 0;
};

inline std::optional<WeightUse> first_use(const graph::Graph& g, int tensor) {
    for (int consumer : g.tensor(tensor).consumers) {
        const auto& node = g.node(consumer);
        for (std::size_t slot = 0; slot < node.inputs.size(); ++slot)
            if (node.inputs[slot] == tensor) return WeightUse{&node, slot};
    }
    return std::nullopt;
}

/// Random values are drawn uniformly from [low, high].
struct ValueRange {
    double low = 0.0;
    double high = 0.0;
};

/// He-uniform: variance 2 / fan_in, which keeps activations at their scale through ReLU layers.
inline ValueRange he_uniform(std::int64_t fan_in) {
    const double bound = std::sqrt(6.0 / static_cast<double>(std::max<std::int64_t>(fan_in, 1)));
    return {-bound, bound};
}

inline constexpr ValueRange small_offset{-0.05, 0.05};  // biases, means, additive constants
inline constexpr ValueRange near_one{0.9, 1.1};         // scales and factors
inline std::int64_t product_from(const graph::Shape& shape, std::size_t first) {
    std::int64_t product = 1;
    for (std::size_t k = first; k < shape.size(); ++k) product *= shape[k];
    return product;
}

/// The range of a float weight's random values, from the operator and slot that read it.
inline ValueRange initial_range(const graph::Graph& g, int tensor) {
    const auto use = first_use(g, tensor);
    if (!use) return small_offset;
    const graph::Node& node = *use->node;
    const std::size_t slot = use->slot;
    const graph::Shape& shape = g.tensor(tensor).shape;
    const std::size_t rank = shape.size();
    const std::string& op = node.op_type;
    if (op == "Conv" || op == "ConvTranspose") return slot == 1 ? he_uniform(product_from(shape, 1)) : small_offset;
    if (op == "Gemm" && rank == 2) {
        if (slot == 0) return he_uniform(node.attr_int("transA", 0) ? shape[0] : shape[1]);
        if (slot == 1) return he_uniform(node.attr_int("transB", 0) ? shape[1] : shape[0]);
        return small_offset;
    }
    if (op == "MatMul" && rank >= 1) {
        if (slot == 1) return he_uniform(rank >= 2 ? shape[rank - 2] : shape[0]);
        return he_uniform(shape[rank - 1]);
    }
    if (op == "BatchNormalization") {
        if (slot == 1) return near_one;    // scale
        if (slot == 4) return {0.5, 1.5};  // variance: positive
        return small_offset;               // bias, mean
    }
    if (op == "InstanceNormalization" || op == "LayerNormalization" || op == "GroupNormalization")
        return slot == 1 ? near_one : small_offset;
    if (op == "LSTM" || op == "GRU" || op == "RNN") {
        const double bound =
            1.0 / std::sqrt(static_cast<double>(std::max<std::int64_t>(node.attr_int("hidden_size", 1), 1)));
        return slot <= 3 ? ValueRange{-bound, bound} : ValueRange{};  // W, R, B; initial states zero
    }
    if (op == "Mul" || op == "Div" || op == "Pow" || op == "Sqrt" || op == "Reciprocal" || op == "Log")
        return near_one;  // a divisor or a logarithm's argument must stay away from zero
    if (op == "PRelu") return {0.2, 0.3};
    if (op == "Clip") return slot == 1 ? ValueRange{0.0, 0.0} : ValueRange{6.0, 6.0};  // ReLU6 bounds
    if (op == "Pad") return {};                                                        // the padding value
    if (op == "QuantizeLinear" || op == "DequantizeLinear") return {0.01, 0.02};       // a scale
    if (op == "Gather" && slot == 0) return {-1.0, 1.0};                               // an embedding table
    return small_offset;
}

/// The values a constant must have given the shapes of the node that reads it (the target of a
/// Reshape, Expand or ConstantOfShape; the scales, sizes and region of a Resize; Tile's
/// repeats), or nullopt when the shapes do not determine them.
inline std::optional<TensorValues> values_from_shapes(const graph::Graph& g, int tensor, int opset) {
    const auto use = first_use(g, tensor);
    if (!use || use->node->outputs.empty() || use->node->inputs.empty() || use->node->inputs[0] < 0)
        return std::nullopt;
    const graph::Node& node = *use->node;
    const std::size_t slot = use->slot;
    const auto& count_shape = g.tensor(tensor).shape;
    const auto count = static_cast<std::size_t>(graph::numel(count_shape));
    const graph::Shape& out = g.tensor(node.outputs[0]).shape;
    const graph::Shape& in = g.tensor(node.inputs[0]).shape;
    const std::string& op = node.op_type;
    TensorValues values;
    const bool output_shape = (op == "Reshape" && slot == 1) || (op == "Expand" && slot == 1) ||
                              (op == "ConstantOfShape" && slot == 0) || (op == "Resize" && slot == 3 && opset >= 11);
    if (output_shape) {
        if (count != out.size()) return std::nullopt;
        values.integers = out;
        return values;
    }
    if (in.size() != out.size()) return std::nullopt;
    if (op == "Tile" && slot == 1) {
        if (count != out.size()) return std::nullopt;
        for (std::size_t k = 0; k < out.size(); ++k) {
            if (in[k] == 0 || out[k] % in[k] != 0) return std::nullopt;
            values.integers.push_back(out[k] / in[k]);
        }
        return values;
    }
    const bool scales = (op == "Upsample" && slot == 1) || (op == "Resize" && slot == (opset >= 11 ? 2u : 1u));
    if (scales) {
        if (count == 0) return values;  // no scales: the sizes input gives the output shape
        if (count != out.size()) return std::nullopt;
        for (std::size_t k = 0; k < out.size(); ++k) {
            if (in[k] == 0) return std::nullopt;
            values.reals.push_back(static_cast<float>(static_cast<double>(out[k]) / static_cast<double>(in[k])));
        }
        return values;
    }
    if (op == "Resize" && slot == 1 && opset >= 11) {  // region of interest: the whole input
        if (count == 0) return values;
        if (count != 2 * in.size()) return std::nullopt;
        values.reals.assign(in.size(), 0.0f);
        values.reals.resize(2 * in.size(), 1.0f);
        return values;
    }
    return std::nullopt;
}

/// splitmix64's output function: a bijective mix of 64 bits.
inline std::uint64_t mix64(std::uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/// The seed of one weight's stream: the export seed and the FNV-1a hash of the weight's name.
inline std::uint64_t weight_seed(std::uint64_t seed, std::string_view name) {
    std::uint64_t hash = 0xcbf29ce484222325ULL;
    for (unsigned char c : name) hash = (hash ^ c) * 0x100000001b3ULL;
    return mix64(seed ^ mix64(hash));
}

/// Uniform values in [low, high) from a counter-based stream (splitmix64): element k depends only
/// on the stream's seed and k, so values are written in place, in any order, without an engine.
struct UniformStream {
    std::uint64_t seed = 0;
    ValueRange range;
    float operator()(std::size_t k) const {
        const std::uint64_t bits = mix64(seed + 0x9e3779b97f4a7c15ULL * (static_cast<std::uint64_t>(k) + 1));
        const double unit = static_cast<double>(bits >> 11) * 0x1.0p-53;
        return static_cast<float>(range.low + (range.high - range.low) * unit);
    }
};

/// The seeded random values of a float weight (see initial_range).
inline UniformStream random_values(const graph::Graph& g, int tensor, std::uint64_t seed) {
    return UniformStream{weight_seed(seed, g.tensor(tensor).name), initial_range(g, tensor)};
}

}  // namespace dnncost::io::detail::onnx_impl
