#pragma once
/// @file prune_impl.hpp
/// The definitions of prune.hpp: compiled once into dnncost::compiled in compiled mode
/// (core/config.hpp), included by prune.hpp in header-only mode.
#include <dnncost/search/compression/prune.hpp>

DNNCOST_FUNC auto dnncost::search::compression::keep_steps(double lowest, double highest, double step)
    -> std::vector<double> {
    if (!(lowest > 0) || !(highest <= 1) || !(lowest <= highest) || !(step > 0))
        raise<config_error>("keep-ratio steps need 0 < lowest <= highest <= 1 and a positive step, got ", lowest, ":",
                            highest, ":", step);
    const double count = std::floor((highest - lowest) / step + 1e-9) + 1;
    if (count > 1000) raise<config_error>("more than 1000 keep-ratio steps");
    std::vector<double> out;
    // rounded so that 0.3 + 2 x 0.3 is the 0.9 a user typed
    for (int i = 0; i < static_cast<int>(count); ++i) out.push_back(std::round((lowest + step * i) * 1e9) / 1e9);
    if (highest - out.back() > 1e-9) out.push_back(highest);
    return out;
}

namespace dnncost::search::compression {

DNNCOST_FUNC std::int64_t Pruner::kept_channels(const ChannelGroup& g, double r) {
    const auto m = g.multiple;
    auto k = static_cast<std::int64_t>(std::llround(static_cast<double>(g.channels) * r / static_cast<double>(m))) * m;
    return std::clamp<std::int64_t>(k, m, g.channels);
}

DNNCOST_FUNC auto Pruner::apply(std::span<const double> ratios) const -> graph::Graph {
    if (ratios.size() != groups().size())
        raise<config_error>("pruning '", m_graph.name(), "': ", ratios.size(), " keep ratios for ", groups().size(),
                            " channel groups");
    for (std::size_t i = 0; i < ratios.size(); ++i)
        if (!(ratios[i] > 0 && ratios[i] <= 1))
            raise<config_error>("pruning '", m_graph.name(), "': keep ratio ", ratios[i], " of channel group '",
                                groups()[i].name, "' is outside (0, 1]");
    const auto& a = m_analysis;
    std::vector<std::int64_t> memo(a.spaces.size(), -1);
    const auto count = [&](auto&& self, int s) -> std::int64_t {
        const int c = a.space_class[static_cast<std::size_t>(s)];
        auto& m = memo[static_cast<std::size_t>(c)];
        if (m >= 0) return m;
        const auto& root = a.spaces[static_cast<std::size_t>(c)];
        if (a.class_fixed[static_cast<std::size_t>(c)]) return m = root.size;
        if (const int g = a.class_group[static_cast<std::size_t>(c)]; g >= 0)
            return m = kept_channels(groups()[static_cast<std::size_t>(g)], ratios[static_cast<std::size_t>(g)]);
        // a derived class: the count of its derived member
        for (std::size_t t = 0; t < a.spaces.size(); ++t) {
            if (a.space_class[t] != c) continue;
            const auto& sp = a.spaces[t];
            if (sp.kind == ChannelAnalysis::Space::Kind::concat) {
                std::int64_t sum = 0;
                for (int p : sp.parts) sum += self(self, p);
                return m = sum;
            }
            if (sp.kind == ChannelAnalysis::Space::Kind::split) return m = self(self, sp.parent) / sp.pieces;
        }
        return m = root.size;
    };
    const auto n = [&](int s) { return count(count, s); };

    graph::Graph out = m_graph;
    for (std::size_t t = 0; t < out.num_tensors(); ++t) {
        const int s = a.tensor_space[t];
        if (s < 0) continue;
        auto shape = out.tensor(static_cast<int>(t)).shape;
        shape.at(1) = n(s);
        out.set_shape(static_cast<int>(t), std::move(shape));
    }
    for (const auto& d : a.depthwise) out.node(d.node).set_attr("group", n(d.in_space));
    for (const auto& w : a.weights) {
        auto shape = out.tensor(w.tensor).shape;
        switch (w.kind) {
            case WeightRule::Kind::per_channel:
                shape.at(static_cast<std::size_t>(w.axis)) = n(w.space);
                break;
            case WeightRule::Kind::conv_weight: {
                const auto group = out.node(w.node).attr_int("group", 1);
                shape.at(0) = n(w.space);
                shape.at(1) = n(w.in_space) / group;
                break;
            }
            case WeightRule::Kind::gemm_weight:
                shape.at(w.transposed ? 0 : 1) = n(w.space);
                shape.at(w.transposed ? 1 : 0) = n(w.in_space);
                break;
        }
        if (shape != out.tensor(w.tensor).shape) {
            out.set_data(w.tensor, {});  // known values of the unpruned shape no longer fit
            out.set_shape(w.tensor, std::move(shape));
        }
    }
    for (const auto& r : a.reshape_targets) {
        auto values = out.tensor(r.tensor).data;
        values.at(r.index) = static_cast<double>(n(r.space));
        out.set_data(r.tensor, std::move(values));
    }
    for (const auto& sp : a.split_sizes) {
        const auto part = n(sp.space) / sp.pieces;
        if (sp.tensor >= 0)
            out.set_data(sp.tensor,
                         std::vector<double>(static_cast<std::size_t>(sp.pieces), static_cast<double>(part)));
        else
            out.node(sp.node).set_attr("split", std::vector<std::int64_t>(static_cast<std::size_t>(sp.pieces), part));
    }
    try {
        out.validate();
    } catch (const error& e) {
        raise<shape_error>("pruning '", m_graph.name(),
                           "' gave inconsistent shapes (a gap in the channel analysis): ", e.what());
    }
    return out;
}

DNNCOST_FUNC auto Pruner::ratios_of(std::span<const int> genome, std::span<const double> steps) const
    -> std::vector<double> {
    std::vector<double> r;
    r.reserve(genome.size());
    for (std::size_t i = 0; i < genome.size(); ++i) {
        if (genome[i] < 0 || static_cast<std::size_t>(genome[i]) >= steps.size())
            raise<config_error>("pruning genome: gene ", i, " is step ", genome[i], " of ", steps.size());
        r.push_back(steps[static_cast<std::size_t>(genome[i])]);
    }
    return r;
}

DNNCOST_FUNC double Pruner::proxy_accuracy(std::span<const double> ratios) const {
    double num = 0, den = 0;
    for (std::size_t i = 0; i < groups().size() && i < ratios.size(); ++i) {
        const auto w = static_cast<double>(std::max<std::int64_t>(1, groups()[i].parameters));
        num += w * std::sqrt(ratios[i]);
        den += w;
    }
    return den > 0 ? num / den : 1.0;
}

}  // namespace dnncost::search::compression
