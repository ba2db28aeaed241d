#pragma once
/// @file sidecar_impl.hpp
/// The definitions of sidecar.hpp: compiled once into dnncost::compiled in compiled mode
/// (core/config.hpp), included by sidecar.hpp in header-only mode.
#include <dnncost/measure/sidecar.hpp>

DNNCOST_FUNC auto dnncost::measure::to_json(const StoreInfo& info) -> std::string {
    auto v = json::Value::object();
    v.set("format", json::Value::of(sidecar_format));
    v.set("device", json::Value::of(info.device));
    auto runners = json::Value::array();
    for (const auto& r : info.runners) runners.push(json::Value::of(r));
    v.set("runners", std::move(runners));
    // both were serialised by dnncost from parsed JSON; an unreadable one is kept as text
    const auto embedded = [](const std::string& text) {
        if (text.empty()) return json::Value{};
        try {
            return json::parse(text);
        } catch (const parse_error&) {
            return json::Value::of(text);
        }
    };
    v.set("runner_device", embedded(info.runner_device));
    v.set("settings", embedded(info.settings));
    if (info.host) v.set("host", to_json(*info.host));
    if (!info.references.empty()) {
        auto refs = json::Value::array();
        for (const auto& r : info.references) refs.push(to_json(r));
        v.set("references", std::move(refs));
    }
    return json::dump_lines(v);
}

DNNCOST_FUNC auto dnncost::measure::read_store_info(const std::filesystem::path& path) -> std::optional<StoreInfo> {
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) return std::nullopt;
    json::Value v;
    try {
        v = json::parse(io::read_file(path, 1 << 20));
    } catch (const parse_error& e) {
        raise<parse_error>(path.string(), ": not a results sidecar: ", e.what());
    }
    const auto* device = v.find("device");
    const auto* runners = v.find("runners");
    if (!device || !device->is_string() || !runners || !runners->is_array())
        raise<parse_error>(path.string(), ": not a results sidecar (needs \"device\" and \"runners\")");
    StoreInfo info;
    info.device = device->string;
    for (const auto& r : runners->items)
        if (r.is_string()) info.runners.push_back(r.string);
    if (const auto* d = v.find("runner_device"); d && !d->is_null()) info.runner_device = json::dump(*d);
    if (const auto* s = v.find("settings"); s && !s->is_null()) info.settings = json::dump(*s);
    if (const auto* h = v.find("host"); h && h->is_object()) info.host = host_from_json(*h);
    if (const auto* r = v.find("references"); r && r->is_array())
        for (const auto& x : r->items)
            if (x.is_object()) info.references.push_back(reference_from_json(x));
    return info;
}
