#pragma once
/// @file network_name_impl.hpp
/// The definitions of network_name.hpp: compiled once into dnncost::compiled in compiled mode
/// (core/config.hpp), included by network_name.hpp in header-only mode.
#include <dnncost/core/error.hpp>
#include <dnncost/spaces/network_name.hpp>
#include <dnncost/spaces/synthetic.hpp>

DNNCOST_FUNC auto dnncost::spaces::NetworkName::build(const SpaceOptions& defaults) const -> graph::Graph {
    if (!space) return synthetic::build_from_name(arch);
    if (options.empty()) return space->build_graph(arch, defaults);
    SpaceOptions merged = options;
    merged.insert(defaults.begin(), defaults.end());  // the name's own options win
    return space->build_graph(arch, merged);
}

DNNCOST_FUNC auto dnncost::spaces::parse_network_name(std::string_view key) -> std::optional<NetworkName> {
    const auto at = key.find('@');
    const auto base = key.substr(0, at);
    NetworkName n;
    if (synthetic::is_network_name(base)) {
        if (at != std::string_view::npos)
            raise<parse_error>("network '", key, "': a synthesised network takes no @ options");
        n.arch = std::string(base);
        return n;
    }
    const auto q = split_qualified(base);
    if (!q) return std::nullopt;
    n.space = q->space;
    n.arch = std::string(q->arch);
    if (at == std::string_view::npos) return n;
    for (const auto item : split(key.substr(at + 1), '@')) {
        const auto eq = item.find('=');
        if (eq == std::string_view::npos || eq == 0 || eq + 1 == item.size())
            raise<parse_error>("network '", key, "': option '", item, "' is not KEY=VALUE");
        if (!n.options.emplace(std::string(item.substr(0, eq)), std::string(item.substr(eq + 1))).second)
            raise<parse_error>("network '", key, "': option '", item.substr(0, eq), "' given twice");
    }
    return n;
}

DNNCOST_FUNC auto dnncost::spaces::network_name(std::string_view space, std::string_view arch,
                                                const SpaceOptions& options) -> std::string {
    auto name = qualified_arch(space, arch);
    for (const auto& [k, v] : options) name += "@" + k + "=" + v;
    return name;
}
