#pragma once
/// @file network_name.hpp
/// Networks named by text alone, as results stores and device builds name what they measured:
/// a search space's architecture (`SPACE:ARCH`, NB201 strings bare) with build options appended
/// as `@KEY=VALUE` (`ofa:...@resolution=192`, `|...|@batch=8`), or a synthesised network's graph
/// name (`cnn:...`, `transformer:...`; spaces/synthetic.hpp). Such a name builds its network again
/// without a model file; any other text (a model file's path) names no network here.
#include <optional>
#include <string>
#include <string_view>

#include <dnncost/core/config.hpp>
#include <dnncost/graph/graph.hpp>
#include <dnncost/spaces/registry.hpp>

namespace dnncost::spaces {

/// What a network name says.
struct NetworkName {
    /// The search space; nullptr for a synthesised network.
    const SpaceInfo* space = nullptr;
    /// The space's architecture string, or the synthesised network's whole name.
    std::string arch;
    /// The options the name carries (`@KEY=VALUE`); a space network's only.
    SpaceOptions options;

    /// The network: a space's graph built with `defaults` and the name's own options over them,
    /// or the synthesised network built again (its name says all; `defaults` do not apply).
    /// @throws parse_error for the architecture, config_error for the options
    DNNCOST_FUNC graph::Graph build(const SpaceOptions& defaults = {}) const;
};

/// What `key` names, or nullopt when it names no network (a model file's path, even one with an
/// `@` in it). @throws parse_error for options that are not `@KEY=VALUE` or name a key twice,
/// and for options on a synthesised network
DNNCOST_FUNC std::optional<NetworkName> parse_network_name(std::string_view key);

/// The name of a space's network built with `options`: `SPACE:ARCH` (NB201 bare), then
/// `@KEY=VALUE` for each option in key order, as parse_network_name reads it.
DNNCOST_FUNC std::string network_name(std::string_view space, std::string_view arch, const SpaceOptions& options);

}  // namespace dnncost::spaces

#if !defined(DNNCOST_COMPILED)
#include <dnncost/spaces/network_name_impl.hpp>
#endif
