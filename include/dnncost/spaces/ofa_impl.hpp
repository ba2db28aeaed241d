#pragma once
/// @file ofa_impl.hpp
/// The definitions of ofa.hpp: compiled once into dnncost::compiled in compiled mode
/// (core/config.hpp), included by ofa.hpp in header-only mode.
#include <dnncost/spaces/ofa.hpp>

DNNCOST_FUNC auto dnncost::ofa::same_network(const Arch& a, const Arch& b) -> bool {
    if (a.resolution != b.resolution || a.depths != b.depths) return false;
    for (int s = 0; s < num_stages; ++s)
        for (int j = 0; j < a.depths[static_cast<std::size_t>(s)]; ++j) {
            const auto i = static_cast<std::size_t>(max_depth * s + j);
            if (a.kernels[i] != b.kernels[i] || a.expansions[i] != b.expansions[i]) return false;
        }
    return true;
}

DNNCOST_FUNC auto dnncost::ofa::parse(std::string_view text) -> Arch {
    const spaces::ArchText at("ofa", text);
    const auto fields = spaces::split(text, '-');
    if (fields.size() != 4)
        at.fail("expected 4 fields r…-d…-k…-e… joined by '-', found " + std::to_string(fields.size()));
    Arch a;
    if (fields[0].empty() || fields[0][0] != 'r') at.fail_token(0, fields[0], "should start with 'r'");
    const auto r = spaces::parse_small_uint(fields[0].substr(1));
    if (r < min_resolution || r > max_resolution || (r - min_resolution) % resolution_step != 0)
        at.fail_token(0, fields[0], "is not a resolution 128, 132, ..., 224");
    a.resolution = static_cast<int>(r);
    detail::parse_list(at, fields[1], 1, 'd', depth_choices, a.depths);
    detail::parse_list(at, fields[2], 2, 'k', kernel_choices, a.kernels);
    detail::parse_list(at, fields[3], 3, 'e', expansion_choices, a.expansions);
    return a;
}

DNNCOST_FUNC auto dnncost::ofa::to_string(const Arch& a) -> std::string {
    std::string s = "r" + std::to_string(a.resolution) + "-d";
    const auto join = [&s](const auto& v) {
        for (std::size_t i = 0; i < v.size(); ++i) {
            if (i) s += '.';
            s += std::to_string(v[i]);
        }
    };
    join(a.depths);
    s += "-k";
    join(a.kernels);
    s += "-e";
    join(a.expansions);
    return s;
}

DNNCOST_FUNC auto dnncost::ofa::size() -> spaces::Count {
    spaces::Count per_stage;
    for (int d : depth_choices) per_stage += spaces::Count::power(9, static_cast<unsigned>(d));
    spaces::Count n(num_resolutions);
    for (int s = 0; s < num_stages; ++s) n *= per_stage;
    return n;
}

DNNCOST_FUNC auto dnncost::ofa::sample(Rng& rng) -> Arch {
    Arch a;
    a.resolution = min_resolution + resolution_step * static_cast<int>(rng.below(num_resolutions));
    for (auto& d : a.depths) d = depth_choices[rng.below(depth_choices.size())];
    for (auto& k : a.kernels) k = kernel_choices[rng.below(kernel_choices.size())];
    for (auto& e : a.expansions) e = expansion_choices[rng.below(expansion_choices.size())];
    return a;
}

DNNCOST_FUNC auto dnncost::ofa::build_graph(const Arch& arch, const OfaOptions& opt) -> graph::Graph {
    if (opt.batch < 1) raise<config_error>("ofa::build_graph: batch must be at least 1, got ", opt.batch);
    // an input beyond 4096 x 4096 is no edge network, and its activations would not fit in memory
    if (opt.resolution && (*opt.resolution < 32 || *opt.resolution > 4096))
        raise<config_error>("ofa::build_graph: resolution override must be in [32, 4096], got ", *opt.resolution);
    const std::int64_t res = opt.resolution.value_or(arch.resolution);
    std::string name = "ofa:" + to_string(arch);
    if (opt.width == Width::w1_0) name += ":w1.0";
    if (opt.resolution) name += ":r" + std::to_string(res);
    spaces::NetworkBuilder b(name);
    const auto act = [&b](int x, bool hswish, const std::string& n) {
        return b.unary(hswish ? "HardSwish" : "Relu", x, n + (hswish ? ".hswish" : ".relu"));
    };
    const Widths w = widths(opt.width);
    int x = b.input("input", {opt.batch, 3, res, res});
    x = act(b.batch_norm(b.conv(x, w.stem, 3, 2, 1, "stem.conv"), "stem.bn"), true, "stem");
    {  // block 0: depthwise 3x3, projection, residual
        int y =
            act(b.batch_norm(b.conv(x, w.stem, 3, 1, w.stem, "block0.dw.conv"), "block0.dw.bn"), false, "block0.dw");
        y = b.batch_norm(b.conv(y, w.block0, 1, 1, 1, "block0.proj.conv"), "block0.proj.bn");
        x = b.add(y, x, "block0.add");
    }
    std::int64_t cin = w.block0;
    for (int s = 0; s < num_stages; ++s) {
        const auto su = static_cast<std::size_t>(s);
        const std::int64_t cout = w.stages[su];
        const bool hswish = stage_uses_hswish[su];
        for (int j = 0; j < arch.depths[su]; ++j) {
            const auto slot = static_cast<std::size_t>(max_depth * s + j);
            const std::int64_t k = arch.kernels[slot], stride = j == 0 ? stage_strides[su] : 1;
            const std::int64_t mid = make_divisible(std::round(static_cast<double>(cin * arch.expansions[slot])));
            const std::string n = "stage" + std::to_string(s + 1) + ".block" + std::to_string(j);
            int y =
                act(b.batch_norm(b.conv(x, mid, 1, 1, 1, n + ".expand.conv"), n + ".expand.bn"), hswish, n + ".expand");
            y = act(b.batch_norm(b.conv(y, mid, k, stride, mid, n + ".dw.conv"), n + ".dw.bn"), hswish, n + ".dw");
            if (stage_has_se[su]) {
                const std::int64_t r = make_divisible(static_cast<double>(mid / 4));
                int g = b.global_average_pool(y, n + ".se.pool");
                g = b.unary("Relu",
                            b.conv(g, spaces::ConvSpec{r, {1, 1}, {1, 1}, {0, 0, 0, 0}, 1, true}, n + ".se.reduce"),
                            n + ".se.relu");
                g = b.conv(g, spaces::ConvSpec{mid, {1, 1}, {1, 1}, {0, 0, 0, 0}, 1, true}, n + ".se.expand");
                g = b.unary("HardSigmoid", g, n + ".se.hsigmoid", {{"alpha", 0.16666667}, {"beta", 0.5}});
                y = b.mul(y, g, n + ".se.scale");
            }
            y = b.batch_norm(b.conv(y, cout, 1, 1, 1, n + ".proj.conv"), n + ".proj.bn");
            x = stride == 1 && cin == cout ? b.add(y, x, n + ".add") : y;
            cin = cout;
        }
    }
    x = act(b.batch_norm(b.conv(x, w.final_expand, 1, 1, 1, "final_expand.conv"), "final_expand.bn"), true,
            "final_expand");
    x = b.global_average_pool(x, "pool");
    x = act(b.conv(x, w.feature_mix, 1, 1, 1, "feature_mix.conv"), true, "feature_mix");
    x = b.gemm(b.flatten(x, "flatten"), 1000, "classifier");
    return b.finish({x});
}
