#pragma once
/// @file registry.hpp
/// The search spaces by name, behind one interface that works on architecture strings, so that a
/// command-line tool or a data-set loader handles every space with the same few lines:
///
///     const auto& space = dnncost::spaces::find_space("ofa");
///     Rng rng(seed);
///     const std::string arch = space.sample(rng);
///     const graph::Graph g = space.build_graph(arch, space_options("width=1.0,resolution=160"));
///
/// Options every space reads: `batch` (default 1). Space-specific ones: ofa `width` (1.2 or
/// 1.0) and `resolution` (an override of the string's); vit `layer_norm` (fused or decomposed).
/// An option a space does not know is a config_error naming it.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <dnncost/core/config.hpp>
#include <dnncost/core/error.hpp>
#include <dnncost/core/rng.hpp>
#include <dnncost/graph/graph.hpp>
#include <dnncost/spaces/count.hpp>
#include <dnncost/spaces/fbnet.hpp>
#include <dnncost/spaces/kws.hpp>
#include <dnncost/spaces/nb201.hpp>
#include <dnncost/spaces/ofa.hpp>
#include <dnncost/spaces/parse.hpp>
#include <dnncost/spaces/vit.hpp>

namespace dnncost::spaces {

/// Build options as key/value text, e.g. from `--space-options width=1.0,resolution=160`.
using SpaceOptions = std::map<std::string, std::string, std::less<>>;

/// Parses `key=value,key=value` (empty text: no options). @throws config_error naming a bad item
DNNCOST_FUNC SpaceOptions space_options(std::string_view text);

/// One search space, by its architecture strings.
struct SpaceInfo {
    std::string_view name;
    std::string_view summary;
    /// The lowest ONNX opset its graphs need (for io::OnnxExportOptions::opset).
    int onnx_opset = 13;
    /// Parses and prints again: the canonical form of a string. @throws parse_error
    std::string (*canonical)(std::string_view arch) = nullptr;
    /// The operator graph. @throws parse_error for the string, config_error for the options
    graph::Graph (*build_graph)(std::string_view arch, const SpaceOptions& options) = nullptr;
    /// A seeded draw from the space (each space's own sampling convention, see its header).
    std::string (*sample)(Rng& rng) = nullptr;
    /// The exact number of architectures.
    Count (*size)() = nullptr;
};

namespace detail {
/// Reads the options of one space; every key must be one of `known`.
class OptionReader {
public:
    OptionReader(std::string_view space, const SpaceOptions& o, std::vector<std::string_view> known)
        : m_space(space), m_o(o) {
        known.push_back("batch");
        for (const auto& [k, v] : o) {
            bool ok = false;
            for (auto kn : known) ok = ok || kn == k;
            if (!ok)
                raise<config_error>("space '", space, "': unknown option '", k, "' (known: ", list_choices(known), ")");
        }
    }
    std::int64_t integer(std::string_view key, std::int64_t fallback) const {
        const auto it = m_o.find(key);
        if (it == m_o.end()) return fallback;
        const auto v = parse_small_uint(it->second);
        if (v < 0)
            raise<config_error>("space '", m_space, "': option ", key, "='", it->second, "' is not a positive integer");
        return v;
    }
    bool has(std::string_view key) const { return m_o.find(key) != m_o.end(); }
    std::string text(std::string_view key, std::string fallback) const {
        const auto it = m_o.find(key);
        return it == m_o.end() ? fallback : it->second;
    }
    [[noreturn]] void bad(std::string_view key, std::string_view expected) const {
        raise<config_error>("space '", m_space, "': option ", key, "='", m_o.find(key)->second, "' (expected ",
                            expected, ")");
    }

private:
    std::string_view m_space;
    const SpaceOptions& m_o;
};

DNNCOST_FUNC SpaceInfo nb201_space();
DNNCOST_FUNC SpaceInfo fbnet_space();
DNNCOST_FUNC SpaceInfo ofa_space();
DNNCOST_FUNC SpaceInfo vit_space();
DNNCOST_FUNC SpaceInfo kws_space();
}  // namespace detail

/// Every registered space, in a fixed order.
inline const std::vector<SpaceInfo>& all_spaces() {
    static const std::vector<SpaceInfo> spaces{detail::nb201_space(), detail::fbnet_space(), detail::ofa_space(),
                                               detail::vit_space(), detail::kws_space()};
    return spaces;
}

/// The space called `name`. @throws config_error naming the known spaces
inline const SpaceInfo& find_space(std::string_view name) {
    for (const auto& s : all_spaces())
        if (s.name == name) return s;
    std::vector<std::string_view> names;
    for (const auto& s : all_spaces()) names.push_back(s.name);
    raise<config_error>("unknown search space '", name, "' (known: ", list_choices(names), ")");
}

/// Checks build options before any network is built: a space reads its options only when it
/// builds a graph, so one seeded sample is built with them (which also checks the values, e.g.
/// a resolution the space does not take). @throws config_error naming the option
inline void check_space_options(const SpaceInfo& space, const SpaceOptions& options) {
    if (options.empty()) return;
    Rng rng(0);
    (void)space.build_graph(space.sample(rng), options);
}

/// The space called `name`, or nullptr.
inline const SpaceInfo* find_space_or_null(std::string_view name) {
    for (const auto& s : all_spaces())
        if (s.name == name) return &s;
    return nullptr;
}

/// An architecture string that names its space, `SPACE:ARCH` (e.g. `fbnet:k3_e1-...`), so that
/// data sets and results stores can hold networks of several spaces. NB201 strings, which start
/// with '|', name their space by their form and stay unqualified.
inline std::string qualified_arch(std::string_view space, std::string_view arch) {
    if (space == "nb201") return std::string(arch);
    return std::string(space) + ":" + std::string(arch);
}

/// A network of a registered space named by `key`: `SPACE:ARCH`, or a bare NB201 string.
struct SpaceArch {
    const SpaceInfo* space = nullptr;
    std::string_view arch;
};

/// What `key` names, or nullopt when it is neither `SPACE:ARCH` of a registered space nor an NB201
/// string (e.g. a file path). The architecture itself is not checked here (SpaceInfo::canonical).
DNNCOST_FUNC std::optional<SpaceArch> split_qualified(std::string_view key);

}  // namespace dnncost::spaces

#if !defined(DNNCOST_COMPILED)
#include <dnncost/spaces/registry_impl.hpp>
#endif
