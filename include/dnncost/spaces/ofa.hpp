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
inline bool same_network(const Arch& a, const Arch& b) {
    if (a.resolution != b.resolution || a.depths != b.depths) return false;
    for (int s = 0; s < num_stages; ++s)
        for (int j = 0; j < a.depths[static_cast<std::size_t>(s)]; ++j) {
            const auto i = static_cast<std::size_t>(max_depth * s + j);
            if (a.kernels[i] != b.kernels[i] || a.expansions[i] != b.expansions[i]) return false;
        }
    return true;
}

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
inline Arch parse(std::string_view text) {
    const spaces::ArchText at("ofa", text);
    const auto fields = spaces::split(text, '-');
    if (fields.size() != 4)
        at.fail("expected 4 fields r…-d…-k…-e… joined by '-', found " + std::to_string(fields.size()));
    Arch a;
    if (fields[0].empty() || fields[0][0] != 'r') at.fail_token(0, fields[0], "should start with 'r'");
    const auto r = spaces::parse_small_uint(fields[0].substr(1));
    if (r < min_resolution || r > max_resolution || (r - min_resolution) % resolution_step != 0)
        at.fail_token(0, fields[0], "is not a resolution 128, 132, ..., 224");
    a.resolution = static_cast<int>(r);
    detail::parse_list(at, fields[1], 1, 'd', depth_choices, a.depths);
    detail::parse_list(at, fields[2], 2, 'k', kernel_choices, a.kernels);
    detail::parse_list(at, fields[3], 3, 'e', expansion_choices, a.expansions);
    return a;
}

inline std::string to_string(const Arch& a) {
    std::string s = "r" + std::to_string(a.resolution) + "-d";
    const auto join = [&s](const auto& v) {
        for (std::size_t i = 0; i < v.size(); ++i) {
            if (i) s += '.';
            s += std::to_string(v[i]);
        }
    };
    join(a.depths);
    s += "-k";
    join(a.kernels);
    s += "-e";
    join(a.expansions);
    return s;
}

/// The number of distinct networks: 25 resolutions x (9^2 + 9^3 + 9^4)^5 (unused slots do not
/// count: strings that differ only there are one network).
inline spaces::Count size() {
    spaces::Count per_stage;
    for (int d : depth_choices) per_stage += spaces::Count::power(9, static_cast<unsigned>(d));
    spaces::Count n(num_resolutions);
    for (int s = 0; s < num_stages; ++s) n *= per_stage;
    return n;
}

/// Every choice of the string drawn independently and uniformly (resolution, five depths, all
/// 20 kernels and expansions), as Once-for-All's sampler and HELP's data set do. A shallow stage
/// is as likely as a deep one, so this is uniform over choices, not over distinct networks.
inline Arch sample(Rng& rng) {
    Arch a;
    a.resolution = min_resolution + resolution_step * static_cast<int>(rng.below(num_resolutions));
    for (auto& d : a.depths) d = depth_choices[rng.below(depth_choices.size())];
    for (auto& k : a.kernels) k = kernel_choices[rng.below(kernel_choices.size())];
    for (auto& e : a.expansions) e = expansion_choices[rng.below(expansion_choices.size())];
    return a;
}

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
inline graph::Graph build_graph(const Arch& arch, const OfaOptions& opt = {}) {
    if (opt.batch < 1) raise<config_error>("ofa::build_graph: batch must be at least 1, got ", opt.batch);
    // an input beyond 4096 x 4096 is no edge network, and its activations would not fit in memory
    if (opt.resolution && (*opt.resolution < 32 || *opt.resolution > 4096))
        raise<config_error>("ofa::build_graph: resolution override must be in [32, 4096], got ", *opt.resolution);
    const std::int64_t res = opt.resolution.value_or(arch.resolution);
    std::string name = "ofa:" + to_string(arch);
    if (opt.width == Width::w1_0) name += ":w1.0";
    if (opt.resolution) name += ":r" + std::to_string(res);
    spaces::NetworkBuilder b(name);
    const auto act = [&b](int x, bool hswish, const std::string& n) {
        return b.unary(hswish ? "HardSwish" : "Relu", x, n + (hswish ? ".hswish" : ".relu"));
    };
    const Widths w = widths(opt.width);
    int x = b.input("input", {opt.batch, 3, res, res});
    x = act(b.batch_norm(b.conv(x, w.stem, 3, 2, 1, "stem.conv"), "stem.bn"), true, "stem");
    {  // block 0: depthwise 3x3, projection, residual
        int y =
            act(b.batch_norm(b.conv(x, w.stem, 3, 1, w.stem, "block0.dw.conv"), "block0.dw.bn"), false, "block0.dw");
        y = b.batch_norm(b.conv(y, w.block0, 1, 1, 1, "block0.proj.conv"), "block0.proj.bn");
        x = b.add(y, x, "block0.add");
    }
    std::int64_t cin = w.block0;
    for (int s = 0; s < num_stages; ++s) {
        const auto su = static_cast<std::size_t>(s);
        const std::int64_t cout = w.stages[su];
        const bool hswish = stage_uses_hswish[su];
        for (int j = 0; j < arch.depths[su]; ++j) {
            const auto slot = static_cast<std::size_t>(max_depth * s + j);
            const std::int64_t k = arch.kernels[slot], stride = j == 0 ? stage_strides[su] : 1;
            const std::int64_t mid = make_divisible(std::round(static_cast<double>(cin * arch.expansions[slot])));
            const std::string n = "stage" + std::to_string(s + 1) + ".block" + std::to_string(j);
            int y =
                act(b.batch_norm(b.conv(x, mid, 1, 1, 1, n + ".expand.conv"), n + ".expand.bn"), hswish, n + ".expand");
            y = act(b.batch_norm(b.conv(y, mid, k, stride, mid, n + ".dw.conv"), n + ".dw.bn"), hswish, n + ".dw");
            if (stage_has_se[su]) {
                const std::int64_t r = make_divisible(static_cast<double>(mid / 4));
                int g = b.global_average_pool(y, n + ".se.pool");
                g = b.unary("Relu",
                            b.conv(g, spaces::ConvSpec{r, {1, 1}, {1, 1}, {0, 0, 0, 0}, 1, true}, n + ".se.reduce"),
                            n + ".se.relu");
                g = b.conv(g, spaces::ConvSpec{mid, {1, 1}, {1, 1}, {0, 0, 0, 0}, 1, true}, n + ".se.expand");
                g = b.unary("HardSigmoid", g, n + ".se.hsigmoid", {{"alpha", 0.16666667}, {"beta", 0.5}});
                y = b.mul(y, g, n + ".se.scale");
            }
            y = b.batch_norm(b.conv(y, cout, 1, 1, 1, n + ".proj.conv"), n + ".proj.bn");
            x = stride == 1 && cin == cout ? b.add(y, x, n + ".add") : y;
            cin = cout;
        }
    }
    x = act(b.batch_norm(b.conv(x, w.final_expand, 1, 1, 1, "final_expand.conv"), "final_expand.bn"), true,
            "final_expand");
    x = b.global_average_pool(x, "pool");
    x = act(b.conv(x, w.feature_mix, 1, 1, 1, "feature_mix.conv"), true, "feature_mix");
    x = b.gemm(b.flatten(x, "flatten"), 1000, "classifier");
    return b.finish({x});
}
inline graph::Graph build_graph(std::string_view arch, const OfaOptions& opt = {}) {
    return build_graph(parse(arch), opt);
}

}  // namespace dnncost::ofa
