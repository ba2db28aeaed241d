#pragma once
/// @file kws_impl.hpp
/// The definitions of kws.hpp: compiled once into dnncost::compiled in compiled mode
/// (core/config.hpp), included by kws.hpp in header-only mode.
#include <dnncost/spaces/kws.hpp>

DNNCOST_FUNC auto dnncost::kws::detail::take_extent(std::string_view& s) -> std::array<std::int64_t, 2> {
    std::array<std::int64_t, 2> r{-1, -1};
    for (std::size_t part = 0; part < 2; ++part) {
        std::size_t end = 0;
        while (end < s.size() && s[end] >= '0' && s[end] <= '9') ++end;
        r[part] = spaces::parse_small_uint(s.substr(0, end));
        s.remove_prefix(end);
        if (part == 0) {
            if (s.empty() || s[0] != 'x') return {-1, -1};
            s.remove_prefix(1);
        }
    }
    return r;
}

DNNCOST_FUNC auto dnncost::kws::parse(std::string_view text) -> Arch {
    const spaces::ArchText at("kws", text);
    const auto tokens = spaces::split(text, '-');
    if (tokens.size() < 1 + min_blocks || tokens.size() > 1 + max_blocks)
        at.fail("expected a stem token and 2 to 6 block tokens joined by '-', found " + std::to_string(tokens.size()) +
                " tokens");
    Arch a;
    {
        std::string_view t = tokens[0];
        const auto k = detail::take_extent(t);
        const bool has_s = !t.empty() && t[0] == 's';
        if (has_s) t.remove_prefix(1);
        const auto s = has_s ? detail::take_extent(t) : std::array<std::int64_t, 2>{-1, -1};
        const auto c = detail::take_channels(t);
        if (k[0] < 0 || s[0] < 0 || c < 0) at.fail_token(0, tokens[0], "is not a stem <KH>x<KW>s<SH>x<SW>c<C>");
        if (!detail::one_of(k, stem_kernel_choices))
            at.fail_token(0, tokens[0],
                          "has stem kernel " + std::to_string(k[0]) + "x" + std::to_string(k[1]) + " (expected " +
                              detail::extents(stem_kernel_choices) + ")");
        if (!detail::one_of(s, stem_stride_choices))
            at.fail_token(0, tokens[0],
                          "has stem stride " + std::to_string(s[0]) + "x" + std::to_string(s[1]) + " (expected " +
                              detail::extents(stem_stride_choices) + ")");
        if (!detail::one_of(c, channel_choices))
            at.fail_token(
                0, tokens[0],
                "has " + std::to_string(c) + " channels (expected " + spaces::list_choices(channel_choices) + ")");
        a.stem_kernel = {static_cast<int>(k[0]), static_cast<int>(k[1])};
        a.stem_stride = {static_cast<int>(s[0]), static_cast<int>(s[1])};
        a.stem_channels = static_cast<int>(c);
    }
    for (std::size_t i = 1; i < tokens.size(); ++i) {
        std::string_view t = tokens[i];
        const auto k = detail::take_extent(t);
        const auto c = detail::take_channels(t);
        if (k[0] < 0 || c < 0) at.fail_token(i, tokens[i], "is not a block <kh>x<kw>c<c>");
        if (!detail::one_of(k, block_kernel_choices))
            at.fail_token(i, tokens[i],
                          "has kernel " + std::to_string(k[0]) + "x" + std::to_string(k[1]) + " (expected " +
                              detail::extents(block_kernel_choices) + ")");
        if (!detail::one_of(c, channel_choices))
            at.fail_token(
                i, tokens[i],
                "has " + std::to_string(c) + " channels (expected " + spaces::list_choices(channel_choices) + ")");
        a.blocks.push_back({{static_cast<int>(k[0]), static_cast<int>(k[1])}, static_cast<int>(c)});
    }
    return a;
}

DNNCOST_FUNC auto dnncost::kws::to_string(const Arch& a) -> std::string {
    std::string s;
    detail::append_extent(s, a.stem_kernel);
    s += 's';
    detail::append_extent(s, a.stem_stride);
    s += 'c';
    s += std::to_string(a.stem_channels);
    for (const auto& b : a.blocks) {
        s += '-';
        detail::append_extent(s, b.kernel);
        s += 'c';
        s += std::to_string(b.channels);
    }
    return s;
}

DNNCOST_FUNC auto dnncost::kws::sample(Rng& rng) -> Arch {
    Arch a;
    a.stem_kernel = stem_kernel_choices[rng.below(stem_kernel_choices.size())];
    a.stem_stride = stem_stride_choices[rng.below(stem_stride_choices.size())];
    a.stem_channels = channel_choices[rng.below(channel_choices.size())];
    const int n = min_blocks + static_cast<int>(rng.below(max_blocks - min_blocks + 1));
    for (int i = 0; i < n; ++i)
        a.blocks.push_back({block_kernel_choices[rng.below(block_kernel_choices.size())],
                            channel_choices[rng.below(channel_choices.size())]});
    return a;
}

DNNCOST_FUNC auto dnncost::kws::build_graph(const Arch& arch, const KwsOptions& opt) -> graph::Graph {
    if (opt.batch < 1) raise<config_error>("kws::build_graph: batch must be at least 1, got ", opt.batch);
    const auto ext = [](const Extent& e) { return std::array<std::int64_t, 2>{e[0], e[1]}; };
    bool ok = detail::one_of(ext(arch.stem_kernel), stem_kernel_choices) &&
              detail::one_of(ext(arch.stem_stride), stem_stride_choices) &&
              detail::one_of(arch.stem_channels, channel_choices) && arch.blocks.size() >= min_blocks &&
              arch.blocks.size() <= max_blocks;
    for (const auto& bl : arch.blocks)
        ok = ok && detail::one_of(ext(bl.kernel), block_kernel_choices) && detail::one_of(bl.channels, channel_choices);
    if (!ok) raise<config_error>("kws::build_graph: architecture '", to_string(arch), "' is not in the space");

    spaces::NetworkBuilder b("kws:" + to_string(arch));
    const auto same_conv = [&b](int x, std::int64_t cout, Extent k, Extent s, std::int64_t group,
                                const std::string& n) {
        const auto in = b.shape(x);
        const auto ph = spaces::same_pads(in[2], k[0], s[0]), pw = spaces::same_pads(in[3], k[1], s[1]);
        const int y =
            b.conv(x, spaces::ConvSpec{cout, {k[0], k[1]}, {s[0], s[1]}, {ph[0], pw[0], ph[1], pw[1]}, group, false},
                   n + ".conv");
        return b.unary("Relu", b.batch_norm(y, n + ".bn"), n + ".relu");
    };
    int x = b.input("input", {opt.batch, 1, frames, coefficients});
    x = same_conv(x, arch.stem_channels, arch.stem_kernel, arch.stem_stride, 1, "stem");
    for (std::size_t i = 0; i < arch.blocks.size(); ++i) {
        const std::string n = "block" + std::to_string(i);
        const auto c = b.shape(x)[1];
        x = same_conv(x, c, arch.blocks[i].kernel, {1, 1}, c, n + ".dw");
        x = same_conv(x, arch.blocks[i].channels, {1, 1}, {1, 1}, 1, n + ".pw");
    }
    x = b.flatten(b.average_pool_all(x, "pool"), "flatten");
    x = b.gemm(x, num_classes, "classifier");
    return b.finish({x});
}
