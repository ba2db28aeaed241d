#pragma once
/// @file fbnet_impl.hpp
/// The definitions of fbnet.hpp: compiled once into dnncost::compiled in compiled mode
/// (core/config.hpp), included by fbnet.hpp in header-only mode.
#include <dnncost/spaces/fbnet.hpp>

DNNCOST_FUNC auto dnncost::fbnet::parse(std::string_view text) -> Arch {
    const spaces::ArchText at("fbnet", text);
    const auto tokens = spaces::split(text, '-');
    if (tokens.size() != num_layers)
        at.fail("expected 22 layer operators joined by '-', found " + std::to_string(tokens.size()));
    Arch a;
    for (std::size_t i = 0; i < tokens.size(); ++i) {
        std::size_t k = 0;
        while (k < op_names.size() && op_names[k] != tokens[i]) ++k;
        if (k == op_names.size())
            at.fail_token(i, tokens[i], "is not an operator (" + spaces::list_choices(op_names) + ")");
        a.ops[i] = static_cast<Op>(k);
    }
    return a;
}

DNNCOST_FUNC auto dnncost::fbnet::to_string(const Arch& a) -> std::string {
    std::string s;
    for (std::size_t i = 0; i < a.ops.size(); ++i) {
        if (i) s += '-';
        s += op_names[static_cast<std::size_t>(a.ops[i])];
    }
    return s;
}

DNNCOST_FUNC auto dnncost::fbnet::build_graph(const Arch& arch, const FbnetOptions& opt) -> graph::Graph {
    if (opt.batch < 1) raise<config_error>("fbnet::build_graph: batch must be at least 1, got ", opt.batch);
    spaces::NetworkBuilder b("fbnet:" + to_string(arch));
    int x = b.input("input", {opt.batch, 3, 32, 32});
    x = b.unary("Relu", b.batch_norm(b.conv(x, 16, 3, 1, 1, "stem.conv"), "stem.bn"), "stem.relu");
    const auto shapes = layer_shapes();
    for (std::size_t i = 0; i < num_layers; ++i) {
        const auto [cin, cout, s] = shapes[i];
        const std::string n = "layer" + std::to_string(i + 1);
        const Op op = arch.ops[i];
        const bool keeps_shape = cin == cout && s == 1;
        if (op == Op::skip) {
            if (keeps_shape) continue;  // identity: no operator at all
            x = b.conv(x, cout, 1, s, 1, n + ".proj.conv");
            x = b.unary("Relu", b.batch_norm(x, n + ".proj.bn"), n + ".proj.relu");
            continue;
        }
        const auto [k, e, g] = op_shape(op);
        const std::int64_t mid = cin * e;
        int y = b.conv(x, mid, 1, 1, g, n + ".pw1.conv");
        y = b.unary("Relu", b.batch_norm(y, n + ".pw1.bn"), n + ".pw1.relu");
        if (g > 1) {
            y = b.channel_shuffle(y, g, n + ".shuffle");
        }
        y = b.conv(y, mid, k, s, mid, n + ".dw.conv");
        y = b.unary("Relu", b.batch_norm(y, n + ".dw.bn"), n + ".dw.relu");
        y = b.batch_norm(b.conv(y, cout, 1, 1, g, n + ".pw2.conv"), n + ".pw2.bn");
        x = keeps_shape ? b.add(y, x, n + ".add") : y;
    }
    x = b.unary("Relu", b.batch_norm(b.conv(x, 1504, 1, 1, 1, "head.conv"), "head.bn"), "head.relu");
    x = b.flatten(b.global_average_pool(x, "pool"), "flatten");
    x = b.gemm(x, 100, "classifier");
    return b.finish({x});
}
