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
inline Arch parse(std::string_view text) {
    const spaces::ArchText at("fbnet", text);
    const auto tokens = spaces::split(text, '-');
    if (tokens.size() != num_layers)
        at.fail("expected 22 layer operators joined by '-', found " + std::to_string(tokens.size()));
    Arch a;
    for (std::size_t i = 0; i < tokens.size(); ++i) {
        std::size_t k = 0;
        while (k < op_names.size() && op_names[k] != tokens[i]) ++k;
        if (k == op_names.size())
            at.fail_token(i, tokens[i], "is not an operator (" + spaces::list_choices(op_names) + ")");
        a.ops[i] = static_cast<Op>(k);
    }
    return a;
}

inline std::string to_string(const Arch& a) {
    std::string s;
    for (std::size_t i = 0; i < a.ops.size(); ++i) {
        if (i) s += '-';
        s += op_names[static_cast<std::size_t>(a.ops[i])];
    }
    return s;
}

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
inline graph::Graph build_graph(const Arch& arch, const FbnetOptions& opt = {}) {
    if (opt.batch < 1) raise<config_error>("fbnet::build_graph: batch must be at least 1, got ", opt.batch);
    spaces::NetworkBuilder b("fbnet:" + to_string(arch));
    int x = b.input("input", {opt.batch, 3, 32, 32});
    x = b.unary("Relu", b.batch_norm(b.conv(x, 16, 3, 1, 1, "stem.conv"), "stem.bn"), "stem.relu");
    const auto shapes = layer_shapes();
    for (std::size_t i = 0; i < num_layers; ++i) {
        const auto [cin, cout, s] = shapes[i];
        const std::string n = "layer" + std::to_string(i + 1);
        const Op op = arch.ops[i];
        const bool keeps_shape = cin == cout && s == 1;
        if (op == Op::skip) {
            if (keeps_shape) continue;  // identity: no operator at all
            x = b.conv(x, cout, 1, s, 1, n + ".proj.conv");
            x = b.unary("Relu", b.batch_norm(x, n + ".proj.bn"), n + ".proj.relu");
            continue;
        }
        const auto [k, e, g] = op_shape(op);
        const std::int64_t mid = cin * e;
        int y = b.conv(x, mid, 1, 1, g, n + ".pw1.conv");
        y = b.unary("Relu", b.batch_norm(y, n + ".pw1.bn"), n + ".pw1.relu");
        if (g > 1) {
            const auto sh = b.shape(y);
            y = b.reshape(y, {sh[0], g, mid / g, sh[2], sh[3]}, n + ".shuffle.split");
            y = b.transpose(y, {0, 2, 1, 3, 4}, n + ".shuffle.swap");
            y = b.reshape(y, sh, n + ".shuffle.merge");
        }
        y = b.conv(y, mid, k, s, mid, n + ".dw.conv");
        y = b.unary("Relu", b.batch_norm(y, n + ".dw.bn"), n + ".dw.relu");
        y = b.batch_norm(b.conv(y, cout, 1, 1, g, n + ".pw2.conv"), n + ".pw2.bn");
        x = keeps_shape ? b.add(y, x, n + ".add") : y;
    }
    x = b.unary("Relu", b.batch_norm(b.conv(x, 1504, 1, 1, 1, "head.conv"), "head.bn"), "head.relu");
    x = b.flatten(b.global_average_pool(x, "pool"), "flatten");
    x = b.gemm(x, 100, "classifier");
    return b.finish({x});
}
inline graph::Graph build_graph(std::string_view arch, const FbnetOptions& opt = {}) {
    return build_graph(parse(arch), opt);
}

}  // namespace dnncost::fbnet
