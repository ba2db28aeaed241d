#pragma once
/// @file transformer_layer.hpp
/// The pre-norm transformer encoder layer as exporters write it, shared by the ViT space and the
/// synthesised encoders so that both give a runtime the same operator sequences: LayerNorm (or its
/// opset-13 decomposition), one MatMul for queries, keys and values, heads split by Reshape and
/// Transpose, scaled dot-product attention, output projection, residual Add, LayerNorm, an MLP of
/// two linear layers around GELU (erf form or the tanh approximation), residual Add.
#include <cmath>
#include <cstdint>
#include <numbers>
#include <string>

#include <dnncost/spaces/builder.hpp>

namespace dnncost::spaces {

/// One encoder layer's choices.
struct EncoderLayer {
    std::int64_t heads = 1;
    std::int64_t head_width = 64;  ///< queries, keys and values per head
    std::int64_t mlp_width = 256;  ///< hidden width of the MLP
    bool decompose_layer_norm = false;
    bool erf_gelu = false;  ///< GELU as x/2 (1 + erf(x/sqrt 2)), else the tanh approximation
};

/// LayerNorm over the last axis, or its decomposition (ReduceMean, Sub, Pow, ReduceMean, Add, Sqrt,
/// Div, Mul, Add) as opset-13 exporters write it.
inline int layer_norm(NetworkBuilder& b, int x, bool decompose, const std::string& n) {
    if (!decompose) return b.layer_norm(x, n);
    const auto d = b.shape(x).back();
    const int mean = b.reduce_mean(x, {-1}, true, n + ".mean");
    const int centred = b.binary("Sub", x, mean, n + ".centre");
    const int sq = b.binary("Pow", centred, b.scalar("const.two", 2.0), n + ".square");
    const int var = b.reduce_mean(sq, {-1}, true, n + ".var");
    const int sd = b.unary("Sqrt", b.add(var, b.scalar("const.layer_norm_eps", 1e-5), n + ".add_eps"), n + ".sqrt");
    int y = b.binary("Div", centred, sd, n + ".normalise");
    y = b.mul(y, b.weight(n + ".scale", {d}), n + ".mul_scale");
    return b.add(y, b.weight(n + ".bias", {d}), n + ".add_bias");
}

/// GELU in the operator order PyTorch's exporter writes: erf form or the tanh approximation.
inline int gelu(NetworkBuilder& b, int x, bool erf_form, const std::string& n) {
    if (erf_form) {
        int t = b.binary("Div", x, b.scalar("const.sqrt_two", std::numbers::sqrt2), n + ".div");
        t = b.unary("Erf", t, n + ".erf");
        t = b.add(t, b.scalar("const.one", 1.0), n + ".add_one");
        t = b.mul(x, t, n + ".mul_x");
        return b.mul(t, b.scalar("const.half", 0.5), n + ".mul_half");
    }
    int t = b.binary("Pow", x, b.scalar("const.three", 3.0), n + ".cube");
    t = b.mul(t, b.scalar("const.gelu_coeff", 0.044715), n + ".mul_coeff");
    t = b.add(x, t, n + ".add_x");
    t = b.mul(t, b.scalar("const.sqrt_2_over_pi", std::sqrt(2.0 / std::numbers::pi)), n + ".mul_sqrt_2_over_pi");
    t = b.unary("Tanh", t, n + ".tanh");
    t = b.add(t, b.scalar("const.one", 1.0), n + ".add_one");
    t = b.mul(x, t, n + ".mul_x");
    return b.mul(t, b.scalar("const.half", 0.5), n + ".mul_half");
}

/// One pre-norm encoder layer on tokens x [B, T, D]; returns [B, T, D].
inline int encoder_layer(NetworkBuilder& b, int x, const EncoderLayer& l, const std::string& n) {
    const auto s = b.shape(x);
    const std::int64_t B = s[0], T = s[1], D = s[2], h = l.heads, q = l.head_width;
    int y = layer_norm(b, x, l.decompose_layer_norm, n + ".attn_norm");
    y = b.linear(y, 3 * h * q, n + ".qkv");
    y = b.reshape(y, {B, T, 3 * h, q}, n + ".qkv.split_heads");
    y = b.transpose(y, {0, 2, 1, 3}, n + ".qkv.heads_first");
    const auto qkv = b.split(y, 1, {h, h, h}, n + ".qkv.split");
    const int kt = b.transpose(qkv[1], {0, 1, 3, 2}, n + ".attn.keys_t");
    int a = b.matmul(qkv[0], kt, n + ".attn.scores");
    a = b.mul(a, b.scalar("const.attn_scale_q" + std::to_string(q), 1.0 / std::sqrt(static_cast<double>(q))),
              n + ".attn.scale");
    a = b.softmax(a, n + ".attn.softmax");
    a = b.matmul(a, qkv[2], n + ".attn.context");
    a = b.transpose(a, {0, 2, 1, 3}, n + ".attn.tokens_first");
    a = b.reshape(a, {B, T, h * q}, n + ".attn.merge_heads");
    a = b.linear(a, D, n + ".attn.proj");
    x = b.add(x, a, n + ".attn.residual");
    y = layer_norm(b, x, l.decompose_layer_norm, n + ".mlp_norm");
    y = b.linear(y, l.mlp_width, n + ".mlp.fc1");
    y = gelu(b, y, l.erf_gelu, n + ".mlp.gelu");
    y = b.linear(y, D, n + ".mlp.fc2");
    return b.add(x, y, n + ".mlp.residual");
}

}  // namespace dnncost::spaces
