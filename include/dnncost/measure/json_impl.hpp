#pragma once
/// @file json_impl.hpp
/// The definitions of json.hpp: compiled once into dnncost::compiled in compiled mode
/// (core/config.hpp), included by json.hpp in header-only mode.
#include <dnncost/measure/json.hpp>

DNNCOST_FUNC auto dnncost::measure::json::quote(std::string_view s) -> std::string {
    std::string out = "\"";
    for (const char c : s) {
        switch (c) {
            case '"':
                out += "\\\"";
                break;
            case '\\':
                out += "\\\\";
                break;
            case '\n':
                out += "\\n";
                break;
            case '\r':
                out += "\\r";
                break;
            case '\t':
                out += "\\t";
                break;
            default:
                if (static_cast<unsigned char>(c) < 0x20) {
                    static constexpr char hex[] = "0123456789abcdef";
                    out += "\\u00";
                    out += hex[(c >> 4) & 0xF];
                    out += hex[c & 0xF];
                } else {
                    out += c;
                }
        }
    }
    return out + "\"";
}

DNNCOST_FUNC auto dnncost::measure::json::dump(const Value& v) -> std::string {
    switch (v.kind) {
        case Value::Kind::null:
            return "null";
        case Value::Kind::boolean:
            return v.boolean ? "true" : "false";
        case Value::Kind::number:
            return number(v.number);
        case Value::Kind::string:
            return quote(v.string);
        case Value::Kind::array: {
            std::string out = "[";
            for (std::size_t i = 0; i < v.items.size(); ++i) {
                if (i) out += ',';
                out += dump(v.items[i]);
            }
            return out + "]";
        }
        case Value::Kind::object: {
            std::string out = "{";
            for (std::size_t i = 0; i < v.members.size(); ++i) {
                if (i) out += ',';
                out += quote(v.members[i].first);
                out += ':';
                out += dump(v.members[i].second);
            }
            return out + "}";
        }
    }
    return "null";
}

DNNCOST_FUNC auto dnncost::measure::json::dump_lines(const Value& v) -> std::string {
    if (!v.is_object() || v.members.empty()) return dump(v) + "\n";
    std::string out = "{\n";
    for (std::size_t i = 0; i < v.members.size(); ++i) {
        out += "  " + quote(v.members[i].first) + ": " + dump(v.members[i].second);
        out += i + 1 < v.members.size() ? ",\n" : "\n";
    }
    return out + "}\n";
}

DNNCOST_FUNC auto dnncost::measure::json::parse_object(std::string_view text, std::string_view what) -> Value {
    if (text.empty()) return {};
    Value v;
    try {
        v = parse(text);
    } catch (const parse_error& e) {
        raise<parse_error>(what, ": not JSON: ", e.what());
    }
    if (!v.is_object()) raise<parse_error>(what, ": not a JSON object");
    return v;
}
