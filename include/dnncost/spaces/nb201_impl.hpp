#pragma once
/// @file nb201_impl.hpp
/// The definitions of nb201.hpp: compiled once into dnncost::compiled in compiled mode
/// (core/config.hpp), included by nb201.hpp in header-only mode.
#include <dnncost/spaces/nb201.hpp>

DNNCOST_FUNC auto dnncost::nb201::parse(std::string_view text) -> Arch {
    Arch a;
    const std::string s(text);
    auto fail = [&](const std::string& why) -> void {
        raise<parse_error>("nb201: bad architecture string '", s, "': ", why);
    };
    std::vector<std::string> groups;
    {
        std::size_t start = 0;
        for (;;) {
            const auto plus = s.find('+', start);
            groups.push_back(s.substr(start, plus == std::string::npos ? std::string::npos : plus - start));
            if (plus == std::string::npos) break;
            start = plus + 1;
        }
    }
    if (groups.size() != 3) fail("expected 3 groups separated by '+', found " + std::to_string(groups.size()));
    int e = 0;
    for (int node = 1; node <= 3; ++node) {
        const std::string& grp = groups[static_cast<std::size_t>(node - 1)];
        if (grp.size() < 2 || grp.front() != '|' || grp.back() != '|')
            fail("group " + std::to_string(node) + " must be enclosed in '|'");
        std::vector<std::string> items;
        std::size_t start = 1;
        while (start < grp.size()) {
            const auto bar = grp.find('|', start);
            items.push_back(grp.substr(start, bar - start));
            start = bar + 1;
        }
        if (static_cast<int>(items.size()) != node)
            fail("group " + std::to_string(node) + " must have " + std::to_string(node) + " operations");
        for (int j = 0; j < node; ++j) {
            const auto& it = items[static_cast<std::size_t>(j)];
            const auto tilde = it.rfind('~');
            if (tilde == std::string::npos) fail("item '" + it + "' lacks '~input'");
            if (it.substr(tilde + 1) != std::to_string(j))
                fail("item '" + it + "' should read from node " + std::to_string(j));
            a.ops[static_cast<std::size_t>(e++)] = op_from_name(it.substr(0, tilde));
        }
    }
    return a;
}

DNNCOST_FUNC std::string dnncost::nb201::to_string(const Arch& a) {
    std::string s;
    int e = 0;
    for (int node = 1; node <= 3; ++node) {
        if (node > 1) s += '+';
        s += '|';
        for (int j = 0; j < node; ++j) {
            s += op_names[static_cast<std::size_t>(a.ops[static_cast<std::size_t>(e++)])];
            s += '~';
            s += std::to_string(j);
            s += '|';
        }
    }
    return s;
}

DNNCOST_FUNC auto dnncost::nb201::from_index(std::int64_t idx) -> Arch {
    if (idx < 0 || idx >= num_architectures)
        raise<config_error>("nb201: index ", idx, " out of range [0, ", num_architectures, ")");
    Arch a;
    for (int e = num_edges - 1; e >= 0; --e) {
        a.ops[static_cast<std::size_t>(e)] = static_cast<Op>(idx % num_ops);
        idx /= num_ops;
    }
    return a;
}

DNNCOST_FUNC auto dnncost::nb201::isomorphic_twin(const Arch& a) -> std::optional<Arch> {
    if (a.ops[2] != Op::none) return std::nullopt;
    Arch b = a;
    std::swap(b.ops[0], b.ops[1]);
    std::swap(b.ops[4], b.ops[5]);
    if (b == a) return std::nullopt;
    return b;
}

namespace dnncost::nb201::detail {

DNNCOST_FUNC auto Builder::build() -> graph::Graph {
    const auto& C = m_opt.channels;
    const std::int64_t H = m_opt.input_size;
    Value x{m_g.add_input("input", {m_opt.batch, 3, H, H}), false};
    x = conv(x, C[0], 3, 1, "stem.conv", false);
    x = bn(x, "stem.bn");
    std::int64_t h = H;
    for (int stage = 0; stage < 3; ++stage) {
        if (stage > 0) {
            x = resblock(x, C[static_cast<std::size_t>(stage)], "stage" + std::to_string(stage) + ".reduce");
            h /= 2;
        }
        for (int c = 0; c < m_opt.cells_per_stage; ++c)
            x = cell(x, "stage" + std::to_string(stage) + ".cell" + std::to_string(c));
    }
    (void)h;
    x = bn(x, "lastact.bn");
    x = unary(x, "Relu", "lastact.relu");
    x = op_out(x, "GlobalAveragePool", "global_pool", {m_opt.batch, C[2], 1, 1}, {});
    x = op_out(x, "Flatten", "flatten", {m_opt.batch, C[2]}, {{"axis", std::int64_t{1}}});
    {
        const int w = m_g.add_weight("classifier.weight", {m_opt.num_classes, C[2]});
        const int b = m_g.add_weight("classifier.bias", {m_opt.num_classes});
        x = emit("Gemm", "classifier", {x.tensor, w, b}, {m_opt.batch, m_opt.num_classes},
                 {{"transB", std::int64_t{1}}}, x.constant);
    }
    if (x.tensor < 0 || m_g.tensor(x.tensor).producer < 0) {
        // Everything folded (all cells disconnected): the output is one constant.
        x.tensor = m_g.add_op("Constant", "folded_output", {}, {m_opt.batch, m_opt.num_classes});
    }
    m_g.mark_output(x.tensor);
    if (m_opt.prune) return remove_dead(std::move(m_g));
    return std::move(m_g);
}

DNNCOST_FUNC auto Builder::conv(const Value& x, std::int64_t cout, std::int64_t k, std::int64_t stride,
                                const std::string& name, bool bias) -> Value {
    const auto s = shape(x);  // a copy: add_weight below may reallocate the tensor list
    const std::int64_t pad = k / 2;
    const std::int64_t ho = (s[2] + 2 * pad - k) / stride + 1;
    const std::int64_t wo = (s[3] + 2 * pad - k) / stride + 1;
    std::vector<int> in{x.tensor, m_g.add_weight(name + ".weight", {cout, s[1], k, k})};
    if (bias) in.push_back(m_g.add_weight(name + ".bias", {cout}));
    const graph::Shape out{s[0], cout, ho, wo};
    return emit("Conv", name, std::move(in), out,
                {{"dilations", std::vector<std::int64_t>{1, 1}},
                 {"group", std::int64_t{1}},
                 {"kernel_shape", std::vector<std::int64_t>{k, k}},
                 {"pads", std::vector<std::int64_t>{pad, pad, pad, pad}},
                 {"strides", std::vector<std::int64_t>{stride, stride}}},
                x.constant);
}

DNNCOST_FUNC auto Builder::bn(const Value& x, const std::string& name) -> Value {
    const auto c = shape(x)[1];
    std::vector<int> in{x.tensor};
    for (const char* p : {".scale", ".bias", ".mean", ".var"}) in.push_back(m_g.add_weight(name + p, {c}));
    return emit("BatchNormalization", name, std::move(in), shape(x), {{"epsilon", 1e-5}, {"momentum", 0.9}},
                x.constant);
}

DNNCOST_FUNC auto Builder::relu_conv_bn(const Value& x, std::int64_t cout, std::int64_t k, std::int64_t stride,
                                        const std::string& name) -> Value {
    Value y = unary(x, "Relu", name + ".relu");
    y = conv(y, cout, k, stride, name + ".conv", false);
    return bn(y, name + ".bn");
}

DNNCOST_FUNC auto Builder::resblock(const Value& x, std::int64_t planes, const std::string& name) -> Value {
    Value a = relu_conv_bn(x, planes, 3, 2, name + ".conv_a");
    Value b = relu_conv_bn(a, planes, 3, 1, name + ".conv_b");
    const auto& s = shape(x);
    Value d = op_out(x, "AveragePool", name + ".downsample.pool", {s[0], s[1], s[2] / 2, s[3] / 2},
                     {{"kernel_shape", std::vector<std::int64_t>{2, 2}}, {"strides", std::vector<std::int64_t>{2, 2}}});
    d = conv(d, planes, 1, 1, name + ".downsample.conv", false);
    return add(d, b, name + ".add");
}

DNNCOST_FUNC auto Builder::cell(const Value& x, const std::string& name) -> Value {
    // node values: tensor or "zero" (pruned view: tensor -1, never materialised)
    std::array<Value, 4> nodes{};
    std::array<bool, 4> zero{};
    nodes[0] = x;
    zero[0] = false;
    m_cell_shape = shape(x);
    int e = 0;
    for (int i = 1; i <= 3; ++i) {
        std::vector<Value> terms;
        for (int j = 0; j < i; ++j, ++e) {
            const Op op = m_arch.ops[static_cast<std::size_t>(e)];
            const std::string en = name + ".edge" + std::to_string(i) + std::to_string(j);
            const Value& in = nodes[static_cast<std::size_t>(j)];
            const bool in_zero = zero[static_cast<std::size_t>(j)];
            if (m_opt.prune) {
                if (op == Op::none) continue;
                if (in_zero && (op == Op::skip_connect || op == Op::avg_pool_3x3)) continue;  // zero stays zero
            }
            Value in_v = in;
            if (m_opt.prune && in_zero) in_v = Value{m_zero_placeholder(m_cell_shape), true};
            switch (op) {
                case Op::none:
                    terms.push_back(
                        Value{m_g.add_op("Mul", en + ".zero", {in_v.tensor, zero_scalar()}, shape(in_v)), false});
                    break;
                case Op::skip_connect:
                    terms.push_back(in_v);
                    break;
                case Op::nor_conv_1x1:
                    terms.push_back(relu_conv_bn(in_v, shape(in_v)[1], 1, 1, en));
                    break;
                case Op::nor_conv_3x3:
                    terms.push_back(relu_conv_bn(in_v, shape(in_v)[1], 3, 1, en));
                    break;
                case Op::avg_pool_3x3:
                    terms.push_back(op_out(in_v, "AveragePool", en + ".pool", shape(in_v),
                                           {{"count_include_pad", std::int64_t{0}},
                                            {"kernel_shape", std::vector<std::int64_t>{3, 3}},
                                            {"pads", std::vector<std::int64_t>{1, 1, 1, 1}},
                                            {"strides", std::vector<std::int64_t>{1, 1}}}));
                    break;
            }
        }
        if (terms.empty()) {
            zero[static_cast<std::size_t>(i)] = true;
            nodes[static_cast<std::size_t>(i)] = Value{-1, true};
            continue;
        }
        Value acc = terms[0];
        for (std::size_t t = 1; t < terms.size(); ++t)
            acc = add(acc, terms[t], name + ".node" + std::to_string(i) + ".add" + std::to_string(t));
        nodes[static_cast<std::size_t>(i)] = acc;
        zero[static_cast<std::size_t>(i)] = false;
    }
    if (zero[3]) return Value{m_zero_placeholder(shape(x)), true};
    return nodes[3];
}

DNNCOST_FUNC int Builder::zero_scalar() {
    if (m_zero < 0) {
        m_zero = m_g.add_weight("zero", {}, graph::DataType::float32);
        m_g.set_data(m_zero, {0.0});  // a known value: what lets an analysis see `none` as dead
    }
    return m_zero;
}

DNNCOST_FUNC auto Builder::remove_dead(graph::Graph g) -> graph::Graph {
    const auto n = g.num_nodes();
    std::vector<char> live(n, 0);
    std::vector<int> stack;
    for (int t : g.outputs())
        if (g.tensor(t).producer >= 0) stack.push_back(g.tensor(t).producer);
    while (!stack.empty()) {
        const int v = stack.back();
        stack.pop_back();
        if (live[static_cast<std::size_t>(v)]) continue;
        live[static_cast<std::size_t>(v)] = 1;
        for (int p : g.predecessors(v)) stack.push_back(p);
    }
    graph::Graph out(g.name());
    std::vector<int> remap(g.num_tensors(), -1);
    auto tensor_of = [&](int t) {
        if (remap[static_cast<std::size_t>(t)] < 0) {
            const auto& ten = g.tensor(t);
            remap[static_cast<std::size_t>(t)] = out.add_tensor(ten.name, ten.shape, ten.dtype, ten.kind);
            if (!ten.data.empty()) out.set_data(remap[static_cast<std::size_t>(t)], ten.data);
        }
        return remap[static_cast<std::size_t>(t)];
    };
    for (std::size_t v = 0; v < n; ++v) {
        if (!live[v]) continue;
        const auto& nd = g.node(static_cast<int>(v));
        std::vector<int> in, outs;
        for (int t : nd.inputs) in.push_back(t < 0 ? -1 : tensor_of(t));
        for (int t : nd.outputs) outs.push_back(tensor_of(t));
        out.add_node(nd.op_type, nd.name, in, outs, nd.attributes);
    }
    for (int t : g.outputs()) out.mark_output(tensor_of(t));
    return out;
}

}  // namespace dnncost::nb201::detail
