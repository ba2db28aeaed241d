#pragma once
/// @file parse.hpp
/// Reading architecture strings: splitting into tokens and strict integer fields, with errors
/// that quote the whole string and name the bad token.
#include <cstdint>
#include <iterator>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <dnncost/core/config.hpp>
#include <dnncost/core/error.hpp>

namespace dnncost::spaces {

/// Splits on `sep`, keeping empty pieces (so "a--b" shows its empty token to the caller).
DNNCOST_FUNC std::vector<std::string_view> split(std::string_view s, char sep);

/// A decimal integer of at most 9 digits with no sign, spaces or leading zeros; -1 otherwise.
DNNCOST_FUNC std::int64_t parse_small_uint(std::string_view s);

/// Reports a bad architecture string of space `space`.
class ArchText {
public:
    ArchText(std::string_view space, std::string_view text) : m_space(space), m_text(text) {}
    [[noreturn]] void fail(const std::string& why) const {
        raise<parse_error>(m_space, ": bad architecture string '", m_text, "': ", why);
    }
    /// "token 3 'k7_e1' <why>"
    [[noreturn]] void fail_token(std::size_t index, std::string_view token, const std::string& why) const {
        fail("token " + std::to_string(index) + " '" + std::string(token) + "' " + why);
    }
    std::string_view text() const { return m_text; }

private:
    std::string_view m_space;
    std::string_view m_text;
};

/// "3, 5 or 7" for error messages.
template <class Range>
std::string list_choices(const Range& r) {
    std::string s;
    std::size_t i = 0, n = static_cast<std::size_t>(std::distance(std::begin(r), std::end(r)));
    for (const auto& v : r) {
        if (i) s += i + 1 == n ? " or " : ", ";
        if constexpr (std::is_convertible_v<decltype(v), std::string_view>)
            s += std::string_view(v);
        else
            s += std::to_string(v);
        ++i;
    }
    return s;
}

}  // namespace dnncost::spaces

#if !defined(DNNCOST_COMPILED)
#include <dnncost/spaces/parse_impl.hpp>
#endif
