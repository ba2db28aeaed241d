#pragma once
/// @file fusion_rules.hpp
/// A runtime's fusion rules and layout decision: which adjacent operators it executes as one
/// kernel, which multi-operator patterns it replaces by one kernel, and when it runs a kernel in
/// a blocked channel layout. A rule set is part of a device model: it is found by measurement
/// (device/fusion_discovery.hpp) and applied by the kernel pass (device/kernel_graph.hpp).
///
/// Operator kinds are ONNX op types (a matched pattern counts as one operator of the pattern's
/// name). The text form, one rule a line, `#` starting a comment:
///
///     dnncost-fusion-rules 1
///     device ort-cpu-all-1t
///     pattern LayerNormalization ReduceMean Sub Pow ReduceMean Add Sqrt Div Mul Add
///     fold Conv BatchNormalization operands=constant
///     fuse Conv Add operands=activation
///     fuse Add Relu after=Conv
///     fuse Gemm Relu consumers=shared
///     layout NCHWc 16 anchors=Conv followers=MaxPool,AveragePool,Add,Relu narrow-input=yes channels-last=yes
///     fuse Conv Add operands=activation operand-layout=blocked
///     fuse BatchNormalization Relu operands=none layout=blocked
///     execute Reshape Flatten
///     merge-duplicates
///     rewrite MatMul+Add Gemm reshape-rank=3
///     rewrite BatchNormalization Conv layout=blocked
///
/// The larger functions are defined in fusion_rules_impl.hpp: compiled into dnncost::compiled in
/// compiled mode (core/config.hpp), included at the end of this header otherwise.
#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <dnncost/core/config.hpp>
#include <dnncost/core/error.hpp>
#include <dnncost/core/json_string.hpp>

namespace dnncost::device {

/// What the operands of a fused consumer other than the producer's output are.
enum class Operands {
    any,        ///< a rule condition only: whatever they are
    none,       ///< the consumer reads nothing else (a unary operator)
    constant,   ///< only constants (weights, or values fixed at load): a bias, BatchNorm statistics
    activation  ///< at least one value computed at run time: a residual Add
};

inline std::string_view to_string(Operands o) {
    switch (o) {
        case Operands::none:
            return "none";
        case Operands::constant:
            return "constant";
        case Operands::activation:
            return "activation";
        default:
            return "any";
    }
}

/// @throws parse_error for an unknown name
inline Operands parse_operands(std::string_view s) {
    for (auto o : {Operands::any, Operands::none, Operands::constant, Operands::activation})
        if (s == to_string(o)) return o;
    raise<parse_error>("unknown operand class '", s, "' (expected any, none, constant or activation)");
}

/// A producer -> consumer pair the runtime executes in one kernel.
struct FusionRule {
    std::string producer;
    std::string consumer;
    Operands operands = Operands::any;
    /// The producer's output must be read by the consumer alone (and not be a graph output): the
    /// intermediate is never written to memory. Without it the kernel writes it as well.
    bool sole_consumer = true;
    /// The consumer is folded into the producer's constants at load time (BatchNorm into Conv)
    /// and costs nothing at run time; it needs operands = constant.
    bool fold = false;
    /// When not empty, the producer's kernel must start with one of these kinds: a chain rule
    /// such as Add -> Relu that holds only behind a Conv.
    std::vector<std::string> after;
    /// When the producer's kernel may run blocked, the consumer's activations must all come from
    /// kernels the layout rule may run blocked (ones that start with an anchor whose channels fit,
    /// or with a follower whose activations all come from such kernels): ONNX Runtime fuses an Add
    /// into a blocked convolution only when every input of the Add is blocked, and into a plain
    /// one whatever its inputs.
    bool blocked_operands = false;
    /// The producer's kernel must be one the layout rule may run blocked: ONNX Runtime runs a
    /// BatchNormalization of blocked data as a blocked convolution, which takes a following Relu,
    /// and of plain data as itself, which does not.
    bool blocked_producer = false;
    friend bool operator==(const FusionRule&, const FusionRule&) = default;
};

/// A connected group of operators the runtime replaces by one kernel of the pattern's name
/// (a decomposed LayerNorm or GELU). `ops` are the group's kinds in topological order; see
/// device/fusion_match.hpp for how a group is matched.
struct PatternRule {
    std::string name;
    std::vector<std::string> ops;
    friend bool operator==(const PatternRule&, const PatternRule&) = default;
};

/// A kernel the runtime executes as kernels of other kinds. ONNX Runtime runs MatMul+Add as a
/// Gemm, and a Gemm takes a matrix, so on inputs of three or more dimensions it flattens the
/// input before and restores the output after, in two Reshape kernels of its own; without graph
/// optimisation it expands HardSwish into a HardSigmoid kernel and a Mul kernel.
struct RewriteRule {
    std::string kind;             ///< the kernel's kind as the pass forms it ("MatMul+Add")
    std::vector<std::string> as;  ///< the kinds it runs as, in order ("Gemm"; "HardSigmoid", "Mul")
    int reshape_rank = 0;         ///< inputs of at least this rank get the two reshapes; 0: never
    /// Only a kernel that runs in the blocked layout is rewritten: ONNX Runtime runs a
    /// BatchNormalization on blocked data as a blocked convolution, and on plain data as itself.
    bool blocked_only = false;
    friend bool operator==(const RewriteRule&, const RewriteRule&) = default;
};

/// The runtime's blocked channel layout (ONNX Runtime's NCHWc): a kernel whose first operator
/// is an anchor runs blocked when its channel counts are multiples of `block`; a kernel whose
/// first operator is a follower runs blocked when every activation it reads is blocked. Where a
/// value crosses between layouts, a reorder kernel converts it.
struct LayoutRule {
    std::string name = "NCHWc";
    std::int64_t block = 0;  ///< 0: the runtime has no blocked layout
    std::vector<std::string> anchors;
    std::vector<std::string> followers;
    /// An ungrouped anchor convolution with fewer input channels than the block reads the plain
    /// layout directly (no reorder on its input): a network's first convolution on RGB images.
    bool narrow_input = true;
    /// The reorders also convert between channels-first and channels-last (ONNX Runtime's
    /// ReorderOutput and ReorderInput with channels_last): a Transpose from NCHW to NHWC of a
    /// blocked value, or from NHWC to NCHW of a value only blocked anchors read, runs in the
    /// reorder and gets no kernel of its own.
    bool channels_last_reorders = false;
    /// A Concat runs blocked only when every input's channels are a multiple of this (0: of the
    /// block): ONNX Runtime pads a blocked value's channels up to its own block (16 on AVX-512
    /// hosts, where the rules' block may be 8 because convolutions of 8-multiples run blocked
    /// padded), and joins such values blockwise only when none carries padding.
    std::int64_t concat_alignment = 0;
    bool enabled() const { return block > 0; }
    bool is_anchor(std::string_view op) const { return std::find(anchors.begin(), anchors.end(), op) != anchors.end(); }
    bool is_follower(std::string_view op) const {
        return std::find(followers.begin(), followers.end(), op) != followers.end();
    }
    friend bool operator==(const LayoutRule&, const LayoutRule&) = default;
};

/// `c % block` for a block > 0. The kernel pass and the features ask it of every kernel; a block
/// is a small power of two on the runtimes seen, where a mask gives the same value as a 64-bit
/// division (tens of cycles on many x86 cores).
inline std::int64_t block_remainder(std::int64_t c, std::int64_t block) {
    if (c >= 0 && (block & (block - 1)) == 0) return c & (block - 1);
    return c % block;
}

/// A device's rule set. The default value fuses nothing and has no blocked layout.
struct FusionRules {
    std::string device;
    std::vector<PatternRule> patterns;
    std::vector<FusionRule> fusions;
    LayoutRule layout;
    /// Operators that only relabel memory (cost::is_free_operator) which the runtime still runs
    /// as kernels of their own (ONNX Runtime copies a Reshape's or Flatten's data); the other
    /// free operators get no kernel.
    std::vector<std::string> executed;
    std::vector<RewriteRule> rewrites;
    /// The runtime computes nodes of the same operator, attributes and inputs once (ONNX
    /// Runtime's common subexpression elimination): the later ones get no kernel.
    bool merge_duplicates = false;
    friend bool operator==(const FusionRules&, const FusionRules&) = default;

    bool is_executed(std::string_view op) const {
        return std::find(executed.begin(), executed.end(), op) != executed.end();
    }
    /// The rewrite of kernels of kind `kind`, or nullptr.
    const RewriteRule* rewrite_of(std::string_view kind) const {
        for (const auto& r : rewrites)
            if (r.kind == kind) return &r;
        return nullptr;
    }

    /// The first fusion rule for `producer` -> `consumer` whose operand class and `after`
    /// condition hold (`anchor`: the kind that starts the producer's kernel), or nullptr.
    const FusionRule* find(std::string_view producer, std::string_view consumer, Operands operands,
                           std::string_view anchor) const {
        for (const auto& r : fusions) {
            if (r.producer != producer || r.consumer != consumer) continue;
            if (r.operands != Operands::any && r.operands != operands) continue;
            if (!r.after.empty() && std::find(r.after.begin(), r.after.end(), anchor) == r.after.end()) continue;
            return &r;
        }
        return nullptr;
    }

    /// @throws config_error naming the rule when a kind is not a plain token (or has a control
    /// character), a fold does not require constant operands and a sole consumer, a pattern has
    /// fewer than two operators, or the block is negative
    void check() const;

    /// The text form (see the file comment); parse(to_text()) == *this.
    std::string to_text() const;

    /// Read the text form; `source` names the text in errors ("rules.txt:4: ...").
    /// @throws parse_error naming the line
    static FusionRules parse(std::string_view text, std::string_view source = "fusion rules");

    /// The rule set as one JSON object (for reports; the text form is what is read back).
    std::string to_json() const;

private:
    /// What is wrong with one rule (or the device name), or empty: check() reports it for the
    /// rule set, parse() for the rule's line.
    static std::string problem(const PatternRule& p);
    static std::string problem(const FusionRule& r);
    static std::string problem(const RewriteRule& r);
    static std::string problem(const LayoutRule& l);
    static std::string device_problem(std::string_view device);
    static std::string token_problem(std::string_view what, const std::string& s);
    static std::vector<std::string> split(std::string_view line);
    static std::vector<std::string> list(const std::string& value);
    template <class Fail>
    static std::pair<std::string, std::string> option(const std::string& word, const Fail& fail) {
        const auto eq = word.find('=');
        if (eq == std::string::npos || eq == 0) fail("expected KEY=VALUE, got '", word, "'");
        return {word.substr(0, eq), word.substr(eq + 1)};
    }
};

}  // namespace dnncost::device

#if !defined(DNNCOST_COMPILED)
#include <dnncost/device/fusion_rules_impl.hpp>
#endif
