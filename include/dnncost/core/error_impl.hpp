#pragma once
/// @file error_impl.hpp
/// The definitions of printable() and of the error messages' formatting (error.hpp): compiled
/// once into dnncost::compiled (src/io.cpp), or included by error.hpp in header-only mode.
#include <cstddef>
#include <sstream>
#include <string>
#include <string_view>

#include <dnncost/core/error.hpp>

namespace dnncost {

DNNCOST_FUNC std::string printable(std::string_view text) {
    static constexpr char hex[] = "0123456789abcdef";
    std::string out;
    out.reserve(text.size());
    auto escape = [&](unsigned char b) {
        out += "\\x";
        out += hex[b >> 4];
        out += hex[b & 15];
    };
    const auto* p = reinterpret_cast<const unsigned char*>(text.data());
    const std::size_t n = text.size();
    for (std::size_t i = 0; i < n;) {
        const unsigned char b = p[i];
        if (b < 0x20 || b == 0x7f) {
            escape(b);
            ++i;
            continue;
        }
        if (b < 0x80) {
            out += static_cast<char>(b);
            ++i;
            continue;
        }
        // a well-formed UTF-8 sequence (no overlongs, surrogates or code points above U+10FFFF)
        std::size_t len = b >= 0xc2 && b <= 0xdf ? 2 : b >= 0xe0 && b <= 0xef ? 3 : b >= 0xf0 && b <= 0xf4 ? 4 : 0;
        bool ok = len != 0 && i + len <= n;
        for (std::size_t k = 1; ok && k < len; ++k) ok = (p[i + k] & 0xc0) == 0x80;
        if (ok && len == 3) ok = !(b == 0xe0 && p[i + 1] < 0xa0) && !(b == 0xed && p[i + 1] >= 0xa0);
        if (ok && len == 4) ok = !(b == 0xf0 && p[i + 1] < 0x90) && !(b == 0xf4 && p[i + 1] >= 0x90);
        if (!ok) {
            escape(b);
            ++i;
            continue;
        }
        out.append(text.substr(i, len));
        i += len;
    }
    return out;
}

namespace detail {
DNNCOST_FUNC std::string format_message(const MessageArg* args, std::size_t count) {
    std::ostringstream os;
    for (std::size_t i = 0; i < count; ++i) {
        const auto& a = args[i];
        switch (a.kind) {
            case MessageArg::Kind::text: os << a.value.text; break;
            case MessageArg::Kind::character: os << a.value.character; break;
            case MessageArg::Kind::signed_integer: os << a.value.signed_integer; break;
            case MessageArg::Kind::unsigned_integer: os << a.value.unsigned_integer; break;
            case MessageArg::Kind::floating: os << a.value.floating; break;
            case MessageArg::Kind::manipulator: os << a.value.manipulator; break;
            case MessageArg::Kind::other: a.value.other.print(os, a.value.other.object); break;
        }
    }
    return os.str();
}
}  // namespace detail

}  // namespace dnncost
