#pragma once
/// @file kernel_profiles_impl.hpp
/// The definitions of kernel_profiles.hpp: compiled once into dnncost::compiled in compiled mode
/// (core/config.hpp), included by kernel_profiles.hpp in header-only mode.
#include <sstream>

#include <dnncost/io/file.hpp>
#include <dnncost/measure/json.hpp>
#include <dnncost/measure/kernel_profiles.hpp>

DNNCOST_FUNC auto dnncost::measure::read_kernel_profiles(const std::filesystem::path& path)
    -> std::vector<KernelProfile> {
    std::vector<KernelProfile> out;
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) return out;
    std::istringstream in(io::read_file(path));
    std::string line;
    for (std::size_t n = 1; std::getline(in, line); ++n) {
        if (line.empty()) continue;
        const auto where = [&] { return path.string() + ":" + std::to_string(n); };
        json::Value v;
        try {
            v = json::parse(line);
        } catch (const parse_error& e) {
            raise<parse_error>(where(), ": not a JSON line: ", e.what());
        }
        const auto* key = v.find("key");
        const auto* id = v.find("id");
        if (!v.is_object() || !key || !key->is_string() || !id || !id->is_string())
            raise<parse_error>(where(), ": a kernel profile needs \"key\" and \"id\" strings");
        // the kernel list is checked as a runner's answer is
        Answer a;
        std::string problem;
        if (!detail::optional_kernels(v, a, problem)) raise<parse_error>(where(), ": ", problem);
        KernelProfile p{key->string, id->string, std::move(a.kernels), {}};
        if (const auto* nodes = v.find("nodes")) {
            const auto strings = [&](const json::Value& n, std::string_view field, std::vector<std::string>& to) {
                const auto* list = n.find(field);
                if (!list || !list->is_array()) return false;
                for (const auto& x : list->items) {
                    if (!x.is_string()) return false;
                    to.push_back(x.string);
                }
                return true;
            };
            if (!nodes->is_array()) raise<parse_error>(where(), ": \"nodes\" is not an array");
            for (std::size_t i = 0; i < nodes->items.size(); ++i) {
                const auto& n = nodes->items[i];
                const auto* name = n.is_object() ? n.find("name") : nullptr;
                const auto* op = n.is_object() ? n.find("op") : nullptr;
                RuntimeNode r;
                if (!name || !name->is_string() || !op || !op->is_string() || !strings(n, "inputs", r.inputs) ||
                    !strings(n, "outputs", r.outputs))
                    raise<parse_error>(where(), ": node ", i, " needs \"name\", \"op\" and \"inputs\" and \"outputs\" lists of strings");
                r.name = name->string;
                r.op = op->string;
                p.nodes.push_back(std::move(r));
            }
        }
        out.push_back(std::move(p));
    }
    return out;
}

DNNCOST_FUNC void dnncost::measure::merge_kernel_profiles(const std::filesystem::path& path,
                                                          const std::vector<KernelProfile>& profiles) {
    auto all = read_kernel_profiles(path);
    for (const auto& p : profiles) {
        bool replaced = false;
        for (auto& q : all)
            if (q.key == p.key) {
                q = p;
                replaced = true;
            }
        if (!replaced) all.push_back(p);
    }
    std::string text;
    for (const auto& p : all) {
        auto v = json::Value::object();
        v.set("key", json::Value::of(p.key));
        v.set("id", json::Value::of(p.id));
        auto ks = json::Value::array();
        for (const auto& k : p.kernels) {
            auto o = json::Value::object();
            o.set("name", json::Value::of(k.name));
            o.set("op", json::Value::of(k.op));
            o.set("ms", json::Value::of(k.ms));
            ks.push(std::move(o));
        }
        v.set("kernels", std::move(ks));
        if (!p.nodes.empty()) {
            const auto strings = [](const std::vector<std::string>& from) {
                auto a = json::Value::array();
                for (const auto& x : from) a.push(json::Value::of(x));
                return a;
            };
            auto ns = json::Value::array();
            for (const auto& n : p.nodes) {
                auto o = json::Value::object();
                o.set("name", json::Value::of(n.name));
                o.set("op", json::Value::of(n.op));
                o.set("inputs", strings(n.inputs));
                o.set("outputs", strings(n.outputs));
                ns.push(std::move(o));
            }
            v.set("nodes", std::move(ns));
        }
        text += json::dump(v) + "\n";
    }
    io::write_file_atomic(path, text);
}
