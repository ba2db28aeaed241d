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

#include <dnncost/core/config.hpp>
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
DNNCOST_FUNC std::array<std::int64_t, 2> take_extent(std::string_view& s);
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
DNNCOST_FUNC Arch parse(std::string_view text);

DNNCOST_FUNC std::string to_string(const Arch& a);

/// The number of architectures: 4 x 2 x 8 stems x sum over 2..6 blocks of 64^n.
inline spaces::Count size() {
    const std::uint64_t per_block = block_kernel_choices.size() * channel_choices.size();
    spaces::Count blocks;
    for (int n = min_blocks; n <= max_blocks; ++n) blocks += spaces::Count::power(per_block, static_cast<unsigned>(n));
    return blocks * spaces::Count(stem_kernel_choices.size() * stem_stride_choices.size() * channel_choices.size());
}

/// Every choice drawn independently and uniformly (the number of blocks uniform in 2..6, then
/// each block's choices), PerfSAGE's sampling.
DNNCOST_FUNC Arch sample(Rng& rng);

struct KwsOptions {
    std::int64_t batch = 1;
};

/// The operator graph of the network. @throws config_error for a batch below 1 or choices
/// outside the space
DNNCOST_FUNC graph::Graph build_graph(const Arch& arch, const KwsOptions& opt = {});
inline graph::Graph build_graph(std::string_view arch, const KwsOptions& opt = {}) {
    return build_graph(parse(arch), opt);
}

}  // namespace dnncost::kws

#if !defined(DNNCOST_COMPILED)
#include <dnncost/spaces/kws_impl.hpp>
#endif
