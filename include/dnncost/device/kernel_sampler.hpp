#pragma once
/// @file kernel_sampler.hpp
/// Kernel configurations to measure, per kernel kind (device/kernel_kind.hpp), each as a small
/// graph that the kernel pass turns into exactly one kernel of that kind (reorders aside) under a
/// device's rule set: the training samples of per-kernel latency regressors.
///
/// A configuration is drawn, with a seeded engine, either from a prior (the kernels of given
/// graphs, e.g. the search spaces' networks and data/onnx, found by running the kernel pass on
/// them) or from ranges that cover real networks: spatial sizes 1-224, up to 1,024 tokens,
/// 3-2,048 channels with counts that are not multiples of a layout block, kernels 1-7 (square
/// and not), strides 1-2, dense, grouped and depthwise convolutions, and the GEMM / MatMul sizes
/// of transformers. Samples are kept only when the pass gives the intended kind, and are unique
/// by canonical graph hash across everything a sampler has drawn. allocate_samples() and
/// adaptive_round() add samples where the held-out error of a kind's regressor is large.
///
/// The larger functions are defined in kernel_sampler_impl.hpp: compiled into dnncost::compiled in
/// compiled mode (core/config.hpp), included at the end of this header otherwise.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <dnncost/core/config.hpp>
#include <dnncost/core/error.hpp>
#include <dnncost/core/rng.hpp>
#include <dnncost/device/fusion_rules.hpp>
#include <dnncost/device/kernel_graph.hpp>
#include <dnncost/device/kernel_kind.hpp>
#include <dnncost/device/kind_spec.hpp>
#include <dnncost/graph/graph.hpp>
#include <dnncost/graph/hash.hpp>

namespace dnncost::device {

/// One kernel configuration. Dimensions follow device::KernelDims: a token tensor is
/// [n, h (tokens), c]; a matrix product [.., h, c] x [c, k].
struct KernelConfig {
    std::string kind;  ///< the intended kind key
    std::string op;    ///< the concrete first operator where a family has several (MaxPool, Sigmoid, ...)
    std::int64_t n = 1, c = 1, h = 1, w = 1, k = 1;
    std::int64_t kh = 1, kw = 1, sh = 1, sw = 1, groups = 1;
    bool batch_norm = false;     ///< a convolution followed by a BatchNorm (folded by most runtimes)
    bool tokens = false;         ///< a [n, tokens, channels] tensor rather than [n, c, h, w]
    bool weight_operand = true;  ///< MatMul: the second operand is a weight (else an activation)
    std::string act = "Relu";    ///< the activation of a "+Act" kind
    friend bool operator==(const KernelConfig&, const KernelConfig&) = default;
};

/// A configuration, its graph and the graph's canonical hash (the store key of its measurement).
struct KernelSample {
    KernelConfig config;
    graph::Graph graph;
    std::string key;
    /// The graph is kernel_sample_graph(config, true): the kernel, then the reduction that keeps
    /// its output inside the network (a second kernel, measured with it).
    bool in_network = false;
};

namespace detail {

inline std::int64_t conv_out(std::int64_t x, std::int64_t k, std::int64_t s) { return (x + 2 * (k / 2) - k) / s + 1; }

}  // namespace detail

/// The families kernel_sample_graph() can build.
inline bool sampleable_family(std::string_view family) {
    for (std::string_view f : {"Conv", "DepthwiseConv", "Gemm", "MatMul", "Pool", "GlobalPool", "Elementwise",
                               "Activation", "BatchNorm", "LayerNorm", "Softmax", "Reduce", "Concat", "DataMovement"})
        if (f == family) return true;
    return false;
}

/// The single-kernel graph of `c`: its operators with their shapes and weights (LayerNorm as
/// the decomposition ONNX exporters of opset < 17 write).
///
/// `in_network`: the kernel's output is averaged over every axis but the first (a ReduceMean)
/// before it leaves the graph, so that the kernel writes into the runtime's arena, as a kernel
/// inside a network does, rather than into an output that each run allocates, first touches and
/// hands back to the caller (what a sample pays at its boundary, sample_boundary.hpp).
/// @throws config_error for a kind this function cannot build; shape_error for inconsistent sizes
DNNCOST_FUNC graph::Graph kernel_sample_graph(const KernelConfig& c, bool in_network = false);

/// The configuration of kernel `k` of `kg` (a kernel graph of `g`) in the terms of
/// KernelConfig, or nullopt for a kernel kernel_sample_graph() cannot rebuild.
DNNCOST_FUNC std::optional<KernelConfig> kernel_config(const graph::Graph& g, const KernelGraph& kg, const Kernel& k);

struct KernelSamplerOptions {
    double prior_share = 0.5;                ///< of draws taken from the prior when a kind has one
    std::int64_t max_macs = 4'000'000'000;   ///< larger draws are shrunk (spatial size, then tokens)
    std::int64_t max_elements = 64'000'000;  ///< per activation tensor
    int attempts = 40;                       ///< draws tried per sample before a kind is given up
    void check() const {
        if (!(prior_share >= 0 && prior_share <= 1))
            raise<config_error>("kernel sampler: prior_share must be in [0, 1], got ", prior_share);
        if (max_macs < 1 || max_elements < 1 || attempts < 1)
            raise<config_error>("kernel sampler: max_macs, max_elements and attempts must be positive");
    }
};

/// Draws unique, verified single-kernel samples per kind under one rule set.
class KernelSampler {
public:
    /// @throws config_error for invalid rules or options
    explicit KernelSampler(FusionRules rules, KernelSamplerOptions options = {})
        : m_rules(std::move(rules)), m_options(options) {
        m_rules.check();
        m_options.check();
    }
    const FusionRules& rules() const { return m_rules; }

    /// Adds the kernels of `g` under the rules to the prior. Returns the number of kernels added.
    std::size_t add_prior(const graph::Graph& g);
    const std::map<std::string, std::vector<KernelConfig>>& prior() const { return m_prior; }

    /// The kinds this rule set can produce as a single kernel (a default configuration of each
    /// known, buildable kind is checked through the kernel pass).
    std::vector<std::string> kinds() const;

    /// Up to `count` new samples of `kind` (fewer when the kind runs out of unique draws);
    /// samples are never repeated across calls. @throws config_error for an unknown kind
    std::vector<KernelSample> draw(const std::string& kind, std::size_t count, Rng& rng);

    /// `per_kind` samples of every kind of kinds(), kind after kind.
    std::vector<KernelSample> draw_all(std::size_t per_kind, Rng& rng);

    /// The sample of `c` when the pass makes it one kernel of kind c.kind, else nullopt.
    std::optional<KernelSample> make(const KernelConfig& c) const;

private:
    bool verify(const KernelConfig& c) const;

    static std::int64_t pick(Rng& rng, std::int64_t lo, std::int64_t hi) {
        return lo + std::min<std::int64_t>(hi - lo, static_cast<std::int64_t>(rng.uniform() * double(hi - lo + 1)));
    }
    static std::int64_t log_pick(Rng& rng, std::int64_t lo, std::int64_t hi) {
        const double v = std::exp(rng.uniform(std::log(double(lo)), std::log(double(hi) + 1.0)));
        return std::clamp<std::int64_t>(static_cast<std::int64_t>(v), lo, hi);
    }
    template <std::size_t N>
    static std::int64_t one_of(Rng& rng, const std::int64_t (&v)[N]) {
        return v[static_cast<std::size_t>(pick(rng, 0, static_cast<std::int64_t>(N) - 1))];
    }
    /// Spatial sizes 1-224: common sizes of networks or any size, log-uniform.
    static std::int64_t spatial(Rng& rng) {
        static constexpr std::int64_t common[] = {1, 2, 4, 7, 8, 14, 16, 28, 32, 56, 64, 112, 128, 224};
        return rng.bernoulli(0.35) ? one_of(rng, common) : log_pick(rng, 1, 224);
    }
    /// Channel counts 3-2,048: multiples of 16 or 8, network-typical counts, or any count
    /// (mostly not a multiple of a layout block).
    static std::int64_t channels(Rng& rng, std::int64_t lo = 3, std::int64_t hi = 2048) {
        static constexpr std::int64_t common[] = {3,   16,  24,  32,  40,  48,  64,  80,   96,   128, 144,
                                                  192, 256, 384, 512, 576, 768, 960, 1024, 1280, 2048};
        const double u = rng.uniform();
        if (u < 0.25) return std::clamp(one_of(rng, common), lo, hi);
        const auto c = log_pick(rng, lo, hi);
        if (u < 0.55) return std::clamp<std::int64_t>((c + 8) / 16 * 16, std::max<std::int64_t>(lo, 16), hi);
        if (u < 0.65) return std::clamp<std::int64_t>((c + 4) / 8 * 8, std::max<std::int64_t>(lo, 8), hi);
        return c;
    }
    static std::int64_t tokens(Rng& rng) {
        static constexpr std::int64_t common[] = {1, 16, 49, 64, 196, 197, 256, 577, 1024};
        return rng.bernoulli(0.3) ? one_of(rng, common) : log_pick(rng, 1, 1024);
    }
    static std::int64_t model_width(Rng& rng) {
        static constexpr std::int64_t common[] = {64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096};
        return rng.bernoulli(0.6) ? one_of(rng, common) : channels(rng, 16, 4096);
    }
    static void kernel_size(Rng& rng, KernelConfig& c) {
        static constexpr std::int64_t sizes[] = {1, 1, 3, 3, 3, 5, 7, 2, 4, 6};
        c.kh = c.kw = one_of(rng, sizes);
        if (rng.bernoulli(0.15)) {  // non-square: 1xk / kx1 or two sizes
            c.kh = pick(rng, 1, 7);
            c.kw = rng.bernoulli(0.5) ? 1 : pick(rng, 1, 7);
            if (rng.bernoulli(0.5)) std::swap(c.kh, c.kw);
        }
        c.sh = c.sw = pick(rng, 1, 2);
    }
    /// Values that a kind's graph needs but its draw does not set.
    static void shape_defaults(KernelConfig& c) {
        const auto base = KindSpec::anchor_of(c.kind);
        c.tokens = base == "LayerNorm" || base == "Reduce" || base == "DataMovement" || c.tokens;
        if (base == "Softmax" && c.w < 1) c.w = 1;
        if (base == "Elementwise" && c.op.empty()) c.op = "Add";
    }
    KernelConfig from_ranges(const std::string& kind, Rng& rng) const;
    /// Shrinks a draw beyond the size caps: spatial size (or tokens) first, then channels.
    void fit(KernelConfig& c) const;

    FusionRules m_rules;
    KernelSamplerOptions m_options;
    std::map<std::string, std::vector<KernelConfig>> m_prior;
    std::set<std::string> m_seen;
};

/// Adds to the prior the kernels of `per_space` networks drawn (seeded, by each space's own
/// sampling) from every search space with its default options. Returns the kernels added.
DNNCOST_FUNC std::size_t add_space_prior(KernelSampler& sampler, std::size_t per_space, Rng& rng);

/// How many new samples each kind gets from `budget`: kinds whose held-out error exceeds
/// `threshold` share the budget in proportion to their error (largest remainders first, ties to
/// the name that sorts first); the others get none. Errors that are not finite count as the
/// largest finite one given (a kind without a usable regressor needs samples most).
/// @throws config_error for a negative threshold
DNNCOST_FUNC std::map<std::string, std::size_t> allocate_samples(const std::map<std::string, double>& errors,
                                                                 std::size_t budget, double threshold = 0.10);

/// Held-out error per kind (e.g. MAPE as a fraction) of regressors fitted on the samples given.
using KindErrors = std::function<std::map<std::string, double>(const std::vector<KernelSample>&)>;

/// One adaptive round: evaluates `samples`, then draws allocate_samples(errors, budget,
/// threshold) new samples per kind and appends them. Returns the errors evaluated.
DNNCOST_FUNC std::map<std::string, double> adaptive_round(KernelSampler& sampler, std::vector<KernelSample>& samples,
                                                          const KindErrors& evaluate, std::size_t budget, Rng& rng,
                                                          double threshold = 0.10);

}  // namespace dnncost::device

#if !defined(DNNCOST_COMPILED)
#include <dnncost/device/kernel_sampler_impl.hpp>
#endif
