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
    const Value* find(std::string_view key) const {
        const Value* found = nullptr;
        for (const auto& [k, v] : members)
            if (k == key) found = &v;
        return found;
    }

    // Building values to write (the only way the measuring layer writes JSON).
    static Value of(double x) {
        Value v;
        v.kind = Kind::number;
        v.number = x;
        return v;
    }
    static Value of(std::string s) {
        Value v;
        v.kind = Kind::string;
        v.string = std::move(s);
        return v;
    }
    static Value of(const char* s) { return of(std::string(s)); }
    static Value of(bool b) {
        Value v;
        v.kind = Kind::boolean;
        v.boolean = b;
        return v;
    }
    static Value array() {
        Value v;
        v.kind = Kind::array;
        return v;
    }
    static Value object() {
        Value v;
        v.kind = Kind::object;
        return v;
    }
    /// Set member `key` of an object (replacing a member of that name); returns *this.
    Value& set(std::string_view key, Value value) {
        for (auto& [k, v] : members)
            if (k == key) {
                v = std::move(value);
                return *this;
            }
        members.emplace_back(std::string(key), std::move(value));
        return *this;
    }
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
    Value document() {
        Value v = value(0);
        skip_space();
        if (m_pos != m_text.size()) fail("unexpected text after the JSON value");
        return v;
    }

private:
    static constexpr int max_depth = 64;
    [[noreturn]] void fail(std::string_view what) const { raise<parse_error>(what, " at offset ", m_pos); }
    void skip_space() {
        while (m_pos < m_text.size() &&
               (m_text[m_pos] == ' ' || m_text[m_pos] == '\t' || m_text[m_pos] == '\n' || m_text[m_pos] == '\r'))
            ++m_pos;
    }
    bool consume(std::string_view word) {
        if (m_text.substr(m_pos, word.size()) != word) return false;
        m_pos += word.size();
        return true;
    }
    Value value(int depth) {
        if (depth > max_depth) fail("JSON nested deeper than 64 levels");
        skip_space();
        if (m_pos >= m_text.size()) fail("unexpected end of JSON");
        Value v;
        const char c = m_text[m_pos];
        if (c == '{') {
            v.kind = Value::Kind::object;
            ++m_pos;
            skip_space();
            if (m_pos < m_text.size() && m_text[m_pos] == '}') {
                ++m_pos;
                return v;
            }
            for (;;) {
                skip_space();
                if (m_pos >= m_text.size() || m_text[m_pos] != '"') fail("expected a quoted member name");
                std::string key = string_literal();
                skip_space();
                if (m_pos >= m_text.size() || m_text[m_pos] != ':') fail("expected ':' after a member name");
                ++m_pos;
                v.members.emplace_back(std::move(key), value(depth + 1));
                skip_space();
                if (m_pos < m_text.size() && m_text[m_pos] == ',') {
                    ++m_pos;
                    continue;
                }
                if (m_pos < m_text.size() && m_text[m_pos] == '}') {
                    ++m_pos;
                    return v;
                }
                fail("expected ',' or '}' in an object");
            }
        }
        if (c == '[') {
            v.kind = Value::Kind::array;
            ++m_pos;
            skip_space();
            if (m_pos < m_text.size() && m_text[m_pos] == ']') {
                ++m_pos;
                return v;
            }
            for (;;) {
                v.items.push_back(value(depth + 1));
                skip_space();
                if (m_pos < m_text.size() && m_text[m_pos] == ',') {
                    ++m_pos;
                    continue;
                }
                if (m_pos < m_text.size() && m_text[m_pos] == ']') {
                    ++m_pos;
                    return v;
                }
                fail("expected ',' or ']' in an array");
            }
        }
        if (c == '"') {
            v.kind = Value::Kind::string;
            v.string = string_literal();
            return v;
        }
        if (consume("true")) {
            v.kind = Value::Kind::boolean;
            v.boolean = true;
            return v;
        }
        if (consume("false")) {
            v.kind = Value::Kind::boolean;
            return v;
        }
        if (consume("null")) return v;
        v.kind = Value::Kind::number;
        if (consume("NaN")) {
            v.number = std::numeric_limits<double>::quiet_NaN();
            return v;
        }
        if (consume("Infinity")) {
            v.number = std::numeric_limits<double>::infinity();
            return v;
        }
        if (consume("-Infinity")) {
            v.number = -std::numeric_limits<double>::infinity();
            return v;
        }
        v.number = number();
        return v;
    }
    double number() {
        // JSON grammar: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
        const std::size_t start = m_pos;
        auto digits = [&] {
            const std::size_t from = m_pos;
            while (m_pos < m_text.size() && m_text[m_pos] >= '0' && m_text[m_pos] <= '9') ++m_pos;
            return m_pos - from;
        };
        if (m_pos < m_text.size() && m_text[m_pos] == '-') ++m_pos;
        if (m_pos < m_text.size() && m_text[m_pos] == '0')
            ++m_pos;
        else if (digits() == 0)
            fail("not a JSON value");
        if (m_pos < m_text.size() && m_text[m_pos] == '.') {
            ++m_pos;
            if (digits() == 0) fail("expected digits after '.'");
        }
        if (m_pos < m_text.size() && (m_text[m_pos] == 'e' || m_text[m_pos] == 'E')) {
            ++m_pos;
            if (m_pos < m_text.size() && (m_text[m_pos] == '+' || m_text[m_pos] == '-')) ++m_pos;
            if (digits() == 0) fail("expected digits in the exponent");
        }
        double v = 0.0;
        const auto [end, ec] = std::from_chars(m_text.data() + start, m_text.data() + m_pos, v);
        if (ec == std::errc::result_out_of_range) {  // beyond double: keep the sign, report as infinite
            return m_text[start] == '-' ? -std::numeric_limits<double>::infinity()
                                        : std::numeric_limits<double>::infinity();
        }
        if (ec != std::errc{} || end != m_text.data() + m_pos) fail("malformed number");
        return v;
    }
    unsigned hex4() {
        if (m_pos + 4 > m_text.size()) fail("truncated \\u escape");
        unsigned cp = 0;
        for (int i = 0; i < 4; ++i) {
            const char h = m_text[m_pos++];
            cp <<= 4;
            if (h >= '0' && h <= '9')
                cp |= static_cast<unsigned>(h - '0');
            else if (h >= 'a' && h <= 'f')
                cp |= static_cast<unsigned>(h - 'a' + 10);
            else if (h >= 'A' && h <= 'F')
                cp |= static_cast<unsigned>(h - 'A' + 10);
            else
                fail("bad hex digit in a \\u escape");
        }
        return cp;
    }
    static void append_utf8(std::string& out, unsigned cp) {
        if (cp < 0x80) {
            out += static_cast<char>(cp);
        } else if (cp < 0x800) {
            out += static_cast<char>(0xC0 | (cp >> 6));
            out += static_cast<char>(0x80 | (cp & 0x3F));
        } else if (cp < 0x10000) {
            out += static_cast<char>(0xE0 | (cp >> 12));
            out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
            out += static_cast<char>(0x80 | (cp & 0x3F));
        } else {
            out += static_cast<char>(0xF0 | (cp >> 18));
            out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
            out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
            out += static_cast<char>(0x80 | (cp & 0x3F));
        }
    }
    std::string string_literal() {
        ++m_pos;  // opening quote
        std::string out;
        for (;;) {
            if (m_pos >= m_text.size()) fail("unterminated string");
            const char c = m_text[m_pos++];
            if (c == '"') return out;
            if (static_cast<unsigned char>(c) < 0x20) fail("control character inside a string");
            if (c != '\\') {
                out += c;
                continue;
            }
            if (m_pos >= m_text.size()) fail("unterminated escape");
            const char e = m_text[m_pos++];
            switch (e) {
                case '"':
                    out += '"';
                    break;
                case '\\':
                    out += '\\';
                    break;
                case '/':
                    out += '/';
                    break;
                case 'b':
                    out += '\b';
                    break;
                case 'f':
                    out += '\f';
                    break;
                case 'n':
                    out += '\n';
                    break;
                case 'r':
                    out += '\r';
                    break;
                case 't':
                    out += '\t';
                    break;
                case 'u': {
                    unsigned cp = hex4();
                    if (cp >= 0xD800 && cp < 0xDC00 && m_text.substr(m_pos, 2) == "\\u") {
                        m_pos += 2;
                        const unsigned lo = hex4();
                        if (lo < 0xDC00 || lo >= 0xE000) fail("unpaired surrogate in a \\u escape");
                        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                    }
                    append_utf8(out, cp);
                    break;
                }
                default:
                    fail("unknown escape in a string");
            }
        }
    }

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
