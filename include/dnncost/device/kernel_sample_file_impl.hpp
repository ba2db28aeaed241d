#pragma once
/// @file kernel_sample_file_impl.hpp
/// The definitions of kernel_sample_file.hpp: compiled once into dnncost::compiled in compiled mode
/// (core/config.hpp), included by kernel_sample_file.hpp in header-only mode.
#include <dnncost/device/kernel_sample_file.hpp>

DNNCOST_FUNC auto dnncost::device::write_kernel_sample_file(const std::filesystem::path& path,
                                                            const KernelSampleFile& f) -> void {
    if (f.keys.size() != f.samples.size())
        raise<config_error>("kernel samples: ", f.keys.size(), " keys for ", f.samples.size(), " samples");
    auto doc = measure::json::Value::object();
    doc.set("format", measure::json::Value::of(std::string(kernel_sample_format)));
    doc.set("device", measure::json::Value::of(f.device));
    doc.set("rules_text", measure::json::Value::of(f.rules.to_text()));
    doc.set("run_overhead_ms", measure::json::Value::of(f.run_overhead_ms));
    auto names = measure::json::Value::array();
    for (const auto& n : kernel_feature_names()) names.push(measure::json::Value::of(n));
    doc.set("feature_names", std::move(names));
    auto samples = measure::json::Value::array();
    for (std::size_t i = 0; i < f.samples.size(); ++i) {
        const auto& s = f.samples[i];
        auto row = measure::json::Value::object();
        row.set("kind", measure::json::Value::of(s.kind));
        row.set("key", measure::json::Value::of(f.keys[i]));
        row.set("latency_ms", measure::json::Value::of(s.latency_ms));
        if (s.in_context) row.set("in_context", measure::json::Value::of(true));
        auto x = measure::json::Value::array();
        for (const double v : s.features) x.push(measure::json::Value::of(v));
        row.set("features", std::move(x));
        samples.push(std::move(row));
    }
    doc.set("samples", std::move(samples));
    io::write_file_atomic(path, measure::json::dump_lines(doc));
}

DNNCOST_FUNC auto dnncost::device::read_kernel_sample_file(const std::filesystem::path& path) -> KernelSampleFile {
    const std::string where = path.string();
    const auto doc = measure::json::parse_object(io::read_file(path), where);
    if (doc.is_null()) raise<parse_error>(where, ": empty file");
    const auto string_of = [&](const measure::json::Value& v, std::string_view key, const std::string& what) {
        const auto* m = v.find(key);
        if (!m || !m->is_string()) raise<parse_error>(what, ": no string '", key, "'");
        return m->string;
    };
    const auto number_of = [&](const measure::json::Value& v, std::string_view key, const std::string& what) {
        const auto* m = v.find(key);
        if (!m || !m->is_number() || !std::isfinite(m->number))
            raise<parse_error>(what, ": no finite number '", key, "'");
        return m->number;
    };
    if (string_of(doc, "format", where) != kernel_sample_format)
        raise<parse_error>(where, ": not a kernel-samples file of format '", kernel_sample_format, "'");
    KernelSampleFile f;
    f.device = string_of(doc, "device", where);
    try {
        f.rules = FusionRules::parse(string_of(doc, "rules_text", where), where + " (rules_text)");
    } catch (const config_error& e) {
        raise<parse_error>(e.what());
    }
    f.run_overhead_ms = number_of(doc, "run_overhead_ms", where);
    const auto& expected = kernel_feature_names();
    const auto* names = doc.find("feature_names");
    bool same = names && names->is_array() && names->items.size() == expected.size();
    for (std::size_t j = 0; same && j < expected.size(); ++j)
        same = names->items[j].is_string() && names->items[j].string == expected[j];
    if (!same) raise<parse_error>(where, ": its kernel features are not this build's (measure the kernels again)");
    const auto* samples = doc.find("samples");
    if (!samples || !samples->is_array()) raise<parse_error>(where, ": no 'samples' array");
    for (std::size_t i = 0; i < samples->items.size(); ++i) {
        const auto& row = samples->items[i];
        const std::string what = where + ": sample " + std::to_string(i + 1);
        if (!row.is_object()) raise<parse_error>(what, ": not an object");
        KernelMeasurement m;
        m.kind = string_of(row, "kind", what);
        m.latency_ms = number_of(row, "latency_ms", what);
        // checked here, where the file and sample can be named, rather than by the fit
        if (!(m.latency_ms > 0 && m.latency_ms < 1e9))
            raise<parse_error>(what, ": latency_ms ", m.latency_ms, " is not a time in (0, 10^9) ms");
        if (const auto* c = row.find("in_context")) {
            if (c->kind != measure::json::Value::Kind::boolean)
                raise<parse_error>(what, ": 'in_context' is not true or false");
            m.in_context = c->boolean;
        }
        const auto* x = row.find("features");
        if (!x || !x->is_array() || x->items.size() != expected.size())
            raise<parse_error>(what, ": not ", expected.size(), " features");
        for (const auto& v : x->items) {
            if (!v.is_number() || !std::isfinite(v.number))
                raise<parse_error>(what, ": a feature that is not a finite number");
            m.features.push_back(v.number);
        }
        f.keys.push_back(string_of(row, "key", what));
        if (m.in_context) m.network = in_context_network(f.keys.back());
        f.samples.push_back(std::move(m));
    }
    return f;
}
