#pragma once
/// @file vit_impl.hpp
/// The definitions of vit.hpp: compiled once into dnncost::compiled in compiled mode
/// (core/config.hpp), included by vit.hpp in header-only mode.
#include <dnncost/spaces/vit.hpp>

DNNCOST_FUNC auto dnncost::vit::detail::take_field(std::string_view& s, char tag) -> std::int64_t {
    if (s.empty() || s[0] != tag) return -1;
    std::size_t end = 1;
    while (end < s.size() && s[end] >= '0' && s[end] <= '9') ++end;
    const auto v = spaces::parse_small_uint(s.substr(1, end - 1));
    s.remove_prefix(end);
    return v;
}

DNNCOST_FUNC auto dnncost::vit::parse(std::string_view text) -> Arch {
    const spaces::ArchText at("vit", text);
    const auto tokens = spaces::split(text, '-');
    if (tokens.size() < 3 + min_depth || tokens.size() > 3 + max_depth)
        at.fail("expected p<P>-e<D>-<cls|mean> and 4 to 12 layer tokens joined by '-', found " +
                std::to_string(tokens.size()) + " tokens");
    Arch a;
    std::string_view t = tokens[0];
    const auto p = detail::take_field(t, 'p');
    if (!t.empty() || !detail::one_of(p, patch_choices))
        at.fail_token(0, tokens[0], "is not a patch size p" + spaces::list_choices(patch_choices));
    t = tokens[1];
    const auto e = detail::take_field(t, 'e');
    if (!t.empty() || !detail::one_of(e, embed_choices))
        at.fail_token(1, tokens[1], "is not an embedding width e" + spaces::list_choices(embed_choices));
    a.patch = static_cast<int>(p);
    a.embed = static_cast<int>(e);
    if (tokens[2] == "cls")
        a.readout = Readout::cls_token;
    else if (tokens[2] == "mean")
        a.readout = Readout::mean;
    else
        at.fail_token(2, tokens[2], "is not a readout (cls or mean)");
    for (std::size_t i = 3; i < tokens.size(); ++i) {
        t = tokens[i];
        const auto h = detail::take_field(t, 'h');
        const auto q = detail::take_field(t, 'q');
        const auto m = detail::take_field(t, 'm');
        if (!t.empty() || h < 0 || q < 0 || m < 0)
            at.fail_token(i, tokens[i], "is not a layer h<heads>q<width>m<ratio>");
        if (!detail::one_of(h, head_choices))
            at.fail_token(i, tokens[i],
                          "has " + std::to_string(h) + " heads (expected " + spaces::list_choices(head_choices) + ")");
        if (!detail::one_of(q, qkv_choices))
            at.fail_token(i, tokens[i],
                          "has query/key/value width " + std::to_string(q) + " (expected " +
                              spaces::list_choices(qkv_choices) + ")");
        if (!detail::one_of(m, mlp_ratio_choices))
            at.fail_token(
                i, tokens[i],
                "has MLP ratio " + std::to_string(m) + " (expected " + spaces::list_choices(mlp_ratio_choices) + ")");
        a.layers.push_back({static_cast<int>(h), static_cast<int>(q), static_cast<int>(m)});
    }
    return a;
}

DNNCOST_FUNC auto dnncost::vit::to_string(const Arch& a) -> std::string {
    std::string s = "p";
    s += std::to_string(a.patch);
    s += "-e";
    s += std::to_string(a.embed);
    s += a.readout == Readout::cls_token ? "-cls" : "-mean";
    for (const auto& l : a.layers) {
        s += "-h";
        s += std::to_string(l.heads);
        s += 'q';
        s += std::to_string(l.qkv_width);
        s += 'm';
        s += std::to_string(l.mlp_ratio);
    }
    return s;
}

DNNCOST_FUNC auto dnncost::vit::sample(Rng& rng) -> Arch {
    Arch a;
    a.patch = patch_choices[rng.below(patch_choices.size())];
    a.embed = embed_choices[rng.below(embed_choices.size())];
    a.readout = rng.below(2) == 0 ? Readout::cls_token : Readout::mean;
    const int depth = min_depth + static_cast<int>(rng.below(max_depth - min_depth + 1));
    for (int i = 0; i < depth; ++i)
        a.layers.push_back({head_choices[rng.below(head_choices.size())], qkv_choices[rng.below(qkv_choices.size())],
                            mlp_ratio_choices[rng.below(mlp_ratio_choices.size())]});
    return a;
}

DNNCOST_FUNC auto dnncost::vit::detail::check(const Arch& a) -> void {
    const auto bad = [&](const std::string& why) { raise<config_error>("vit::build_graph: ", why); };
    if (!one_of(a.patch, patch_choices)) bad("patch size " + std::to_string(a.patch) + " is not in the space");
    if (!one_of(a.embed, embed_choices)) bad("embedding width " + std::to_string(a.embed) + " is not in the space");
    if (a.layers.size() < min_depth || a.layers.size() > max_depth)
        bad("depth " + std::to_string(a.layers.size()) + " is outside 4..12");
    for (const auto& l : a.layers)
        if (!one_of(l.heads, head_choices) || !one_of(l.qkv_width, qkv_choices) ||
            !one_of(l.mlp_ratio, mlp_ratio_choices))
            bad("a layer (h" + std::to_string(l.heads) + "q" + std::to_string(l.qkv_width) + "m" +
                std::to_string(l.mlp_ratio) + ") is not in the space");
}
