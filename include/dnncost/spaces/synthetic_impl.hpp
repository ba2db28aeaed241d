#pragma once
/// @file synthetic_impl.hpp
/// The definitions of synthetic.hpp: compiled once into dnncost::compiled in compiled mode
/// (core/config.hpp), included by synthetic.hpp in header-only mode.
#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include <dnncost/spaces/parse.hpp>
#include <dnncost/spaces/synthetic.hpp>
#include <dnncost/spaces/transformer_layer.hpp>

namespace dnncost::synthetic::detail {

/// The block kinds as descriptions write them, in the order of Block.
inline constexpr const char* block_names[] = {"basic",   "bottleneck", "inverted", "branched",
                                              "grouped", "shuffle",    "dwmlp",    "plain"};
inline constexpr std::int64_t default_classes = Limits{}.classes;

/// A channel count as networks write them: a multiple of 8, at least 8.
inline std::int64_t round8(double x) { return std::max<std::int64_t>(8, static_cast<std::int64_t>((x + 4.0) / 8.0) * 8); }

template <class T, std::size_t N>
T pick(Rng& rng, const T (&choices)[N]) {
    return choices[rng.below(N)];
}

inline bool fits(const NetworkSize& s, const Limits& l) { return s.params <= l.max_params && s.macs <= l.max_macs; }

class CnnBuilder {
public:
    CnnBuilder(const CnnArch& a, const Limits& l) : m_a(a), m_l(l), m_b(network_name(a, l)) {}

    graph::Graph build() {
        int x = m_b.input("input", {1, 3, m_a.resolution, m_a.resolution});
        const bool mlp = m_a.block == Block::depthwise_mlp, plain = m_a.block == Block::plain;
        if (mlp) {
            x = m_b.conv(x, spaces::ConvSpec{m_a.stem, {4, 4}, {4, 4}, {}, 1, true}, "stem.conv");
            x = channel_norm(x, "stem");
        } else if (plain) {
            const auto k = m_a.stem_kernel > 0 ? m_a.stem_kernel : m_a.stem_pool ? 7 : 3;
            x = biased_conv(x, m_a.stem, k, m_a.stem_stride > 0 ? m_a.stem_stride : 2, "stem");
        } else {
            x = conv_bn(x, m_a.stem, m_a.stem_pool ? 7 : 3, 2, 1, "stem", true);
        }
        if (m_a.stem_pool && !mlp) x = m_b.max_pool(x, 3, 2, 1, "stem.pool");
        for (std::size_t s = 0; s < m_a.stages.size(); ++s) {
            const auto& st = m_a.stages[s];
            const auto sn = "stage" + std::to_string(s);
            // plain and depthwise_mlp stages change resolution and width on entry, not in a block
            if (plain && st.stride > 1) x = m_b.max_pool(x, 2, 2, std::nullopt, sn + ".pool");
            if (mlp && (st.stride > 1 || m_b.shape(x)[1] != st.width)) {
                x = channel_norm(x, sn + ".down");
                x = m_b.conv(x, spaces::ConvSpec{st.width, {st.stride, st.stride}, {st.stride, st.stride}, {}, 1, true},
                             sn + ".down.conv");
            }
            for (int j = 0; j < st.depth; ++j)
                x = block(x, st, j == 0 && !plain && !mlp ? st.stride : 1, sn + ".block" + std::to_string(j));
        }
        if (m_a.feature_mix > 0) x = conv_bn(x, m_a.feature_mix, 1, 1, 1, "feature_mix", true);
        if (mlp) {
            x = spaces::layer_norm(m_b, m_b.reduce_mean(x, {2, 3}, false, "head.pool"), false, "head.norm");
        } else if (m_a.flatten) {
            if (m_b.shape(x)[2] > 8) x = m_b.max_pool(x, 2, 2, std::nullopt, "head.pool");
            x = m_b.flatten(x, "head.flatten");
        } else {
            x = m_b.flatten(m_b.global_average_pool(x, "head.pool"), "head.flatten");
        }
        for (int h = 0; m_a.hidden > 0 && h < m_a.hidden_layers; ++h) {
            const auto hn = "head.hidden" + (h ? std::to_string(h + 1) : std::string());
            x = m_b.unary("Relu", m_b.gemm(x, m_a.hidden, hn), hn + ".act");
        }
        x = m_b.gemm(x, m_l.classes, "classifier");
        return m_b.finish({x});
    }

private:
    // a layer norm over the channels of an NCHW map, between transposes to and from channels-last
    int channel_norm(int x, const std::string& n) {
        x = m_b.transpose(x, {0, 2, 3, 1}, n + ".to_channels_last");
        x = spaces::layer_norm(m_b, x, false, n + ".norm");
        return m_b.transpose(x, {0, 3, 1, 2}, n + ".to_channels_first");
    }
    int biased_conv(int x, std::int64_t out, std::int64_t k, std::int64_t stride, const std::string& n) {
        const auto p = k / 2;
        x = m_b.conv(x, spaces::ConvSpec{out, {k, k}, {stride, stride}, {p, p, p, p}, 1, true}, n + ".conv");
        return act(x, n + ".act");
    }
    int act(int x, const std::string& n) {
        if (m_a.act == "Clip")
            return m_b.op("Clip", n, {x, m_b.scalar("const.zero", 0.0), m_b.scalar("const.six", 6.0)}, m_b.shape(x));
        if (m_a.act == "Swish") return m_b.mul(x, m_b.unary("Sigmoid", x, n + ".sigmoid"), n);
        return m_b.unary(m_a.act, x, n);
    }
    int conv_bn(int x, std::int64_t out, std::int64_t k, std::int64_t stride, std::int64_t group, const std::string& n,
                bool with_act) {
        x = m_b.batch_norm(m_b.conv(x, out, k, stride, group, n + ".conv"), n + ".bn");
        return with_act ? act(x, n + ".act") : x;
    }
    int shortcut(int x, const graph::Shape& to, std::int64_t stride, const std::string& n) {
        if (m_b.shape(x) == to) return x;
        return conv_bn(x, to[1], 1, stride, 1, n + ".shortcut", false);
    }
    int block(int x, const CnnStage& st, std::int64_t stride, const std::string& n) {
        const auto in = m_b.shape(x)[1];
        switch (m_a.block) {
            case Block::basic: {
                int y = conv_bn(x, st.width, st.kernel, stride, 1, n + ".conv1", true);
                y = conv_bn(y, st.width, st.kernel, 1, 1, n + ".conv2", false);
                return act(m_b.add(y, shortcut(x, m_b.shape(y), stride, n), n + ".add"), n + ".out");
            }
            case Block::bottleneck: {
                const auto inner = round8(static_cast<double>(st.width) / 4.0);
                int y = conv_bn(x, inner, 1, 1, 1, n + ".reduce", true);
                y = conv_bn(y, inner, st.kernel, stride, 1, n + ".spatial", true);
                y = conv_bn(y, st.width, 1, 1, 1, n + ".expand", false);
                return act(m_b.add(y, shortcut(x, m_b.shape(y), stride, n), n + ".add"), n + ".out");
            }
            case Block::inverted: {
                const auto hidden = round8(static_cast<double>(in * st.expand));
                int y = st.expand > 1 ? conv_bn(x, hidden, 1, 1, 1, n + ".expand", true) : x;
                const auto dw = m_b.shape(y)[1];
                y = conv_bn(y, dw, st.kernel, stride, dw, n + ".depthwise", true);
                if (st.squeeze_excite) {
                    int s = m_b.global_average_pool(y, n + ".se.pool");
                    s = m_b.unary("Relu", m_b.conv(s, spaces::ConvSpec{round8(double(dw) / 4.0), {1, 1}, {1, 1}, {}, 1, true},
                                                    n + ".se.reduce"),
                                  n + ".se.act");
                    s = m_b.conv(s, spaces::ConvSpec{dw, {1, 1}, {1, 1}, {}, 1, true}, n + ".se.expand");
                    s = m_b.unary("HardSigmoid", s, n + ".se.gate");
                    y = m_b.mul(y, s, n + ".se.scale");
                }
                y = conv_bn(y, st.width, 1, 1, 1, n + ".project", false);
                return stride == 1 && in == st.width ? m_b.add(x, y, n + ".add") : y;
            }
            case Block::branched: return branched(x, st, stride, n);
            case Block::grouped: {
                const auto gw = st.group_width;
                const auto inner = std::max(gw, st.width / st.inner_divisor / gw * gw);
                int y = conv_bn(x, inner, 1, 1, 1, n + ".reduce", true);
                y = conv_bn(y, inner, st.kernel, stride, inner / gw, n + ".grouped", true);
                y = conv_bn(y, st.width, 1, 1, 1, n + ".expand", false);
                return act(m_b.add(y, shortcut(x, m_b.shape(y), stride, n), n + ".add"), n + ".out");
            }
            case Block::shuffle:
                return shuffled(x, st, stride, n);
            case Block::depthwise_mlp: {
                const auto w = m_b.shape(x)[1], p = st.kernel / 2;
                int y = m_b.conv(x, spaces::ConvSpec{w, {st.kernel, st.kernel}, {1, 1}, {p, p, p, p}, w, true},
                                 n + ".depthwise");
                y = m_b.transpose(y, {0, 2, 3, 1}, n + ".to_channels_last");
                y = spaces::layer_norm(m_b, y, false, n + ".norm");
                y = spaces::gelu(m_b, m_b.linear(y, st.expand * w, n + ".mlp1"), true, n + ".gelu");
                y = m_b.linear(y, w, n + ".mlp2");
                y = m_b.mul(y, m_b.weight(n + ".layer_scale", {w}), n + ".layer_scale");
                y = m_b.transpose(y, {0, 3, 1, 2}, n + ".to_channels_first");
                return m_b.add(x, y, n + ".add");
            }
            case Block::plain: {
                const auto p = st.kernel / 2;
                x = m_b.conv(x, spaces::ConvSpec{st.width, {st.kernel, st.kernel}, {1, 1}, {p, p, p, p}, 1, true},
                             n + ".conv");
                return act(x, n + ".act");
            }
        }
        return x;
    }
    // One unit of channel-split blocks: at stride 1 with the width kept, half the channels pass
    // and half go through 1x1, depthwise k x k, 1x1; otherwise both halves come from the whole
    // input (a depthwise k x k and 1x1 on one side). The halves are then interleaved.
    int shuffled(int x, const CnnStage& st, std::int64_t stride, const std::string& n) {
        const auto in = m_b.shape(x)[1];
        const auto half = st.width / 2;
        const auto branch = [&](int y, std::int64_t c, const std::string& bn) {
            y = conv_bn(y, c, 1, 1, 1, bn + ".reduce", true);
            y = conv_bn(y, c, st.kernel, stride, c, bn + ".depthwise", false);
            return conv_bn(y, c, 1, 1, 1, bn + ".expand", true);
        };
        int left, right;
        if (stride == 1 && in == st.width) {
            const auto parts = m_b.split(x, 1, {in / 2, in - in / 2}, n + ".split");
            left = parts[0];
            right = branch(parts[1], in - in / 2, n + ".right");
        } else {
            left = conv_bn(x, in, st.kernel, stride, in, n + ".left.depthwise", false);
            left = conv_bn(left, st.width - half, 1, 1, 1, n + ".left.expand", true);
            right = branch(x, half, n + ".right");
        }
        const int y = m_b.concat({left, right}, 1, n + ".concat");
        const auto s = m_b.shape(y);
        if (s[1] % 2 != 0) return y;
        return m_b.channel_shuffle(y, 2, n + ".shuffle");
    }
    // A dense block keeps its input as one more branch (when it keeps the resolution); the
    // others then add what the stage's width asks beyond it, at least 8 channels each.
    int branched(int x, const CnnStage& st, std::int64_t stride, const std::string& n) {
        const auto in = m_b.shape(x)[1];
        const bool keep_input = st.dense && stride == 1;
        const auto added = keep_input ? std::max<std::int64_t>(8, st.width - in) : st.width;
        const auto each = round8(static_cast<double>(added) / st.branches);
        const auto reduce = round8(static_cast<double>(each) * 0.75);
        std::vector<int> parts;
        if (keep_input) parts.push_back(x);
        for (int b = 0; b < st.branches; ++b) {
            const auto bn = n + ".branch" + std::to_string(b);
            if (b == 0) {
                parts.push_back(conv_bn(x, each, 1, stride, 1, bn + ".conv", true));
            } else if (b == 1) {
                const int y = conv_bn(x, reduce, 1, 1, 1, bn + ".reduce", true);
                parts.push_back(conv_bn(y, each, st.kernel, stride, 1, bn + ".conv", true));
            } else if (b == 2) {
                int y = conv_bn(x, reduce, 1, 1, 1, bn + ".reduce", true);
                y = conv_bn(y, each, st.kernel, 1, 1, bn + ".conv1", true);
                parts.push_back(conv_bn(y, each, st.kernel, stride, 1, bn + ".conv2", true));
            } else {
                const int p = m_b.max_pool(x, 3, stride, 1, bn + ".pool");
                parts.push_back(conv_bn(p, each, 1, 1, 1, bn + ".conv", true));
            }
        }
        return m_b.concat(parts, 1, n + ".concat");
    }

    const CnnArch& m_a;
    const Limits& m_l;
    spaces::NetworkBuilder m_b;
};

class TransformerBuilder {
public:
    TransformerBuilder(const TransformerArch& a, const Limits& l) : m_a(a), m_l(l), m_b(network_name(a, l)) {}

    graph::Graph build() {
        const std::int64_t D = m_a.embed;
        int x;
        if (m_a.patch > 0) {
            const auto side = static_cast<std::int64_t>(std::lround(std::sqrt(static_cast<double>(m_a.tokens))));
            const auto P = m_a.patch;
            x = m_b.input("input", {1, 3, side * P, side * P});
            x = m_b.conv(x, spaces::ConvSpec{D, {P, P}, {P, P}, {0, 0, 0, 0}, 1, true}, "patch_embed");
            x = m_b.reshape(x, {1, D, side * side}, "patch_embed.flatten");
            x = m_b.transpose(x, {0, 2, 1}, "patch_embed.to_tokens");
        } else {
            x = m_b.input("tokens", {1, m_a.tokens, D});
        }
        if (m_a.cls_token) x = m_b.concat({m_b.weight("cls_token", {1, 1, D}), x}, 1, "cls_token.concat");
        x = m_b.add(x, m_b.weight("pos_embed", {1, m_b.shape(x)[1], D}), "pos_embed.add");
        for (int i = 0; i < m_a.depth; ++i) x = layer(x, "layer" + std::to_string(i));
        x = norm(x, "final_norm");
        x = m_a.cls_token ? m_b.gather(x, 1, 0, "readout.cls") : m_b.reduce_mean(x, {1}, false, "readout.mean");
        x = m_b.gemm(x, m_l.classes, "classifier");
        return m_b.finish({x});
    }

private:
    int norm(int x, const std::string& n) { return spaces::layer_norm(m_b, x, m_a.decompose_layer_norm, n); }
    int layer(int x, const std::string& n) {
        const std::int64_t D = m_b.shape(x)[2], q = m_a.head_width;
        const spaces::EncoderLayer spec{D / q, q, m_a.mlp_ratio * D, m_a.decompose_layer_norm, m_a.erf_gelu};
        return spaces::encoder_layer(m_b, x, spec, n);
    }

    const TransformerArch& m_a;
    const Limits& m_l;
    spaces::NetworkBuilder m_b;
};

inline void check(const CnnArch& a) {
    const auto bad = [](const auto&... why) { raise<config_error>("synthetic::build_cnn: ", why...); };
    if (a.resolution < 8) bad("resolution ", a.resolution, " below 8");
    if (a.stem < 1) bad("stem width ", a.stem, " below 1");
    if (a.stages.empty()) bad("no stage");
    if (a.block == Block::depthwise_mlp
            ? a.act != "Gelu"
            : a.act != "Relu" && a.act != "Clip" && a.act != "HardSwish" && a.act != "Swish")
        bad("activation '", a.act, "' (expected ",
            a.block == Block::depthwise_mlp ? "Gelu" : "Relu, Clip, HardSwish or Swish", ")");
    if (a.stem_kernel < 0 || a.stem_stride < 0) bad("a negative stem kernel or stride");
    for (const auto& s : a.stages) {
        if (s.width < 1 || s.depth < 1 || s.stride < 1 || s.kernel < 1 || s.expand < 1)
            bad("a stage with a width, depth, stride, kernel or expansion below 1");
        if (a.block == Block::branched && (s.branches < 2 || s.branches > 4))
            bad("a branched stage with ", s.branches, " branches (expected 2-4)");
        if (a.block == Block::grouped &&
            (s.group_width < 1 || (s.inner_divisor != 1 && s.inner_divisor != 2 && s.inner_divisor != 4)))
            bad("a grouped stage with group width ", s.group_width, " and inner divisor ", s.inner_divisor,
                " (expected at least 1, and 1, 2 or 4)");
        if (a.block == Block::shuffle && s.width < 2) bad("a shuffle stage of width ", s.width, " below 2");
    }
    if (a.feature_mix < 0 || a.hidden < 0) bad("negative feature-mix or hidden width");
    if (a.hidden_layers < 1 || a.hidden_layers > 2) bad(a.hidden_layers, " hidden layers (expected 1 or 2)");
}

inline void check(const TransformerArch& a) {
    const auto bad = [](const auto&... why) { raise<config_error>("synthetic::build_transformer: ", why...); };
    if (a.tokens < 1 || a.embed < 1 || a.head_width < 1 || a.mlp_ratio < 1 || a.depth < 1 || a.patch < 0)
        bad("tokens, embedding, head width, MLP ratio and depth must be at least 1");
    if (a.embed % a.head_width != 0) bad("embedding ", a.embed, " is not a multiple of the head width ", a.head_width);
    if (a.patch > 0) {
        const auto side = static_cast<std::int64_t>(std::lround(std::sqrt(static_cast<double>(a.tokens))));
        if (side * side != a.tokens) bad(a.tokens, " patches are not a square");
    }
}

}  // namespace dnncost::synthetic::detail

DNNCOST_FUNC auto dnncost::synthetic::network_size(const graph::Graph& g) -> NetworkSize {
    NetworkSize s;
    for (std::size_t t = 0; t < g.num_tensors(); ++t)
        if (g.tensor(static_cast<int>(t)).kind == graph::TensorKind::weight)
            s.params += g.tensor(static_cast<int>(t)).elements();
    for (std::size_t i = 0; i < g.num_nodes(); ++i) {
        const auto& n = g.node(static_cast<int>(i));
        if (n.outputs.empty() || n.inputs.size() < 2 || n.inputs[0] < 0 || n.inputs[1] < 0) continue;
        const auto out = g.tensor(n.outputs[0]).elements();
        const auto& w = g.tensor(n.inputs[1]).shape;
        const auto& a = g.tensor(n.inputs[0]).shape;
        if (n.op_type == "Conv" && w.size() == 4)
            s.macs += out * w[1] * w[2] * w[3];
        else if ((n.op_type == "MatMul" || n.op_type == "Gemm") && !a.empty())
            s.macs += out * a.back();
    }
    return s;
}

namespace dnncost::synthetic::detail {
/// The draws of the block kinds sample_cnn(rng) never draws itself, after the resolution.
inline CnnArch sample_later_block(Rng& rng, CnnArch a) {
    const int stages = a.block == Block::shuffle ? pick(rng, {3, 4}) : 4;
    double width = a.block == Block::grouped         ? pick(rng, {128.0, 192.0, 256.0})
                   : a.block == Block::shuffle       ? pick(rng, {64.0, 96.0, 128.0, 176.0, 240.0})
                   : a.block == Block::depthwise_mlp ? pick(rng, {48.0, 64.0, 96.0, 128.0})
                                                     : pick(rng, {32.0, 48.0, 64.0});
    const double growth = a.block == Block::plain ? pick(rng, {1.5, 2.0}) : 2.0;
    a.act = a.block == Block::depthwise_mlp ? "Gelu" : pick<std::string>(rng, {"Relu", "Relu", "Relu", "Clip"});
    a.stem_pool =
        a.block == Block::grouped || a.block == Block::shuffle || (a.block == Block::plain && rng.bernoulli(0.5));
    a.stem = a.block == Block::depthwise_mlp ? round8(width) : pick(rng, {24, 32, 48, 64});
    if (a.block == Block::plain) {
        static const std::int64_t kernel[] = {3, 7, 11}, stride[] = {1, 2, 4};
        const auto k = rng.below(3);
        a.stem_kernel = kernel[k];
        a.stem_stride = stride[k];
    }
    const std::int64_t group_width = pick(rng, {4, 8, 16, 24, 32, 64});
    const int inner_divisor = pick(rng, {1, 2, 4});
    for (int s = 0; s < stages; ++s) {
        CnnStage st;
        st.width = a.block == Block::shuffle ? 2 * round8(width / 2) : round8(width);
        st.depth = a.block == Block::shuffle ? 2 + static_cast<int>(rng.below(4)) : 1 + static_cast<int>(rng.below(3));
        st.stride = s == 0 && (a.stem_pool || a.block == Block::depthwise_mlp) ? 1 : 2;
        st.kernel = a.block == Block::depthwise_mlp ? pick(rng, {7, 7, 5, 3}) : pick(rng, {3, 3, 5});
        st.expand = a.block == Block::depthwise_mlp ? pick(rng, {2, 3, 4, 4}) : 1;
        // a constant group width (more groups as the widths grow), or one that grows with them
        st.group_width = rng.bernoulli(0.5) ? group_width : std::min<std::int64_t>(256, group_width << s);
        st.inner_divisor = inner_divisor;
        a.stages.push_back(st);
        width *= growth;
    }
    if (a.block == Block::shuffle && rng.bernoulli(0.7)) a.feature_mix = pick(rng, {1024, 2048});
    if (a.block == Block::plain) {
        a.flatten = rng.bernoulli(0.6);
        a.hidden = pick(rng, {0, 2048, 4096, 4096});
        a.hidden_layers = 2;
    } else if (rng.bernoulli(0.25)) {
        a.hidden = pick(rng, {1024, 2048});
    }
    return a;
}

/// sample_cnn's draws; `block`, when given, replaces the block kind drawn.
inline CnnArch sample_cnn(Rng& rng, const Block* block) {
    CnnArch a;
    a.resolution = pick(rng, {128, 160, 192, 224, 256, 288, 320});
    a.block = pick(rng, {Block::basic, Block::bottleneck, Block::inverted, Block::branched});
    if (block) a.block = *block;
    if (a.block > Block::branched) return sample_later_block(rng, a);
    a.act = a.block == Block::inverted ? pick<std::string>(rng, {"Relu", "Clip", "HardSwish", "Swish"})
                                       : pick<std::string>(rng, {"Relu", "Relu", "Clip", "Swish"});
    a.stem_pool = a.block != Block::inverted && rng.bernoulli(0.5);
    a.stem = pick(rng, {16, 24, 32, 48, 64});
    const int stages = pick(rng, {4, 5});
    // widths grow by 1.5-2x a stage: a bottleneck's outputs reach 2,048-4,096, an inverted
    // residual's expanded layers about as many
    const double growth = pick(rng, {1.5, 1.75, 2.0});
    double width = a.block == Block::bottleneck ? pick(rng, {128.0, 192.0, 256.0})
                   : a.block == Block::inverted ? pick(rng, {16.0, 24.0, 32.0})
                                                : pick(rng, {32.0, 48.0, 64.0});
    for (int s = 0; s < stages; ++s) {
        CnnStage st;
        st.width = detail::round8(width);
        st.depth = 1 + static_cast<int>(rng.below(a.block == Block::inverted ? 4 : 3));
        st.stride = s == 0 && a.stem_pool ? 1 : 2;
        st.kernel = a.block == Block::inverted ? pick(rng, {3, 5, 7}) : pick(rng, {3, 3, 5});
        st.expand = a.block == Block::inverted ? pick(rng, {3, 4, 6}) : 1;
        st.squeeze_excite = a.block == Block::inverted && rng.bernoulli(0.4);
        if (a.block == Block::branched) {
            st.branches = 2 + static_cast<int>(rng.below(3));
            st.dense = rng.bernoulli(0.3);
        }
        a.stages.push_back(st);
        width *= growth;
    }
    if (a.block == Block::inverted && rng.bernoulli(0.7)) a.feature_mix = pick(rng, {960, 1280, 2048, 4096});
    if (rng.bernoulli(0.35)) a.hidden = pick(rng, {1024, 2048, 4096});
    return a;
}
}  // namespace dnncost::synthetic::detail

DNNCOST_FUNC auto dnncost::synthetic::sample_cnn(Rng& rng) -> CnnArch { return detail::sample_cnn(rng, nullptr); }

DNNCOST_FUNC auto dnncost::synthetic::sample_cnn(Rng& rng, Block block) -> CnnArch {
    return detail::sample_cnn(rng, &block);
}

DNNCOST_FUNC auto dnncost::synthetic::sample_transformer(Rng& rng) -> TransformerArch {
    using detail::pick;
    TransformerArch a;
    a.patch = pick(rng, {0, 8, 16, 16, 32});
    if (a.patch == 0) {
        a.tokens = pick(rng, {128, 256, 384, 512});
    } else {
        // 128-384 pixels: 16 to 576 patches (8-pixel patches only on the smaller images)
        const std::int64_t side = a.patch == 8 ? pick(rng, {12, 16}) : a.patch == 16 ? pick(rng, {14, 16, 20, 24}) : pick(rng, {7, 10, 12});
        a.tokens = side * side;
    }
    a.head_width = pick(rng, {32, 64, 64});
    a.embed = a.head_width * pick(rng, {4, 6, 8, 12, 16});
    a.mlp_ratio = pick(rng, {2, 3, 4, 4});
    a.depth = 2 + static_cast<int>(rng.below(7));
    a.cls_token = rng.bernoulli(0.5);
    a.decompose_layer_norm = rng.bernoulli(0.3);
    a.erf_gelu = rng.bernoulli(0.7);
    return a;
}

DNNCOST_FUNC auto dnncost::synthetic::with_sequence(TransformerArch a, Sequence length, std::size_t choice)
    -> TransformerArch {
    static const std::int64_t short_side[] = {7, 8, 10}, medium_side[] = {12, 14, 16};
    switch (length) {
        case Sequence::short_range:
            a.patch = 32;
            a.tokens = short_side[choice % 3] * short_side[choice % 3];
            break;
        case Sequence::medium_range:
            a.patch = 16;
            a.tokens = medium_side[choice % 3] * medium_side[choice % 3];
            break;
        case Sequence::long_range:
            a.patch = choice % 2 ? 16 : 0;
            a.tokens = a.patch ? (choice % 4 < 2 ? 400 : 576) : (choice % 4 < 2 ? 384 : 512);
            break;
    }
    return a;
}

DNNCOST_FUNC auto dnncost::synthetic::build_cnn(const CnnArch& arch, const Limits& limits) -> graph::Graph {
    limits.check();
    detail::check(arch);
    CnnArch a = arch;
    for (int attempt = 0; attempt < 200; ++attempt) {
        auto g = detail::CnnBuilder(a, limits).build();
        const auto s = network_size(g);
        if (detail::fits(s, limits)) return g;
        // too much work for its size: a smaller input first; too many weights: narrower layers
        if (s.params <= limits.max_params && a.resolution > 32) {
            a.resolution = std::max<std::int64_t>(
                32, std::min(a.resolution - 8, detail::round8(0.85 * static_cast<double>(a.resolution))));
            continue;
        }
        bool narrowed = false;
        const auto narrow = [&](std::int64_t& w) {
            if (w <= 8) return;
            w = std::min(w - 8, detail::round8(0.8 * static_cast<double>(w)));  // rounding may not undo it
            narrowed = true;
        };
        // a flattened map's classifier holds most of the weights: its hidden layers go first, to
        // 1,024, before the convolutions are narrowed for it
        if (a.flatten && a.hidden > 1024) {
            narrow(a.hidden);
            continue;
        }
        narrow(a.stem);
        for (auto& st : a.stages) narrow(st.width);
        if (a.feature_mix > 0) narrow(a.feature_mix);
        if (a.hidden > 0) narrow(a.hidden);
        if (narrowed) continue;
        if (a.hidden > 0 || a.feature_mix > 0) {
            a.hidden = a.feature_mix = 0;
            continue;
        }
        bool shallower = false;
        for (auto& st : a.stages)
            if (st.depth > 1) st.depth = 1, shallower = true;
        if (shallower) continue;
        if (a.resolution > 32) {
            a.resolution = 32;
            continue;
        }
        break;
    }
    raise<config_error>("synthetic::build_cnn: '", to_string(arch), "' does not fit in ", limits.max_params,
                        " weights and ", limits.max_macs, " multiply-accumulates");
}

DNNCOST_FUNC auto dnncost::synthetic::build_transformer(const TransformerArch& arch, const Limits& limits)
    -> graph::Graph {
    limits.check();
    detail::check(arch);
    TransformerArch a = arch;
    for (int attempt = 0; attempt < 200; ++attempt) {
        auto g = detail::TransformerBuilder(a, limits).build();
        const auto s = network_size(g);
        if (detail::fits(s, limits)) return g;
        if (s.params <= limits.max_params && a.tokens > 16) {
            // fewer tokens: a smaller image of the same patches, or a shorter sequence
            if (a.patch > 0) {
                const auto side = static_cast<std::int64_t>(std::lround(std::sqrt(static_cast<double>(a.tokens))));
                a.tokens = std::max<std::int64_t>(4, (side * 4 / 5) * (side * 4 / 5));
            } else {
                a.tokens = std::max<std::int64_t>(16, a.tokens * 4 / 5);
            }
            continue;
        }
        if (a.embed > a.head_width) {
            a.embed = std::max(a.head_width, (a.embed * 4 / 5) / a.head_width * a.head_width);
            continue;
        }
        if (a.head_width > 8) {
            a.head_width = std::max<std::int64_t>(8, a.head_width / 2);
            a.embed = a.head_width;
            continue;
        }
        if (a.depth > 1 || a.mlp_ratio > 1) {
            a.depth = 1;
            a.mlp_ratio = 1;
            continue;
        }
        break;
    }
    raise<config_error>("synthetic::build_transformer: '", to_string(arch), "' does not fit in ", limits.max_params,
                        " weights and ", limits.max_macs, " multiply-accumulates");
}

DNNCOST_FUNC auto dnncost::synthetic::to_string(const CnnArch& a) -> std::string {
    std::string s = "r" + std::to_string(a.resolution) + "-s" + std::to_string(a.stem);
    if (a.stem_kernel > 0) s += "k" + std::to_string(a.stem_kernel) + "x" + std::to_string(a.stem_stride);
    s += std::string(a.stem_pool ? "p" : "") + "-" + detail::block_names[static_cast<int>(a.block)] + "-" + a.act;
    for (const auto& st : a.stages) {
        s += "-w" + std::to_string(st.width) + "d" + std::to_string(st.depth) + "s" + std::to_string(st.stride) + "k" +
             std::to_string(st.kernel);
        if (st.expand > 1) s += "e" + std::to_string(st.expand);
        if (st.squeeze_excite) s += "se";
        if (a.block == Block::branched) s += "b" + std::to_string(st.branches) + (st.dense ? "dense" : "");
        if (a.block == Block::grouped)
            s += "g" + std::to_string(st.group_width) + "i" + std::to_string(st.inner_divisor);
    }
    if (a.feature_mix > 0) s += "-f" + std::to_string(a.feature_mix);
    if (a.flatten) s += "-flat";
    if (a.hidden > 0)
        s += "-h" + std::to_string(a.hidden) + (a.hidden_layers > 1 ? "x" + std::to_string(a.hidden_layers) : "");
    return s;
}

DNNCOST_FUNC auto dnncost::synthetic::to_string(const TransformerArch& a) -> std::string {
    return "t" + std::to_string(a.tokens) + (a.patch > 0 ? "p" + std::to_string(a.patch) : std::string("-tok")) + "-e" +
           std::to_string(a.embed) + "q" + std::to_string(a.head_width) + "m" + std::to_string(a.mlp_ratio) + "d" +
           std::to_string(a.depth) + (a.cls_token ? "-cls" : "-mean") + (a.decompose_layer_norm ? "-ln13" : "-ln17") +
           (a.erf_gelu ? "-erf" : "-tanh");
}

namespace dnncost::synthetic::detail {

/// Reads one token of a description from the left: fixed tags and tagged decimal numbers.
class TokenReader {
public:
    explicit TokenReader(std::string_view token) : m_rest(token) {}
    /// Takes `tag` when the token continues with it.
    bool take(std::string_view tag) {
        if (!m_rest.starts_with(tag)) return false;
        m_rest.remove_prefix(tag.size());
        return true;
    }
    /// The number after `tag`, taken; -1 (nothing taken) when the token does not continue with
    /// `tag` and digits.
    std::int64_t number(std::string_view tag) {
        if (!m_rest.starts_with(tag)) return -1;
        std::size_t end = tag.size();
        while (end < m_rest.size() && m_rest[end] >= '0' && m_rest[end] <= '9') ++end;
        const auto v = spaces::parse_small_uint(m_rest.substr(tag.size(), end - tag.size()));
        if (v >= 0) m_rest.remove_prefix(end);
        return v;
    }
    bool done() const { return m_rest.empty(); }

private:
    std::string_view m_rest;
};

inline std::string classes_suffix(const Limits& l) {
    return l.classes == default_classes ? std::string() : "-out" + std::to_string(l.classes);
}

/// A description's architecture once read: one the builder takes, written as to_string writes it
/// (so that one network has one name).
template <class Arch>
Arch checked_reading(const spaces::ArchText& at, Arch a) {
    try {
        check(a);
    } catch (const config_error& e) {
        at.fail(e.what());
    }
    if (const auto again = to_string(a); again != at.text()) at.fail("written as '" + again + "' by dnncost");
    return a;
}

/// A name's description and classifier outputs: "-out<N>" at its end, else 1,000.
inline std::pair<std::string_view, std::int64_t> split_classes(std::string_view text) {
    const auto dash = text.rfind("-out");
    if (dash == std::string_view::npos) return {text, default_classes};
    const auto n = spaces::parse_small_uint(text.substr(dash + 4));
    if (n < 1) return {text, default_classes};  // not a count: the description reports the token
    return {text.substr(0, dash), n};
}

}  // namespace dnncost::synthetic::detail

DNNCOST_FUNC auto dnncost::synthetic::parse_cnn(std::string_view text) -> CnnArch {
    const spaces::ArchText at("cnn", text);
    const auto tokens = spaces::split(text, '-');
    if (tokens.size() < 5)
        at.fail("expected r<resolution>-s<stem>-<block>-<activation>-<stage>..., found " +
                std::to_string(tokens.size()) + " tokens");
    CnnArch a;
    {
        detail::TokenReader r(tokens[0]);
        a.resolution = r.number("r");
        if (a.resolution < 0 || !r.done()) at.fail_token(0, tokens[0], "is not r<resolution>");
    }
    {
        detail::TokenReader r(tokens[1]);
        a.stem = r.number("s");
        if (a.stem >= 0 && (a.stem_kernel = r.number("k")) >= 0) {
            a.stem_stride = r.number("x");
        } else {
            a.stem_kernel = 0;
        }
        a.stem_pool = r.take("p");
        if (a.stem < 0 || a.stem_stride < 0 || !r.done())
            at.fail_token(1, tokens[1], "is not s<stem>[k<kernel>x<stride>][p]");
    }
    {
        const auto* found = std::find(std::begin(detail::block_names), std::end(detail::block_names), tokens[2]);
        if (found == std::end(detail::block_names))
            at.fail_token(2, tokens[2], "is not a block kind (" + spaces::list_choices(detail::block_names) + ")");
        a.block = static_cast<Block>(found - std::begin(detail::block_names));
    }
    a.act = std::string(tokens[3]);
    std::size_t i = 4;
    for (; i < tokens.size() && tokens[i].starts_with("w"); ++i) {
        detail::TokenReader r(tokens[i]);
        CnnStage st;
        st.width = r.number("w");
        const auto depth = r.number("d");
        st.stride = r.number("s");
        st.kernel = r.number("k");
        st.depth = static_cast<int>(depth);
        if (const auto e = r.number("e"); e >= 0) st.expand = e;
        st.squeeze_excite = r.take("se");
        if (a.block == Block::branched) {
            st.branches = static_cast<int>(r.number("b"));
            st.dense = r.take("dense");
        }
        if (a.block == Block::grouped) {
            st.group_width = r.number("g");
            st.inner_divisor = static_cast<int>(r.number("i"));
        }
        if (st.width < 0 || depth < 0 || st.stride < 0 || st.kernel < 0 || st.branches < 0 || st.group_width < 0 ||
            st.inner_divisor < 0 || !r.done())
            at.fail_token(i, tokens[i],
                          std::string("is not a stage w<width>d<depth>s<stride>k<kernel>[e<expand>][se]") +
                              (a.block == Block::branched  ? "b<branches>[dense]"
                               : a.block == Block::grouped ? "g<group width>i<inner divisor>"
                                                           : ""));
        a.stages.push_back(st);
    }
    if (a.stages.empty()) at.fail_token(4, tokens[4], "is not a stage w<width>d<depth>s<stride>k<kernel>...");
    if (i < tokens.size() && tokens[i].starts_with("f") && tokens[i] != "flat") {
        detail::TokenReader r(tokens[i]);
        a.feature_mix = r.number("f");
        if (a.feature_mix < 1 || !r.done()) at.fail_token(i, tokens[i], "is not f<feature-mix width>");
        ++i;
    }
    if (i < tokens.size() && tokens[i] == "flat") a.flatten = true, ++i;
    if (i < tokens.size() && tokens[i].starts_with("h")) {
        detail::TokenReader r(tokens[i]);
        a.hidden = r.number("h");
        if (const auto layers = r.number("x"); layers >= 0) a.hidden_layers = static_cast<int>(layers);
        if (a.hidden < 1 || !r.done()) at.fail_token(i, tokens[i], "is not h<hidden width>[x<layers>]");
        ++i;
    }
    if (i < tokens.size()) at.fail_token(i, tokens[i], "follows the head (expected nothing, or f, flat, h in order)");
    return detail::checked_reading(at, std::move(a));
}

DNNCOST_FUNC auto dnncost::synthetic::parse_transformer(std::string_view text) -> TransformerArch {
    const spaces::ArchText at("transformer", text);
    const auto tokens = spaces::split(text, '-');
    TransformerArch a;
    std::size_t i = 0;
    {
        detail::TokenReader r(tokens[0]);
        a.tokens = r.number("t");
        a.patch = r.number("p");
        if (a.tokens < 0 || !r.done()) at.fail_token(0, tokens[0], "is not t<tokens>[p<patch>]");
        ++i;
        if (a.patch < 0) {
            if (tokens.size() < 2 || tokens[1] != "tok")
                at.fail("expected t<tokens>p<patch> or t<tokens>-tok to begin with");
            a.patch = 0;
            ++i;
        }
    }
    if (tokens.size() != i + 4)
        at.fail(
            "expected t<tokens>[p<patch>|-tok]-e<embed>q<head width>m<mlp ratio>d<depth>-(cls|mean)-(ln13|ln17)-"
            "(erf|tanh), found " +
            std::to_string(tokens.size()) + " tokens");
    {
        detail::TokenReader r(tokens[i]);
        a.embed = r.number("e");
        a.head_width = r.number("q");
        a.mlp_ratio = r.number("m");
        const auto depth = r.number("d");
        a.depth = static_cast<int>(depth);
        if (a.embed < 0 || a.head_width < 0 || a.mlp_ratio < 0 || depth < 0 || !r.done())
            at.fail_token(i, tokens[i], "is not e<embed>q<head width>m<mlp ratio>d<depth>");
    }
    const auto either = [&](std::size_t t, std::string_view yes, std::string_view no) {
        if (tokens[t] != yes && tokens[t] != no)
            at.fail_token(t, tokens[t], "is not " + std::string(yes) + " or " + std::string(no));
        return tokens[t] == yes;
    };
    a.cls_token = either(i + 1, "cls", "mean");
    a.decompose_layer_norm = either(i + 2, "ln13", "ln17");
    a.erf_gelu = either(i + 3, "erf", "tanh");
    return detail::checked_reading(at, std::move(a));
}

DNNCOST_FUNC auto dnncost::synthetic::network_name(const CnnArch& a, const Limits& limits) -> std::string {
    return "cnn:" + to_string(a) + detail::classes_suffix(limits);
}

DNNCOST_FUNC auto dnncost::synthetic::network_name(const TransformerArch& a, const Limits& limits) -> std::string {
    return "transformer:" + to_string(a) + detail::classes_suffix(limits);
}

DNNCOST_FUNC auto dnncost::synthetic::build_from_name(std::string_view name) -> graph::Graph {
    // the name describes the network as fitted: unbounded limits build it as it is
    Limits l;
    l.max_params = l.max_macs = std::numeric_limits<std::int64_t>::max();
    graph::Graph g;
    if (name.starts_with("cnn:")) {
        const auto [text, classes] = detail::split_classes(name.substr(4));
        l.classes = classes;
        g = build_cnn(parse_cnn(text), l);
    } else if (name.starts_with("transformer:")) {
        const auto [text, classes] = detail::split_classes(name.substr(12));
        l.classes = classes;
        g = build_transformer(parse_transformer(text), l);
    } else {
        raise<parse_error>("'", name, "' is not a synthesised network's name (cnn:... or transformer:...)");
    }
    if (g.name() != name) raise<parse_error>("'", name, "' is written '", g.name(), "' by dnncost");
    return g;
}
