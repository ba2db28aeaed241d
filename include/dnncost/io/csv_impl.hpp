#pragma once
/// @file csv_impl.hpp
/// The definitions of csv.hpp: compiled once into dnncost::compiled in compiled mode
/// (core/config.hpp), included by csv.hpp in header-only mode.
#include <dnncost/io/csv.hpp>

DNNCOST_FUNC auto dnncost::io::parse_csv(std::string_view text, std::string source, const CsvOptions& options)
    -> CsvTable {
    CsvTable table;
    table.source = std::move(source);
    // A UTF-8 byte-order mark would otherwise become part of the first column name.
    if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);

    std::size_t pos = 0, line = 1;
    const std::size_t n = text.size();
    auto fail = [&](std::size_t at_line, auto&&... msg) {
        raise<parse_error>(table.source, ":", at_line, ": ", msg...);
    };

    bool have_header = false;
    while (pos < n) {
        const std::size_t record_line = line;
        std::vector<std::string> fields;
        std::string field;
        bool record_done = false;
        // Skip completely empty lines (also the final line end).
        if (text[pos] == '\n' || (text[pos] == '\r' && pos + 1 < n && text[pos + 1] == '\n')) {
            pos += text[pos] == '\r' ? 2 : 1;
            ++line;
            continue;
        }
        while (!record_done) {
            field.clear();
            if (pos < n && text[pos] == '"') {
                const std::size_t quote_line = line;
                ++pos;
                for (;;) {
                    if (pos >= n) fail(quote_line, "unterminated quoted field (opened on this line)");
                    const char c = text[pos];
                    if (c == '"') {
                        if (pos + 1 < n && text[pos + 1] == '"') {
                            field += '"';
                            pos += 2;
                            continue;
                        }
                        ++pos;
                        break;
                    }
                    if (c == '\n') ++line;
                    field += c;
                    ++pos;
                }
                if (pos < n && text[pos] != ',' && text[pos] != '\n' && text[pos] != '\r')
                    fail(line, "unexpected character '", text[pos], "' after closing quote of field ",
                         fields.size() + 1);
            } else {
                while (pos < n && text[pos] != ',' && text[pos] != '\n' && text[pos] != '\r') {
                    if (text[pos] == '"')
                        fail(line, "quote inside unquoted field ", fields.size() + 1,
                             " (enclose the whole field in quotes and double the inner quote)");
                    field += text[pos++];
                }
            }
            fields.push_back(field);
            if (pos >= n) {
                record_done = true;
            } else if (text[pos] == ',') {
                ++pos;
            } else if (text[pos] == '\r') {
                if (pos + 1 < n && text[pos + 1] == '\n')
                    ++pos;
                else
                    fail(line, "bare carriage return (expected CRLF or LF line ends)");
                ++pos;
                ++line;
                record_done = true;
            } else {  // '\n'
                ++pos;
                ++line;
                record_done = true;
            }
        }
        if (!have_header) {
            for (std::size_t i = 0; i < fields.size(); ++i) {
                if (fields[i].empty()) fail(record_line, "empty name of column ", i + 1, " in the header");
                for (std::size_t j = 0; j < i; ++j)
                    if (fields[j] == fields[i])
                        fail(record_line, "duplicate column name '", fields[i], "' in the header");
            }
            table.header = std::move(fields);
            have_header = true;
            continue;
        }
        if (fields.size() != table.header.size()) {
            std::string msg =
                "expected " + std::to_string(table.header.size()) + " fields, found " + std::to_string(fields.size());
            if (!options.skip_bad_rows) fail(record_line, msg);
            table.issues.push_back({record_line, std::move(msg)});
            continue;
        }
        table.rows.push_back(std::move(fields));
        table.lines.push_back(record_line);
    }
    if (!have_header) raise<parse_error>(table.source, ": empty CSV file (no header row)");
    return table;
}

DNNCOST_FUNC auto dnncost::io::to_string(NumberStatus s) -> std::string_view {
    switch (s) {
        case NumberStatus::ok:
            return "ok";
        case NumberStatus::empty:
            return "empty value";
        case NumberStatus::malformed:
            return "not a number";
        case NumberStatus::nan:
            return "NaN";
        case NumberStatus::infinite:
            return "infinite value";
    }
    return "?";
}

DNNCOST_FUNC auto dnncost::io::parse_number(std::string_view s) -> ParsedNumber {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    if (s.empty()) return {0.0, NumberStatus::empty};
    if (s.front() == '+') s.remove_prefix(1);
    double v = 0.0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    // out of double's range (overflow or underflow) counts as not a usable number
    if (ec != std::errc{} || end != s.data() + s.size()) return {0.0, NumberStatus::malformed};
    if (std::isnan(v)) return {v, NumberStatus::nan};
    if (std::isinf(v)) return {v, NumberStatus::infinite};
    return {v, NumberStatus::ok};
}

DNNCOST_FUNC auto dnncost::io::require_number(const CsvTable& t, std::size_t row, std::size_t col) -> double {
    const auto& text = t.rows.at(row).at(col);
    const auto r = parse_number(text);
    if (!r.ok())
        raise<parse_error>(t.where(row), ": column '", t.header.at(col), "': ", to_string(r.status), " ('", text, "')");
    return r.value;
}
