#pragma once
/// @file fbnet.hpp
/// The FBNet search space in HW-NAS-Bench's CIFAR-100 variant: architecture strings (the `arch`
/// column of data/fbnet/latency_ms.csv), seeded sampling, the size of the space and the operator
/// graph of the network (data/fbnet/SPEC.md is the exact specification this follows).
///
/// Network: stem Conv3x3(3->16)+BN+ReLU; 22 searchable layers in 7 stages (widths 16, 24, 32,
/// 64, 112, 184, 352; 1, 4, 4, 4, 4, 4, 1 layers; strides 1, 1, 2, 2, 1, 2, 1); head
/// Conv1x1(352->1504)+BN+ReLU, global average pooling, Linear(1504->100).
/// A layer is ConvBlock(k, e, g): grouped 1x1 expansion + BN + ReLU, channel shuffle when g > 1
/// (Reshape, Transpose, Reshape), depthwise kxk + BN + ReLU, grouped 1x1 projection + BN, and a
/// residual Add when the shape is kept; or `skip`: identity when the shape is kept, otherwise
/// Conv1x1 (with the stride) + BN + ReLU.
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <dnncost/core/config.hpp>
#include <dnncost/core/error.hpp>
#include <dnncost/core/rng.hpp>
#include <dnncost/graph/graph.hpp>
#include <dnncost/spaces/builder.hpp>
#include <dnncost/spaces/count.hpp>
#include <dnncost/spaces/parse.hpp>

namespace dnncost::fbnet {

/// The nine candidates of a layer, numbered as HELP's `op_idx_list` (and HW-NAS-Bench's list).
enum class Op : std::uint8_t { k3_e1, k3_e1_g2, k3_e3, k3_e6, k5_e1, k5_e1_g2, k5_e3, k5_e6, skip };
inline constexpr std::array<std::string_view, 9> op_names{"k3_e1",    "k3_e1_g2", "k3_e3", "k3_e6", "k5_e1",
                                                          "k5_e1_g2", "k5_e3",    "k5_e6", "skip"};
inline constexpr int num_ops = 9;
inline constexpr int num_layers = 22;

/// Kernel, expansion and groups of a ConvBlock candidate (`skip` has none).
struct OpShape {
    std::int64_t kernel = 0, expansion = 0, groups = 0;
};
inline constexpr OpShape op_shape(Op op) {
    switch (op) {
        case Op::k3_e1:
            return {3, 1, 1};
        case Op::k3_e1_g2:
            return {3, 1, 2};
        case Op::k3_e3:
            return {3, 3, 1};
        case Op::k3_e6:
            return {3, 6, 1};
        case Op::k5_e1:
            return {5, 1, 1};
        case Op::k5_e1_g2:
            return {5, 1, 2};
        case Op::k5_e3:
            return {5, 3, 1};
        case Op::k5_e6:
            return {5, 6, 1};
        case Op::skip:
            return {};
    }
    return {};
}

/// Input and output channels and stride of each searchable layer (SPEC.md, table of §1.3).
struct LayerShape {
    std::int64_t in_channels, out_channels, stride;
};
inline constexpr std::array<LayerShape, num_layers> layer_shapes() {
    constexpr std::array<std::int64_t, 7> width{16, 24, 32, 64, 112, 184, 352};
    constexpr std::array<int, 7> layers{1, 4, 4, 4, 4, 4, 1};
    constexpr std::array<std::int64_t, 7> stride{1, 1, 2, 2, 1, 2, 1};
    std::array<LayerShape, num_layers> r{};
    std::int64_t c = 16;
    std::size_t i = 0;
    for (std::size_t s = 0; s < 7; ++s)
        for (int j = 0; j < layers[s]; ++j, ++i) {
            r[i] = {c, width[s], j == 0 ? stride[s] : 1};
            c = width[s];
        }
    return r;
}

/// One network: the operator of each of the 22 layers.
struct Arch {
    std::array<Op, num_layers> ops{};
    friend bool operator==(const Arch&, const Arch&) = default;
};

/// Parses 22 operator names joined by '-'. @throws parse_error naming the bad token
DNNCOST_FUNC Arch parse(std::string_view text);

DNNCOST_FUNC std::string to_string(const Arch& a);

/// The number of architectures: 9^22.
inline spaces::Count size() { return spaces::Count::power(num_ops, num_layers); }

/// Every layer's operator drawn independently and uniformly: a uniform draw from the space.
inline Arch sample(Rng& rng) {
    Arch a;
    for (auto& op : a.ops) op = static_cast<Op>(rng.below(num_ops));
    return a;
}

/// Operator counts (how many layers use each candidate), the additive view of the network.
inline std::array<int, num_ops> op_counts(const Arch& a) {
    std::array<int, num_ops> c{};
    for (auto op : a.ops) ++c[static_cast<std::size_t>(op)];
    return c;
}

struct FbnetOptions {
    std::int64_t batch = 1;
};

/// The operator graph of the network. @throws config_error for a batch below 1
DNNCOST_FUNC graph::Graph build_graph(const Arch& arch, const FbnetOptions& opt = {});
inline graph::Graph build_graph(std::string_view arch, const FbnetOptions& opt = {}) {
    return build_graph(parse(arch), opt);
}

}  // namespace dnncost::fbnet

#if !defined(DNNCOST_COMPILED)
#include <dnncost/spaces/fbnet_impl.hpp>
#endif
