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
    std::vector<std::size_t> cardinalities() const {
        std::vector<std::size_t> c;
        for (std::size_t s = 0; s < superblocks; ++s) c.insert(c.end(), {3, 4, 2, 2, 3});
        return c;
    }
    /// Crossover swaps whole superblocks (MaGNAS 4.2.2): gene g belongs to group g / 5.
    std::size_t gene_group(std::size_t gene) const { return gene / genes_per_superblock; }
    std::size_t num_gene_groups() const { return superblocks; }

    /// @throws config_error for a wrong length or a gene out of range.
    Architecture decode(std::span<const std::uint8_t> g) const {
        const auto card = cardinalities();
        if (g.size() != card.size()) raise<config_error>("VigSpace: ", g.size(), " genes, expected ", card.size());
        for (std::size_t i = 0; i < g.size(); ++i)
            if (g[i] >= card[i]) raise<config_error>("VigSpace: gene ", i, " = ", int(g[i]), " of ", card[i]);
        Architecture a;
        for (std::size_t s = 0; s < superblocks; ++s) {
            const auto* x = g.data() + s * genes_per_superblock;
            a.superblocks[s] = {depths[x[0]], static_cast<GraphOp>(x[1]), x[2] != 0, x[3] != 0, hidden_widths[x[4]]};
        }
        return a;
    }
    /// @throws config_error for a choice outside the space.
    Genome encode(const Architecture& a) const {
        Genome g;
        for (const auto& sb : a.superblocks) {
            g.push_back(index_of(depths, sb.depth, "depth"));
            if (static_cast<std::size_t>(sb.op) >= num_graph_ops) raise<config_error>("VigSpace: bad graph operator");
            g.push_back(static_cast<std::uint8_t>(sb.op));
            g.push_back(sb.pre_fc ? 1 : 0);
            g.push_back(sb.ffn ? 1 : 0);
            g.push_back(index_of(hidden_widths, sb.ffn_hidden, "FFN hidden width"));
        }
        return g;
    }
    /// The genome with genes that do not change the network set to 0 (the hidden width of a
    /// superblock without FFN), so equal networks share one cache entry.
    Genome canonical(Genome g) const {
        for (std::size_t s = 0; s < superblocks; ++s)
            if (g[s * genes_per_superblock + 3] == 0) g[s * genes_per_superblock + 4] = 0;
        return g;
    }

    /// Mapping blocks in execution order: Stem, (Grapher, [FFN]) x depth per superblock, Cls.
    std::vector<Block> blocks(const Architecture& a) const {
        std::vector<Block> out;
        out.push_back({VigBlockKind::stem, 0, 0, GraphOp::max_relative, false, 0});
        for (std::size_t s = 0; s < superblocks; ++s) {
            const auto& sb = a.superblocks[s];
            for (std::uint8_t k = 0; k < sb.depth; ++k) {
                out.push_back({VigBlockKind::grapher, static_cast<std::uint8_t>(s), k, sb.op, sb.pre_fc, 0});
                if (sb.ffn)
                    out.push_back({VigBlockKind::ffn, static_cast<std::uint8_t>(s), k, GraphOp::max_relative, false,
                                   sb.ffn_hidden});
            }
        }
        out.push_back({VigBlockKind::cls, 0, 0, GraphOp::max_relative, false, 0});
        return out;
    }
    /// "stem", "grapher2.1" (superblock 2, block 1, counted from 1), "ffn2.1", "cls".
    static std::string block_name(const Block& b) {
        switch (b.kind) {
            case VigBlockKind::stem:
                return "stem";
            case VigBlockKind::cls:
                return "cls";
            case VigBlockKind::grapher:
                return ::dnncost::concat("grapher", b.superblock + 1, ".", b.index + 1);
            default:
                return ::dnncost::concat("ffn", b.superblock + 1, ".", b.index + 1);
        }
    }

    /// Architecture as text: superblocks joined by '-', each <depth><op letter>[p][f<width>],
    /// e.g. ViG-S with max-relative is "4Mpf320-4Mpf320-4Mpf320-4Mpf320"; "2G" is two GIN
    /// blocks without pre-FC and FFN.
    static std::string to_string(const Architecture& a) {
        std::string s;
        for (std::size_t i = 0; i < superblocks; ++i) {
            const auto& sb = a.superblocks[i];
            if (i) s += '-';
            s += std::to_string(sb.depth);
            s += graph_op_letter[static_cast<std::size_t>(sb.op)];
            if (sb.pre_fc) s += 'p';
            if (sb.ffn) s += ::dnncost::concat("f", sb.ffn_hidden);
        }
        return s;
    }
    /// Parse to_string's form. @throws parse_error naming the superblock and the problem.
    Architecture parse(std::string_view text) const {
        Architecture a;
        std::size_t s = 0, pos = 0;
        while (true) {
            const std::size_t dash = text.find('-', pos);
            const std::string_view part =
                text.substr(pos, dash == std::string_view::npos ? std::string_view::npos : dash - pos);
            if (s >= superblocks) raise<parse_error>("ViG architecture '", text, "': more than 4 superblocks");
            a.superblocks[s] = parse_superblock(text, part, s);
            ++s;
            if (dash == std::string_view::npos) break;
            pos = dash + 1;
        }
        if (s != superblocks) raise<parse_error>("ViG architecture '", text, "': ", s, " superblock(s), expected 4");
        return a;
    }

    /// ViG-S with one graph operator everywhere: depth 4, pre-FC and FFN (width 320) in every
    /// superblock (the MaGNAS baselines b0-b3).
    static Architecture baseline(GraphOp op) {
        Architecture a;
        for (auto& sb : a.superblocks) sb = {4, op, true, true, 320};
        return a;
    }

    /// Layers and feature sizes of a block (see the file comment for the design).
    BlockWork workload(const Block& b) const {
        const double n = nodes, d = channels, v = bytes_per_value;
        const double features = n * d * v;
        BlockWork w;
        w.input_bytes = features;
        w.output_bytes = features;
        auto layer = [&](std::string name, OpClass c, double flops, double values, int op = -1) {
            w.layers.push_back({std::move(name), c, flops, values * v, op});
        };
        switch (b.kind) {
            case VigBlockKind::stem: {
                double h = image, cin = 3;
                const std::pair<double, double> convs[] = {{40, 2}, {80, 2}, {160, 2}, {320, 2}, {320, 1}};
                int k = 0;
                for (const auto& [cout, stride] : convs) {
                    const double ho = h / stride;
                    layer(::dnncost::concat("conv", ++k), OpClass::conv, 2.0 * ho * ho * cout * 9.0 * cin,
                          h * h * cin + ho * ho * cout + 9.0 * cin * cout);
                    h = ho;
                    cin = cout;
                }
                layer("pos_embed", OpClass::elementwise, n * d, 3.0 * n * d);
                w.input_bytes = static_cast<double>(image * image * 3) * v;
                break;
            }
            case VigBlockKind::grapher: {
                const double k = static_cast<double>(neighbours[b.superblock]);
                const int op = static_cast<int>(b.op);
                if (b.pre_fc) layer("fc_pre", OpClass::dense, 2.0 * n * d * d, 2.0 * n * d + d * d);
                layer("knn_distance", OpClass::dense, 2.0 * n * n * d, n * d + n * n);
                layer("knn_topk", OpClass::gather, 4.0 * n * n, n * n + n * k);
                const double g4 = 4.0;  // grouped 1x1 convolutions, 4 groups
                switch (b.op) {
                    case GraphOp::max_relative:
                        layer("gather_max_relative", OpClass::gather, 2.0 * n * k * d, n * k * d + 2.0 * n * d, op);
                        layer("mr_nn", OpClass::dense, 2.0 * n * (2 * d) * (2 * d) / g4,
                              4.0 * n * d + (2 * d) * (2 * d) / g4, op);
                        break;
                    case GraphOp::edge_conv:
                        layer("gather_edges", OpClass::gather, n * k * d, n * k * d + 2.0 * n * k * d, op);
                        layer("edge_nn", OpClass::dense, 2.0 * n * k * (2 * d) * (2 * d) / g4,
                              4.0 * n * k * d + (2 * d) * (2 * d) / g4, op);
                        layer("edge_max", OpClass::gather, 2.0 * n * k * d, 2.0 * n * k * d + 2.0 * n * d, op);
                        break;
                    case GraphOp::graph_sage:
                        layer("gather_neighbours", OpClass::gather, 0.0, 2.0 * n * k * d, op);
                        layer("sage_nn1", OpClass::dense, 2.0 * n * k * d * d / g4, 2.0 * n * k * d + d * d / g4, op);
                        layer("sage_max", OpClass::gather, n * k * d, n * k * d + n * d, op);
                        layer("sage_nn2", OpClass::dense, 2.0 * n * (2 * d) * (2 * d) / g4,
                              4.0 * n * d + (2 * d) * (2 * d) / g4, op);
                        break;
                    case GraphOp::gin:
                        layer("gather_sum", OpClass::gather, n * k * d, n * k * d + n * d, op);
                        layer("gin_nn", OpClass::dense, 2.0 * n * d * (2 * d) / g4, 3.0 * n * d + d * (2 * d) / g4, op);
                        break;
                }
                layer("fc_post", OpClass::dense, 2.0 * n * (2 * d) * d, 3.0 * n * d + 2 * d * d);
                layer("residual", OpClass::elementwise, 4.0 * n * d, 3.0 * n * d);
                break;
            }
            case VigBlockKind::ffn: {
                const double h = b.ffn_hidden;
                layer("fc1", OpClass::dense, 2.0 * n * d * h, n * d + n * h + d * h);
                layer("fc2", OpClass::dense, 2.0 * n * d * h, n * d + n * h + d * h);
                layer("residual", OpClass::elementwise, 4.0 * n * d, 3.0 * n * d);
                break;
            }
            case VigBlockKind::cls: {
                const double hid = classifier_hidden, c = static_cast<double>(m_classes);
                layer("avg_pool", OpClass::elementwise, n * d, n * d + d);
                layer("fc_hidden", OpClass::dense, 2.0 * d * hid, d + hid + d * hid);
                layer("fc_out", OpClass::dense, 2.0 * hid * c, hid + c + hid * c);
                w.output_bytes = c * v;
                break;
            }
        }
        return w;
    }

    /// Axes of a cost table over every distinct block: kind x superblock x graph operator x
    /// pre-FC x FFN width. Parameters a block does not have sit at level 0 (table_index).
    static std::vector<Axis> table_axes() {
        return {{"kind", {"stem", "grapher", "ffn", "cls"}},
                {"superblock", {"1", "2", "3", "4"}},
                {"graph_op", {"max-relative", "EdgeConv", "GraphSAGE", "GIN"}},
                {"pre_fc", {"off", "on"}},
                {"ffn_hidden", {"96", "192", "320"}}};
    }
    /// The table coordinates of a block (irrelevant parameters at 0: an FFN's cost does not
    /// depend on its superblock, nor a Grapher's on an FFN width).
    static std::array<std::size_t, 5> table_index(const Block& b) {
        switch (b.kind) {
            case VigBlockKind::stem:
                return {0, 0, 0, 0, 0};
            case VigBlockKind::grapher:
                return {1, b.superblock, static_cast<std::size_t>(b.op), b.pre_fc ? 1u : 0u, 0};
            case VigBlockKind::ffn:
                return {2, 0, 0, 0, index_of(hidden_widths, b.ffn_hidden, "FFN hidden width")};
            default:
                return {3, 0, 0, 0, 0};
        }
    }
    /// One block of each distinct table entry (2 + 32 + 3 = 37 blocks).
    static std::vector<Block> block_types() {
        std::vector<Block> out;
        out.push_back({VigBlockKind::stem, 0, 0, GraphOp::max_relative, false, 0});
        for (std::uint8_t s = 0; s < superblocks; ++s)
            for (std::size_t op = 0; op < num_graph_ops; ++op)
                for (bool pre : {false, true})
                    out.push_back({VigBlockKind::grapher, s, 0, static_cast<GraphOp>(op), pre, 0});
        for (auto h : hidden_widths) out.push_back({VigBlockKind::ffn, 0, 0, GraphOp::max_relative, false, h});
        out.push_back({VigBlockKind::cls, 0, 0, GraphOp::max_relative, false, 0});
        return out;
    }

private:
    template <class A, class T>
    static std::uint8_t index_of(const A& values, T x, const char* what) {
        for (std::size_t i = 0; i < values.size(); ++i)
            if (values[i] == x) return static_cast<std::uint8_t>(i);
        raise<config_error>("VigSpace: ", what, " ", x, " is not in the space");
    }
    VigSuperblock parse_superblock(std::string_view text, std::string_view part, std::size_t s) const {
        auto bad = [&](auto&&... why) -> void {
            raise<parse_error>("ViG architecture '", text, "', superblock ", s + 1, " '", part, "': ", why...);
        };
        VigSuperblock sb{0, GraphOp::max_relative, false, false, 96};
        std::size_t i = 0;
        if (part.empty() || part[0] < '2' || part[0] > '4') bad("starts with the depth, 2, 3 or 4");
        sb.depth = static_cast<std::uint8_t>(part[0] - '0');
        i = 1;
        bool found = false;
        for (std::size_t op = 0; op < num_graph_ops; ++op)
            if (i < part.size() && part[i] == graph_op_letter[op]) {
                sb.op = static_cast<GraphOp>(op);
                found = true;
            }
        if (!found) bad("the depth is followed by the graph operator M, E, S or G");
        ++i;
        if (i < part.size() && part[i] == 'p') {
            sb.pre_fc = true;
            ++i;
        }
        if (i < part.size() && part[i] == 'f') {
            sb.ffn = true;
            const std::string_view w = part.substr(i + 1);
            if (w == "96")
                sb.ffn_hidden = 96;
            else if (w == "192")
                sb.ffn_hidden = 192;
            else if (w == "320")
                sb.ffn_hidden = 320;
            else
                bad("FFN width '", w, "' is not 96, 192 or 320");
            i = part.size();
        }
        if (i != part.size()) bad("unexpected '", part.substr(i), "' (form: <depth><op>[p][f<width>])");
        return sb;
    }

    std::size_t m_classes;
};

/// Top-1 accuracy (%) of the four homogeneous ViG-S baselines (MaGNAS Table 2), per data set,
/// in GraphOp order (max-relative, EdgeConv, GraphSAGE, GIN).
struct VigBaselineAccuracy {
    std::string dataset;
    std::array<double, num_graph_ops> top1;
};
inline const std::array<VigBaselineAccuracy, 4>& vig_baseline_accuracies() {
    static const std::array<VigBaselineAccuracy, 4> table = {{{"cifar10", {94.15, 94.15, 94.27, 94.20}},
                                                              {"cifar100", {82.13, 82.13, 82.10, 81.49}},
                                                              {"flowers", {89.71, 90.29, 88.92, 86.37}},
                                                              {"tiny-imagenet", {68.12, 68.15, 68.32, 67.62}}}};
    return table;
}

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
    explicit VigAccuracyProxy(const std::string& dataset = "cifar100") {
        for (const auto& b : vig_baseline_accuracies())
            if (b.dataset == dataset) m_base = b;
        if (m_base.dataset.empty())
            raise<config_error>("VigAccuracyProxy: unknown data set '", dataset,
                                "' (cifar10, cifar100, flowers, tiny-imagenet)");
        const double cifar100_error = 100.0 - vig_baseline_accuracies()[1].top1[0];
        m_scale = (100.0 - m_base.top1[0]) / cifar100_error;
    }
    double operator()(const VigArchitecture& a) const {
        static constexpr double weight[4] = {0.20, 0.25, 0.25, 0.30};
        double acc = 0.0, penalty = 0.0;
        for (std::size_t s = 0; s < 4; ++s) {
            const auto& sb = a.superblocks[s];
            acc += weight[s] * m_base.top1[static_cast<std::size_t>(sb.op)];
            penalty += 0.25 * (4.0 - sb.depth);
            double per_block = 0.0;
            if (!sb.ffn)
                per_block += 0.05;
            else if (sb.ffn_hidden == 96)
                per_block += 0.03;
            else if (sb.ffn_hidden == 192)
                per_block += 0.01;
            if (!sb.pre_fc) per_block += 0.03;
            penalty += per_block * sb.depth;
        }
        return acc - m_scale * penalty;
    }
    const std::string& dataset() const { return m_base.dataset; }

private:
    VigBaselineAccuracy m_base;
    double m_scale = 1.0;
};

}  // namespace dnncost::search::mapping
