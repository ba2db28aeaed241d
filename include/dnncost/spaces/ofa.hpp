#pragma once
/// @file ofa.hpp
/// The Once-for-All MobileNetV3 search space: architecture strings (the `arch` column of
/// data/ofa/latency_ms.csv), seeded sampling, the size of the space and the operator graph of
/// a sub-network (data/ofa/SPEC.md is the exact specification this follows).
///
/// String: `r<R>-d<d1>.….<d5>-k<k0>.….<k19>-e<e0>.….<e19>`: input resolution R (128 to 224, step
/// 4), five stage depths (2, 3 or 4), and a depthwise kernel (3, 5, 7) and expansion ratio (3, 4,
/// 6) for each of the 20 block slots; slot 4(S-1)+j belongs to block j of stage S, and the slots
/// of blocks beyond a stage's depth are kept in the string but do not change the network.
///
/// Network (width multiplier 1.2 by default, 1.0 as an option): stem Conv3x3/2 + BN + h-swish;
/// a fixed MBConv block (depthwise 3x3, projection, residual); five stages of MBConv blocks
/// (ReLU in stages 1-2, h-swish in 3-5; squeeze-and-excitation in stages 2, 4 and 5); final
/// Conv1x1 + BN + h-swish, global average pooling, feature-mix Conv1x1 + h-swish, Linear to
/// 1000 classes. h-swish is ONNX's HardSwish (opset 14), h-sigmoid HardSigmoid(alpha = 1/6,
/// beta = 1/2): export these graphs with opset 14 or later.
#include <array>
#include <cmath>
#include <cstdint>
#include <optional>
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

namespace dnncost::ofa {

inline constexpr int num_stages = 5;
inline constexpr int max_depth = 4;
inline constexpr int num_slots = num_stages * max_depth;
inline constexpr std::array<int, 3> depth_choices{2, 3, 4};
inline constexpr std::array<int, 3> kernel_choices{3, 5, 7};
inline constexpr std::array<int, 3> expansion_choices{3, 4, 6};
inline constexpr int min_resolution = 128;
inline constexpr int max_resolution = 224;
inline constexpr int resolution_step = 4;
inline constexpr int num_resolutions = (max_resolution - min_resolution) / resolution_step + 1;  // 25
/// The lowest ONNX opset the graphs need (HardSwish).
inline constexpr int onnx_opset = 14;

/// One sub-network as stored: all 20 slots, including those its depths leave unused.
struct Arch {
    int resolution = max_resolution;
    std::array<int, num_stages> depths{4, 4, 4, 4, 4};
    std::array<int, num_slots> kernels{};
    std::array<int, num_slots> expansions{};
    friend bool operator==(const Arch&, const Arch&) = default;
};

/// Whether block j of stage s (both 0-based) exists in the network.
inline bool slot_used(const Arch& a, int stage, int block) { return block < a.depths[static_cast<std::size_t>(stage)]; }

/// Whether two strings denote the same network (unused slots ignored).
DNNCOST_FUNC bool same_network(const Arch& a, const Arch& b);

namespace detail {
template <std::size_t N, std::size_t C>
void parse_list(const spaces::ArchText& at, std::string_view field, std::size_t field_index, char tag,
                const std::array<int, C>& allowed, std::array<int, N>& out) {
    if (field.empty() || field[0] != tag)
        at.fail_token(field_index, field, std::string("should start with '") + tag + "'");
    const auto items = spaces::split(field.substr(1), '.');
    if (items.size() != N)
        at.fail_token(
            field_index, field,
            "should hold " + std::to_string(N) + " values joined by '.', found " + std::to_string(items.size()));
    for (std::size_t i = 0; i < N; ++i) {
        const auto v = spaces::parse_small_uint(items[i]);
        bool ok = false;
        for (int c : allowed) ok = ok || v == c;
        if (!ok)
            at.fail_token(field_index, field,
                          "has value '" + std::string(items[i]) + "' at position " + std::to_string(i) + " (expected " +
                              spaces::list_choices(allowed) + ")");
        out[i] = static_cast<int>(v);
    }
}
}  // namespace detail

/// Parses `r<R>-d…-k…-e…`. @throws parse_error naming the bad field and value
DNNCOST_FUNC Arch parse(std::string_view text);

DNNCOST_FUNC std::string to_string(const Arch& a);

/// The number of distinct networks: 25 resolutions x (9^2 + 9^3 + 9^4)^5 (unused slots do not
/// count: strings that differ only there are one network).
DNNCOST_FUNC spaces::Count size();

/// Every choice of the string drawn independently and uniformly (resolution, five depths, all
/// 20 kernels and expansions), as Once-for-All's sampler and HELP's data set do. A shallow stage
/// is as likely as a deep one, so this is uniform over choices, not over distinct networks.
DNNCOST_FUNC Arch sample(Rng& rng);

/// Once-for-All's width multiplier (the data set's is not recorded; SPEC.md argues for 1.2).
enum class Width { w1_0, w1_2 };

struct OfaOptions {
    std::int64_t batch = 1;
    Width width = Width::w1_2;
    /// Builds the network at this input resolution instead of the string's (e.g. to keep a
    /// measured network under a latency budget); at least 32.
    std::optional<std::int64_t> resolution;
};

/// make_divisible of SPEC.md §2.3: the nearest multiple of 8 (at least 8), raised by 8 when
/// rounding lost more than 10 %.
inline std::int64_t make_divisible(double v) {
    auto n = std::max<std::int64_t>(8, static_cast<std::int64_t>(std::floor((v + 4.0) / 8.0)) * 8);
    if (static_cast<double>(n) < 0.9 * v) n += 8;
    return n;
}

/// Channel widths of the fixed parts and of each stage.
struct Widths {
    std::int64_t stem, block0;
    std::array<std::int64_t, num_stages> stages;
    std::int64_t final_expand, feature_mix;
};
inline Widths widths(Width w) {
    const double m = w == Width::w1_2 ? 1.2 : 1.0;
    const auto scale = [m](std::int64_t base) { return make_divisible(static_cast<double>(base) * m); };
    return {scale(16), scale(16), {scale(24), scale(40), scale(80), scale(112), scale(160)}, scale(960), scale(1280)};
}

inline constexpr std::array<std::int64_t, num_stages> stage_strides{2, 2, 2, 1, 2};
inline constexpr std::array<bool, num_stages> stage_has_se{false, true, false, true, true};
inline constexpr std::array<bool, num_stages> stage_uses_hswish{false, false, true, true, true};

/// The operator graph of the sub-network. @throws config_error for bad options
DNNCOST_FUNC graph::Graph build_graph(const Arch& arch, const OfaOptions& opt = {});
inline graph::Graph build_graph(std::string_view arch, const OfaOptions& opt = {}) {
    return build_graph(parse(arch), opt);
}

}  // namespace dnncost::ofa

#if !defined(DNNCOST_COMPILED)
#include <dnncost/spaces/ofa_impl.hpp>
#endif
