#pragma once
/// @file json.hpp
/// A small JSON reader and writer for the runner protocol and the results store's sidecar, so
/// that the measuring layer needs no JSON library. The reader is strict about structure (one
/// value, nothing after it, a depth limit) and lenient in one place: the tokens NaN, Infinity
/// and -Infinity are read as numbers, because common JSON writers emit them for non-finite
/// floats and a runner that does so must be reported as "non-finite latency", not as garbage.
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include <dnncost/core/config.hpp>
#include <dnncost/core/error.hpp>

namespace dnncost::measure::json {

/// A parsed JSON value. Object members keep their order; a repeated key keeps its last value.
struct Value {
    enum class Kind { null, boolean, number, string, array, object };
    Kind kind = Kind::null;
    bool boolean = false;
    double number = 0.0;
    std::string string;
    std::vector<Value> items;
    std::vector<std::pair<std::string, Value>> members;

    bool is_object() const { return kind == Kind::object; }
    bool is_number() const { return kind == Kind::number; }
    bool is_string() const { return kind == Kind::string; }
    bool is_array() const { return kind == Kind::array; }
    bool is_null() const { return kind == Kind::null; }
    /// The member `key` of an object, or nullptr (also for a non-object).
    const Value* find(std::string_view key) const;

    // Building values to write (the only way the measuring layer writes JSON).
    static Value of(double x);
    static Value of(std::string s);
    static Value of(const char* s) { return of(std::string(s)); }
    static Value of(bool b);
    static Value array();
    static Value object();
    /// Set member `key` of an object (replacing a member of that name); returns *this.
    Value& set(std::string_view key, Value value);
    /// Append to an array; returns *this.
    Value& push(Value value) {
        items.push_back(std::move(value));
        return *this;
    }
};

namespace detail {
class Reader {
public:
    explicit Reader(std::string_view text) : m_text(text) {}
    Value document();

private:
    static constexpr int max_depth = 64;
    [[noreturn]] void fail(std::string_view what) const { raise<parse_error>(what, " at offset ", m_pos); }
    void skip_space();
    bool consume(std::string_view word);
    Value value(int depth);
    double number();
    unsigned hex4();
    static void append_utf8(std::string& out, unsigned cp);
    std::string string_literal();

    std::string_view m_text;
    std::size_t m_pos = 0;
};
}  // namespace detail

/// Parse one JSON document. @throws parse_error with the byte offset of the problem
inline Value parse(std::string_view text) { return detail::Reader(text).document(); }

/// `s` as a JSON string literal (quoted, escaped; bytes >= 0x80 are passed through).
DNNCOST_FUNC std::string quote(std::string_view s);

/// A number as JSON: shortest round-trip form; non-finite values become null (JSON has none).
inline std::string number(double v) {
    if (!std::isfinite(v)) return "null";
    char buf[64];
    const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
    return ec == std::errc{} ? std::string(buf, end) : "null";
}

/// Serialise a value compactly (one line).
DNNCOST_FUNC std::string dump(const Value& v);

/// Serialise an object with one top-level member per line (members compact), for files a
/// person may read; any other value as dump().
DNNCOST_FUNC std::string dump_lines(const Value& v);

/// Parse `text` that must be a JSON object; empty text gives null.
/// @throws parse_error naming `what` when it is not
DNNCOST_FUNC Value parse_object(std::string_view text, std::string_view what);

}  // namespace dnncost::measure::json

#if !defined(DNNCOST_COMPILED)
#include <dnncost/measure/json_impl.hpp>
#endif
