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
inline SpaceOptions space_options(std::string_view text) {
    SpaceOptions o;
    if (text.empty()) return o;
    for (auto item : split(text, ',')) {
        const auto eq = item.find('=');
        if (eq == std::string_view::npos || eq == 0 || eq + 1 == item.size())
            raise<config_error>("space options '", text, "': item '", item, "' is not key=value");
        if (!o.emplace(std::string(item.substr(0, eq)), std::string(item.substr(eq + 1))).second)
            raise<config_error>("space options '", text, "': key '", item.substr(0, eq), "' given twice");
    }
    return o;
}

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

inline SpaceInfo nb201_space() {
    SpaceInfo s;
    s.name = "nb201";
    s.summary = "NAS-Bench-201 cells in the CIFAR network: 6 edges x 5 operations";
    s.onnx_opset = 13;
    s.canonical = [](std::string_view a) { return nb201::to_string(nb201::parse(a)); };
    s.build_graph = [](std::string_view a, const SpaceOptions& o) {
        const OptionReader r("nb201", o, {"prune"});
        nb201::Nb201Options opt;
        opt.batch = r.integer("batch", 1);
        const auto prune = r.text("prune", "0");
        if (prune == "1")
            opt.prune = true;
        else if (prune != "0")
            r.bad("prune", "0 or 1");
        return nb201::build_graph(a, opt);
    };
    s.sample = [](Rng& rng) {
        return nb201::to_string(nb201::from_index(
            static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(nb201::num_architectures)))));
    };
    s.size = [] { return Count(static_cast<std::uint64_t>(nb201::num_architectures)); };
    return s;
}
inline SpaceInfo fbnet_space() {
    SpaceInfo s;
    s.name = "fbnet";
    s.summary = "FBNet, HW-NAS-Bench CIFAR-100 variant: 22 layers x 9 candidates";
    s.onnx_opset = 13;
    s.canonical = [](std::string_view a) { return fbnet::to_string(fbnet::parse(a)); };
    s.build_graph = [](std::string_view a, const SpaceOptions& o) {
        const OptionReader r("fbnet", o, {});
        return fbnet::build_graph(a, fbnet::FbnetOptions{r.integer("batch", 1)});
    };
    s.sample = [](Rng& rng) { return fbnet::to_string(fbnet::sample(rng)); };
    s.size = fbnet::size;
    return s;
}
inline SpaceInfo ofa_space() {
    SpaceInfo s;
    s.name = "ofa";
    s.summary = "Once-for-All MobileNetV3: resolution, 5 stage depths, 20 kernels and expansions";
    s.onnx_opset = ofa::onnx_opset;
    s.canonical = [](std::string_view a) { return ofa::to_string(ofa::parse(a)); };
    s.build_graph = [](std::string_view a, const SpaceOptions& o) {
        const OptionReader r("ofa", o, {"width", "resolution"});
        ofa::OfaOptions opt;
        opt.batch = r.integer("batch", 1);
        const auto w = r.text("width", "1.2");
        if (w == "1.0")
            opt.width = ofa::Width::w1_0;
        else if (w != "1.2")
            r.bad("width", "1.2 or 1.0");
        if (r.has("resolution")) opt.resolution = r.integer("resolution", 0);
        return ofa::build_graph(a, opt);
    };
    s.sample = [](Rng& rng) { return ofa::to_string(ofa::sample(rng)); };
    s.size = ofa::size;
    return s;
}
inline SpaceInfo vit_space() {
    SpaceInfo s;
    s.name = "vit";
    s.summary = "vision transformer for CIFAR-100 (32x32, 100 classes): patch, width, readout, 4-12 layers";
    s.onnx_opset = vit::onnx_opset;
    s.canonical = [](std::string_view a) { return vit::to_string(vit::parse(a)); };
    s.build_graph = [](std::string_view a, const SpaceOptions& o) {
        const OptionReader r("vit", o, {"layer_norm"});
        vit::VitOptions opt;
        opt.batch = r.integer("batch", 1);
        const auto ln = r.text("layer_norm", "fused");
        if (ln == "decomposed")
            opt.decompose_layer_norm = true;
        else if (ln != "fused")
            r.bad("layer_norm", "fused or decomposed");
        return vit::build_graph(a, opt);
    };
    s.sample = [](Rng& rng) { return vit::to_string(vit::sample(rng)); };
    s.size = vit::size;
    return s;
}
inline SpaceInfo kws_space() {
    SpaceInfo s;
    s.name = "kws";
    s.summary = "keyword spotting DS-CNN (49x10 MFCC, 12 classes): stem, 2-6 depthwise-separable blocks";
    s.onnx_opset = kws::onnx_opset;
    s.canonical = [](std::string_view a) { return kws::to_string(kws::parse(a)); };
    s.build_graph = [](std::string_view a, const SpaceOptions& o) {
        const OptionReader r("kws", o, {});
        return kws::build_graph(a, kws::KwsOptions{r.integer("batch", 1)});
    };
    s.sample = [](Rng& rng) { return kws::to_string(kws::sample(rng)); };
    s.size = kws::size;
    return s;
}
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
inline std::optional<SpaceArch> split_qualified(std::string_view key) {
    if (!key.empty() && key.front() == '|') return SpaceArch{&find_space("nb201"), key};
    const auto colon = key.find(':');
    if (colon == std::string_view::npos) return std::nullopt;
    const auto* space = find_space_or_null(key.substr(0, colon));
    if (!space) return std::nullopt;
    return SpaceArch{space, key.substr(colon + 1)};
}

}  // namespace dnncost::spaces
