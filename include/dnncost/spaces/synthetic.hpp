#pragma once
/// @file synthetic.hpp
/// Synthesised networks at the sizes of deployed ones: convolutional networks and transformer
/// encoders whose every choice is drawn, seeded, from ranges that reach what real networks run
/// (inputs of 128-320 pixels or up to 576 tokens, 16 to 4,096 channels, classifier heads of 1,000
/// outputs). They copy no published architecture: their blocks are the ones networks share
/// (plain and residual convolutions, bottlenecks, inverted residuals with optional
/// squeeze-excitation, parallel branches joined by a channel concatenation, pre-norm attention
/// and MLP layers) in random combinations, so that a
/// runtime executes their kernels among the neighbours real networks give them. A device build
/// profiles such networks whole (device/device_build.hpp, context_networks()).
///
/// A draw whose weights or multiply-accumulates exceed Limits is narrowed (channel counts scaled
/// down), then given a smaller input, until it fits.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <dnncost/core/config.hpp>
#include <dnncost/core/error.hpp>
#include <dnncost/core/rng.hpp>
#include <dnncost/graph/graph.hpp>
#include <dnncost/spaces/builder.hpp>

namespace dnncost::synthetic {

/// The lowest ONNX opset the graphs need (HardSwish; LayerNormalization when not decomposed).
inline constexpr int onnx_opset = 17;

/// How large a synthesised network may be.
struct Limits {
    std::int64_t max_params = 30'000'000;    ///< weights (float32: a model file of 4 bytes each)
    std::int64_t max_macs = 10'000'000'000;  ///< multiply-accumulates of one inference
    std::int64_t classes = 1000;             ///< outputs of the classifier head
    void check() const {
        if (max_params < 1 || max_macs < 1 || classes < 1)
            raise<config_error>("synthetic networks: max_params, max_macs and classes must be positive");
    }
};

/// What a network costs, counted from its graph: weight elements, and multiply-accumulates of
/// its convolutions and matrix products.
struct NetworkSize {
    std::int64_t params = 0;
    std::int64_t macs = 0;
};
DNNCOST_FUNC NetworkSize network_size(const graph::Graph& g);

/// basic: two k x k convolutions and a residual sum; bottleneck: 1x1, k x k, 1x1 and a residual
/// sum; inverted: 1x1 expansion, depthwise k x k, 1x1 projection; branched: parallel branches
/// (1x1; 1x1 then k x k; 1x1 then two k x k; 3x3 max pool then 1x1) concatenated along the
/// channels, the split-transform-merge of multi-branch and densely connected networks.
/// grouped: a bottleneck whose k x k convolution is grouped (CnnStage::group_width channels a
/// group); shuffle: half the channels split off and passed on, the other half through 1x1,
/// depthwise k x k and 1x1, concatenated and shuffled between the halves (a Reshape, Transpose,
/// Reshape), a stride-2 unit taking both halves through convolutions; depthwise_mlp: a
/// depthwise k x k convolution, a layer norm over the channels (between transposes to and from
/// channels-last), an MLP of CnnStage::expand times the width with GELU, a per-channel scale and
/// a residual sum, on a 4x4 patch stem, stages joined by a layer norm and a 2x2 stride-2
/// convolution; plain: k x k convolutions with a bias and no normalisation, stages joined by a
/// 2x2 max pool.
enum class Block { basic, bottleneck, inverted, branched, grouped, shuffle, depthwise_mlp, plain };

struct CnnStage {
    std::int64_t width = 64;   ///< output channels (a bottleneck's inner width is a quarter)
    int depth = 1;
    std::int64_t stride = 2;
    std::int64_t kernel = 3;   ///< of the spatial convolution
    std::int64_t expand = 1;   ///< an inverted residual's expansion ratio (a depthwise_mlp block's MLP ratio)
    bool squeeze_excite = false;
    int branches = 2;          ///< a branched block's parallel branches, 2-4
    bool dense = false;        ///< a branched block concatenates its input too (stride 1 only)
    std::int64_t group_width = 8;  ///< a grouped block's channels per group of its k x k convolution
    int inner_divisor = 4;         ///< a grouped block's inner width: the width over this (1, 2 or 4)
};

/// A convolutional network: stem, stages of one kind of block, optional 1x1 feature mix,
/// global pooling and a classifier (with an optional hidden layer).
struct CnnArch {
    std::int64_t resolution = 224;
    std::int64_t stem = 32;
    bool stem_pool = false;   ///< a 7x7 stem and a 3x3 max pool, else a 3x3 stem
    /// A plain network's stem convolution: its kernel and stride (0: as stem_pool says). A
    /// depthwise_mlp network's stem is a 4x4 stride-4 patch convolution whatever these say.
    std::int64_t stem_kernel = 0, stem_stride = 0;
    Block block = Block::basic;
    std::string act = "Relu";  ///< Relu, Clip (ReLU6), HardSwish or Swish (Sigmoid and Mul); Gelu (depthwise_mlp only)
    std::vector<CnnStage> stages;
    std::int64_t feature_mix = 0;  ///< channels of a 1x1 convolution before pooling; 0: none
    std::int64_t hidden = 0;       ///< a hidden fully connected layer of the head; 0: none
    int hidden_layers = 1;         ///< how many such layers (1 or 2)
    /// The head reads the final feature map flattened (after a 2x2 max pool where it is larger
    /// than 8x8), not its global average: wide classifier layers on thousands of inputs.
    bool flatten = false;
};

/// A transformer encoder on patches of an image (a strided convolution embeds them) or on token
/// embeddings given as input.
struct TransformerArch {
    std::int64_t tokens = 196;     ///< sequence length (patches: (resolution / patch)^2)
    std::int64_t patch = 16;       ///< 0: token input, no patch embedding
    std::int64_t embed = 384;
    std::int64_t head_width = 64;  ///< per attention head (heads = embed / head_width)
    std::int64_t mlp_ratio = 4;
    int depth = 4;
    bool cls_token = false;        ///< readout: a class token, else the mean of the tokens
    bool decompose_layer_norm = false;
    bool erf_gelu = true;          ///< GELU as x/2 (1 + erf(x/sqrt 2)), else the tanh approximation
};

/// Seeded draws. A draw is not yet fitted to any limits.
DNNCOST_FUNC CnnArch sample_cnn(Rng& rng);
/// A draw of the given block kind (the same draws from `rng` as sample_cnn(rng)).
DNNCOST_FUNC CnnArch sample_cnn(Rng& rng, Block block);
DNNCOST_FUNC TransformerArch sample_transformer(Rng& rng);

/// Sequence lengths of a transformer: short (49-100 patches of 32 pixels, as a ViT-B/32 at
/// ImageNet sizes), medium (144-256 patches of 16), long (400-576 patches of 16, or 384-512 tokens).
enum class Sequence { short_range, medium_range, long_range };
/// `a` with a sequence of the given length; `choice` (any value) picks one of the range's lengths.
/// It draws nothing: a caller sets the length after a seeded draw without changing later draws.
DNNCOST_FUNC TransformerArch with_sequence(TransformerArch a, Sequence length, std::size_t choice);

/// The graphs, fitted to `limits` (narrowed, then shrunk; see the file comment).
/// @throws config_error for an architecture that cannot be built (no stage, a width below 1, ...)
DNNCOST_FUNC graph::Graph build_cnn(const CnnArch& a, const Limits& limits = {});
DNNCOST_FUNC graph::Graph build_transformer(const TransformerArch& a, const Limits& limits = {});

/// Short descriptions, which name the graphs ("cnn:r224-s32-inverted-...", "transformer:t196-...").
DNNCOST_FUNC std::string to_string(const CnnArch& a);
DNNCOST_FUNC std::string to_string(const TransformerArch& a);

/// The architectures the descriptions name, read back: parse_cnn(to_string(a)) builds the graph
/// `a` builds. @throws parse_error naming the bad token, or for a text to_string would write
/// otherwise (a leading zero, a default written out), so that one network has one description
DNNCOST_FUNC CnnArch parse_cnn(std::string_view text);
DNNCOST_FUNC TransformerArch parse_transformer(std::string_view text);

/// A synthesised network's graph name: "cnn:" or "transformer:" and the description, then
/// "-out<N>" where the classifier has other than 1,000 outputs.
DNNCOST_FUNC std::string network_name(const CnnArch& a, const Limits& limits = {});
DNNCOST_FUNC std::string network_name(const TransformerArch& a, const Limits& limits = {});

/// Whether `name` starts as a synthesised network's name does ("cnn:", "transformer:").
inline bool is_network_name(std::string_view name) {
    return name.starts_with("cnn:") || name.starts_with("transformer:");
}

/// The network a graph name of build_cnn or build_transformer describes, built again: the same
/// graph, whatever limits it was first fitted to (the name describes the fitted network), so a
/// results store can name such networks without keeping their model files.
/// @throws parse_error for a name that is not one of those
DNNCOST_FUNC graph::Graph build_from_name(std::string_view name);

}  // namespace dnncost::synthetic

#if !defined(DNNCOST_COMPILED)
#include <dnncost/spaces/synthetic_impl.hpp>
#endif
