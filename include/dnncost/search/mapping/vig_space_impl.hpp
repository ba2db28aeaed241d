#pragma once
/// @file vig_space_impl.hpp
/// The definitions of vig_space.hpp: compiled once into dnncost::compiled in compiled mode
/// (core/config.hpp), included by vig_space.hpp in header-only mode.
#include <dnncost/search/mapping/vig_space.hpp>

namespace dnncost::search::mapping {

DNNCOST_FUNC std::vector<std::size_t> VigSpace::cardinalities() const {
    std::vector<std::size_t> c;
    for (std::size_t s = 0; s < superblocks; ++s) c.insert(c.end(), {3, 4, 2, 2, 3});
    return c;
}

DNNCOST_FUNC VigSpace::Architecture VigSpace::decode(std::span<const std::uint8_t> g) const {
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

DNNCOST_FUNC VigSpace::Genome VigSpace::encode(const Architecture& a) const {
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

DNNCOST_FUNC VigSpace::Genome VigSpace::canonical(Genome g) const {
    for (std::size_t s = 0; s < superblocks; ++s)
        if (g[s * genes_per_superblock + 3] == 0) g[s * genes_per_superblock + 4] = 0;
    return g;
}

DNNCOST_FUNC std::vector<VigSpace::Block> VigSpace::blocks(const Architecture& a) const {
    std::vector<Block> out;
    out.push_back({VigBlockKind::stem, 0, 0, GraphOp::max_relative, false, 0});
    for (std::size_t s = 0; s < superblocks; ++s) {
        const auto& sb = a.superblocks[s];
        for (std::uint8_t k = 0; k < sb.depth; ++k) {
            out.push_back({VigBlockKind::grapher, static_cast<std::uint8_t>(s), k, sb.op, sb.pre_fc, 0});
            if (sb.ffn)
                out.push_back(
                    {VigBlockKind::ffn, static_cast<std::uint8_t>(s), k, GraphOp::max_relative, false, sb.ffn_hidden});
        }
    }
    out.push_back({VigBlockKind::cls, 0, 0, GraphOp::max_relative, false, 0});
    return out;
}

DNNCOST_FUNC std::string VigSpace::block_name(const Block& b) {
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

DNNCOST_FUNC std::string VigSpace::to_string(const Architecture& a) {
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

DNNCOST_FUNC VigSpace::Architecture VigSpace::parse(std::string_view text) const {
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

DNNCOST_FUNC VigSpace::Architecture VigSpace::baseline(GraphOp op) {
    Architecture a;
    for (auto& sb : a.superblocks) sb = {4, op, true, true, 320};
    return a;
}

DNNCOST_FUNC BlockWork VigSpace::workload(const Block& b) const {
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

DNNCOST_FUNC std::vector<Axis> VigSpace::table_axes() {
    return {{"kind", {"stem", "grapher", "ffn", "cls"}},
            {"superblock", {"1", "2", "3", "4"}},
            {"graph_op", {"max-relative", "EdgeConv", "GraphSAGE", "GIN"}},
            {"pre_fc", {"off", "on"}},
            {"ffn_hidden", {"96", "192", "320"}}};
}

DNNCOST_FUNC std::array<std::size_t, 5> VigSpace::table_index(const Block& b) {
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

DNNCOST_FUNC std::vector<VigSpace::Block> VigSpace::block_types() {
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

DNNCOST_FUNC VigSuperblock VigSpace::parse_superblock(std::string_view text, std::string_view part,
                                                      std::size_t s) const {
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

DNNCOST_FUNC const std::array<VigBaselineAccuracy, 4>& vig_baseline_accuracies() {
    static const std::array<VigBaselineAccuracy, 4> table = {{{"cifar10", {94.15, 94.15, 94.27, 94.20}},
                                                              {"cifar100", {82.13, 82.13, 82.10, 81.49}},
                                                              {"flowers", {89.71, 90.29, 88.92, 86.37}},
                                                              {"tiny-imagenet", {68.12, 68.15, 68.32, 67.62}}}};
    return table;
}

DNNCOST_FUNC VigAccuracyProxy::VigAccuracyProxy(const std::string& dataset) {
    for (const auto& b : vig_baseline_accuracies())
        if (b.dataset == dataset) m_base = b;
    if (m_base.dataset.empty())
        raise<config_error>("VigAccuracyProxy: unknown data set '", dataset,
                            "' (cifar10, cifar100, flowers, tiny-imagenet)");
    const double cifar100_error = 100.0 - vig_baseline_accuracies()[1].top1[0];
    m_scale = (100.0 - m_base.top1[0]) / cifar100_error;
}

DNNCOST_FUNC double VigAccuracyProxy::operator()(const VigArchitecture& a) const {
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

}  // namespace dnncost::search::mapping
