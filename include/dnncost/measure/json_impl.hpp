#pragma once
/// @file json_impl.hpp
/// The definitions of json.hpp: compiled once into dnncost::compiled in compiled mode
/// (core/config.hpp), included by json.hpp in header-only mode.
#include <dnncost/measure/json.hpp>

DNNCOST_FUNC std::string dnncost::measure::json::quote(std::string_view s) {
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

DNNCOST_FUNC std::string dnncost::measure::json::dump(const Value& v) {
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

DNNCOST_FUNC std::string dnncost::measure::json::dump_lines(const Value& v) {
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

namespace dnncost::measure::json {

DNNCOST_FUNC auto Value::find(std::string_view key) const -> const Value* {
    const Value* found = nullptr;
    for (const auto& [k, v] : members)
        if (k == key) found = &v;
    return found;
}

DNNCOST_FUNC auto Value::of(double x) -> Value {
    Value v;
    v.kind = Kind::number;
    v.number = x;
    return v;
}

DNNCOST_FUNC auto Value::of(std::string s) -> Value {
    Value v;
    v.kind = Kind::string;
    v.string = std::move(s);
    return v;
}

DNNCOST_FUNC auto Value::of(bool b) -> Value {
    Value v;
    v.kind = Kind::boolean;
    v.boolean = b;
    return v;
}

DNNCOST_FUNC auto Value::array() -> Value {
    Value v;
    v.kind = Kind::array;
    return v;
}

DNNCOST_FUNC auto Value::object() -> Value {
    Value v;
    v.kind = Kind::object;
    return v;
}

DNNCOST_FUNC auto Value::set(std::string_view key, Value value) -> Value& {
    for (auto& [k, v] : members)
        if (k == key) {
            v = std::move(value);
            return *this;
        }
    members.emplace_back(std::string(key), std::move(value));
    return *this;
}

}  // namespace dnncost::measure::json

namespace dnncost::measure::json::detail {

DNNCOST_FUNC auto Reader::document() -> Value {
    Value v = value(0);
    skip_space();
    if (m_pos != m_text.size()) fail("unexpected text after the JSON value");
    return v;
}

DNNCOST_FUNC void Reader::skip_space() {
    while (m_pos < m_text.size() &&
           (m_text[m_pos] == ' ' || m_text[m_pos] == '\t' || m_text[m_pos] == '\n' || m_text[m_pos] == '\r'))
        ++m_pos;
}

DNNCOST_FUNC bool Reader::consume(std::string_view word) {
    if (m_text.substr(m_pos, word.size()) != word) return false;
    m_pos += word.size();
    return true;
}

DNNCOST_FUNC auto Reader::value(int depth) -> Value {
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

DNNCOST_FUNC double Reader::number() {
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

DNNCOST_FUNC auto Reader::hex4() -> unsigned {
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

DNNCOST_FUNC void Reader::append_utf8(std::string& out, unsigned cp) {
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

DNNCOST_FUNC std::string Reader::string_literal() {
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

}  // namespace dnncost::measure::json::detail
