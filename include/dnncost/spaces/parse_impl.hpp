#pragma once
/// @file parse_impl.hpp
/// The definitions of parse.hpp: compiled once into dnncost::compiled in compiled mode
/// (core/config.hpp), included by parse.hpp in header-only mode.
#include <dnncost/spaces/parse.hpp>

DNNCOST_FUNC auto dnncost::spaces::split(std::string_view s, char sep) -> std::vector<std::string_view> {
    std::vector<std::string_view> out;
    std::size_t start = 0;
    for (;;) {
        const auto pos = s.find(sep, start);
        out.push_back(s.substr(start, pos == std::string_view::npos ? std::string_view::npos : pos - start));
        if (pos == std::string_view::npos) return out;
        start = pos + 1;
    }
}

DNNCOST_FUNC auto dnncost::spaces::parse_small_uint(std::string_view s) -> std::int64_t {
    if (s.empty() || s.size() > 9 || (s.size() > 1 && s[0] == '0')) return -1;
    std::int64_t v = 0;
    for (char c : s) {
        if (c < '0' || c > '9') return -1;
        v = v * 10 + (c - '0');
    }
    return v;
}
