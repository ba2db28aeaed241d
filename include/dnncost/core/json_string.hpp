#pragma once
/// @file json_string.hpp
/// A string as a JSON string literal, for the layers below measure/json.hpp that write small
/// JSON reports (rule sets, kernel graphs, discovery evidence).
#include <string>
#include <string_view>

namespace dnncost {

/// `s` quoted and escaped as a JSON string: quotes and backslashes escaped, control characters
/// as \u00XX; other bytes (UTF-8 included) as they are.
inline std::string json_quote(std::string_view s) {
    static constexpr char hex[] = "0123456789abcdef";
    std::string o = "\"";
    for (const char c : s) {
        const auto u = static_cast<unsigned char>(c);
        if (c == '"' || c == '\\') {
            o += '\\';
            o += c;
        } else if (u < 0x20) {
            o += "\\u00";
            o += hex[u >> 4];
            o += hex[u & 0xf];
        } else {
            o += c;
        }
    }
    return o + '"';
}

}  // namespace dnncost
