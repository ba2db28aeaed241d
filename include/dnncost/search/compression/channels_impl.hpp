#pragma once
/// @file channels_impl.hpp
/// The definitions of channels.hpp: compiled once into dnncost::compiled in compiled mode
/// (core/config.hpp), included by channels.hpp in header-only mode.
#include <dnncost/search/compression/channels.hpp>

DNNCOST_FUNC bool dnncost::search::compression::detail::is_channel_keeping(std::string_view op) {
    static constexpr std::string_view ops[] = {"Relu",
                                               "LeakyRelu",
                                               "Clip",
                                               "Sigmoid",
                                               "Tanh",
                                               "HardSigmoid",
                                               "HardSwish",
                                               "Elu",
                                               "Selu",
                                               "Softplus",
                                               "Softsign",
                                               "Gelu",
                                               "Erf",
                                               "Sqrt",
                                               "Exp",
                                               "Log",
                                               "Abs",
                                               "Neg",
                                               "Reciprocal",
                                               "Floor",
                                               "Ceil",
                                               "Round",
                                               "Identity",
                                               "Dropout",
                                               "Cast",
                                               "Mish",
                                               "ThresholdedRelu",
                                               "MaxPool",
                                               "AveragePool",
                                               "GlobalAveragePool",
                                               "GlobalMaxPool",
                                               "LpPool",
                                               "BatchNormalization",
                                               "InstanceNormalization",
                                               "PRelu",
                                               "LRN"};
    return std::find(std::begin(ops), std::end(ops), op) != std::end(ops);
}

namespace dnncost::search::compression::detail {

DNNCOST_FUNC auto Analyser::run() -> ChannelAnalysis {
    for (int t : m_g.inputs())
        if (rank(t) >= 2) fix(new_space(t), "graph input");
    for (int v : m_g.topological_order()) visit(v);
    for (int t : m_g.outputs())
        if (m_a.tensor_space[static_cast<std::size_t>(t)] >= 0)
            fix(m_a.tensor_space[static_cast<std::size_t>(t)], "graph output");
    resolve();
    return std::move(m_a);
}

DNNCOST_FUNC int Analyser::add_space(ChannelAnalysis::Space s) {
    m_a.spaces.push_back(std::move(s));
    m_parent.push_back(static_cast<int>(m_parent.size()));
    m_reason.emplace_back();
    m_multiple.push_back(1);
    m_producers.emplace_back();
    return static_cast<int>(m_a.spaces.size()) - 1;
}

DNNCOST_FUNC int Analyser::new_space(int t) {
    const int s = add_space({ChannelAnalysis::Space::Kind::primary, channels(t), {}, -1, 1});
    m_a.tensor_space[static_cast<std::size_t>(t)] = s;
    return s;
}

DNNCOST_FUNC int Analyser::find(int s) {
    while (m_parent[static_cast<std::size_t>(s)] != s) {
        auto& p = m_parent[static_cast<std::size_t>(s)];
        p = m_parent[static_cast<std::size_t>(p)];
        s = p;
    }
    return s;
}

DNNCOST_FUNC void Analyser::fix(int s, std::string reason) {
    if (s < 0) return;
    auto& r = m_reason[static_cast<std::size_t>(s)];
    if (r.empty()) r = std::move(reason);
}

DNNCOST_FUNC void Analyser::pass(int t, int s) {
    if (rank(t) < 2) return;
    if (s < 0 || channels(t) != m_a.spaces[static_cast<std::size_t>(s)].size) {
        fix(new_space(t), "channel count changes without a known rule");
        if (s >= 0) fix(s, "channel count changes without a known rule");
        return;
    }
    m_a.tensor_space[static_cast<std::size_t>(t)] = s;
}

DNNCOST_FUNC void Analyser::opaque(int v, const std::string& why) {
    const auto& nd = m_g.node(v);
    const std::string reason = why + " at node '" + nd.name + "' (" + nd.op_type + ")";
    for (int t : nd.inputs)
        if (is_activation(t)) fix(space_of(t), reason);
    for (int t : nd.outputs)
        if (rank(t) >= 2) fix(space_of(t) >= 0 ? space_of(t) : new_space(t), reason);
}

DNNCOST_FUNC void Analyser::follow(int tensor, int node, int axis, int space) {
    if (tensor < 0 || m_g.tensor(tensor).kind != graph::TensorKind::weight) return;
    const auto& sh = m_g.tensor(tensor).shape;
    if (axis < 0 || axis >= static_cast<int>(sh.size())) return;
    if (sh[static_cast<std::size_t>(axis)] != m_a.spaces[static_cast<std::size_t>(space)].size) return;
    m_a.weights.push_back({WeightRule::Kind::per_channel, tensor, node, axis, space, -1, false});
}

DNNCOST_FUNC auto Analyser::ints_of(int t) const -> std::vector<std::int64_t> {
    std::vector<std::int64_t> out;
    if (t < 0) return out;
    for (double d : m_g.tensor(t).data) out.push_back(static_cast<std::int64_t>(d));
    return out;
}

DNNCOST_FUNC void Analyser::visit(int v) {
    const auto& nd = m_g.node(v);
    const std::string& op = nd.op_type;
    const int x = nd.inputs.empty() ? -1 : nd.inputs[0];
    const int y = nd.outputs.empty() ? -1 : nd.outputs[0];
    if (y < 0) return;
    const bool x_ok = x >= 0 && is_activation(x) && rank(x) >= 2 && space_of(x) >= 0;
    if (op == "Conv") {
        if (!x_ok || !has_input(nd, 1) || is_activation(nd.inputs[1]))
            return opaque(v, "a convolution without a constant weight");
        conv(v, nd, x, y);
    } else if (op == "Gemm" || op == "MatMul") {
        matmul(v, nd, x, y);
    } else if (is_channel_keeping(op)) {
        if (!x_ok || rank(y) != rank(x)) return opaque(v, "an unsupported input");
        const int s = space_of(x);
        for (std::size_t i = 1; i < nd.inputs.size(); ++i) follow(nd.inputs[i], v, per_channel_axis(nd, i), s);
        for (int t : nd.outputs) pass(t, s);
        if (op == "MaxPool" && nd.outputs.size() > 1) opaque(v, "pooling indices");
    } else if (is_elementwise(op)) {
        elementwise(v, nd, y);
    } else if (op == "Concat") {
        concat(v, nd, y);
    } else if (op == "Split") {
        split(v, nd, x);
    } else if (op == "Flatten" || op == "Reshape" || op == "Squeeze" || op == "Unsqueeze") {
        reshape(v, nd, x, y);
    } else if (op == "Pad") {
        const auto pads = has_input(nd, 1) ? ints_of(nd.inputs[1]) : nd.attr_ints("pads");
        const auto r = x_ok ? static_cast<std::size_t>(rank(x)) : 0;
        if (!x_ok || pads.size() != 2 * r || pads[1] != 0 || pads[1 + r] != 0)
            return opaque(v, "padding that may touch the channel axis");
        pass(y, space_of(x));
    } else if (op == "Resize" || op == "Upsample") {
        if (!x_ok || has_input(nd, 3) || rank(y) != rank(x) || channels(y) != channels(x))
            return opaque(v, "resizing by output sizes");
        pass(y, space_of(x));
    } else if (op == "Slice") {
        const auto axes = has_input(nd, 3) ? ints_of(nd.inputs[3]) : std::vector<std::int64_t>{};
        const bool keeps = x_ok && !axes.empty() && std::none_of(axes.begin(), axes.end(), [&](std::int64_t a) {
                               return a == 1 || a == 1 - rank(x) || a == 0;
                           });
        if (!keeps) return opaque(v, "a slice that may cut channels");
        pass(y, space_of(x));
    } else if (op == "ReduceMean" || op == "ReduceMax" || op == "ReduceSum") {
        auto axes = nd.attr_ints("axes");
        if (axes.empty() && has_input(nd, 1)) axes = ints_of(nd.inputs[1]);
        const bool keeps = x_ok && nd.attr_int("keepdims", 1) == 1 && !axes.empty() &&
                           std::none_of(axes.begin(), axes.end(), [&](std::int64_t a) {
                               return a == 0 || a == 1 || a == 1 - rank(x) || a == -rank(x);
                           });
        if (!keeps) return opaque(v, "a reduction over channels");
        pass(y, space_of(x));
    } else {
        opaque(v, "an operator the channel analysis does not know");
    }
}

DNNCOST_FUNC int Analyser::per_channel_axis(const graph::Node& nd, std::size_t slot) const {
    const int t = nd.inputs[slot];
    if (t < 0) return -1;
    const int r = rank(t);
    if (nd.op_type == "BatchNormalization" || nd.op_type == "InstanceNormalization") return r == 1 ? 0 : -1;
    const int ry = rank(nd.outputs[0]);
    return r - (ry - 1);  // broadcast from the right: axis 1 of the output
}

DNNCOST_FUNC void Analyser::conv(int v, const graph::Node& nd, int x, int y) {
    const int w = nd.inputs[1];
    const auto group = nd.attr_int("group", 1);
    const auto c = channels(x), k = m_g.tensor(w).shape.at(0);
    const int sx = space_of(x);
    int sy = -1;
    if (group == 1) {
        sy = new_space(y);
    } else if (group == c && k == c) {  // depthwise: output channel i is input channel i
        m_a.tensor_space[static_cast<std::size_t>(y)] = sx;
        sy = sx;
        m_a.depthwise.push_back({v, sx});
    } else if (group == c) {
        fix(sx, "a depthwise convolution with a channel multiplier at node '" + nd.name + "'");
        sy = new_space(y);
        fix(sy, "a depthwise convolution with a channel multiplier");
    } else {
        sy = new_space(y);
        require_multiple(sx, group);
        require_multiple(sy, group);
    }
    if (sy != sx) m_producers[static_cast<std::size_t>(sy)].push_back(v);
    m_a.weights.push_back({WeightRule::Kind::conv_weight, w, v, 0, sy, sx, false});
    if (has_input(nd, 2)) follow(nd.inputs[2], v, 0, sy);
}

DNNCOST_FUNC void Analyser::matmul(int v, const graph::Node& nd, int x, int y) {
    const bool gemm = nd.op_type == "Gemm";
    if (x < 0 || !is_activation(x) || rank(x) != 2 || space_of(x) < 0 || !has_input(nd, 1) ||
        is_activation(nd.inputs[1]) || rank(nd.inputs[1]) != 2 || rank(y) != 2 ||
        (gemm && nd.attr_int("transA", 0) != 0))
        return opaque(v, "a matrix product the channel analysis does not follow");
    const int sx = space_of(x), sy = new_space(y);
    m_producers[static_cast<std::size_t>(sy)].push_back(v);
    const bool transposed = gemm && nd.attr_int("transB", 0) != 0;
    m_a.weights.push_back({WeightRule::Kind::gemm_weight, nd.inputs[1], v, 0, sy, sx, transposed});
    if (gemm && has_input(nd, 2)) follow(nd.inputs[2], v, rank(nd.inputs[2]) - 1, sy);
}

DNNCOST_FUNC void Analyser::elementwise(int v, const graph::Node& nd, int y) {
    const int ry = rank(y);
    if (ry < 2) {
        for (int t : nd.inputs)
            if (is_activation(t) && rank(t) >= 2) return opaque(v, "an elementwise operator reducing rank");
        return;
    }
    const auto cy = channels(y);
    int s = -1;
    for (int t : nd.inputs) {
        if (t < 0 || !is_activation(t) || rank(t) < 2) continue;
        if (rank(t) != ry) return opaque(v, "an elementwise operator over different ranks");
        if (channels(t) == 1 && cy != 1) continue;  // broadcast over channels
        if (space_of(t) < 0) return opaque(v, "an operand without channels");
        s = s < 0 ? space_of(t) : (unite(s, space_of(t)), s);
    }
    if (s < 0) {
        new_space(y);
        fix(space_of(y), "channels that come from constants at node '" + nd.name + "'");
        return;
    }
    for (std::size_t i = 0; i < nd.inputs.size(); ++i) {
        const int t = nd.inputs[i];
        if (t >= 0 && !is_activation(t) && cy > 1) follow(t, v, rank(t) - (ry - 1), s);
    }
    pass(y, s);
}

DNNCOST_FUNC void Analyser::concat(int v, const graph::Node& nd, int y) {
    const int ry = rank(y);
    auto axis = nd.attr_int("axis", 1);
    if (axis < 0) axis += ry;
    std::vector<int> parts;
    for (int t : nd.inputs) {
        if (t < 0 || !is_activation(t) || rank(t) != ry || ry < 2 || space_of(t) < 0)
            return opaque(v, "a concatenation of constants or of tensors without channels");
        parts.push_back(space_of(t));
    }
    if (axis != 1) {
        for (std::size_t i = 1; i < parts.size(); ++i) unite(parts[0], parts[i]);
        return pass(y, parts.at(0));
    }
    const int s = add_space({ChannelAnalysis::Space::Kind::concat, channels(y), parts, -1, 1});
    m_a.tensor_space[static_cast<std::size_t>(y)] = s;
}

DNNCOST_FUNC void Analyser::split(int v, const graph::Node& nd, int x) {
    if (x < 0 || !is_activation(x) || rank(x) < 2 || space_of(x) < 0) return opaque(v, "a split of constants");
    auto axis = nd.attr_int("axis", 0);
    if (axis < 0) axis += rank(x);
    if (axis != 1) {
        for (int t : nd.outputs) pass(t, space_of(x));
        return;
    }
    auto sizes = nd.attr_ints("split");
    if (sizes.empty() && has_input(nd, 1)) sizes = ints_of(nd.inputs[1]);
    const auto pieces = static_cast<std::int64_t>(nd.outputs.size());
    for (int t : nd.outputs)
        if (rank(t) < 2 || channels(t) * pieces != channels(x)) return opaque(v, "a split into unequal parts");
    if (!sizes.empty() && std::adjacent_find(sizes.begin(), sizes.end(), std::not_equal_to<>()) != sizes.end())
        return opaque(v, "a split into unequal parts");
    if (!sizes.empty())
        m_a.split_sizes.push_back({v, nd.attr_ints("split").empty() ? nd.inputs[1] : -1, space_of(x), pieces});
    for (int t : nd.outputs) {
        const int s = add_space({ChannelAnalysis::Space::Kind::split, channels(t), {}, space_of(x), pieces});
        m_a.tensor_space[static_cast<std::size_t>(t)] = s;
    }
}

DNNCOST_FUNC void Analyser::reshape(int v, const graph::Node& nd, int x, int y) {
    if (x < 0 || !is_activation(x) || rank(x) < 2 || space_of(x) < 0) {
        if (rank(y) >= 2) opaque(v, "a reshape of a tensor without channels");
        return;
    }
    const auto& xs = m_g.tensor(x).shape;
    const auto& ys = m_g.tensor(y).shape;
    const auto ones_after = [](const graph::Shape& s) {
        return std::all_of(s.begin() + 2, s.end(), [](std::int64_t d) { return d == 1; });
    };
    // only channels moving between [N, C, 1, ..., 1] and [N, C]: no other axis mixes in
    const bool keeps = ys.size() >= 2 && xs[0] == ys[0] && xs[1] == ys[1] && ones_after(xs) && ones_after(ys);
    if (!keeps) return opaque(v, "a reshape that mixes the channel axis with others");
    if (nd.op_type == "Reshape") {
        const int target = has_input(nd, 1) ? nd.inputs[1] : -1;
        const auto values = ints_of(target);
        if (values.size() != ys.size()) return opaque(v, "a reshape to an unknown target");
        if (values[1] == xs[1])
            m_a.reshape_targets.push_back({target, 1, space_of(x)});
        else if (values[1] != -1)
            return opaque(v, "a reshape to an unexpected target");
    }
    pass(y, space_of(x));
}

DNNCOST_FUNC void Analyser::resolve() {
    const std::size_t n = m_a.spaces.size();
    auto& cls = m_a.space_class;
    cls.assign(n, -1);
    for (std::size_t s = 0; s < n; ++s) cls[s] = find(static_cast<int>(s));
    std::vector<std::string> reason(n);
    std::vector<std::int64_t> multiple(n, 1);
    std::vector<std::vector<int>> members(n);
    for (std::size_t s = 0; s < n; ++s) {
        const auto c = static_cast<std::size_t>(cls[s]);
        members[c].push_back(static_cast<int>(s));
        if (reason[c].empty() && !m_reason[s].empty()) reason[c] = m_reason[s];
        multiple[c] = std::lcm(multiple[c], m_multiple[s]);
    }
    // a split's parts require a multiple of the piece count of their parent
    for (std::size_t s = 0; s < n; ++s) {
        const auto& sp = m_a.spaces[s];
        if (sp.kind != ChannelAnalysis::Space::Kind::split) continue;
        const auto p = static_cast<std::size_t>(cls[static_cast<std::size_t>(sp.parent)]);
        multiple[p] = std::lcm(multiple[p], sp.pieces * multiple[static_cast<std::size_t>(cls[s])]);
    }
    // a derived space merged with other channels, or asked for a multiple, keeps its channels
    for (std::size_t c = 0; c < n; ++c) {
        if (members[c].size() < 2 && multiple[c] == 1) continue;
        for (int s : members[c])
            if (m_a.spaces[static_cast<std::size_t>(s)].kind != ChannelAnalysis::Space::Kind::primary &&
                reason[c].empty())
                reason[c] = "concatenated or split channels joined with other channels";
    }
    // fixing spreads from a derived space to the spaces it is made of
    for (bool changed = true; changed;) {
        changed = false;
        for (std::size_t s = 0; s < n; ++s) {
            const auto c = static_cast<std::size_t>(cls[s]);
            if (reason[c].empty()) continue;
            const auto& sp = m_a.spaces[s];
            std::vector<int> sources = sp.parts;
            if (sp.kind == ChannelAnalysis::Space::Kind::split) sources.push_back(sp.parent);
            for (int src : sources) {
                auto& r = reason[static_cast<std::size_t>(cls[static_cast<std::size_t>(src)])];
                if (r.empty()) {
                    r = "part of channels that stay whole (" + reason[c] + ")";
                    changed = true;
                }
            }
        }
    }
    m_a.class_group.assign(n, -1);
    m_a.class_fixed.assign(n, 0);
    for (std::size_t c = 0; c < n; ++c) {
        if (cls[c] != static_cast<int>(c)) continue;
        std::vector<int> producers;
        bool primary = true;
        for (int s : members[c]) {
            const auto& p = m_producers[static_cast<std::size_t>(s)];
            producers.insert(producers.end(), p.begin(), p.end());
            primary = primary && m_a.spaces[static_cast<std::size_t>(s)].kind == ChannelAnalysis::Space::Kind::primary;
        }
        std::sort(producers.begin(), producers.end());
        if (!primary && reason[c].empty()) continue;  // derived: its count follows from its parts or parent
        const auto size = m_a.spaces[c].size;
        if (primary && reason[c].empty() && !producers.empty() && size > multiple[c]) {
            ChannelGroup g;
            g.name = m_g.node(producers.front()).name;
            g.producers = producers;
            g.channels = size;
            g.multiple = multiple[c];
            for (int p : producers) g.parameters += m_g.parameter_count(p);
            m_a.class_group[c] = static_cast<int>(m_a.groups.size());
            m_a.groups.push_back(std::move(g));
            continue;
        }
        m_a.class_fixed[c] = 1;
        const std::string why = !reason[c].empty() ? reason[c] : "too few channels to prune";
        for (int p : producers) m_a.fixed.push_back({m_g.node(p).name, m_g.node(p).op_type, why});
    }
}

}  // namespace dnncost::search::compression::detail
