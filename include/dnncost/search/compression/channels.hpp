#pragma once
/// @file channels.hpp
/// Channel coupling analysis: which output channels of a network's layers can be pruned, and
/// which layers must prune theirs together.
///
/// Every activation tensor of rank >= 2 carries its channels on axis 1 (NCHW, or [N, features]
/// after a Flatten). The analysis walks the graph in topological order and gives each such
/// tensor a *channel space*: a convolution (group 1 or grouped), a Gemm or a MatMul with a weight
/// opens a new space; operators that keep channels (activations, BatchNorm, pooling, resizing,
/// Flatten of an [N, C, 1, 1] tensor) pass their input's space on; a residual Add (any
/// elementwise operator over activations of equal channel count) and a depthwise convolution
/// merge the spaces of their operands into one (union-find); a channel Concat makes a *derived*
/// space, the sum of its parts; an equal channel Split makes derived spaces, each a fraction of
/// its parent. A class of merged spaces written by at least one weighted layer is one *channel
/// group*, one gene of a pruning genome: all its layers keep the same channels.
///
/// Channels that must stay whole: those of graph inputs and outputs, of tensors read or written
/// by an operator the analysis does not know (or knows only for other axes: a Slice, Pad or
/// Reshape touching the channel axis, an unequal Split, a depthwise convolution with a channel
/// multiplier), and of a derived space merged with other channels; a fixed derived space fixes
/// its parts (a Concat) or its parent (a Split). Weighted layers left whole are reported with
/// the reason. Grouped convolutions require their input and output channel counts to stay
/// multiples of the group count (ChannelGroup::multiple).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <dnncost/core/config.hpp>
#include <dnncost/core/error.hpp>
#include <dnncost/graph/graph.hpp>

namespace dnncost::search::compression {

/// One gene: channels that the layers writing them prune together.
struct ChannelGroup {
    std::string name;             ///< the first weighted layer writing these channels
    std::vector<int> producers;   ///< node indices of the weighted layers writing them
    std::int64_t channels = 0;    ///< the unpruned channel count
    std::int64_t multiple = 1;    ///< a pruned count stays a multiple of this (grouped convolutions)
    std::int64_t parameters = 0;  ///< weight elements of the producers (the proxy's weight)
};

/// A weighted layer whose output channels stay whole, and why.
struct FixedLayer {
    std::string node;
    std::string op_type;
    std::string reason;
};

/// How a weight tensor follows the channels of the layer that reads it.
struct WeightRule {
    enum class Kind {
        per_channel,  ///< dimension `axis` is the channel count of `space`
        conv_weight,  ///< [K, C/group, ...]: K of `space`, C of `in_space` divided by the new group
        gemm_weight,  ///< [in, out] or [out, in] (`transposed`): out of `space`, in of `in_space`
    } kind = Kind::per_channel;
    int tensor = -1;
    int node = -1;
    int axis = 0;
    int space = -1;
    int in_space = -1;
    bool transposed = false;
};

/// The result of the analysis of one graph (indices refer to that graph).
struct ChannelAnalysis {
    std::vector<ChannelGroup> groups;
    std::vector<FixedLayer> fixed;

    // ---- the machinery apply_keep_ratios (prune.hpp) reads
    struct Space {
        enum class Kind { primary, concat, split } kind = Kind::primary;
        std::int64_t size = 0;
        std::vector<int> parts;   ///< concat: the spaces concatenated, in order
        int parent = -1;          ///< split: the space split
        std::int64_t pieces = 1;  ///< split: into this many equal parts
    };
    std::vector<Space> spaces;
    std::vector<int> tensor_space;  ///< channel space of every tensor, -1 for none
    std::vector<int> space_class;   ///< class (union-find root) of every space
    std::vector<int> class_group;   ///< per space index (meaningful at roots): gene or -1
    std::vector<char> class_fixed;  ///< per root: the class keeps its channels
    std::vector<WeightRule> weights;
    struct GroupAttr {
        int node = -1;
        int in_space = -1;  ///< a depthwise convolution: group = the new channel count of this space
    };
    std::vector<GroupAttr> depthwise;
    struct ReshapeTarget {
        int tensor = -1;  ///< integer shape constant of a Reshape
        std::size_t index = 1;
        int space = -1;
    };
    std::vector<ReshapeTarget> reshape_targets;
    struct SplitSizes {
        int node = -1;
        int tensor = -1;  ///< the sizes input, or -1 for the `split` attribute
        int space = -1;   ///< the space split
        std::int64_t pieces = 1;
    };
    std::vector<SplitSizes> split_sizes;
};

namespace detail {

DNNCOST_FUNC bool is_channel_keeping(std::string_view op);
inline bool is_elementwise(std::string_view op) {
    static constexpr std::string_view ops[] = {"Add", "Sub", "Mul", "Div", "Max", "Min", "Sum", "Mean", "Pow"};
    return std::find(std::begin(ops), std::end(ops), op) != std::end(ops);
}

class Analyser {
public:
    explicit Analyser(const graph::Graph& g) : m_g(g) {
        m_a.tensor_space.assign(g.num_tensors(), -1);
        m_reason.clear();
    }

    ChannelAnalysis run();

private:
    // ------------------------------------------------------------------ spaces
    int rank(int t) const { return static_cast<int>(m_g.tensor(t).shape.size()); }
    std::int64_t channels(int t) const { return m_g.tensor(t).shape.at(1); }
    bool is_activation(int t) const { return t >= 0 && m_g.tensor(t).kind != graph::TensorKind::weight; }
    int space_of(int t) const { return t < 0 ? -1 : m_a.tensor_space[static_cast<std::size_t>(t)]; }

    int add_space(ChannelAnalysis::Space s);
    /// A new primary space for tensor t (rank >= 2).
    int new_space(int t);
    int find(int s);
    void unite(int a, int b) {
        a = find(a), b = find(b);
        if (a != b) m_parent[static_cast<std::size_t>(b)] = a;
    }
    void fix(int s, std::string reason);
    void require_multiple(int s, std::int64_t m) {
        auto& x = m_multiple[static_cast<std::size_t>(s)];
        x = std::lcm(x, m);
    }
    /// Output t takes space s (pass-through).
    void pass(int t, int s);
    /// An operator the analysis does not follow: its activations keep their channels.
    void opaque(int v, const std::string& why);
    void follow(int tensor, int node, int axis, int space);
    /// Known integer values of a constant input, or empty.
    std::vector<std::int64_t> ints_of(int t) const;
    bool has_input(const graph::Node& nd, std::size_t slot) const {
        return nd.inputs.size() > slot && nd.inputs[slot] >= 0;
    }

    // ------------------------------------------------------------------ operators
    void visit(int v);

    /// The channel axis of the weight in `slot` of a channel-keeping operator (BatchNorm's
    /// scale, bias, mean and variance are [C]; PRelu's slope broadcasts like an operand).
    int per_channel_axis(const graph::Node& nd, std::size_t slot) const;

    void conv(int v, const graph::Node& nd, int x, int y);

    void matmul(int v, const graph::Node& nd, int x, int y);

    void elementwise(int v, const graph::Node& nd, int y);

    void concat(int v, const graph::Node& nd, int y);

    void split(int v, const graph::Node& nd, int x);

    void reshape(int v, const graph::Node& nd, int x, int y);

    // ------------------------------------------------------------------ classes and genes
    void resolve();

    const graph::Graph& m_g;
    ChannelAnalysis m_a;
    std::vector<int> m_parent;
    std::vector<std::string> m_reason;
    std::vector<std::int64_t> m_multiple;
    std::vector<std::vector<int>> m_producers;
};

}  // namespace detail

/// Analyse the channel coupling of a graph with concrete shapes (see the file comment).
/// @throws shape_error for a cyclic graph
inline ChannelAnalysis analyse_channels(const graph::Graph& g) { return detail::Analyser(g).run(); }

}  // namespace dnncost::search::compression

#if !defined(DNNCOST_COMPILED)
#include <dnncost/search/compression/channels_impl.hpp>
#endif
