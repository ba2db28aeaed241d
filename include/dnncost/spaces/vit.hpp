#pragma once
/// @file vit.hpp
/// A vision-transformer search space for CIFAR-100 on edge devices, after PerfSAGE's
/// ViT-CIFAR100 space: architecture strings, seeded sampling, the size of the space and the
/// operator graph of a network (docs/spaces.md documents the space).
///
/// Choices: patch size P (4 or 8; a strided P x P Conv embeds 32x32 images into (32/P)^2
/// tokens), embedding width D (64 to 192), readout (class token or mean of the tokens), depth
/// (4 to 12 encoder layers) and, per layer, the number of heads (2, 4, 6, 8), the query/key/value
/// width of a head (16, 32, 48, 64) and the MLP ratio (1 to 4).
/// String: `p<P>-e<D>-<cls|mean>-h<h>q<q>m<m>-h<h>q<q>m<m>-…`, one `h…q…m…` token per layer, e.g.
/// `p4-e128-cls-h4q32m2-h2q64m4-h8q16m1-h4q32m3`.
///
/// Encoder layer (pre-norm): LayerNorm; one MatMul for queries, keys and values, Reshape,
/// Transpose, Split into q, k, v; softmax(q k^T / sqrt(q)) v per head (MatMul, Mul, Softmax,
/// MatMul); Transpose, Reshape, output projection; residual Add; LayerNorm; MLP of two linear
/// layers with GELU between, written as 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) with
/// Pow, Mul, Add, Tanh; residual Add. Then LayerNorm, the readout and Linear(D -> 100).
/// LayerNormalization is ONNX opset 17; `VitOptions::decompose_layer_norm` writes it as
/// ReduceMean/Sub/Pow/ReduceMean/Add/Sqrt/Div/Mul/Add instead (any opset from 13).
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
#include <dnncost/spaces/transformer_layer.hpp>

namespace dnncost::vit {

inline constexpr std::int64_t image_size = 32;
inline constexpr std::int64_t num_classes = 100;
inline constexpr std::array<int, 2> patch_choices{4, 8};
inline constexpr std::array<int, 5> embed_choices{64, 96, 128, 160, 192};
inline constexpr std::array<int, 4> head_choices{2, 4, 6, 8};
inline constexpr std::array<int, 4> qkv_choices{16, 32, 48, 64};
inline constexpr std::array<int, 4> mlp_ratio_choices{1, 2, 3, 4};
inline constexpr int min_depth = 4;
inline constexpr int max_depth = 12;
/// The lowest ONNX opset the graphs need (LayerNormalization; 13 with decompose_layer_norm).
inline constexpr int onnx_opset = 17;

enum class Readout { cls_token, mean };

struct Layer {
    int heads = 4;
    int qkv_width = 32;  ///< per head
    int mlp_ratio = 2;
    friend bool operator==(const Layer&, const Layer&) = default;
};

struct Arch {
    int patch = 4;
    int embed = 128;
    Readout readout = Readout::cls_token;
    std::vector<Layer> layers;  ///< min_depth to max_depth entries
    friend bool operator==(const Arch&, const Arch&) = default;
};

namespace detail {
template <std::size_t N>
bool one_of(std::int64_t v, const std::array<int, N>& allowed) {
    for (int c : allowed)
        if (v == c) return true;
    return false;
}
/// Reads `<tag><number>` from the front of `s`, advancing it; -1 when the tag is missing.
DNNCOST_FUNC std::int64_t take_field(std::string_view& s, char tag);
}  // namespace detail

/// Parses `p<P>-e<D>-<cls|mean>-h<h>q<q>m<m>-…`. @throws parse_error naming the bad token
DNNCOST_FUNC Arch parse(std::string_view text);

DNNCOST_FUNC std::string to_string(const Arch& a);

/// The number of architectures: 2 patch sizes x 5 widths x 2 readouts x sum over depths L of 64^L.
inline spaces::Count size() {
    const std::uint64_t per_layer = head_choices.size() * qkv_choices.size() * mlp_ratio_choices.size();
    spaces::Count layers;
    for (int d = min_depth; d <= max_depth; ++d) layers += spaces::Count::power(per_layer, static_cast<unsigned>(d));
    return layers * spaces::Count(patch_choices.size() * embed_choices.size() * 2);
}

/// Every choice drawn independently and uniformly (depth uniform in 4..12, then each layer's
/// choices), PerfSAGE's sampling: uniform over choices, not over architectures (which would
/// almost always be 12 layers deep).
DNNCOST_FUNC Arch sample(Rng& rng);

struct VitOptions {
    std::int64_t batch = 1;
    bool decompose_layer_norm = false;
};

namespace detail {
DNNCOST_FUNC void check(const Arch& a);

class Builder {
public:
    Builder(const Arch& a, const VitOptions& o) : m_a(a), m_o(o), m_b("vit:" + to_string(a)) {}

    graph::Graph build() {
        const std::int64_t B = m_o.batch, D = m_a.embed, P = m_a.patch, side = image_size / P;
        int x = m_b.input("input", {B, 3, image_size, image_size});
        x = m_b.conv(x, spaces::ConvSpec{D, {P, P}, {P, P}, {0, 0, 0, 0}, 1, true}, "patch_embed");
        x = m_b.reshape(x, {B, D, side * side}, "patch_embed.flatten");
        x = m_b.transpose(x, {0, 2, 1}, "patch_embed.to_tokens");
        if (m_a.readout == Readout::cls_token) {
            int cls = m_b.weight("cls_token", {1, 1, D});
            if (B > 1) {
                const int shape = m_b.int64_vector("cls_token.expand.shape", {B, 1, D});
                cls = m_b.op("Expand", "cls_token.expand", {cls, shape}, {B, 1, D});
            }
            x = m_b.concat({cls, x}, 1, "cls_token.concat");
        }
        const std::int64_t T = m_b.shape(x)[1];
        x = m_b.add(x, m_b.weight("pos_embed", {1, T, D}), "pos_embed.add");
        for (std::size_t i = 0; i < m_a.layers.size(); ++i) x = layer(x, m_a.layers[i], "layer" + std::to_string(i));
        x = norm(x, "final_norm");
        if (m_a.readout == Readout::cls_token)
            x = m_b.gather(x, 1, 0, "readout.cls");
        else
            x = m_b.reduce_mean(x, {1}, false, "readout.mean");
        x = m_b.gemm(x, num_classes, "classifier");
        return m_b.finish({x});
    }

private:
    int norm(int x, const std::string& n) { return spaces::layer_norm(m_b, x, m_o.decompose_layer_norm, n); }
    int layer(int x, const Layer& l, const std::string& n) {
        const spaces::EncoderLayer spec{l.heads, l.qkv_width, l.mlp_ratio * m_b.shape(x)[2], m_o.decompose_layer_norm,
                                        false};
        return spaces::encoder_layer(m_b, x, spec, n);
    }

    const Arch& m_a;
    const VitOptions& m_o;
    spaces::NetworkBuilder m_b;
};
}  // namespace detail

/// The operator graph of the network. @throws config_error for a batch below 1 or choices
/// outside the space
inline graph::Graph build_graph(const Arch& arch, const VitOptions& opt = {}) {
    if (opt.batch < 1) raise<config_error>("vit::build_graph: batch must be at least 1, got ", opt.batch);
    detail::check(arch);
    return detail::Builder(arch, opt).build();
}
inline graph::Graph build_graph(std::string_view arch, const VitOptions& opt = {}) {
    return build_graph(parse(arch), opt);
}

}  // namespace dnncost::vit

#if !defined(DNNCOST_COMPILED)
#include <dnncost/spaces/vit_impl.hpp>
#endif
