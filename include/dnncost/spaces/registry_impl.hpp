#pragma once
/// @file registry_impl.hpp
/// The definitions of registry.hpp: compiled once into dnncost::compiled in compiled mode
/// (core/config.hpp), included by registry.hpp in header-only mode.
#include <dnncost/spaces/registry.hpp>

DNNCOST_FUNC auto dnncost::spaces::space_options(std::string_view text) -> SpaceOptions {
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

DNNCOST_FUNC auto dnncost::spaces::detail::nb201_space() -> SpaceInfo {
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

DNNCOST_FUNC auto dnncost::spaces::detail::fbnet_space() -> SpaceInfo {
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

DNNCOST_FUNC auto dnncost::spaces::detail::ofa_space() -> SpaceInfo {
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

DNNCOST_FUNC auto dnncost::spaces::detail::vit_space() -> SpaceInfo {
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

DNNCOST_FUNC auto dnncost::spaces::detail::kws_space() -> SpaceInfo {
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

DNNCOST_FUNC auto dnncost::spaces::split_qualified(std::string_view key) -> std::optional<SpaceArch> {
    if (!key.empty() && key.front() == '|') return SpaceArch{&find_space("nb201"), key};
    const auto colon = key.find(':');
    if (colon == std::string_view::npos) return std::nullopt;
    const auto* space = find_space_or_null(key.substr(0, colon));
    if (!space) return std::nullopt;
    return SpaceArch{space, key.substr(colon + 1)};
}
