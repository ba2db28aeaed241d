#pragma once
/// @file vig_space.hpp
/// The ViG supernet space of MaGNAS (Sec. 4.1, Table 1), built on isotropic ViG-S (Han et al.
/// 2022): a stem turns a 224 x 224 image into N = 196 nodes of D = 320 channels, then four
/// superblocks (K = 12, 16, 20, 24 nearest neighbours) of d ViG blocks each, then the
/// classifier. Per superblock: depth d in {2, 3, 4}, graph operator in {max-relative, EdgeConv,
/// GraphSAGE, GIN}, pre-processing FC on/off, FFN on/off and FFN hidden width in {96, 192, 320}:
/// (3 * 4 * 2 * 2 * 3)^4 = 4.3e8 ~ 2^29 architectures. A ViG block is a Grapher followed by an
/// optional FFN; the mapping blocks are Stem, every Grapher, every present FFN and Cls, so a
/// skipped FFN has no mapping gene.
///
/// Layer workloads follow the ViG reference design: Grapher = [pre FC D->D] + kNN graph
/// (pairwise distances, top-k) + graph operator (D -> 2D, grouped 1x1 convolutions with 4
/// groups as in ViG's BasicConv) + post FC 2D->D + residual; FFN = FC D->w, FC w->D + residual;
/// fp16 activations and weights.
///
/// The accuracy function is a PROXY (vig_accuracy_proxy), not a trained supernet: see there.
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <dnncost/core/config.hpp>
#include <dnncost/core/error.hpp>
#include <dnncost/search/mapping/cost_table.hpp>
#include <dnncost/search/mapping/workload.hpp>

namespace dnncost::search::mapping {

/// Graph operators of the ViG supernet, in the order of MaGNAS Table 2's "Graph-Ops (M, E, G, S)"
/// letters: M = max-relative, E = EdgeConv, S = GraphSAGE, G = GIN.
enum class GraphOp : std::uint8_t { max_relative = 0, edge_conv = 1, graph_sage = 2, gin = 3 };
inline constexpr std::size_t num_graph_ops = 4;
inline constexpr char graph_op_letter[num_graph_ops] = {'M', 'E', 'S', 'G'};
inline constexpr const char* graph_op_name[num_graph_ops] = {"max-relative", "EdgeConv", "GraphSAGE", "GIN"};

/// One superblock's choices.
struct VigSuperblock {
    std::uint8_t depth = 4;
    GraphOp op = GraphOp::max_relative;
    bool pre_fc = true;
    bool ffn = true;
    std::uint16_t ffn_hidden = 320;
    bool operator==(const VigSuperblock&) const = default;
};

/// A ViG subnet: four superblocks.
struct VigArchitecture {
    std::array<VigSuperblock, 4> superblocks{};
    bool operator==(const VigArchitecture&) const = default;
};

enum class VigBlockKind : std::uint8_t { stem = 0, grapher = 1, ffn = 2, cls = 3 };

/// One mapping block of a ViG subnet.
struct VigBlock {
    VigBlockKind kind = VigBlockKind::stem;
    std::uint8_t superblock = 0;  ///< 0..3 (grapher, ffn)
    std::uint8_t index = 0;       ///< position within the superblock (for names)
    GraphOp op = GraphOp::max_relative;
    bool pre_fc = false;
    std::uint16_t ffn_hidden = 0;
};

/// The ViG supernet space (see the file comment).
class VigSpace {
public:
    using Architecture = VigArchitecture;
    using Block = VigBlock;
    using Genome = std::vector<std::uint8_t>;

    static constexpr std::size_t superblocks = 4;
    static constexpr std::size_t genes_per_superblock = 5;  // depth, op, pre_fc, ffn, hidden
    static constexpr std::array<std::uint8_t, 3> depths = {2, 3, 4};
    static constexpr std::array<std::uint16_t, 3> hidden_widths = {96, 192, 320};
    static constexpr std::array<std::size_t, 4> neighbours = {12, 16, 20, 24};
    static constexpr std::size_t nodes = 196, channels = 320, image = 224, classifier_hidden = 1024;
    static constexpr double bytes_per_value = 2.0;  // fp16

    /// @param classes classifier outputs (100 for CIFAR-100).
    explicit VigSpace(std::size_t classes = 100) : m_classes(classes) {
        if (classes == 0) raise<config_error>("VigSpace: 0 classes");
    }
    std::size_t classes() const { return m_classes; }

    /// Genes: per superblock depth (3), graph operator (4), pre-FC (2), FFN (2), hidden (3).
    DNNCOST_FUNC std::vector<std::size_t> cardinalities() const;
    /// Crossover swaps whole superblocks (MaGNAS 4.2.2): gene g belongs to group g / 5.
    std::size_t gene_group(std::size_t gene) const { return gene / genes_per_superblock; }
    std::size_t num_gene_groups() const { return superblocks; }

    /// @throws config_error for a wrong length or a gene out of range.
    DNNCOST_FUNC Architecture decode(std::span<const std::uint8_t> g) const;
    /// @throws config_error for a choice outside the space.
    DNNCOST_FUNC Genome encode(const Architecture& a) const;
    /// The genome with genes that do not change the network set to 0 (the hidden width of a
    /// superblock without FFN), so equal networks share one cache entry.
    DNNCOST_FUNC Genome canonical(Genome g) const;

    /// Mapping blocks in execution order: Stem, (Grapher, [FFN]) x depth per superblock, Cls.
    DNNCOST_FUNC std::vector<Block> blocks(const Architecture& a) const;
    /// "stem", "grapher2.1" (superblock 2, block 1, counted from 1), "ffn2.1", "cls".
    DNNCOST_FUNC static std::string block_name(const Block& b);

    /// Architecture as text: superblocks joined by '-', each <depth><op letter>[p][f<width>],
    /// e.g. ViG-S with max-relative is "4Mpf320-4Mpf320-4Mpf320-4Mpf320"; "2G" is two GIN
    /// blocks without pre-FC and FFN.
    DNNCOST_FUNC static std::string to_string(const Architecture& a);
    /// Parse to_string's form. @throws parse_error naming the superblock and the problem.
    DNNCOST_FUNC Architecture parse(std::string_view text) const;

    /// ViG-S with one graph operator everywhere: depth 4, pre-FC and FFN (width 320) in every
    /// superblock (the MaGNAS baselines b0-b3).
    DNNCOST_FUNC static Architecture baseline(GraphOp op);

    /// Layers and feature sizes of a block (see the file comment for the design).
    DNNCOST_FUNC BlockWork workload(const Block& b) const;

    /// Axes of a cost table over every distinct block: kind x superblock x graph operator x
    /// pre-FC x FFN width. Parameters a block does not have sit at level 0 (table_index).
    DNNCOST_FUNC static std::vector<Axis> table_axes();
    /// The table coordinates of a block (irrelevant parameters at 0: an FFN's cost does not
    /// depend on its superblock, nor a Grapher's on an FFN width).
    DNNCOST_FUNC static std::array<std::size_t, 5> table_index(const Block& b);
    /// One block of each distinct table entry (2 + 32 + 3 = 37 blocks).
    DNNCOST_FUNC static std::vector<Block> block_types();

private:
    template <class A, class T>
    static std::uint8_t index_of(const A& values, T x, const char* what) {
        for (std::size_t i = 0; i < values.size(); ++i)
            if (values[i] == x) return static_cast<std::uint8_t>(i);
        raise<config_error>("VigSpace: ", what, " ", x, " is not in the space");
    }
    DNNCOST_FUNC VigSuperblock parse_superblock(std::string_view text, std::string_view part, std::size_t s) const;

    std::size_t m_classes;
};

/// Top-1 accuracy (%) of the four homogeneous ViG-S baselines (MaGNAS Table 2), per data set,
/// in GraphOp order (max-relative, EdgeConv, GraphSAGE, GIN).
struct VigBaselineAccuracy {
    std::string dataset;
    std::array<double, num_graph_ops> top1;
};
DNNCOST_FUNC const std::array<VigBaselineAccuracy, 4>& vig_baseline_accuracies();

/// An accuracy PROXY for the ViG space (%), so that the outer search has an accuracy trade-off
/// to work with without a trained supernet; it is NOT a measured or predicted accuracy.
///
/// Each ViG block contributes its graph operator's baseline accuracy (Table 2), weighted by its
/// superblock (0.20, 0.25, 0.25, 0.30: later stages matter more); removed capacity is charged:
/// 0.25 points per ViG block below depth 4, and per present ViG block 0.05 without FFN, 0.03 /
/// 0.01 for FFN width 96 / 192, 0.03 without pre-FC. Charges scale with the data set's
/// baseline error (x 1 on CIFAR-100). The four homogeneous baselines get exactly their Table 2
/// accuracy. Replace it with the supernet's evaluated accuracy for real use.
class VigAccuracyProxy {
public:
    /// @throws config_error for an unknown data set (cifar10, cifar100, flowers, tiny-imagenet).
    DNNCOST_FUNC explicit VigAccuracyProxy(const std::string& dataset = "cifar100");
    /// The proxy accuracy (%) of `a`.
    DNNCOST_FUNC double operator()(const VigArchitecture& a) const;
    const std::string& dataset() const { return m_base.dataset; }

private:
    VigBaselineAccuracy m_base;
    double m_scale = 1.0;
};

}  // namespace dnncost::search::mapping

#if !defined(DNNCOST_COMPILED)
#include <dnncost/search/mapping/vig_space_impl.hpp>
#endif
