#pragma once
/// @file kws.hpp
/// A keyword-spotting search space after PerfSAGE's CNN-KWS (a DS-CNN space with kernel-size
/// options): architecture strings, seeded sampling, the size of the space and the operator
/// graph of a network (docs/spaces.md documents the space).
///
/// Input: 49 x 10 MFCC features (49 frames of 10 coefficients) as a [N, 1, 49, 10] tensor.
/// Stem: Conv with a non-square kernel (10x4, 8x4, 6x3 or 4x2, time x frequency) and stride
/// (2x2 or 2x1), 16 to 256 channels, BN, ReLU. Then 2 to 6 depthwise-separable blocks, each a
/// depthwise Conv with its own kernel (3, 5, 7 or 9 frames x 1 or 3 coefficients) + BN + ReLU
/// and a pointwise Conv1x1 to its own width + BN + ReLU. Average pooling over the whole map,
/// Linear to 12 classes. Every convolution pads "same" (output ceil(in / stride), any extra
/// padding at the end).
/// String: `<KH>x<KW>s<SH>x<SW>c<C>-<kh>x<kw>c<c>-…`: the stem token, then one token per block,
/// e.g. `10x4s2x2c64-3x3c64-5x1c128-9x3c96`.
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <dnncost/core/error.hpp>
#include <dnncost/core/rng.hpp>
#include <dnncost/graph/graph.hpp>
#include <dnncost/spaces/builder.hpp>
#include <dnncost/spaces/count.hpp>
#include <dnncost/spaces/parse.hpp>

namespace dnncost::kws {

inline constexpr std::int64_t frames = 49;
inline constexpr std::int64_t coefficients = 10;
inline constexpr std::int64_t num_classes = 12;
/// (time, frequency) extents.
using Extent = std::array<int, 2>;
inline constexpr std::array<Extent, 4> stem_kernel_choices{{{10, 4}, {8, 4}, {6, 3}, {4, 2}}};
inline constexpr std::array<Extent, 2> stem_stride_choices{{{2, 2}, {2, 1}}};
inline constexpr std::array<Extent, 8> block_kernel_choices{
    {{3, 1}, {3, 3}, {5, 1}, {5, 3}, {7, 1}, {7, 3}, {9, 1}, {9, 3}}};
inline constexpr std::array<int, 8> channel_choices{16, 32, 48, 64, 96, 128, 192, 256};
inline constexpr int min_blocks = 2;
inline constexpr int max_blocks = 6;
/// The lowest ONNX opset the graphs need.
inline constexpr int onnx_opset = 13;

struct Block {
    Extent kernel{3, 3};
    int channels = 64;
    friend bool operator==(const Block&, const Block&) = default;
};

struct Arch {
    Extent stem_kernel{10, 4};
    Extent stem_stride{2, 2};
    int stem_channels = 64;
    std::vector<Block> blocks;  ///< min_blocks to max_blocks entries
    friend bool operator==(const Arch&, const Arch&) = default;
};

namespace detail {
/// Reads `<a>x<b>` from the front of `s`, advancing it; {-1, -1} when malformed.
inline std::array<std::int64_t, 2> take_extent(std::string_view& s) {
    std::array<std::int64_t, 2> r{-1, -1};
    for (std::size_t part = 0; part < 2; ++part) {
        std::size_t end = 0;
        while (end < s.size() && s[end] >= '0' && s[end] <= '9') ++end;
        r[part] = spaces::parse_small_uint(s.substr(0, end));
        s.remove_prefix(end);
        if (part == 0) {
            if (s.empty() || s[0] != 'x') return {-1, -1};
            s.remove_prefix(1);
        }
    }
    return r;
}
inline std::int64_t take_channels(std::string_view& s) {
    if (s.empty() || s[0] != 'c') return -1;
    const auto v = spaces::parse_small_uint(s.substr(1));
    s = {};
    return v;
}
template <std::size_t N>
bool one_of(const std::array<std::int64_t, 2>& e, const std::array<Extent, N>& allowed) {
    for (const auto& a : allowed)
        if (e[0] == a[0] && e[1] == a[1]) return true;
    return false;
}
inline bool one_of(std::int64_t c, const std::array<int, 8>& allowed) {
    for (int a : allowed)
        if (c == a) return true;
    return false;
}
inline void append_extent(std::string& s, const Extent& e) {
    s += std::to_string(e[0]);
    s += 'x';
    s += std::to_string(e[1]);
}
template <std::size_t N>
std::string extents(const std::array<Extent, N>& r) {
    std::vector<std::string> s;
    for (const auto& e : r) {
        s.emplace_back();
        append_extent(s.back(), e);
    }
    return spaces::list_choices(s);
}
}  // namespace detail

/// Parses `<KH>x<KW>s<SH>x<SW>c<C>-<kh>x<kw>c<c>-…`. @throws parse_error naming the bad token
inline Arch parse(std::string_view text) {
    const spaces::ArchText at("kws", text);
    const auto tokens = spaces::split(text, '-');
    if (tokens.size() < 1 + min_blocks || tokens.size() > 1 + max_blocks)
        at.fail("expected a stem token and 2 to 6 block tokens joined by '-', found " + std::to_string(tokens.size()) +
                " tokens");
    Arch a;
    {
        std::string_view t = tokens[0];
        const auto k = detail::take_extent(t);
        const bool has_s = !t.empty() && t[0] == 's';
        if (has_s) t.remove_prefix(1);
        const auto s = has_s ? detail::take_extent(t) : std::array<std::int64_t, 2>{-1, -1};
        const auto c = detail::take_channels(t);
        if (k[0] < 0 || s[0] < 0 || c < 0) at.fail_token(0, tokens[0], "is not a stem <KH>x<KW>s<SH>x<SW>c<C>");
        if (!detail::one_of(k, stem_kernel_choices))
            at.fail_token(0, tokens[0],
                          "has stem kernel " + std::to_string(k[0]) + "x" + std::to_string(k[1]) + " (expected " +
                              detail::extents(stem_kernel_choices) + ")");
        if (!detail::one_of(s, stem_stride_choices))
            at.fail_token(0, tokens[0],
                          "has stem stride " + std::to_string(s[0]) + "x" + std::to_string(s[1]) + " (expected " +
                              detail::extents(stem_stride_choices) + ")");
        if (!detail::one_of(c, channel_choices))
            at.fail_token(
                0, tokens[0],
                "has " + std::to_string(c) + " channels (expected " + spaces::list_choices(channel_choices) + ")");
        a.stem_kernel = {static_cast<int>(k[0]), static_cast<int>(k[1])};
        a.stem_stride = {static_cast<int>(s[0]), static_cast<int>(s[1])};
        a.stem_channels = static_cast<int>(c);
    }
    for (std::size_t i = 1; i < tokens.size(); ++i) {
        std::string_view t = tokens[i];
        const auto k = detail::take_extent(t);
        const auto c = detail::take_channels(t);
        if (k[0] < 0 || c < 0) at.fail_token(i, tokens[i], "is not a block <kh>x<kw>c<c>");
        if (!detail::one_of(k, block_kernel_choices))
            at.fail_token(i, tokens[i],
                          "has kernel " + std::to_string(k[0]) + "x" + std::to_string(k[1]) + " (expected " +
                              detail::extents(block_kernel_choices) + ")");
        if (!detail::one_of(c, channel_choices))
            at.fail_token(
                i, tokens[i],
                "has " + std::to_string(c) + " channels (expected " + spaces::list_choices(channel_choices) + ")");
        a.blocks.push_back({{static_cast<int>(k[0]), static_cast<int>(k[1])}, static_cast<int>(c)});
    }
    return a;
}

inline std::string to_string(const Arch& a) {
    std::string s;
    detail::append_extent(s, a.stem_kernel);
    s += 's';
    detail::append_extent(s, a.stem_stride);
    s += 'c';
    s += std::to_string(a.stem_channels);
    for (const auto& b : a.blocks) {
        s += '-';
        detail::append_extent(s, b.kernel);
        s += 'c';
        s += std::to_string(b.channels);
    }
    return s;
}

/// The number of architectures: 4 x 2 x 8 stems x sum over 2..6 blocks of 64^n.
inline spaces::Count size() {
    const std::uint64_t per_block = block_kernel_choices.size() * channel_choices.size();
    spaces::Count blocks;
    for (int n = min_blocks; n <= max_blocks; ++n) blocks += spaces::Count::power(per_block, static_cast<unsigned>(n));
    return blocks * spaces::Count(stem_kernel_choices.size() * stem_stride_choices.size() * channel_choices.size());
}

/// Every choice drawn independently and uniformly (the number of blocks uniform in 2..6, then
/// each block's choices), PerfSAGE's sampling.
inline Arch sample(Rng& rng) {
    Arch a;
    a.stem_kernel = stem_kernel_choices[rng.below(stem_kernel_choices.size())];
    a.stem_stride = stem_stride_choices[rng.below(stem_stride_choices.size())];
    a.stem_channels = channel_choices[rng.below(channel_choices.size())];
    const int n = min_blocks + static_cast<int>(rng.below(max_blocks - min_blocks + 1));
    for (int i = 0; i < n; ++i)
        a.blocks.push_back({block_kernel_choices[rng.below(block_kernel_choices.size())],
                            channel_choices[rng.below(channel_choices.size())]});
    return a;
}

struct KwsOptions {
    std::int64_t batch = 1;
};

/// The operator graph of the network. @throws config_error for a batch below 1 or choices
/// outside the space
inline graph::Graph build_graph(const Arch& arch, const KwsOptions& opt = {}) {
    if (opt.batch < 1) raise<config_error>("kws::build_graph: batch must be at least 1, got ", opt.batch);
    const auto ext = [](const Extent& e) { return std::array<std::int64_t, 2>{e[0], e[1]}; };
    bool ok = detail::one_of(ext(arch.stem_kernel), stem_kernel_choices) &&
              detail::one_of(ext(arch.stem_stride), stem_stride_choices) &&
              detail::one_of(arch.stem_channels, channel_choices) && arch.blocks.size() >= min_blocks &&
              arch.blocks.size() <= max_blocks;
    for (const auto& bl : arch.blocks)
        ok = ok && detail::one_of(ext(bl.kernel), block_kernel_choices) && detail::one_of(bl.channels, channel_choices);
    if (!ok) raise<config_error>("kws::build_graph: architecture '", to_string(arch), "' is not in the space");

    spaces::NetworkBuilder b("kws:" + to_string(arch));
    const auto same_conv = [&b](int x, std::int64_t cout, Extent k, Extent s, std::int64_t group,
                                const std::string& n) {
        const auto in = b.shape(x);
        const auto ph = spaces::same_pads(in[2], k[0], s[0]), pw = spaces::same_pads(in[3], k[1], s[1]);
        const int y =
            b.conv(x, spaces::ConvSpec{cout, {k[0], k[1]}, {s[0], s[1]}, {ph[0], pw[0], ph[1], pw[1]}, group, false},
                   n + ".conv");
        return b.unary("Relu", b.batch_norm(y, n + ".bn"), n + ".relu");
    };
    int x = b.input("input", {opt.batch, 1, frames, coefficients});
    x = same_conv(x, arch.stem_channels, arch.stem_kernel, arch.stem_stride, 1, "stem");
    for (std::size_t i = 0; i < arch.blocks.size(); ++i) {
        const std::string n = "block" + std::to_string(i);
        const auto c = b.shape(x)[1];
        x = same_conv(x, c, arch.blocks[i].kernel, {1, 1}, c, n + ".dw");
        x = same_conv(x, arch.blocks[i].channels, {1, 1}, {1, 1}, 1, n + ".pw");
    }
    x = b.flatten(b.average_pool_all(x, "pool"), "flatten");
    x = b.gemm(x, num_classes, "classifier");
    return b.finish({x});
}
inline graph::Graph build_graph(std::string_view arch, const KwsOptions& opt = {}) {
    return build_graph(parse(arch), opt);
}

}  // namespace dnncost::kws
